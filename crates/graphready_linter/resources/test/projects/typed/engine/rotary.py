"""A decorated rotary forward: the decorator's wrapper runs on every call."""

import functools

import torch
from torch import nn


def dynamic_rope_update(forward):
    @functools.wraps(forward)
    def wrapper(self, x, position_ids):
        if position_ids.max() > self.max_seq_len:
            self.grow(position_ids)
        return forward(self, x, position_ids)

    return wrapper


class RotaryEmbedding(nn.Module):
    def __init__(self, max_seq_len: int):
        super().__init__()
        self.max_seq_len = max_seq_len
        self.register_buffer("inv_freq", torch.ones(2))

    def grow(self, position_ids):
        self.max_seq_len = self.max_seq_len * 2

    def reset_inv_freq(self):
        self.register_buffer("inv_freq", torch.tensor([0.5] * 2, device=self.inv_freq.device))

    @dynamic_rope_update
    def forward(self, x, position_ids):
        # Put back in float32 after a loader cast it: once, not every step.
        if self.inv_freq.dtype != torch.float32:
            self.reset_inv_freq()
        return x * 2


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)
