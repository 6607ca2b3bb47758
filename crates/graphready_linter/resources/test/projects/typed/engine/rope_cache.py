"""A tower whose per-grid parts are memoised: `get_parts` returns a cached tuple or the tuple
local it builds, whose last element is a host tensor. Concatenated, the lengths stay on the
host, also when the file is checked again with what the project knows (the inverse
permutation's tensor return sends it there)."""

import torch
from torch import nn


class RopeTower(nn.Module):
    def __init__(self):
        super().__init__()
        self._parts_cache = {}

    def get_parts(self, t: int, n: int):
        key = (t, n)
        if key in self._parts_cache:
            return self._parts_cache[key]
        lens = torch.repeat_interleave(torch.tensor([n], dtype=torch.int32), t)
        result = (torch.arange(t * n), lens)
        self._parts_cache[key] = result
        return result

    @staticmethod
    def invert_permutation(perm: torch.Tensor) -> torch.Tensor:
        inverse = torch.empty_like(perm)
        inverse[perm] = torch.arange(perm.numel(), dtype=perm.dtype)
        return inverse

    def forward(self, x: torch.Tensor, grid: list[list[int]]) -> torch.Tensor:
        parts = []
        order = []
        for t, n in grid:
            index, lens = self.get_parts(t, n)
            parts.append(lens)
            order.append(index)
        cu_seqlens = torch.cat(parts).cumsum(0).cpu().numpy()
        reverse = self.invert_permutation(torch.cat(order))
        return x[reverse] * int(cu_seqlens[-1])
