"""A model that hands its tower the arguments in a dict (`self.tower(**options)`): the grid it
makes on the host reaches the tower's `grid` parameter as a host tensor, whatever the
annotation says. The pixels are on the device. A second model rebinds its dict before the call,
which then says nothing of `grid`: with no evidence from every caller, the annotation stands."""

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


class RebindingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = OptionsTower()

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        grid = torch.tensor([[1, 2, 3]])
        options = {"pixels": pixels, "grid": grid}
        # Rebound by a tuple assignment: what the dict literal held is no longer known, so this
        # call is no evidence that `grid` stays on the host (line 12 is reported).
        options, _ = self.make_options(pixels)
        return self.tower(**options)

    def make_options(self, pixels: torch.Tensor):
        return {"pixels": pixels, "grid": pixels.new_ones(1, 3)}, None
