"""Tensor-parallel probing, the parts that need no torch: each rank's environment, its device,
the collectives it issues, and how the ranks agree on which phases passed.

`graphready probe TARGET --nproc-per-node N` starts N harness processes with the environment
torchrun gives its workers (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE`,
`MASTER_ADDR`, `MASTER_PORT`); each one initialises `torch.distributed` from it (`dist.py`).

Every rank runs every phase, and the ranks must issue the same collectives in the same order or
they deadlock. So after each phase the ranks exchange their statuses (on a gloo group of the
harness's own) and a phase that needs an earlier one runs only if that one passed on every rank.

The collectives the step issues through `torch.distributed`'s functions are counted per phase,
and the last one is kept with its stack: when a rank hangs, its watchdog reports it.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from .frames import PASS_THROUGH, FrameFilter, pick_location, select_frames

# Set by the launcher for each rank, as torchrun sets them.
RANK_ENV = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
# NVLink multicast stays off in every child: a program that uses it can take a shared host's
# GPUs out of service. The driver sets these too; the harness enforces them before torch loads.
NVLS_OFF = (
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
)
BACKENDS = ("nccl", "gloo")
# The ranks share one host: their sockets use loopback unless the user set these.
LOOPBACK_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")

# Collectives that exchange Python objects or block the host until every rank arrives: never
# capturable (they pickle, copy through host memory and synchronise).
HOST_COLLECTIVES = (
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "scatter_object_list",
    "send_object_list",
    "recv_object_list",
    "barrier",
    "monitored_barrier",
)
TENSOR_COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "isend",
    "irecv",
    "batch_isend_irecv",
    "_all_gather_base",
    "_reduce_scatter_base",
)
COLLECTIVES = TENSOR_COLLECTIVES + HOST_COLLECTIVES
# Frames kept for the last collective's stack (walked raw, classified only when reported).
MAX_RAW_FRAMES = 64


class RankError(Exception):
    """The rank's environment is unusable (the probe cannot run: exit code 2)."""


@dataclass(frozen=True)
class RankEnv:
    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    master_addr: str
    master_port: int


def read_env(environ: Mapping[str, str]) -> RankEnv:
    """The rank's place in the group, from the launcher's (or torchrun's) environment."""
    missing = [name for name in RANK_ENV if name not in environ and name != "LOCAL_WORLD_SIZE"]
    if missing:
        raise RankError(
            f"a distributed probe needs {', '.join(missing)} in the environment "
            "(`graphready probe --nproc-per-node N` sets them, as torchrun does)"
        )
    values = {}
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT"):
        try:
            values[name] = int(environ[name])
        except ValueError:
            raise RankError(f"{name}={environ[name]!r} is not an integer") from None
    world = values["WORLD_SIZE"]
    local_world = environ.get("LOCAL_WORLD_SIZE", str(world))
    try:
        local_world_size = int(local_world)
    except ValueError:
        raise RankError(f"LOCAL_WORLD_SIZE={local_world!r} is not an integer") from None
    if world < 1 or not 0 <= values["RANK"] < world:
        raise RankError(f"RANK={values['RANK']} is not in [0, WORLD_SIZE={world})")
    if not 0 <= values["LOCAL_RANK"] < max(local_world_size, 1):
        raise RankError(f"LOCAL_RANK={values['LOCAL_RANK']} is not in [0, LOCAL_WORLD_SIZE={local_world_size})")
    if not 0 < values["MASTER_PORT"] < 65536:
        raise RankError(f"MASTER_PORT={values['MASTER_PORT']} is not a port")
    return RankEnv(
        rank=values["RANK"],
        local_rank=values["LOCAL_RANK"],
        world_size=world,
        local_world_size=local_world_size,
        master_addr=environ["MASTER_ADDR"],
        master_port=values["MASTER_PORT"],
    )


