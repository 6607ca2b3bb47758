"""A stage before a diffusion pipeline's denoising loop encodes the request's reference image
through an adapter around the image encoder. Running an encoder is work done once per request:
the adapter is no step, and neither is the stage that calls it."""

import torch


class ImageEncoderAdapter:
    def __init__(self, model):
        self.model = model

    def visual(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)


class BeforeDenoisingStage:
    def __init__(self, encoder: ImageEncoderAdapter):
        self.image_encoder = encoder

    def forward(self, images: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
        embeds = self.image_encoder.visual(images)
        # Once per request: reported only with --scope all.
        return embeds[: int(sizes.sum())]
