"""A vision encoder captured with its metadata prepared outside the graph: the graph runner
passes `metadata`, so the encoder's `if metadata is None:` fallback, and what it calls, run only
for the callers that leave it out, eagerly."""

import torch
from torch import nn


class PatchEncoder(nn.Module):
    def forward(self, x: torch.Tensor, grid: torch.Tensor, metadata=None):
        if metadata is None:
            # Only the eager path builds the metadata here.
            metadata = self.prepare_metadata(grid)
            lengths = grid.sum().item()
        return x * metadata["scale"]

    def prepare_metadata(self, grid: torch.Tensor):
        return {"scale": grid.max().item()}


class PatchTower:
    def __init__(self, alpha=None):
        self.encoder = PatchEncoder()
        self.alpha = alpha

    def encode(self, x: torch.Tensor, grid: torch.Tensor):
        # The eager path: no metadata.
        return self.encoder(x, grid)

    def forward_graphed(self, x: torch.Tensor, metadata=None):
        # Hands on its own `metadata`, which the capture region's call gives.
        out = self.encoder(x, None, metadata=metadata)
        return scale_patches(out, alpha=self.alpha)


def scale_patches(x: torch.Tensor, alpha=None):
    if alpha is None:
        # A setting left off, not a value computed in its place: captured with the callers
        # that pass their configuration on.
        return x * x.max().item()
    return x * alpha


class PatchGraphRunner:
    def __init__(self, tower: PatchTower):
        self.tower = tower
        self.graph = torch.cuda.CUDAGraph()

    def capture(self, x: torch.Tensor, metadata: dict):
        with torch.cuda.graph(self.graph):
            self.out = self.tower.forward_graphed(x, metadata)
