"""A speech model whose language model a registry builds (of a class nothing says): inside its
captured forward, `self.language_model.embed_tokens(ids)` may run any `embed_tokens` of the one
hierarchy that defines it, a guess by name too weak to call another model's code captured. The
runner, which holds whichever model was loaded, runs every model's `embed_tokens` before the
graph: there a sync is a stall."""

import torch
from torch import nn

REGISTRY: dict = {}


def build_language_model(name: str):
    return REGISTRY[name]()


class SupportsEmbed:
    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class SpeechModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.language_model = build_language_model("lm")

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.language_model.embed_tokens(ids)


class ImageTextModel(nn.Module, SupportsEmbed):
    def embed_tokens(self, ids: torch.Tensor) -> torch.Tensor:
        # Before the graph: the host reads how many image tokens there are.
        count = (ids < 0).sum().item()
        return ids[: ids.shape[0] - count]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return ids


class EmbedRunner:
    def __init__(self):
        self.model = build_language_model("lm")

    def run(self, ids: torch.Tensor):
        while True:
            embeds = self.model.embed_tokens(ids)
            self.model(embeds)
