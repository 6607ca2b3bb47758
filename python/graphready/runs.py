"""Running the step: the bucket's context, judged runs (eager and replay) that start from the same
inputs and state, bit-exact comparison, new inputs, pad-row fills and timing. Imports torch."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from .compare import compare_flat, flatten
from .frames import FrameFilter
from .state import StateKeeper
from .target import ProbeTarget
from .watch import CaptureStatus

SEED = 1234


class PhaseFailed(Exception):
    """Raised by a phase that cannot continue; the message is the phase's message."""


@dataclass
class Context:
    bucket: int
    factory: Callable[..., Any]
    filt: FrameFilter
    status: CaptureStatus
    # In a re-run after a device assert: the poisoning phase that runs without poisoning.
    unpoisoned: Optional[str] = None
    target: Optional[ProbeTarget] = None
    saved: list = field(default_factory=list)
    state: Optional[StateKeeper] = None
    history: Any = None
    graph: Any = None
    static_out: Any = None
    outcomes: dict = field(default_factory=dict)
    poisoned: Optional[str] = None
    # Several ranks: this rank's `dist.Group`; each phase's statuses, one per rank (one alone
    # without a group); what the rank is doing (`ranks.Activity`).
    group: Any = None
    by_rank: dict = field(default_factory=dict)
    activity: Any = None

    def poisons(self, phase: str) -> bool:
        """Whether `phase` fills memory or pad rows with poison in this run."""
        return self.unpoisoned != phase


def is_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


# ---------------------------------------------------------------- inputs and state


def restore_inputs(ctx: Context, values: list) -> None:
    for dst, src in zip(ctx.target.inputs, values):
        if is_tensor(dst):
            dst.copy_(src)


def prepare(ctx: Context, values: list) -> None:
    """Inputs set to `values`, state restored to its snapshot (then `reset()`): every judged run
    starts here."""
    with torch.no_grad():
        restore_inputs(ctx, values)
        if ctx.state is not None:
            ctx.state.restore()


def storage_key(t: torch.Tensor) -> Optional[tuple]:
    """The identity of a tensor's storage (device and address), or None for an empty one."""
    try:
        storage = t.untyped_storage()
    except Exception:  # noqa: BLE001 - tensors without storage (meta, some subclasses)
        return None
    ptr = storage.data_ptr()
    if ptr == 0 or storage.nbytes() == 0:
        return None
    index = t.device.index if t.device.index is not None else -1
    return (t.device.type, index, ptr)


def snapshot_storage(root: torch.Tensor):
    return root.untyped_storage().clone()


def restore_storage(root: torch.Tensor, saved) -> None:
    root.untyped_storage().copy_(saved)


# ---------------------------------------------------------------- judged runs


def snapshot_outputs(out: Any) -> list:
    return [(p, v.detach().clone() if is_tensor(v) else v) for p, v in flatten(out)]


def eager(ctx: Context, values: list) -> list:
    prepare(ctx, values)
    torch.manual_seed(SEED)
    out = ctx.target.step(*ctx.target.inputs)
    torch.cuda.synchronize()
    return snapshot_outputs(out)


def replay(ctx: Context, graph, static_out, values: list) -> list:
    prepare(ctx, values)
    torch.manual_seed(SEED)
    graph.replay()
    torch.cuda.synchronize()
    return snapshot_outputs(static_out)


def tensor_compare(a: torch.Tensor, b: torch.Tensor) -> dict:
    """Bit-exact comparison of two tensors (NaNs with the same bits are equal)."""
    total = a.numel()
    if a.shape != b.shape or a.dtype != b.dtype:
        return {
            "equal": False,
            "mismatched": total,
            "total": total,
            "detail": f"shape/dtype {tuple(a.shape)} {a.dtype} vs {tuple(b.shape)} {b.dtype}",
        }
    if total == 0:
        return {"equal": True, "mismatched": 0, "total": 0}
    b = b.to(a.device)
    differs = _element_differs(a, b)
    mismatched = int(differs.sum())
    if mismatched == 0:
        return {"equal": True, "mismatched": 0, "total": total}
    first = list(_unravel(int(differs.nonzero()[0, 0]), tuple(a.shape)))
    max_diff = None
    if a.is_floating_point():
        diff = (a.double() - b.double()).abs().reshape(-1)[differs]
        finite = diff[torch.isfinite(diff)]
        if finite.numel():
            max_diff = float(finite.max())
    elif not a.is_complex() and a.dtype != torch.bool:
        max_diff = float((a.long() - b.long()).abs().max())
    return {"equal": False, "mismatched": mismatched, "total": total, "max_abs_diff": max_diff, "first_index": first}


