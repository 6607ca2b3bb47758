"""A feature extractor that builds its filterbank module lazily and runs it on the raw audio of
a request, on the host, before the engine batches the inputs: the module is no model the
engine captures, so its forward's `.item()` is not reported. The encoder module that a model
builds is one, and its `.item()` is."""

import torch
from torch import nn
from transformers import SequenceFeatureExtractor


class Filterbank(nn.Module):
    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        peak = audio.abs().max().item()
        return audio / peak


class AudioFeatureExtractor(SequenceFeatureExtractor):
    def __init__(self):
        super().__init__()
        self._filterbank = None

    @property
    def filterbank(self) -> Filterbank:
        if self._filterbank is None:
            self._filterbank = Filterbank()
        return self._filterbank

    def __call__(self, audio: torch.Tensor) -> torch.Tensor:
        return self.filterbank(audio)


class AudioEncoder(nn.Module):
    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return features * features.abs().max().item()


class AudioModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = AudioEncoder()

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.encoder(features)


class ToDeviceTensor(nn.Module):
    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return image / image.amax().item()


class VisionProcessor:
    """An engine's own image processor (no `transformers` base): it composes its transforms,
    a module among them, and runs them on a request's image before batching."""

    def __init__(self):
        self.transforms = [ToDeviceTensor()]

    def __call__(self, image: torch.Tensor) -> torch.Tensor:
        for transform in self.transforms:
            image = transform(image)
        return image
