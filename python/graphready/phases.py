"""The probe phases for one bucket. Each phase's result is sent as soon as it is known.

Every judged run (scans, capture, replay, row isolation, uninitialised memory, timing) starts from
the same inputs and the same state: `runs.prepare` restores the state snapshotted in the warm-up.
"""

from __future__ import annotations

import gc
import time
import warnings
from typing import Optional, Sequence

import torch

from . import events as ev
from . import rows as rw
from .frames import earliest_exception, has_code_frame, live_stack, pick_location, traceback_stack
from .ranks import HOST_COLLECTIVES, host_collective_message
from .runs import (
    SEED,
    Context,
    PhaseFailed,
    compare,
    dtype_kind,
    eager,
    fill_pad_rows,
    is_tensor,
    median_seconds,
    new_inputs,
    pad_pattern,
    prepare,
    replay,
    row_differs,
    snapshot_outputs,
    tensor_compare,
)
from .state import describe_state
from .statewatch import AllocationHistory, discover_state
from .target import call_factory
from .verdicts import not_reproducible, replay_verdict, uninitialized_verdict
from .watch import (
    CaptureWatch,
    Coverage,
    EmptyTracker,
    FactoryCalls,
    ProfilerLabels,
    SyncScan,
    capturing_as_in_a_graph,
)

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


# ---------------------------------------------------------------- phases


def phase_setup(ctx: Context, result: dict) -> None:
    torch.manual_seed(SEED + ctx.bucket)
    ctx.history = AllocationHistory()
    ctx.history.start()  # until the warm-up found the state: where was it allocated?
    ctx.target = call_factory(ctx.factory, ctx.bucket)
    ctx.saved = [x.detach().clone() if is_tensor(x) else x for x in ctx.target.inputs]
    result["details"] = {
        "name": ctx.target.name,
        "inputs": [
            {"shape": list(x.shape), "dtype": str(x.dtype), "device": str(x.device), "pinned": x.device.type == "cpu" and x.is_pinned()}
            if is_tensor(x)
            else {"python": type(x).__name__}
            for x in ctx.target.inputs
        ],
    }


def phase_warmup(ctx: Context, result: dict) -> None:
    """Eager steps on a side stream, as PyTorch requires before capture. The first runs under a
    dispatch mode that finds the step's state; it is snapshotted, and every later step (warm-up
    or judged) starts from that snapshot."""
    steps = max(1, ctx.target.warmup_steps)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        prepare(ctx, ctx.saved)
        try:
            keeper, _ = discover_state(ctx.target, ctx.target.inputs, ctx.filt, ctx.history)
        finally:
            ctx.history.stop()
        keeper.snapshot()
        ctx.state = keeper
        for _ in range(steps - 1):
            prepare(ctx, ctx.saved)
            ctx.target.step(*ctx.target.inputs)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    summary = keeper.summary(lambda f: f.to_json(), pick_location)
    if ctx.history.error:
        summary["sites_unavailable"] = ctx.history.error
    result["state"] = summary
    result["details"] = {"steps": steps}
    result["message"] = describe_state(summary)


def phase_sync_scan(ctx: Context, result: dict, trace: Sequence[str] = ()) -> None:
    log = ev.EventLog()
    result["_log"] = log
    scan = SyncScan(ctx.filt, log)
    coverage = Coverage(ctx.filt, trace)
    prepare(ctx, ctx.saved)
    torch.cuda.synchronize()

    def host_collective(name: str) -> None:
        if name in HOST_COLLECTIVES:
            log.add(ev.HOST_COLLECTIVE, f"torch.distributed.{name}", live_stack(ctx.filt), host_collective_message(name))

    if ctx.activity is not None:
        ctx.activity.listener = host_collective
    try:
        with capturing_as_in_a_graph(), coverage.active(), scan.active():
            ctx.target.step(*ctx.target.inputs)
    finally:
        if ctx.activity is not None:
            ctx.activity.listener = None
        result["coverage"] = coverage.to_json()
        result["details"] = {"sync_warnings_outside_the_step": scan.ignored}
    torch.cuda.synchronize()
    if len(log):
        result["status"] = "fail"
        syncs = [e for e in log.events() if e["kind"] == ev.SYNC]
        copies = [e for e in log.events() if e["kind"] == ev.PAGEABLE_COPY]
        hosts = [e for e in log.events() if e["kind"] == ev.HOST_COLLECTIVE]
        parts = []
        if hosts:
            parts.append(f"{sum(e['count'] for e in hosts)} host collective(s) at {len(hosts)} place(s)")
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
    prepare(ctx, ctx.saved)
    torch.cuda.synchronize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the profiler's own notices are not the user's business
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            with record_function("gr-step"):
                with capturing_as_in_a_graph(), labels.active():
                    ctx.target.step(*ctx.target.inputs)
        torch.cuda.synchronize()
    for kind, name, stack in _attribute_runtime_calls(prof.events(), labels):
        if kind == ev.RUNTIME_SYNC:
            message = f"{name} blocks the host (found by the profiler)"
        else:
            message = f"{name} allocates memory during the step"
        if not has_code_frame(stack):
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
    prepare(ctx, ctx.saved)
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
    prepare(ctx, ctx.saved)
    # What torch.cuda.graph does on entry, done first so the memory counted below is the graph's.
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    before = torch.cuda.memory_stats()
    error: Optional[BaseException] = None
    out = None
    started = time.perf_counter()
    try:
        with torch.cuda.graph(graph):
            with watch.active():
                out = ctx.target.step(*ctx.target.inputs)
    except Exception as exc:  # noqa: BLE001 - the failure is the result
        error = exc
    seconds = time.perf_counter() - started
    result["details"] = {"status_query": ctx.status.source, "ops_seen": watch.ops_seen}
    if error is None:
        after = torch.cuda.memory_stats()
        result["graph"] = {
            "capture_seconds": seconds,
            "pool_reserved_bytes": int(after.get("reserved_bytes.all.current", 0) - before.get("reserved_bytes.all.current", 0)),
            "pool_allocated_bytes": int(after.get("allocated_bytes.all.current", 0) - before.get("allocated_bytes.all.current", 0)),
        }
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
        stack = traceback_stack(root.__traceback__, ctx.filt)
        log.add(ev.CAPTURE_BREAK, type(root).__name__, stack, str(root).splitlines()[0] if str(root) else "")
    result["message"] = log.events()[0]["message"]
    _drop_failed_graph(graph)


