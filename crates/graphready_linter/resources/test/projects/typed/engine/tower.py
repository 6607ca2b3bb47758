"""A vision tower its model runs per request through a table of callbacks, and a model whose
forward no one calls: the model's forward is captured, the tower, which only uncaptured code
calls, runs eagerly on the host path. So does an audio tower the model holds through a nested
attribute, whose calls the index cannot follow: a module another module builds is a submodule,
never a model whose forward is captured on its own. A speech encoder called only where its
author allows syncs (`with gpu_sync_allowed():`, an eager block) is neither captured nor an
entry of the host path."""

from contextlib import nullcontext as gpu_sync_allowed

import torch
from torch import nn


class VisionTower(nn.Module):
    def forward(self, pixels: torch.Tensor, counts: torch.Tensor):
        sizes = counts.tolist()
        # Pinning host memory is illegal while capturing, and only costs time here.
        staging = torch.empty(len(sizes), dtype=torch.int64, pin_memory=True)
        return torch.split(pixels, sizes), staging


class AudioTower(nn.Module):
    def forward(self, frames: torch.Tensor, lengths: torch.Tensor):
        return torch.split(frames, lengths.tolist())


class SpeechEncoder(nn.Module):
    def forward(self, frames: torch.Tensor, lengths: torch.Tensor):
        return torch.split(frames, lengths.tolist())


class TowerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = VisionTower()
        self.encoders = nn.Module()
        self.encoders.audio = AudioTower()
        self.speech = SpeechEncoder()

    def speech_features(self, frames: torch.Tensor, lengths: torch.Tensor):
        with gpu_sync_allowed():
            return self.speech(frames, lengths)

    def audio_features(self, frames: torch.Tensor, lengths: torch.Tensor):
        return self.encoders.audio(frames, lengths)

    def image_features(self, pixels: torch.Tensor, counts: torch.Tensor):
        return self.tower(pixels, counts)

    def forward(self, input_ids: torch.Tensor, embed_routine, pixels, counts):
        features = embed_routine(
            {
                "image": self.image_features,
                "audio": self.audio_features,
                "speech": self.speech_features,
            },
            pixels,
            counts,
        )
        return input_ids, features
