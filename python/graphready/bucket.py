"""Running one bucket: every phase of `PHASE_TABLE` in order, each result sent as soon as it is
known. A phase that needs an earlier one which did not pass is skipped with the reason.

With several ranks (`group`), every rank runs every phase and the ranks agree after each one
(on the probe's gloo group): a phase runs only where the phases it needs passed on every rank,
so no rank replays a graph whose all-reduce the others never join, and a device assert on one
rank stops the CUDA work of all of them.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Optional, Sequence

import torch

from . import events as ev
from . import ranks as rk
from .frames import FrameFilter, traceback_stack
from .phases import PHASE_TABLE, PhaseFailed, phase_sync_scan
from .protocol import POISONING_PHASES
from .runs import Context
from .watch import CaptureStatus

# Phases a re-run needs before the phase it starts from.
RERUN_PREREQUISITES = ("setup", "warmup", "capture")
# The timed loops run without walking the stack at every collective.
UNLOCATED_PHASES = ("timing",)


def run_bucket(
    emitter,
    factory,
    bucket: int,
    filt: FrameFilter,
    status: CaptureStatus,
    start: Optional[str] = None,
    trace: Sequence[str] = (),
    group: Any = None,
    activity: Optional[rk.Activity] = None,
) -> list[dict]:
    """Every phase of one bucket. `start`: a re-run after a device assert in that (poisoning)
    phase: only the prerequisites and the phases from `start` on run, and `start` itself runs
    without poisoning. `group`: this rank's `dist.Group` when several ranks run together."""
    activity = activity if activity is not None else rk.Activity()
    ctx = Context(bucket=bucket, factory=factory, filt=filt, status=status, unpoisoned=start, group=group, activity=activity)
    names = [name for name, _, _ in PHASE_TABLE]
    first = names.index(start) if start in names else 0
    results = []
    try:
        for index, (name, fn, requires) in enumerate(PHASE_TABLE):
            activity.enter(bucket, name)
            activity.locate = name not in UNLOCATED_PHASES
            emitter.send("phase_start", bucket=bucket, phase=name)
            if index < first and name not in RERUN_PREREQUISITES:
                result = {"status": "skipped", "message": f"not re-run (the re-run starts at {start})", "events": []}
            else:
                result = _run_phase(ctx, name, fn, requires, trace)
            if group is not None:
                result["collectives"] = activity.phase_counts(name)
            emitter.send("phase", bucket=bucket, phase=name, **result)
            _agree(ctx, name, result["status"])
            results.append(result)
    finally:
        activity.locate = True
        if ctx.history is not None:
            ctx.history.stop()
    emitter.send("done", bucket=bucket)
    return results


def _agree(ctx: Context, name: str, status: str) -> None:
    """Record the phase's outcome; with several ranks, everyone's (the same on every rank)."""
    if ctx.group is None:
        ctx.by_rank[name] = [status]
        ctx.outcomes[name] = status
        return
    views = ctx.group.agree((status, ctx.poisoned))
    ctx.by_rank[name] = [v[0] for v in views]
    ctx.outcomes[name] = rk.group_outcome(ctx.by_rank[name])
    if ctx.poisoned is None:
        ctx.poisoned = rk.first_poisoned([v[1] for v in views])


def _unmet(ctx: Context, requires) -> Optional[str]:
    if ctx.group is not None:
        return rk.unmet(requires, ctx.by_rank)
    missing = [r for r in requires if ctx.outcomes.get(r) != "pass"]
    return f"needs {', '.join(missing)} to pass" if missing else None


def _run_phase(ctx: Context, name: str, fn, requires, trace: Sequence[str]) -> dict:
    result: dict = {"status": "pass", "message": None, "events": []}
    if ctx.poisoned:
        result.update(status="skipped", message=f"the CUDA context is unusable after {ctx.poisoned}")
        return result
    why = _unmet(ctx, requires)
    if why:
        result.update(status="skipped", message=why)
        return result
    started = time.perf_counter()
    try:
        if fn is phase_sync_scan:
            fn(ctx, result, trace)
        else:
            fn(ctx, result)
        # A device assert is reported asynchronously: surface it in the phase that caused it.
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - every failure is recorded, never lost
        _record_error(ctx, name, result, exc)
    log = result.pop("_log", None)
    if log is not None:
        result["events"] = log.events() + result["events"]
    result["seconds"] = time.perf_counter() - started
    return result


def _record_error(ctx: Context, name: str, result: dict, exc: BaseException) -> None:
    if isinstance(exc, PhaseFailed):
        result.update(status="error", message=str(exc))
        return
    stack = traceback_stack(exc.__traceback__, ctx.filt)
    text = f"{type(exc).__name__}: {exc}".strip()
    log = result.get("_log") or ev.EventLog()
    result["_log"] = log
    log.add(ev.ERROR, type(exc).__name__, stack, text.splitlines()[0][:500])
    result.update(status="error", message=text.splitlines()[0][:500])
    result["traceback"] = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
    try:
        torch.cuda.synchronize()
    except Exception as sticky:  # noqa: BLE001 - a device assert poisons the context
        ctx.poisoned = f"{name} ({str(sticky).splitlines()[0][:200]})"
        result["context_lost"] = True
        poisoning = name in POISONING_PHASES and ctx.poisons(name)
        result["poisoning"] = poisoning
        if poisoning:
            result["message"] += (
                "; the CUDA context is now unusable; this phase poisons memory on purpose, so the"
                " probe re-runs it without poisoning to tell whether the poison or the step caused it"
            )
        else:
            result["message"] += (
                "; the CUDA context is now unusable: the step itself triggered it (nothing was"
                " poisoned in this phase; CUDA_LAUNCH_BLOCKING=1 ties it to its line)"
            )
