"""A layer whose prefill attention runs between the captured segments of a breakable CUDA graph
(SGLang's `@eager_on_graph`): an eager break, so the sync in it is not captured."""

import torch
from torch import nn


def eager_on_graph(fn):
    return fn


class BreakableAttention(nn.Module):
    def forward(self, q: torch.Tensor, lens: torch.Tensor):
        if q.shape[0] > 1:
            return self._eager_attention(q, lens)
        return q

    @eager_on_graph
    def _eager_attention(self, q: torch.Tensor, lens: torch.Tensor):
        longest = int(lens.max().item())
        return q[:longest]
