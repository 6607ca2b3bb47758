"""Runtime events: one per distinct (kind, what, user line, innermost line), with a count."""

from __future__ import annotations

from typing import Sequence

from .frames import Frame, pick_location

# Event kinds. The driver and the report use the same names.
SYNC = "sync"  # a device->host synchronisation seen by sync-debug mode or a patched API
PAGEABLE_COPY = "pageable_copy"  # a host<->device copy through pageable host memory
RUNTIME_SYNC = "runtime_sync"  # a synchronising CUDA runtime call seen by the profiler
RUNTIME_ALLOC = "runtime_alloc"  # cudaMalloc / cudaHostAlloc seen by the profiler
CAPTURE_BREAK = "capture_break"  # the operation that broke stream capture
UNINITIALIZED = "uninitialized"  # a torch.empty-family buffer left (partly) unwritten
ALLOCATION = "allocation"  # a tensor factory call in the step (fresh allocation per step)
ERROR = "error"  # user code raised
HOST_COLLECTIVE = "host_collective"  # torch.distributed's object collectives and barriers in the step
HANG = "hang"  # a rank stopped progressing (written by the driver from the rank's hang report)

KINDS = (SYNC, PAGEABLE_COPY, RUNTIME_SYNC, RUNTIME_ALLOC, CAPTURE_BREAK, UNINITIALIZED, ALLOCATION, ERROR, HOST_COLLECTIVE, HANG)


def _place(frame) -> tuple:
    return (frame.path, frame.line) if frame is not None else (None, None)


class EventLog:
    def __init__(self) -> None:
        self._events: dict[tuple, dict] = {}

    def add(
        self,
        kind: str,
        what: str,
        stack: Sequence[Frame],
        message: str = "",
    ) -> dict:
        """Record one occurrence. `stack` is the whole stack, innermost first; the event's
        `location` is the user's frame in it (see `frames.pick_location`)."""
        location = pick_location(stack)
        innermost = stack[0] if stack else None
        key = (kind, what) + _place(location) + _place(innermost)
        event = self._events.get(key)
        if event is None:
            event = {
                "kind": kind,
                "what": what,
                "message": message,
                "location": location.to_json() if location else None,
                "stack": [f.to_json() for f in stack],
                "count": 0,
            }
            self._events[key] = event
        event["count"] += 1
        return event

    def events(self) -> list[dict]:
        return list(self._events.values())

    def __len__(self) -> int:
        return len(self._events)
