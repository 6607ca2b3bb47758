"""Helpers that take a list or a tensor: every call passes `.tolist()` of a grid, so the branch
for a tensor never runs (`isinstance(sizes, torch.Tensor)`, or the conditional expression's
`else`). A helper a device tensor reaches still syncs there."""

import torch
from torch import nn


def as_rows(sizes):
    if isinstance(sizes, torch.Tensor):
        sizes = sizes.tolist()
    return [int(s) for s in sizes]


def row_counts(grid_thw):
    grid = grid_thw if isinstance(grid_thw, list) else grid_thw.tolist()
    return [t * h * w for t, h, w in grid]


def tensor_rows(sizes):
    if isinstance(sizes, torch.Tensor):
        sizes = sizes.tolist()
    return sizes


class SizedTower(nn.Module):
    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor, lens: torch.Tensor):
        grid = grid_thw.cpu().tolist()
        rows = as_rows(grid)
        counts = row_counts(grid)
        total = tensor_rows(lens)
        return x * (len(rows) + sum(counts) + len(total))
