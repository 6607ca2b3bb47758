"""Kernel wrappers with switches their callers decide: a check no caller turns on, an output
buffer no caller passes, a capture-time branch only set-up takes, a switch a caller does
turn on, and a block count and a mode compared with the numbers and names no caller gives."""

import torch
from torch import nn

from engine.batch import ForwardBatch


def _validate(q: torch.Tensor):
    assert (q >= 0).all()


def run_kernel(q: torch.Tensor, check: bool = False, out=None, fast: bool = False):
    if check:
        _validate(q)
    if out is not None:
        out[0] = q.sum().item()
        return out
    if not fast:
        return q
    # A caller turns this on: it runs.
    return q[q.argmax().item()]


def run_wrapped(q: torch.Tensor, scale: float = 1.0, **kwargs):
    # Passes its keywords on: what its callers give decides the switches below.
    return _run_checked(q * scale, **kwargs)


def _run_checked(q: torch.Tensor, check: bool = False, strict: bool = False):
    if check:
        # No caller gives `check`, through the keywords or otherwise.
        assert (q >= 0).all()
    if strict:
        # A caller turns this on through the keywords: it runs.
        assert (q > 0).all()
    return q


def plan_blocks(lens: torch.Tensor, block_num: int = -1, mode: str = "auto"):
    if block_num > 0:
        # No caller passes a block count: the default rules this out.
        return lens.max().item()
    if mode == "prefill":
        # No caller asks for prefill planning either.
        return lens.sum().item()
    if mode != "decode":
        # "auto" is not "decode": this runs.
        return lens.min().item()
    return 0


class KernelLayer(nn.Module):
    def forward(self, q: torch.Tensor) -> torch.Tensor:
        plan_blocks(q)
        plan_blocks(q, mode="auto")
        q = run_kernel(mask_rows(q, q > 0))
        q = run_wrapped(q)
        q = run_wrapped(q, 2.0, strict=True)
        return run_kernel(q, fast=True)


class Planner:
    def plan(self, batch: ForwardBatch, in_capture: bool = False):
        if in_capture:
            # Only the capture set-up passes `in_capture=True`.
            self.max_len = batch.seq_lens.max().item()
        return batch

    def bound(self, batch: ForwardBatch, in_capture: bool = False):
        # The same in a conditional expression: the device read is the capture set-up's.
        return batch.seq_lens.max().item() if in_capture else self.max_len

    def capture_graphs(self, batch: ForwardBatch):
        self.plan(batch, in_capture=True)
        self.bound(batch, in_capture=True)
        self.prepare(batch, in_capture=True)

    def replay(self, batch: ForwardBatch):
        self.plan(batch)
        self.bound(batch)
        self.prepare(batch)
        self.graph.replay()

    def prepare(self, batch: ForwardBatch, in_capture: bool = False):
        # Passes its own flag on: per step it is the default, whatever the call sites say.
        return self.lens_for(batch, in_capture=in_capture)

    def lens_for(self, batch: ForwardBatch, in_capture: bool = False):
        # True only while the graphs are captured, by its name.
        return batch.seq_lens.cpu() if in_capture else None


def run_wrapped_positional(*args):
    # Positions only: nothing here reaches `run_wrapped`'s `**kwargs`.
    return run_wrapped(*args)


def mask_rows(logits: torch.Tensor, mask: torch.Tensor, indices=None):
    if isinstance(indices, list) or isinstance(indices, torch.Tensor):
        # No caller passes `indices`: `None` is neither.
        indices = torch.tensor(indices, device=logits.device)
        return logits[indices] * mask[indices]
    return logits * mask
