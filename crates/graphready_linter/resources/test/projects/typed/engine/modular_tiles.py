"""A template the project's `modeling_tiles.py` is generated from (its header says so): no
module imports it, so its classes are no entries and nothing here is reported by default."""

import torch
from torch import nn


class TileCounter(nn.Module):
    def forward(self, mask: torch.Tensor) -> torch.Tensor:
        count = int(mask.sum().item())
        return mask[:count]
