"""Layers dispatching on SGLang's forward modes: a batch neither idle nor decode extends, so
what runs for it runs eagerly."""

import torch
from torch import nn


class ModeAttention(nn.Module):
    def forward(self, q: torch.Tensor, batch):
        if batch.forward_mode.is_idle():
            return q
        elif batch.forward_mode.is_decode():
            return q * 2
        else:
            return q[: int(q.sum())]


class ModeNorm(nn.Module):
    def forward(self, q: torch.Tensor, batch):
        if batch.forward_mode.is_decode_or_idle():
            return q
        return q[: int(q.sum())]
