"""The probe phases for one bucket. Each phase's result is sent as soon as it is known."""

from __future__ import annotations

import statistics
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

from . import events as ev
from .compare import compare_flat, flatten
from .frames import FrameFilter, earliest_exception, traceback_user_stack
from .target import ProbeTarget, call_factory
from .watch import (
    CaptureStatus,
    CaptureWatch,
    Coverage,
    EmptyTracker,
    FactoryCalls,
    ProfilerLabels,
    SyncScan,
    capturing_as_in_a_graph,
)

SEED = 1234

RUNTIME_SYNC_CALLS = {
    "cudaStreamSynchronize",
    "cudaDeviceSynchronize",
    "cudaEventSynchronize",
    "cudaMemcpy",
    "cudaMemcpy2D",
    "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol",
    "cuStreamSynchronize",
    "cuCtxSynchronize",
    "cuEventSynchronize",
    "cuMemcpyDtoH",
    "cuMemcpyHtoD",
}
RUNTIME_ALLOC_CALLS = {"cudaMalloc", "cudaHostAlloc", "cudaMallocHost", "cudaMallocManaged", "cuMemAlloc"}


class PhaseFailed(Exception):
    """Raised by a phase that cannot continue; the message is the phase's message."""


@dataclass
class Context:
    bucket: int
    factory: Callable[..., Any]
    filt: FrameFilter
    status: CaptureStatus
    target: Optional[ProbeTarget] = None
    saved: list = field(default_factory=list)
    graph: Any = None
    static_out: Any = None
    outcomes: dict = field(default_factory=dict)
    poisoned: Optional[str] = None


# ---------------------------------------------------------------- helpers


def _is_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor)


def _restore(ctx: Context, values: list) -> None:
    for dst, src in zip(ctx.target.inputs, values):
        if _is_tensor(dst):
            dst.copy_(src)


def _snapshot(out: Any) -> list:
    return [(p, v.detach().clone() if _is_tensor(v) else v) for p, v in flatten(out)]


def _eager(ctx: Context, values: list) -> list:
    _restore(ctx, values)
    torch.manual_seed(SEED)
    out = ctx.target.step(*ctx.target.inputs)
    torch.cuda.synchronize()
    return _snapshot(out)


def _replay(ctx: Context, graph, static_out, values: list) -> list:
    _restore(ctx, values)
    torch.manual_seed(SEED)
    graph.replay()
    torch.cuda.synchronize()
    return _snapshot(static_out)


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
    ab = a.detach().contiguous().reshape(-1).view(torch.uint8).reshape(total, -1)
    bb = b.detach().contiguous().reshape(-1).view(torch.uint8).reshape(total, -1)
    differs = (ab != bb).any(dim=1)
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


def _unravel(index: int, shape: tuple) -> tuple:
    out = []
    for dim in reversed(shape):
        out.append(index % dim)
        index //= dim
    return tuple(reversed(out))


def _compare(name: str, reference: list, candidate: list) -> dict:
    return compare_flat(name, reference, candidate, tensor_compare, _is_tensor)


def _new_inputs(ctx: Context) -> list:
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
            if not _is_tensor(x):
                values.append(x)
            elif x.is_floating_point():
                values.append(torch.randn(x.shape, generator=gen).to(x.dtype).to(x.device))
            else:
                perm = torch.randperm(x.numel(), generator=gen).to(x.device)
                values.append(x.reshape(-1)[perm].reshape(x.shape))
    if len(values) != len(target.inputs):
        raise PhaseFailed(f"make_inputs() returned {len(values)} values for {len(target.inputs)} inputs")
    for i, (new, old) in enumerate(zip(values, target.inputs)):
        if _is_tensor(old) and (not _is_tensor(new) or new.shape != old.shape or new.dtype != old.dtype):
            raise PhaseFailed(f"make_inputs()[{i}] does not match the shape and dtype of inputs[{i}]")
    return values


def _median_seconds(fn: Callable[[], Any], iterations: int) -> float:
    times = []
    for _ in range(iterations):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# ---------------------------------------------------------------- phases


