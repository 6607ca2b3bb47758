"""A model that hands its tower the arguments in a dict (`self.tower(**options)`): the grid it
makes on the host reaches the tower's `grid` parameter as a host tensor, whatever the
annotation says, so reading it is no sync. The pixels are on the device."""

import torch
from torch import nn


class OptionsTower(nn.Module):
    def forward(self, pixels: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        sizes = grid.tolist()
        return pixels[: sizes[0][0]] + pixels.sum().item()


class OptionsModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = OptionsTower()

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        grid = torch.tensor([[1, 2, 3]])
        options = {"pixels": pixels, "grid": grid}
        return self.tower(**options)
