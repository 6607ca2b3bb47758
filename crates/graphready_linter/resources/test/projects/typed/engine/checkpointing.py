"""A helper with a keyword-only flag after `*inputs`: the tensors passed by position land in
`*inputs`, so the flag is the host bool the caller names."""

import torch
from torch import nn


def run_block(module, *inputs, use_checkpointing=False):
    if use_checkpointing:
        return torch.utils.checkpoint.checkpoint(module, *inputs, use_reentrant=False)
    return module(*inputs)


class CheckpointedStack(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flag = bool(self.training)
        return run_block(self.block, x * 2, use_checkpointing=flag)