def phase_setup(ctx: Context, result: dict) -> None:
    torch.manual_seed(SEED + ctx.bucket)
    ctx.target = call_factory(ctx.factory, ctx.bucket)
    ctx.saved = [x.detach().clone() if _is_tensor(x) else x for x in ctx.target.inputs]
    result["details"] = {
        "name": ctx.target.name,
        "inputs": [
            {"shape": list(x.shape), "dtype": str(x.dtype), "device": str(x.device), "pinned": x.device.type == "cpu" and x.is_pinned()}
            if _is_tensor(x)
            else {"python": type(x).__name__}
            for x in ctx.target.inputs
        ],
    }


def phase_warmup(ctx: Context, result: dict) -> None:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(max(1, ctx.target.warmup_steps)):
            _restore(ctx, ctx.saved)
            ctx.target.step(*ctx.target.inputs)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    result["details"] = {"steps": max(1, ctx.target.warmup_steps)}


def phase_sync_scan(ctx: Context, result: dict) -> None:
    log = ev.EventLog()
    result["_log"] = log
    scan = SyncScan(ctx.filt, log)
    coverage = Coverage(ctx.filt)
    _restore(ctx, ctx.saved)
    torch.cuda.synchronize()
    try:
        with capturing_as_in_a_graph(), coverage.active(), scan.active():
            ctx.target.step(*ctx.target.inputs)
    finally:
        result["coverage"] = coverage.to_json()
        result["details"] = {"sync_warnings_outside_the_step": scan.ignored}
    torch.cuda.synchronize()
    if len(log):
        result["status"] = "fail"
        syncs = [e for e in log.events() if e["kind"] == ev.SYNC]
        copies = [e for e in log.events() if e["kind"] == ev.PAGEABLE_COPY]
        parts = []
        if syncs:
            parts.append(f"{sum(e['count'] for e in syncs)} host synchronisation(s) at {len(syncs)} place(s)")
        if copies:
            parts.append(f"{sum(e['count'] for e in copies)} copy(ies) through pageable host memory")
        result["message"] = "; ".join(parts)


def phase_profiler_scan(ctx: Context, result: dict) -> None:
    from torch.profiler import ProfilerActivity, profile, record_function

    log = ev.EventLog()
    result["_log"] = log
    labels = ProfilerLabels(ctx.filt)
    _restore(ctx, ctx.saved)
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the profiler's own notices are not the user's business
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with record_function("gr-step"):
                with capturing_as_in_a_graph(), labels.active():
                    ctx.target.step(*ctx.target.inputs)
        torch.cuda.synchronize()
    runtime_events = _attribute_runtime_calls(prof.events(), labels)
    for kind, name, stack in runtime_events:
        if kind == ev.RUNTIME_SYNC:
            message = f"{name} blocks the host (found by the profiler)"
        else:
            message = f"{name} allocates memory during the step"
        if not stack:
            message += "; not attributed to a user frame"
        log.add(kind, name, stack, message)
    syncs = [e for e in log.events() if e["kind"] == ev.RUNTIME_SYNC]
    result["details"] = {"labelled_locations": len(labels.locations)}
    if syncs:
        result["status"] = "fail"
        result["message"] = f"{sum(e['count'] for e in syncs)} synchronising CUDA runtime call(s)"


