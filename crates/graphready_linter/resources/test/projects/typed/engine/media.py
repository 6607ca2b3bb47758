"""Positions for media. `media_positions` is annotated `torch.LongTensor`, but every caller
passes one row of a grid's host list (`grid.tolist()`): the call sites say what it holds."""

import torch


def media_positions(size: torch.LongTensor, merge: int) -> torch.Tensor:
    frames = size[0] // merge
    return torch.arange(frames)


def token_positions(lengths: torch.LongTensor) -> torch.Tensor:
    return torch.arange(lengths[0])
