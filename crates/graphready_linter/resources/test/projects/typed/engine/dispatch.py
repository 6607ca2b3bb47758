"""A MoE layer's dispatch step behind one base class. The factory builds the batched variant
only on an XPU (`current_platform.is_xpu()`), a device without CUDA graphs: on a CUDA GPU no
instance of it exists, so a call through the base class never runs its override. The naive
variant, built on every platform, does run."""

import torch
from torch import nn


class current_platform:
    @staticmethod
    def is_xpu() -> bool:
        return False


class PrepareFinalize:
    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class NaivePrepareFinalize(PrepareFinalize):
    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        return x[: int(x.sum())]


class BatchedPrepareFinalize(PrepareFinalize):
    def prepare(self, x: torch.Tensor) -> torch.Tensor:
        # Only on an XPU: no instance exists on a CUDA GPU.
        return x[: int(x.max())]


def make_prepare_finalize(batched: bool) -> PrepareFinalize:
    if current_platform.is_xpu() and batched:
        return BatchedPrepareFinalize()
    return NaivePrepareFinalize()


class DispatchedMoE(nn.Module):
    def __init__(self, batched: bool):
        super().__init__()
        self.prepare_finalize = make_prepare_finalize(batched)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.prepare_finalize.prepare(x)
