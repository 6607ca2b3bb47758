"""An audio adaptor held by the model's encoder and run through it (`self.encoder.adaptor(x,
lens)`, a submodule of a submodule called like a method) when the runner embeds audio, before
the graph: a stall on the host path, not a captured model of its own."""

import torch
from torch import nn


class AudioAdaptor(nn.Module):
    def forward(self, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        return x[: lens.max()]


class AudioEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.adaptor = AudioAdaptor()


class AudioModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = AudioEncoder()

    def embed_audio(self, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        return self.encoder.adaptor(x, lens)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class AudioRunner:
    def __init__(self):
        self.model = AudioModel()

    def run(self, x: torch.Tensor, lens: torch.Tensor):
        while True:
            embeds = self.model.embed_audio(x, lens)
            self.model(embeds)
