"""A layer whose implementation class comes from its backend (`type[...]` returns), found again
through a registry by a helper that returns it inside a tuple."""

from typing import Any

import torch
from torch import nn

from engine.attention.impls import ImplBackend

LAYERS: dict = {}


def select_backend() -> type[ImplBackend]:
    return ImplBackend


class AttentionLayer(nn.Module):
    def __init__(self, name: str):
        super().__init__()
        self.backend = select_backend()
        impl_cls = self.backend.get_impl_cls()
        self.impl = impl_cls()
        LAYERS[name] = self

    def forward(self, q: torch.Tensor, name: str) -> torch.Tensor:
        return run_attention(q, name)


def layer_context(name: str) -> tuple[Any, "AttentionLayer"]:
    return None, LAYERS[name]


def run_attention(q: torch.Tensor, name: str) -> torch.Tensor:
    _, layer = layer_context(name)
    return layer.impl.forward(layer, q)
