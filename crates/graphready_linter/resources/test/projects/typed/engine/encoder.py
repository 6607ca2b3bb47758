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


class CaptionModel(nn.Module):
    def forward(self, input_ids: torch.Tensor, pixel_values=None, image_sizes=None):
        # New images come with a request's prompt: decode steps, which graphs capture, pass
        # none, so this branch runs eagerly, on the steps that have prefill work.
        if pixel_values is not None:
            counts = image_sizes.tolist()
            input_ids = input_ids[: sum(counts)]
        return input_ids
