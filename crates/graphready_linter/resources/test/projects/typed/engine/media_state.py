"""A model state that gathers media through a base class, which returns what the runner's
`gather` returns: the mask the model receives is the runner's host mask, whatever the
annotations say, so the model's reads of it wait for nothing."""

import torch
from torch import nn

from engine.media_runner import MediaRunner


class MediaLM(nn.Module):
    def embed_ids(
        self, ids: torch.Tensor, embeds=None, *, is_multimodal: torch.Tensor | None = None
    ) -> torch.Tensor:
        if is_multimodal is None:
            return ids
        return ids[: int(is_multimodal.sum().item())]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return ids


class MediaStateBase:
    def __init__(self, model: MediaLM):
        self.runner = MediaRunner(model)

    def gather(self, n: int) -> tuple[list[torch.Tensor], torch.Tensor]:
        return self.runner.gather(n)


class MediaState(MediaStateBase):
    def prepare(self, ids: torch.Tensor, n: int) -> torch.Tensor:
        embeds, is_media = super().gather(n)
        return self.runner.embed(ids, embeds, is_media)


class MediaDriver:
    def __init__(self, state: MediaState, graph: torch.cuda.CUDAGraph):
        self.state = state
        self.graph = graph

    def step(self, ids: torch.Tensor, n: int):
        self.state.prepare(ids, n)
        self.graph.replay()
