"""Kernels picked at run time and passed around as values: a tuple a helper returns, module
globals assigned under `global`, a nested tuple unpacked by the caller, and a parameter the
callee calls."""

import functools

import torch
from torch import nn

_pad_fn = None
_unpad_fn = None


def _unpad(hidden: torch.Tensor, mask: torch.Tensor):
    lengths = mask.sum(dim=-1)
    longest = lengths.max().item()
    return hidden[:, :longest], lengths


def _pad(hidden: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    return hidden


def _check_kernels(hidden: torch.Tensor) -> bool:
    # Returned with the kernels but never called through them: positions are kept.
    return bool(hidden.isnan().any())


def _pick_kernels(name: str):
    pad, unpad = _pad, _unpad
    return pad, unpad, _check_kernels


def load_kernels(name: str):
    global _pad_fn, _unpad_fn
    if _unpad_fn is None:
        _pad_fn, _unpad_fn, _ = _pick_kernels(name)
    return (_pad_fn, _unpad_fn), name


@functools.lru_cache(maxsize=8)
def _window(size: int) -> int:
    # Memoised: computed once per size, in the warm-up before any capture.
    return int(torch.ones(size, device="cuda").sum().item())


def _unpad_inputs(q: torch.Tensor, mask: torch.Tensor, unpad_func):
    return unpad_func(q, mask)


class PaddedAttention(nn.Module):
    def forward(self, q: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        (pad_fn, unpad_fn), _ = load_kernels("flash")
        q, lengths = _unpad_inputs(q, mask, unpad_fn)
        q = q[:, : _window(64)]
        return pad_fn(q, lengths)
