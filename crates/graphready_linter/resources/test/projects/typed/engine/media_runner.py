"""The runner's media gathering: a mask of which tokens are media, built in pinned host memory,
and the embedding call that hands it to the model."""

import torch


class MediaRunner:
    def __init__(self, model):
        self.model = model

    def gather(self, n: int) -> tuple[list[torch.Tensor], torch.Tensor]:
        is_media = torch.zeros(n, dtype=torch.bool, device="cpu", pin_memory=True)
        embeds: list[torch.Tensor] = []
        return embeds, is_media

    def embed(self, ids: torch.Tensor, embeds: list, is_media: torch.Tensor) -> torch.Tensor:
        return self.model.embed_ids(ids, embeds, is_multimodal=is_media)
