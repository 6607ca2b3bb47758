"""A model whose vision tower another module defines (`host_grids_tower.PatchTower`), run from
`image_features`, which nothing in the project calls: its call is evidence of what the tower
receives all the same (see `host_grids`)."""

import torch
from torch import nn

from engine.host_grids_tower import PatchTower


class PatchLanguageModel(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.patch_tower = PatchTower()
        self.embed = nn.Embedding(32, hidden)

    def image_features(self, images: list) -> torch.Tensor:
        grid = torch.stack([image.grid for image in images]).cpu()
        patches = torch.cat([image.pixels for image in images], dim=0)
        return self.patch_tower(patches, grid_thw=grid)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.embed(ids)