def _drop_failed_graph(graph) -> None:
    try:
        graph.reset()
    except Exception:  # noqa: BLE001 - best effort; the graph is unusable anyway
        pass
    torch.cuda.synchronize()


def _eager_twice(ctx: Context, name: str) -> tuple[list, dict]:
    reference = eager(ctx, ctx.saved)
    return reference, compare(name, reference, eager(ctx, ctx.saved))


def _why_not_reproducible(ctx: Context, determinism: dict) -> str:
    """Tell non-deterministic kernels from unrestored state: do two runs agree with
    deterministic algorithms?"""
    previous = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.use_deterministic_algorithms(True, warn_only=True)
            agreed = _eager_twice(ctx, "eager vs eager, deterministic algorithms")[1]["equal"]
    except Exception:  # noqa: BLE001 - the retry is a diagnosis, never the verdict
        agreed = None
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
    state = len(ctx.state.entries) if ctx.state is not None else 0
    return not_reproducible(determinism, agreed, state)


def phase_replay(ctx: Context, result: dict) -> None:
    reference, determinism = _eager_twice(ctx, "eager vs eager (same inputs, state restored)")
    same = compare("replay vs eager (capture inputs)", reference, replay(ctx, ctx.graph, ctx.static_out, ctx.saved))
    new_values = new_inputs(ctx)
    new_reference = eager(ctx, new_values)
    mutated = compare(
        "replay vs eager (new inputs copied into the static buffers)",
        new_reference,
        replay(ctx, ctx.graph, ctx.static_out, new_values),
    )
    prepare(ctx, ctx.saved)
    result["comparisons"] = [determinism, same, mutated]
    notes = []
    if all(not is_tensor(a) or torch.equal(a.cpu(), b.cpu()) for a, b in zip(ctx.saved, new_values)):
        notes.append("the new inputs equal the capture inputs")
    elif compare("", reference, new_reference)["equal"]:
        notes.append("new inputs gave the same eager output, so frozen host values cannot show here")
    reason = "" if determinism["equal"] else _why_not_reproducible(ctx, determinism)
    status, message = replay_verdict(determinism, same, mutated, reason, notes)
    result["status"] = status
    result["message"] = message


def phase_row_isolation(ctx: Context, result: dict) -> None:
    target, bucket = ctx.target, ctx.bucket
    if target.batch_dim is None:
        result.update(status="skipped", message="not asked for: ProbeTarget(batch_dim=...) turns it on")
        return
    counts = rw.real_row_counts(bucket, target.real_rows)
    if not counts:
        why = "bucket 1 has no pad rows" if bucket == 1 else f"no real_rows count fits bucket {bucket}"
        result.update(status="skipped", message=why)
        return
    shapes = [tuple(x.shape) if is_tensor(x) else None for x in target.inputs]
    positions = rw.batch_positions(shapes, target.batch_dim, bucket)
    if not positions:
        raise PhaseFailed(f"no input has size {bucket} in dimension {target.batch_dim} (ProbeTarget.batch_dim)")
    observed = _observed_values(ctx, positions)
    hostile = ctx.poisons("row_isolation")
    fills = (rw.NEUTRAL, rw.HOSTILE) if hostile else (rw.NEUTRAL, rw.NEUTRAL)
    cases = []
    for real in counts:
        runs = [replay(ctx, ctx.graph, ctx.static_out, _padded(ctx, positions, real, fill, observed)) for fill in fills]
        cases.append({"real_rows": real, "leaks": _leaks(runs[0], runs[1], target.batch_dim, bucket, real)})
    prepare(ctx, ctx.saved)
    status, message = rw.verdict(bucket, cases)
    if not hostile:
        message = "run without hostile pad values: " + message
    result["rows"] = {
        "batch_dim": target.batch_dim,
        "batch_inputs": positions,
        "hostile": hostile,
        "cases": cases,
        "ignored_real_rows": rw.ignored_real_rows(bucket, target.real_rows),
    }
    result.update(status=status, message=message)


