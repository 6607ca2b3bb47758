"""Positions for media. `media_positions` is annotated `torch.LongTensor`, but every caller
passes one row of a grid's host list (`grid.tolist()`); `frame_times` is annotated
`torch.Tensor`, and its caller passes a schedule made in host memory: the call sites say what
they hold. `frame_count` is not annotated, and receives its caller's parameter: what that
caller's callers pass (a host schedule) decides it."""

import torch


def media_positions(size: torch.LongTensor, merge: int) -> torch.Tensor:
    frames = size[0] // merge
    return torch.arange(frames)


def token_positions(lengths: torch.LongTensor) -> torch.Tensor:
    return torch.arange(lengths[0])


def frame_times(schedule: torch.Tensor) -> list:
    return [schedule[i].item() for i in range(len(schedule))]


def frame_count(schedule) -> int:
    return int(schedule.sum().item())


def frame_budget(schedule: torch.Tensor) -> int:
    return frame_count(schedule)


def media_schedule(frames: int) -> list:
    frame_budget(torch.linspace(0.0, 1.0, frames))
    return frame_times(torch.linspace(0.0, 1.0, frames))
