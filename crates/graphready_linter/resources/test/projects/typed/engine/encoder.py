"""An encoder that reads the fields `vision.py`'s processors declare."""

import torch
from torch import nn


class VisionEncoder(nn.Module):
    def forward(self, pixel_values: torch.Tensor, **kwargs):
        grid = kwargs.pop("image_grid_thw")
        sizes = grid.tolist()
        mask = kwargs.pop("feature_mask")
        kept = mask.tolist()
        return pixel_values, sizes, kept
