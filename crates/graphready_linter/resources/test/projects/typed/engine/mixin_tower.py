"""A mixin's method runs the tower each model using the mixin sets (`self.visual`, set only in
the subclasses' constructors, as vLLM's Qwen-Omni models do): the tower is called there, and
receives what the mixin passes, here a grid in host memory."""

import torch


class MixinVisionTower(torch.nn.Module):
    def forward(self, x: torch.Tensor, grid_thw: torch.Tensor) -> torch.Tensor:
        # The grid the mixin made on the host: no sync.
        sizes = grid_thw.prod(-1).tolist()
        return x[: len(sizes)]


class TowerMixin:
    def process_images(self, x: torch.Tensor, sizes: list) -> torch.Tensor:
        grid = torch.tensor(sizes)
        return self.visual(x, grid_thw=grid)


class TowerModel(torch.nn.Module, TowerMixin):
    def __init__(self):
        super().__init__()
        self.visual = MixinVisionTower()

    def forward(self, x: torch.Tensor, sizes: list) -> torch.Tensor:
        return self.process_images(x, sizes)
