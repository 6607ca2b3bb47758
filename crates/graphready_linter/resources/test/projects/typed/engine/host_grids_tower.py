"""A vision tower in a module of its own, run by `host_grids_model.PatchLanguageModel` from
`image_features`, a method nothing in the project calls: the model's call is evidence of what
the tower receives all the same. The grid is on the host: `.tolist()` reads no device memory;
the pixels are on the device."""

import torch
from torch import nn


class PatchTower(nn.Module):
    def forward(self, pixels: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        rows = self.count_rows(grid_thw)
        scale = pixels.max().item()
        return pixels[:rows] * scale

    def count_rows(self, grid_thw: torch.Tensor) -> int:
        return sum(t * h * w for t, h, w in grid_thw.tolist())
