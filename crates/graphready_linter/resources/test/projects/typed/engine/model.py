import torch
from torch import nn

from engine.batch import ForwardBatch
from engine.rotary import RotaryEmbedding


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = RotaryEmbedding(4096)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, batch: ForwardBatch):
        x = self.rotary(x, positions)
        return batch.attn_backend.forward(x, batch)