def _observed_values(ctx: Context, positions: list) -> dict:
    """The smallest and largest value of each integer batch input over the capture inputs and
    new inputs: integer pad rows take only values like these."""
    new_values = new_inputs(ctx)
    out = {}
    for i in positions:
        if dtype_kind(ctx.saved[i]) != "int":
            continue
        seen = []
        for t in (ctx.saved[i], new_values[i]):
            if t.numel():
                seen += [int(t.min()), int(t.max())]
        out[i] = seen
    return out


def _padded(ctx: Context, positions: list, real: int, fill: str, observed: dict) -> list:
    values = [v.clone() if is_tensor(v) else v for v in ctx.saved]
    for i in positions:
        t = values[i]
        dim = rw.normalise_dim(ctx.target.batch_dim, t.ndim)
        pattern = pad_pattern(t, rw.fill_values(dtype_kind(t), fill, observed.get(i, ())))
        fill_pad_rows(t, dim, real, pattern)
    return values


def _leaks(neutral: list, hostile: list, batch_dim: int, bucket: int, real: int) -> list:
    leaks = []
    for (path, a), (_, b) in zip(neutral, hostile):
        if not is_tensor(a) or not is_tensor(b):
            continue
        dim = rw.normalise_dim(batch_dim, a.ndim) if a.ndim else None
        if dim is not None and a.shape[dim] == bucket:
            rows = rw.leaking_rows(row_differs(a.narrow(dim, 0, real), b.narrow(dim, 0, real), dim))
            if rows:
                leaks.append({"path": path, "rows": rows, "batched": True})
        elif not tensor_compare(a, b)["equal"]:
            leaks.append({"path": path, "rows": [], "batched": False})
    return leaks


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
    poison = ctx.poisons("uninitialized")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.use_deterministic_algorithms(True, warn_only=True)
            det.fill_uninitialized_memory = False
            reference, determinism = _eager_twice(ctx, "eager vs eager, uninitialised memory not filled")
            comparisons = [determinism]
            if determinism["equal"]:
                # A re-run after a device assert leaves memory unfilled: does the step assert anyway?
                det.fill_uninitialized_memory = poison
                prepare(ctx, ctx.saved)
                torch.manual_seed(SEED)
                with tracker:
                    out = ctx.target.step(*ctx.target.inputs)
                torch.cuda.synchronize()
                filled = snapshot_outputs(out)
                label = "filled vs not" if poison else "not filled, again"
                comparisons.append(compare(f"eager: uninitialised memory {label}", reference, filled))
                if ctx.graph is not None:
                    comparisons.append(_filled_replay(ctx, filled, poison))
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
        det.fill_uninitialized_memory = previous[2]
    result["comparisons"] = comparisons
    if determinism["equal"]:
        reason = ""
    else:
        reason = _why_not_reproducible(ctx, determinism)
    unwritten = tracker.unwritten(log) if not all(c["equal"] for c in comparisons[1:]) else 0
    status, message = uninitialized_verdict(determinism, comparisons[1:], reason, unwritten)
    if not poison and status == "pass":
        message = "run without filling uninitialised memory: no error"
    result.update(status=status, message=message)
    prepare(ctx, ctx.saved)


def _filled_replay(ctx: Context, filled: list, poison: bool) -> dict:
    graph = torch.cuda.CUDAGraph()
    prepare(ctx, ctx.saved)
    torch.cuda.synchronize()
    with torch.cuda.graph(graph):
        static_out = ctx.target.step(*ctx.target.inputs)
    label = "both with uninitialised memory filled" if poison else "neither filled"
    comparison = compare(f"replay vs eager, {label}", filled, replay(ctx, graph, static_out, ctx.saved))
    graph.reset()
    return comparison


def phase_timing(ctx: Context, result: dict) -> None:
    """Median eager step and replay; the state is restored (untimed) before each, so many steps
    never run off the end of a cache."""
    iterations = max(5, ctx.target.timing_steps)
    step, inputs = ctx.target.step, ctx.target.inputs

    def fresh():
        prepare(ctx, ctx.saved)

    for _ in range(3):
        fresh()
        step(*inputs)
    eager_s = median_seconds(lambda: step(*inputs), iterations, fresh)
    timing = {"iterations": iterations, "eager_median_us": eager_s * 1e6, "replay_median_us": None, "speedup": None}
    if ctx.graph is not None:
        for _ in range(3):
            fresh()
            ctx.graph.replay()
        replay_s = median_seconds(ctx.graph.replay, iterations, fresh)
        timing["replay_median_us"] = replay_s * 1e6
        timing["speedup"] = eager_s / replay_s if replay_s > 0 else None
    fresh()
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
    ("row_isolation", phase_row_isolation, ("capture",)),
    ("uninitialized", phase_uninitialized, ("setup",)),
    ("timing", phase_timing, ("setup",)),
)
