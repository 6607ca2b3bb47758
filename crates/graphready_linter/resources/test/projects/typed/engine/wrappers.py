"""Abstract bases whose methods run only where an instance inherits them: `WrapperBase.update`
is overridden by the one wrapper a CUDA engine builds (the other serves the CPU), so its body
never runs there; `PlannerBase.plan` is inherited by a planner a CUDA engine builds."""

from abc import ABC, abstractmethod

import torch
from torch import nn


class WrapperBase(ABC):
    def update(self, lens: torch.Tensor) -> int:
        return lens.max().item()

    @abstractmethod
    def apply(self, x: torch.Tensor) -> torch.Tensor: ...


class WrapperCPU(WrapperBase):
    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return x


class WrapperGPU(WrapperBase):
    def update(self, lens: torch.Tensor) -> int:
        return 0

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        return x


class PlannerBase(ABC):
    def plan(self, lens: torch.Tensor) -> int:
        return lens.max().item()

    @abstractmethod
    def name(self) -> str: ...


class FastPlanner(PlannerBase):
    def name(self) -> str:
        return "fast"


class Adapted(nn.Module):
    def __init__(self, wrapper: WrapperBase, planner: PlannerBase):
        super().__init__()
        self.wrapper = wrapper
        self.planner = planner

    def forward(self, x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
        self.wrapper.update(lens)
        self.planner.plan(lens)
        return self.wrapper.apply(x)
