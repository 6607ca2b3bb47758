"""Experts whose class decorator replaces `forward` with a dispatcher that looks a fused
implementation up by a setting and falls back to the class's own loop: the loop runs only when
the setting selects it. A decorator that wraps the original and calls it keeps it reached."""

import torch
from torch import nn

FUSED = {}


def use_fused_experts(experts_class=None, *, has_bias: bool = False):
    def wrapper(experts_class):
        original_forward = experts_class.forward

        def forward(self, *args, **kwargs):
            implementation = FUSED.get(self.implementation, original_forward)
            return implementation(self, *args, **kwargs)

        experts_class.forward = forward
        experts_class.has_bias = has_bias
        return experts_class

    if experts_class is not None:
        return wrapper(experts_class)
    return wrapper


def timed(experts_class):
    original_forward = experts_class.forward

    def forward(self, *args, **kwargs):
        return original_forward(self, *args, **kwargs)

    experts_class.forward = forward
    return experts_class


@use_fused_experts(has_bias=True)
class LoopExperts(nn.Module):
    def forward(self, hidden: torch.Tensor, routing: torch.Tensor) -> torch.Tensor:
        hit = routing.sum(dim=0).nonzero()
        return hidden + hit.sum()


@timed
class TimedExperts(nn.Module):
    def forward(self, hidden: torch.Tensor, routing: torch.Tensor) -> torch.Tensor:
        hit = routing.sum(dim=0).nonzero()
        return hidden + hit.sum()


class SparseBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.experts = LoopExperts()
        self.timed = TimedExperts()

    def forward(self, hidden: torch.Tensor, routing: torch.Tensor) -> torch.Tensor:
        return self.experts(hidden, routing) + self.timed(hidden, routing)
