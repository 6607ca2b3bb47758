"""A tower that takes its grid as a list or a tensor and makes a host tensor of a list: the grid
its model passes as a list stays on the host, also in the helper the tower hands it to."""

import torch
from torch import nn


class GridTower(nn.Module):
    def window_sizes(self, grid_thw: torch.Tensor) -> int:
        total = 0
        for t, h, w in grid_thw:
            total += int((t * h * w).item())
        return total

    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        if not isinstance(grid_thw, torch.Tensor):
            grid_thw = torch.tensor(grid_thw, dtype=torch.long)
        return x * self.window_sizes(grid_thw)


class GridModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual = GridTower()

    def forward(self, x: torch.Tensor, grid: list[list[int]]) -> torch.Tensor:
        return self.visual(x, grid_thw=grid)
