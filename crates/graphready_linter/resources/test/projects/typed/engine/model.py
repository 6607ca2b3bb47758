import torch
from torch import nn

from engine.batch import ForwardBatch
from engine.rotary import RotaryEmbedding, rotate_half


class VocabMapping:
    def __init__(self, vocab: dict):
        self.vocab = vocab

    @property
    def image_tokens(self):
        return sorted(v for k, v in self.vocab.items() if k.startswith("IMG"))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.rotary = RotaryEmbedding(4096)
        self.mapping = VocabMapping({})

    def forward(self, x: torch.Tensor, positions: torch.Tensor, batch: ForwardBatch):
        x[:, self.mapping.image_tokens] = 0.0
        x = rotate_half(self.rotary(x, positions))
        return batch.attn_backend.forward(x, batch)
