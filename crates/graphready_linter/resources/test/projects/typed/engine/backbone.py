"""A vision backbone that its tokenizer builds in a helper method; the model runs the tokenizer
per request, outside the graph."""

import torch
from torch import nn


class Navit(nn.Module):
    def forward(self, x: torch.Tensor, grid: torch.Tensor):
        return x[: grid.sum().item()]


class VisualTokenizer(nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        # Built by a method, not constructed here: calling the field still runs `Navit`.
        self.vit = self._init_backbone(kind)

    def _init_backbone(self, kind: str):
        if kind == "navit":
            return Navit()
        raise ValueError(kind)

    def forward(self, x: torch.Tensor, grid: torch.Tensor):
        return self.vit(x, grid)


class TokenizedModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.visual_tokenizer = VisualTokenizer("navit")
        self.lm = nn.Linear(4, 4)

    def embed_images(self, x: torch.Tensor, grid: torch.Tensor):
        return self.visual_tokenizer(x, grid)

    def forward(self, x: torch.Tensor):
        return self.lm(x)


class Resampler(nn.Module):
    def forward(self, x: torch.Tensor, sizes: torch.Tensor):
        return x[: sizes.max().item()]


class BaseVisionModel(nn.Module):
    def __init__(self):
        super().__init__()
        # What the subclasses' overrides return; the base names only `nn.Module`.
        self.resampler = self.init_resampler()

    def init_resampler(self) -> nn.Module:
        raise NotImplementedError

    def embed_images(self, x: torch.Tensor, sizes: torch.Tensor):
        return self.resampler(x, sizes)

    def forward(self, x: torch.Tensor):
        return x


class VisionModelV2(BaseVisionModel):
    def init_resampler(self) -> nn.Module:
        resampler = Resampler()
        # `nn.Module.to` returns the module itself.
        return resampler.to(dtype=torch.float16)
