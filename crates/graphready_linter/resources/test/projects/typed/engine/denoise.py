"""A diffusion pipeline's stages: the denoising stage runs the model once per timestep in its
loop, and only that loop runs every step. A router that picks the stage, and a stage that
extends its base's `forward`, call a method named `forward` of a class that is no model: that
runs the stage once per request, not the model once per step."""

import torch


class DenoiseStage:
    def __init__(self, model: torch.nn.Module, steps: int):
        self.model = model
        self.steps = steps

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        for _ in range(self.steps):
            latents = self.model(latents)
            # Every timestep: per-step host code.
            if latents.isnan().any():
                break
        # Once per request, after the loop.
        return latents[: int(latents.argmax())]


class DecodeStage:
    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        return latents * 2


class TiledDecodeStage(DecodeStage):
    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        image = super().forward(latents)
        # Once per request: the base stage is no model.
        return image[: int(image.sum())]


class StageRouter:
    def __init__(self, model: torch.nn.Module):
        self.standard = DenoiseStage(model, 8)
        self.decoder = TiledDecodeStage()

    def forward(self, latents: torch.Tensor) -> torch.Tensor:
        latents = self.standard.forward(latents)
        return self.decoder.forward(latents)
