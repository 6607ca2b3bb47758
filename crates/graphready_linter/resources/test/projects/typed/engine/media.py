"""Positions for media. `media_positions` is annotated `torch.LongTensor`, but every caller
passes one row of a grid's host list (`grid.tolist()`); `frame_times` is annotated
`torch.Tensor`, and its caller passes a schedule made in host memory: the call sites say what
they hold. `frame_count` is not annotated, and receives its caller's parameter: what that
caller's callers pass (a host schedule) decides it. `last_frame` walks a host table by
recursion, passing its own parameter on unchanged: the recursive call says nothing new, and its
one other caller passes the table in host memory."""

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


def last_frame(next_frame: torch.Tensor, frame: int) -> int:
    if next_frame[frame] == -1:
        return frame
    return last_frame(next_frame, int(next_frame[frame]))


def media_schedule(frames: int) -> list:
    frame_budget(torch.linspace(0.0, 1.0, frames))
    last_frame(torch.arange(frames) - 1, 0)
    return frame_times(torch.linspace(0.0, 1.0, frames))
