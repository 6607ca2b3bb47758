"""An attention function picked through a registry that falls back to the default it is given,
held in an annotated local (`interface: Callable = REGISTRY.get(name, eager_attention)`)."""

from typing import Callable

import torch
from torch import nn


def eager_attention(q: torch.Tensor) -> torch.Tensor:
    if q.isnan().any():
        q = torch.nan_to_num(q)
    return q


class Registry:
    def get(self, name: str, default):
        return default


REGISTRY = Registry()


class SelfAttention(nn.Module):
    def forward(self, q: torch.Tensor, name: str) -> torch.Tensor:
        interface: Callable = REGISTRY.get(name, eager_attention)
        return interface(q)
