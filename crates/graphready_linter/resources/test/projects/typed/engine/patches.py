"""A model holding a part from the encoder components' package: the part runs with it."""

import torch
from torch import nn

from engine.encoders.text import PatchEmbed


class PatchModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = PatchEmbed()

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self.embed(pixels)