def rank_environ(rank: int, world_size: int, port: int, base: Optional[Mapping[str, str]] = None) -> dict:
    """The environment of one rank on this host (what the Rust driver sets too)."""
    env = dict(base if base is not None else {})
    env.update(
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
        LOCAL_WORLD_SIZE=str(world_size),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    env.update(NVLS_OFF)
    return env


def device_problem(backend: str, env: RankEnv, device_count: int, visible: Optional[str] = None) -> Optional[str]:
    """Why this group cannot run on this host's GPUs, or None. NCCL needs one GPU per rank;
    gloo ranks may share one (its collectives run on the host)."""
    shown = f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""
    if device_count < 1:
        return f"torch sees no CUDA device{shown}; the probe needs a GPU"
    if backend == "nccl" and env.local_world_size > device_count:
        return (
            f"--nproc-per-node {env.local_world_size} needs {env.local_world_size} GPUs (NCCL runs one rank per "
            f"GPU), torch sees {device_count}{shown}"
        )
    return None


def device_index(env: RankEnv, device_count: int) -> int:
    """The GPU of this rank: its local rank (gloo ranks beyond the GPU count share them)."""
    return env.local_rank % max(device_count, 1)


# ---------------------------------------------------------------- collectives


def _raw_stack(frame, limit: int = MAX_RAW_FRAMES) -> list:
    out = []
    while frame is not None and len(out) < limit:
        code = frame.f_code
        out.append((code.co_filename, frame.f_lineno, code.co_name))
        frame = frame.f_back
    return out


class Activity:
    """What this rank is doing: the bucket and phase, the collectives issued in each phase, and
    the last one with its stack. Shared by the phases, the collective wrappers and the watchdog
    thread (which reads it while the main thread may be stuck)."""

    def __init__(self) -> None:
        self.bucket: Optional[int] = None
        self.phase: Optional[str] = None
        self.counts: dict[str, dict[str, int]] = {}
        self.last: Optional[dict] = None
        self.seq = 0
        # Locate each collective (walk the stack); off inside timed loops.
        self.locate = True
        # Called with the collective's name before it runs (the sync scan logs host collectives).
        self.listener: Optional[Callable[[str], None]] = None

    def enter(self, bucket: int, phase: str) -> None:
        if bucket != self.bucket:
            # One process may run several buckets (the Python launcher): counts are per bucket.
            self.counts = {}
        self.bucket, self.phase = bucket, phase
        self.counts.setdefault(phase, {})

    def record(self, name: str, frame=None) -> None:
        phase = self.phase or "start-up"
        per_phase = self.counts.setdefault(phase, {})
        per_phase[name] = per_phase.get(name, 0) + 1
        self.seq += 1
        self.last = {
            "what": name,
            "phase": phase,
            "seq": per_phase[name],
            "raw": _raw_stack(frame) if frame is not None and self.locate else [],
        }

    def phase_counts(self, phase: str) -> dict:
        return dict(self.counts.get(phase, {}))

    def last_json(self, filt: FrameFilter) -> Optional[dict]:
        last = self.last
        if last is None:
            return None
        stack = select_frames(last["raw"], filt)
        location = pick_location(stack)
        return {
            "what": last["what"],
            "phase": last["phase"],
            "seq": last["seq"],
            "location": location.to_json() if location else None,
            "stack": [f.to_json() for f in stack],
        }


_inside = threading.local()


class unrecorded:
    """The probe's own collectives (its exchange after each phase): never counted as the step's,
    nor taken for its last collective (all_gather_object calls the wrapped all_gather)."""

    def __enter__(self) -> None:
        self._before = getattr(_inside, "depth", 0)
        _inside.depth = 1

    def __exit__(self, *exc) -> None:
        _inside.depth = self._before


def _wrap(name: str, original: Callable, activity: Activity) -> Callable:
    # Named in frames.PASS_THROUGH: a stack through it goes on to the user's frame.
    def _graphready_collective(*args, **kwargs):
        # Only the outermost call counts: all_gather_object calls all_gather inside.
        if getattr(_inside, "depth", 0):
            return original(*args, **kwargs)
        _inside.depth = 1
        try:
            activity.record(name, sys._getframe(1))
            if activity.listener is not None:
                activity.listener(name)
            return original(*args, **kwargs)
        finally:
            _inside.depth = 0

    _graphready_collective.__wrapped__ = original  # type: ignore[attr-defined]
    _graphready_collective.__doc__ = getattr(original, "__doc__", None)
    return _graphready_collective


def patch_collectives(modules: Iterable[Any], activity: Activity, names: Sequence[str] = COLLECTIVES) -> Callable[[], None]:
    """Wrap each collective of `modules` (torch.distributed and its distributed_c10d) so that
    every call is recorded in `activity`. Returns the function that undoes it. The same original
    reached through two modules gets the same wrapper."""
    wrappers: dict[int, Callable] = {}
    saved = []
    for module in modules:
        for name in names:
            original = getattr(module, name, None)
            if original is None or not callable(original):
                continue
            wrapper = wrappers.get(id(original))
            if wrapper is None:
                wrapper = wrappers[id(original)] = _wrap(name, original, activity)
            saved.append((module, name, original))
            setattr(module, name, wrapper)

    def restore() -> None:
        for module, name, original in reversed(saved):
            setattr(module, name, original)

    return restore


def host_collective_message(name: str) -> str:
    if name in ("barrier", "monitored_barrier"):
        return f"torch.distributed.{name}() blocks the host until every rank arrives: it cannot be captured"
    return (
        f"torch.distributed.{name}() pickles Python objects and moves them through host memory, "
        "synchronising every rank: it cannot be captured (exchange objects outside the step)"
    )


# ---------------------------------------------------------------- agreeing on phases


def group_outcome(statuses: Sequence[str]) -> str:
    """A phase's status over the group, for the phases that need it: `pass` only if it passed on
    every rank, else the first other status."""
    for status in statuses:
        if status != "pass":
            return status
    return "pass"


def unmet(requires: Sequence[str], by_rank: Mapping[str, Sequence[str]]) -> Optional[str]:
    """Why a phase needing `requires` is skipped on every rank, or None. `by_rank` holds each
    earlier phase's statuses, one per rank."""
    missing = []
    for name in requires:
        statuses = by_rank.get(name)
        if statuses is None:
            missing.append(name)
            continue
        bad = [f"rank {rank}: {status}" for rank, status in enumerate(statuses) if status != "pass"]
        if bad:
            missing.append(f"{name} ({', '.join(bad)})")
    if not missing:
        return None
    return f"needs {', '.join(missing)} to pass on every rank"


def first_poisoned(poisoned: Sequence[Optional[str]]) -> Optional[str]:
    """The first rank whose CUDA context is unusable, as text, or None."""
    for rank, what in enumerate(poisoned):
        if what:
            return f"rank {rank}: {what}"
    return None


# ---------------------------------------------------------------- the watchdog's report


def waiting_for(raw: Sequence[tuple], filt: FrameFilter, phase: Optional[str]) -> str:
    """Where the main thread waits, in words: in the user's code, or in which part of the probe."""
    stack = select_frames(raw, filt)
    location = pick_location(stack)
    if location is not None:
        return f"in the step, at {location.path}:{location.line} in {location.function}"
    for filename, line, function in raw:
        if filt.is_harness(filename) and function not in PASS_THROUGH:
            if function == "agree":
                return f"waiting for every rank to finish {phase or 'the phase'} (the probe's exchange)"
            base = filename.rsplit("/", 1)[-1]
            inner = f" in {stack[0].function}" if stack else ""
            return f"in the probe's {function} ({base}:{line}){inner}"
    return "outside the step"


def hang_report(activity: Activity, filt: FrameFilter, main_frame) -> dict:
    """What a stuck rank tells the driver before it is killed: the phase, where its main thread
    waits (the whole stack), and the last collective it issued."""
    raw = _raw_stack(main_frame, limit=256)
    stack = select_frames(raw, filt)
    location = pick_location(stack)
    return {
        "bucket": activity.bucket,
        "phase": activity.phase,
        "waiting": waiting_for(raw, filt, activity.phase),
        "location": location.to_json() if location else None,
        "stack": [f.to_json() for f in stack],
        "last_collective": activity.last_json(filt),
        "collectives": {phase: dict(counts) for phase, counts in activity.counts.items() if counts},
    }
