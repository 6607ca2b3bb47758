"""A vision tower its model runs per request through a table of callbacks, and a model whose
forward no one calls: the model's forward is captured, the tower, which only uncaptured code
calls, runs eagerly on the host path."""

import torch
from torch import nn


class VisionTower(nn.Module):
    def forward(self, pixels: torch.Tensor, counts: torch.Tensor):
        sizes = counts.tolist()
        # Pinning host memory is illegal while capturing, and only costs time here.
        staging = torch.empty(len(sizes), dtype=torch.int64, pin_memory=True)
        return torch.split(pixels, sizes), staging


class TowerModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.tower = VisionTower()

    def image_features(self, pixels: torch.Tensor, counts: torch.Tensor):
        return self.tower(pixels, counts)

    def forward(self, input_ids: torch.Tensor, embed_routine, pixels, counts):
        features = embed_routine({"image": self.image_features}, pixels, counts)
        return input_ids, features