def _normalise_runtime_name(name: str) -> str:
    for suffix in ("_v2", "_v3", "_ptsz", "_ptds", "_v3020", "_v7000"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def _attribute_runtime_calls(events, labels: ProfilerLabels) -> list:
    """(kind, name, stack) for each sync/alloc runtime call inside the step window."""
    spans, window, candidates = [], None, []
    for evt in events:
        name = evt.name
        tr = evt.time_range
        if name == "gr-step":
            window = (tr.start, tr.end)
        elif name.startswith(ProfilerLabels.PREFIX):
            spans.append((tr.start, tr.end, int(name[len(ProfilerLabels.PREFIX):])))
        else:
            base = _normalise_runtime_name(name)
            if base in RUNTIME_SYNC_CALLS:
                candidates.append((ev.RUNTIME_SYNC, base, tr.start, tr.end))
            elif base in RUNTIME_ALLOC_CALLS:
                candidates.append((ev.RUNTIME_ALLOC, base, tr.start, tr.end))
    out = []
    for kind, name, start, end in candidates:
        if window is not None and not (window[0] <= start <= window[1]):
            continue
        best = None
        for s, e, index in spans:
            if s <= start and end <= e and (best is None or e - s < best[1] - best[0]):
                best = (s, e, index)
        out.append((kind, name, labels.locations[best[2]] if best else []))
    return out


def phase_allocations(ctx: Context, result: dict) -> None:
    log = ev.EventLog()
    result["_log"] = log
    _restore(ctx, ctx.saved)
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()
    with FactoryCalls(ctx.filt, log):
        out = ctx.target.step(*ctx.target.inputs)
    torch.cuda.synchronize()
    after = torch.cuda.memory_stats()
    del out

    def delta(key: str) -> int:
        return int(after.get(key, 0) - before.get(key, 0))

    result["allocations"] = {
        "count": delta("allocation.all.allocated"),
        "bytes": delta("allocated_bytes.all.allocated"),
        "segments": delta("segment.all.allocated"),
    }


def phase_capture(ctx: Context, result: dict) -> None:
    log = ev.EventLog()
    result["_log"] = log
    watch = CaptureWatch(ctx.filt, ctx.status)
    graph = torch.cuda.CUDAGraph()
    _restore(ctx, ctx.saved)
    torch.cuda.synchronize()
    error: Optional[BaseException] = None
    out = None
    try:
        with torch.cuda.graph(graph):
            with watch.active():
                out = ctx.target.step(*ctx.target.inputs)
    except Exception as exc:  # noqa: BLE001 - the failure is the result
        error = exc
    result["details"] = {"status_query": ctx.status.source, "ops_seen": watch.ops_seen}
    if error is None:
        ctx.graph, ctx.static_out = graph, out
        return
    result["status"] = "fail"
    result["capture_error"] = f"{type(error).__name__}: {error}".strip()[:2000]
    first = watch.first
    if first is not None:
        how = "raised" if first["how"] == "raised" else "invalidated the capture"
        message = f"{first['what']} {how}"
        if first["error"]:
            message += f": {first['error'].splitlines()[0]}"
        log.add(ev.CAPTURE_BREAK, first["what"], first["stack"], message)
    else:
        root = earliest_exception(error)
        stack = traceback_user_stack(root.__traceback__, ctx.filt)
        log.add(ev.CAPTURE_BREAK, type(root).__name__, stack, str(root).splitlines()[0] if str(root) else "")
    result["message"] = log.events()[0]["message"]
    _drop_failed_graph(graph)


def _drop_failed_graph(graph) -> None:
    try:
        graph.reset()
    except Exception:  # noqa: BLE001 - best effort; the graph is unusable anyway
        pass
    torch.cuda.synchronize()


def phase_replay(ctx: Context, result: dict) -> None:
    reference = _eager(ctx, ctx.saved)
    again = _eager(ctx, ctx.saved)
    determinism = _compare("eager vs eager (same inputs)", reference, again)
    same = _compare("replay vs eager (capture inputs)", reference, _replay(ctx, ctx.graph, ctx.static_out, ctx.saved))
    new_values = _new_inputs(ctx)
    new_reference = _eager(ctx, new_values)
    mutated = _compare("replay vs eager (new inputs copied into the static buffers)", new_reference, _replay(ctx, ctx.graph, ctx.static_out, new_values))
    _restore(ctx, ctx.saved)
    result["comparisons"] = [determinism, same, mutated]
    notes = []
    if all(not _is_tensor(a) or torch.equal(a.cpu(), b.cpu()) for a, b in zip(ctx.saved, new_values)):
        notes.append("the new inputs equal the capture inputs")
    elif _compare("", reference, new_reference)["equal"]:
        notes.append("new inputs gave the same eager output, so frozen host values cannot show here")
    failed = [c for c in (same, mutated) if not c["equal"]]
    if not determinism["equal"]:
        notes.insert(0, "eager is not deterministic on the same inputs, so bit-exactness cannot be judged")
        result["status"] = "fail"
    if failed:
        result["status"] = "fail"
        notes.insert(0, f"{failed[0]['name']}: {failed[0]['message']}")
    if notes:
        result["message"] = "; ".join(notes)


def phase_uninitialized(ctx: Context, result: dict) -> None:
    log = ev.EventLog()
    result["_log"] = log
    det = torch.utils.deterministic
    previous = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        det.fill_uninitialized_memory,
    )
    tracker = EmptyTracker(ctx.filt)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.use_deterministic_algorithms(True, warn_only=True)
            det.fill_uninitialized_memory = False
            reference = _eager(ctx, ctx.saved)
            det.fill_uninitialized_memory = True
            _restore(ctx, ctx.saved)
            torch.manual_seed(SEED)
            with tracker:
                out = ctx.target.step(*ctx.target.inputs)
            torch.cuda.synchronize()
            filled = _snapshot(out)
            comparisons = [_compare("eager: uninitialised memory filled vs not", reference, filled)]
            if ctx.graph is not None:
                graph = torch.cuda.CUDAGraph()
                _restore(ctx, ctx.saved)
                torch.cuda.synchronize()
                with torch.cuda.graph(graph):
                    static_out = ctx.target.step(*ctx.target.inputs)
                comparisons.append(_compare("replay vs eager, both with uninitialised memory filled", filled, _replay(ctx, graph, static_out, ctx.saved)))
                graph.reset()
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
        det.fill_uninitialized_memory = previous[2]
    result["comparisons"] = comparisons
    bad = [c for c in comparisons if not c["equal"]]
    if bad:
        result["status"] = "fail"
        found = tracker.unwritten(log)
        where = f"; {found} torch.empty-family buffer(s) left partly unwritten" if found else ""
        result["message"] = f"output depends on uninitialised memory ({bad[0]['message']}){where}"
    _restore(ctx, ctx.saved)


