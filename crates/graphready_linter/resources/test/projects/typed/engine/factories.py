"""Modules a layer builds from a class it picks (`cls = A if fp8 else B`) or from a module's
table of classes through a factory (`ATTENTION[kind](...)`): submodules their holder runs,
captured where the holder is, never models captured on their own. A vision stack built the same
way runs per request on the host path, and so do its attention modules. Loops over the layers
go through `enumerate` and `zip`."""

import torch
from torch import nn


class EagerAttention(nn.Module):
    def forward(self, x: torch.Tensor, lens: torch.Tensor):
        return x * lens.max().item()


class SdpaAttention(nn.Module):
    def forward(self, x: torch.Tensor, lens: torch.Tensor):
        return x * lens.sum().item()


ATTENTION = {"eager": EagerAttention, "sdpa": SdpaAttention}


def build_attention(kind: str) -> nn.Module:
    return ATTENTION[kind]()


class GatedMlp(nn.Module):
    def forward(self, x: torch.Tensor):
        return x * x.amax().item()


class Fp8Mlp(GatedMlp):
    def forward(self, x: torch.Tensor):
        return x * x.amin().item()


class FactoryLayer(nn.Module):
    def __init__(self, fp8: bool):
        super().__init__()
        mlp_cls = Fp8Mlp if fp8 else GatedMlp
        self.mlp = mlp_cls()

    def forward(self, x: torch.Tensor):
        return self.mlp(x)


class VisionBlock(nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.attn = build_attention(kind)

    def forward(self, x: torch.Tensor, lens: torch.Tensor):
        return self.attn(x, lens)


class VisionStack(nn.Module):
    def __init__(self, kind: str):
        super().__init__()
        self.blocks = nn.ModuleList([VisionBlock(kind) for _ in range(2)])

    def forward(self, x: torch.Tensor, lens: torch.Tensor):
        for i, block in enumerate(self.blocks):
            x = block(x, lens) if i % 2 == 0 else block(x, lens + 1)
        return x


class FactoryModel(nn.Module):
    def __init__(self, fp8: bool, kind: str):
        super().__init__()
        self.layers = nn.ModuleList([FactoryLayer(fp8) for _ in range(2)])
        self.norms = nn.ModuleList([nn.LayerNorm(8) for _ in range(2)])
        self.vision = VisionStack(kind)

    def image_features(self, pixels: torch.Tensor, lens: torch.Tensor):
        return self.vision(pixels, lens)

    def forward(self, x: torch.Tensor):
        for layer, norm in zip(self.layers, self.norms):
            x = norm(layer(x))
        return x
