"""The step's state: what one step mutates besides its outputs (a KV cache and its counters).

A decode step writes its cache every call, so two eager runs on the same inputs differ and a
cache that is never reset runs off its end. The probe finds the state during the warm-up (the
storages that an operator wrote in place or through `out=`, that outlive the step, and that are
neither inputs nor outputs), adds what `ProbeTarget(state=...)` names, snapshots all of it once,
and restores it (then calls `ProbeTarget(reset=...)`) before every judged run.

Pure bookkeeping: the tensor work (finding writes, cloning, copying) is injected, so this module
is tested without torch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

FOUND = "found"
DECLARED = "declared"
# Storages listed one by one in the report; the rest are only counted.
LISTED = 32


@dataclass
class StateEntry:
    """One storage of state. `handle` is what the injected snapshot/restore functions take."""

    key: Any
    handle: Any
    nbytes: int
    device: str
    description: str
    origin: str = FOUND
    # Where it was allocated: the stack (Frame objects, innermost first), when known.
    site: Sequence[Any] = field(default_factory=list)


def select_state(
    written: Iterable[Any],
    alive: Iterable[Any],
    inputs: Iterable[Any],
    outputs: Iterable[Any],
) -> list:
    """Keys of storages that the step wrote, that are still alive after it returned (temporaries
    are gone), and that are neither inputs (the probe restores those anyway) nor outputs."""
    alive, inputs, outputs = set(alive), set(inputs), set(outputs)
    seen = set()
    keys = []
    for key in written:
        if key in seen or key not in alive or key in inputs or key in outputs:
            continue
        seen.add(key)
        keys.append(key)
    return keys


def merge_declared(found: Sequence[StateEntry], declared: Sequence[StateEntry]) -> list[StateEntry]:
    """Found entries, then declared ones not already found (a declared storage found as well
    counts as declared)."""
    declared_keys = {e.key for e in declared}
    out = [e for e in found if e.key not in declared_keys]
    seen = set()
    for entry in declared:
        if entry.key in seen:
            continue
        seen.add(entry.key)
        entry.origin = DECLARED
        out.append(entry)
    return out


class StateKeeper:
    """Snapshots the state once and restores it before every judged run."""

    def __init__(
        self,
        entries: Sequence[StateEntry],
        snapshot: Callable[[Any], Any],
        restore: Callable[[Any, Any], None],
        reset: Optional[Callable[[], Any]] = None,
    ):
        self.entries = list(entries)
        self._snapshot = snapshot
        self._restore = restore
        self._reset = reset
        self._saved: Optional[list] = None
        self.restores = 0

    def snapshot(self) -> None:
        self._saved = [self._snapshot(e.handle) for e in self.entries]

    def restore(self) -> None:
        if self._saved is None:
            raise RuntimeError("the state is restored before it was snapshotted")
        for entry, saved in zip(self.entries, self._saved):
            self._restore(entry.handle, saved)
        if self._reset is not None:
            self._reset()
        self.restores += 1

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes for e in self.entries)

    def summary(self, frame_json: Callable[[Any], dict], pick: Callable[[Sequence[Any]], Any]) -> dict:
        return summarize(self.entries, self._reset is not None, frame_json, pick)


def summarize(
    entries: Sequence[StateEntry],
    has_reset: bool,
    frame_json: Callable[[Any], dict],
    pick: Callable[[Sequence[Any]], Any],
) -> dict:
    """The report's `state` object: counts, bytes, and allocation sites grouped by (user frame,
    innermost frame), largest first."""
    sites: dict[tuple, dict] = {}
    unlocated = 0
    for entry in entries:
        if not entry.site:
            unlocated += 1
            continue
        location = pick(entry.site)
        innermost = entry.site[0]
        key = (_place(location), _place(innermost))
        site = sites.get(key)
        if site is None:
            site = sites[key] = {
                "location": frame_json(location) if location is not None else None,
                "innermost": frame_json(innermost),
                "tensors": 0,
                "bytes": 0,
            }
        site["tensors"] += 1
        site["bytes"] += entry.nbytes
    return {
        "tensors": len(entries),
        "bytes": sum(e.nbytes for e in entries),
        "found": sum(1 for e in entries if e.origin == FOUND),
        "declared": sum(1 for e in entries if e.origin == DECLARED),
        "reset": has_reset,
        "sites": sorted(sites.values(), key=lambda s: (-s["bytes"], -s["tensors"])),
        "unlocated": unlocated,
        "storages": [
            {"bytes": e.nbytes, "device": e.device, "tensor": e.description, "origin": e.origin}
            for e in entries[:LISTED]
        ],
    }


def _place(frame) -> tuple:
    return (frame.path, frame.line) if frame is not None else (None, None)


def describe_state(summary: Mapping[str, Any]) -> str:
    """One line for the warm-up's message."""
    count = summary.get("tensors", 0)
    if not count:
        text = "no state found"
        return text + ("; reset() is called before every run" if summary.get("reset") else "")
    text = f"state: {count} storage(s), {format_bytes(summary.get('bytes', 0))}"
    if summary.get("declared"):
        text += f" ({summary['declared']} declared)"
    text += ", restored before every judged run"
    if summary.get("reset"):
        text += ", then reset()"
    return text


def format_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"
