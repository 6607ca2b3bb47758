"""A model whose vision tower another module defines (`host_grids_tower.PatchTower`), run from
`get_image_feature`, which nothing in the project calls: its call is evidence of what the tower
receives all the same (see `host_grids`)."""

import torch
from torch import nn

from engine.host_grids_tower import PatchTower


class PatchLanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = PatchTower()

    def get_image_feature(self, items) -> torch.Tensor:
        pixels = torch.cat([item.pixels for item in items])
        grid_thw = torch.cat([item.grid for item in items]).cpu()
        return self.tower(pixels, grid_thw)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return ids
