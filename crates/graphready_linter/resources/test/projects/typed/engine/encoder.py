"""An encoder that reads the fields `vision.py`'s processors declare, also through a tuple of
them splatted into the method that reads them."""

import torch
from torch import nn


class VisionEncoder(nn.Module):
    def forward(self, pixel_values: torch.Tensor, **kwargs):
        grid = kwargs.pop("image_grid_thw")
        sizes = grid.tolist()
        mask = kwargs.pop("feature_mask")
        kept = mask.tolist()
        inputs = (pixel_values, kwargs.get("image_grid_thw"))
        more = kwargs.get("more_rows")
        return pixel_values, sizes, kept, self.grid_rows(*inputs), self.pair_rows(*inputs, *more)

    def grid_rows(self, pixel_values: torch.Tensor, grid_thw: torch.Tensor) -> list:
        # Given the kept grid: a host read.
        return grid_thw.tolist()

    def pair_rows(self, pixel_values, grid_thw, flip: bool, second):
        # `flip` is whatever the second splat holds, not the tuple's first element again.
        if flip:
            return grid_thw
        return pixel_values


class CaptionModel(nn.Module):
    def forward(self, input_ids: torch.Tensor, pixel_values=None, image_sizes=None):
        # New images come with a request's prompt: decode steps, which graphs capture, pass
        # none, so this branch runs eagerly, on the steps that have prefill work.
        if pixel_values is not None:
            counts = image_sizes.tolist()
            input_ids = input_ids[: sum(counts)]
        return input_ids


class GridTower(nn.Module):
    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor | list[list[int]], metadata=None):
        if metadata is None:
            # The kept grid, a list of rows, or `None` from a caller that passes the metadata
            # instead: a host read whichever it is (a `None` cannot reach a tensor method).
            sizes = grid_thw.tolist()
            metadata = {"sizes": sizes}
        return x


class GridModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = GridTower()

    def forward(self, x: torch.Tensor, metadata: dict, **kwargs):
        grid = kwargs.pop("image_grid_thw")
        self.tower(x, grid_thw=grid)
        self.tower(x, [[1, 2, 2]])
        return self.tower(x, None, metadata=metadata)


class MixedExperts(nn.Module):
    def forward(self, hidden: torch.Tensor, visual_token_mask: torch.Tensor | None = None):
        # A media mask comes with a prompt too: `None` in the decode steps graphs capture, so
        # the test after it and the branches it opens run eagerly.
        if visual_token_mask is not None and visual_token_mask.all():
            return hidden * 2
        if visual_token_mask is not None:
            hidden = hidden[: int(visual_token_mask.sum())]
        # Not a media input: the device mask is read in the graph.
        if hidden.any():
            hidden = hidden + 1
        return hidden


class GatedExperts(nn.Module):
    def __init__(self, gate: nn.Module | None):
        super().__init__()
        self.vision_gate = gate

    def forward(self, hidden: torch.Tensor, batch):
        # A batch's media field is `None` in decode too: its branch runs eagerly.
        if batch.mm_token_modalities is not None:
            return (batch.mm_token_modalities == 0).nonzero()
        # A module's own attribute is configuration: its branch stays in the graph.
        if self.vision_gate is not None:
            return hidden.nonzero()
        return hidden