def phase_timing(ctx: Context, result: dict) -> None:
    iterations = max(5, ctx.target.timing_steps)
    _restore(ctx, ctx.saved)
    for _ in range(3):
        ctx.target.step(*ctx.target.inputs)
    eager = _median_seconds(lambda: ctx.target.step(*ctx.target.inputs), iterations)
    timing = {"iterations": iterations, "eager_median_us": eager * 1e6, "replay_median_us": None, "speedup": None}
    if ctx.graph is not None:
        for _ in range(3):
            ctx.graph.replay()
        replay = _median_seconds(ctx.graph.replay, iterations)
        timing["replay_median_us"] = replay * 1e6
        timing["speedup"] = eager / replay if replay > 0 else None
    _restore(ctx, ctx.saved)
    result["timing"] = timing


# (name, function, phases that must have passed)
PHASE_TABLE = (
    ("setup", phase_setup, ()),
    ("warmup", phase_warmup, ("setup",)),
    ("sync_scan", phase_sync_scan, ("setup",)),
    ("profiler_scan", phase_profiler_scan, ("setup",)),
    ("allocations", phase_allocations, ("setup",)),
    ("capture", phase_capture, ("setup", "warmup")),
    ("replay", phase_replay, ("capture",)),
    ("uninitialized", phase_uninitialized, ("setup",)),
    ("timing", phase_timing, ("setup",)),
)


def run_bucket(emitter, factory, bucket: int, filt: FrameFilter, status: CaptureStatus) -> list[dict]:
    ctx = Context(bucket=bucket, factory=factory, filt=filt, status=status)
    results = []
    for name, fn, requires in PHASE_TABLE:
        emitter.send("phase_start", bucket=bucket, phase=name)
        result = _run_phase(ctx, name, fn, requires)
        ctx.outcomes[name] = result["status"]
        emitter.send("phase", bucket=bucket, phase=name, **result)
        results.append(result)
    emitter.send("done", bucket=bucket)
    return results


def _run_phase(ctx: Context, name: str, fn, requires) -> dict:
    result: dict = {"status": "pass", "message": None, "events": []}
    if ctx.poisoned:
        result.update(status="skipped", message=f"the CUDA context is unusable after {ctx.poisoned}")
        return result
    unmet = [r for r in requires if ctx.outcomes.get(r) != "pass"]
    if unmet:
        result.update(status="skipped", message=f"needs {', '.join(unmet)} to pass")
        return result
    started = time.perf_counter()
    try:
        fn(ctx, result)
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
    stack = traceback_user_stack(exc.__traceback__, ctx.filt)
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
        result["message"] += (
            "; the CUDA context is now unusable (a device-side assert is reported asynchronously:"
            " re-run with CUDA_LAUNCH_BLOCKING=1 to tie it to its line)"
        )
