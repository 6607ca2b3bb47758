"""A feature left unfinished: the method returns or raises before its body, which never runs
(and is not reported, with any scope)."""

import torch
from torch import nn


class CachedBlock(nn.Module):
    def forward(self, x: torch.Tensor, use_cache: bool = False) -> torch.Tensor:
        if self.should_skip(x, use_cache):
            return x
        return x * 2

    def should_skip(self, x: torch.Tensor, use_cache: bool) -> bool:
        if not use_cache:
            return False
        raise NotImplementedError("caching is not supported yet")

        distance = (x - x.mean()).abs().mean().cpu()
        return bool(distance < 0.1)