def _element_differs(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Per element (flattened): whether the bytes differ."""
    total = a.numel()
    ab = a.detach().contiguous().reshape(-1).view(torch.uint8).reshape(total, -1)
    bb = b.detach().contiguous().reshape(-1).view(torch.uint8).reshape(total, -1)
    return (ab != bb).any(dim=1)


def row_differs(a: torch.Tensor, b: torch.Tensor, dim: int) -> list[bool]:
    """Per index of `dim`: whether any byte of that slice differs."""
    rows = a.shape[dim]
    if a.numel() == 0:
        return [False] * rows
    per_element = _element_differs(a.movedim(dim, 0), b.to(a.device).movedim(dim, 0))
    return per_element.reshape(rows, -1).any(dim=1).tolist()


def _unravel(index: int, shape: tuple) -> tuple:
    out = []
    for dim in reversed(shape):
        out.append(index % dim)
        index //= dim
    return tuple(reversed(out))


def compare(name: str, reference: list, candidate: list) -> dict:
    return compare_flat(name, reference, candidate, tensor_compare, is_tensor)


def new_inputs(ctx: Context) -> list:
    target = ctx.target
    if target.make_inputs is not None:
        # Fork the RNG: after the harness's own seeding, make_inputs() could otherwise draw
        # exactly the values the factory drew for the capture inputs.
        with torch.random.fork_rng(devices=[torch.cuda.current_device()]):
            torch.manual_seed(SEED + 7919 * ctx.bucket + 1)
            values = list(target.make_inputs())
    else:
        gen = torch.Generator(device="cpu").manual_seed(SEED + ctx.bucket)
        values = []
        for x in ctx.saved:
            if not is_tensor(x):
                values.append(x)
            elif x.is_floating_point():
                values.append(torch.randn(x.shape, generator=gen).to(x.dtype).to(x.device))
            else:
                perm = torch.randperm(x.numel(), generator=gen).to(x.device)
                values.append(x.reshape(-1)[perm].reshape(x.shape))
    if len(values) != len(target.inputs):
        raise PhaseFailed(f"make_inputs() returned {len(values)} values for {len(target.inputs)} inputs")
    for i, (new, old) in enumerate(zip(values, target.inputs)):
        if is_tensor(old) and (not is_tensor(new) or new.shape != old.shape or new.dtype != old.dtype):
            raise PhaseFailed(f"make_inputs()[{i}] does not match the shape and dtype of inputs[{i}]")
    return values


# ---------------------------------------------------------------- pad rows


def dtype_kind(t: torch.Tensor) -> str:
    if t.dtype == torch.bool:
        return "bool"
    if t.is_floating_point() or t.is_complex():
        return "float"
    return "int"


def pad_pattern(t: torch.Tensor, values: list) -> torch.Tensor:
    """The symbolic fill values of `rows.fill_values` as a 1-d tensor of `t`'s dtype."""
    if t.is_floating_point() or t.is_complex():
        big = torch.finfo(t.dtype).max
        table = {"nan": math.nan, "max": big, "-max": -big}
        concrete = [table.get(v, v) if isinstance(v, str) else v for v in values]
        wide = torch.float64 if t.dtype in (torch.float64, torch.complex128) else torch.float32
    else:
        concrete = values
        wide = torch.bool if t.dtype == torch.bool else torch.int64
    return torch.tensor(concrete, dtype=wide).to(dtype=t.dtype).to(t.device)


def fill_pad_rows(t: torch.Tensor, dim: int, real: int, pattern: torch.Tensor) -> None:
    """Rows `[real, size)` of `t` along `dim` cycle through `pattern`."""
    pad = t.narrow(dim, real, t.shape[dim] - real)
    count = pad.numel()
    if count == 0:
        return
    repeats = -(-count // pattern.numel())
    pad.copy_(pattern.repeat(repeats)[:count].reshape(pad.shape))


# ---------------------------------------------------------------- timing


def median_seconds(fn: Callable[[], Any], iterations: int, before: Optional[Callable[[], Any]] = None) -> float:
    """Median wall time of `fn` (synchronised); `before` runs untimed ahead of each call."""
    times = []
    for _ in range(iterations):
        if before is not None:
            before()
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
