"""The versioned JSON-lines protocol between the harness and the `graphready probe` driver.

One JSON object per line on a private file descriptor (the harness moves the user's stdout to
stderr, so a stray `print` never corrupts the stream). Every message has a `type`:

- `hello`       first line: `protocol`, `harness`, `python`, `executable`; `rank`, `world_size`
                with several ranks
- `environment` after torch and CUDA were found: `torch`, `cuda`, `device`, `capability`;
                `distributed` (`backend`, `rank`, `world_size`, `local_rank`, `device`)
- `env_error`   the run cannot start: `kind` (`no_torch`, `no_cuda`, `bad_target`, `bad_args`,
                `too_few_gpus`, `dist_init`), `message`
- `phase_start` `bucket`, `phase`: sent before user code runs, so a crash names the phase that died
- `phase`       `bucket`, `phase`, `status` and the phase's results (see `PhaseResult`); with
                several ranks, `collectives` (name -> calls in this phase)
- `done`        `bucket`: the bucket finished normally
- `hang_report` the answer to `dump` on stdin (`watchdog.py`): `bucket`, `phase`, `waiting`,
                `location`, `stack`, `last_collective`, `collectives`

The driver treats a `phase_start` without its `phase` as the phase that crashed or timed out.
A phase that lost the CUDA context (a device assert) says `context_lost`; when it is one of the
`POISONING_PHASES` and was poisoning (`poisoning`), the driver re-runs the bucket with
`--rerun-from PHASE`, which runs that phase without poisoning, to tell who caused the assert.

Version 2: event stacks hold every frame (with its `scope`), phases `row_isolation`, status
`inconclusive`, results `state`, `graph`, `rows`.
Version 3: several ranks (`rank`, `world_size`, `distributed`, `collectives`), `hang_report`,
event kind `host_collective`, env_error kinds `too_few_gpus` and `dist_init`.
"""

from __future__ import annotations

import json
import math
import threading
from typing import IO, Any, Callable

PROTOCOL_VERSION = 3
HARNESS_VERSION = "0.1.0"

PHASES = (
    "setup",
    "warmup",
    "sync_scan",
    "profiler_scan",
    "allocations",
    "capture",
    "replay",
    "row_isolation",
    "uninitialized",
    "timing",
)

# Phases that poison memory on purpose (NaN-filled uninitialised memory, hostile pad rows).
POISONING_PHASES = ("row_isolation", "uninitialized")

STATUSES = ("pass", "fail", "inconclusive", "error", "skipped")


def sanitize(value: Any) -> Any:
    """Make a value strict-JSON safe: non-finite floats become None, tuples become lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def encode(message_type: str, **fields: Any) -> str:
    """One protocol line, without the trailing newline."""
    body = {"type": message_type}
    body.update(fields)
    return json.dumps(sanitize(body), allow_nan=False, separators=(",", ":"))


class Emitter:
    """Writes protocol lines to a stream, flushing each so a crash loses nothing already sent."""

    def __init__(self, stream: IO[str]):
        self._stream = stream
        # The watchdog thread writes too.
        self._lock = threading.Lock()

    def send(self, message_type: str, **fields: Any) -> None:
        line = encode(message_type, **fields) + "\n"
        with self._lock:
            self._stream.write(line)
            self._stream.flush()


class Collector:
    """An emitter that keeps the messages in memory (used by `assert_capturable`)."""

    def __init__(self, on_message: Callable[[dict], None] | None = None):
        self.messages: list[dict] = []
        self._on_message = on_message

    def send(self, message_type: str, **fields: Any) -> None:
        message = json.loads(encode(message_type, **fields))
        self.messages.append(message)
        if self._on_message is not None:
            self._on_message(message)

    def phases(self) -> list[dict]:
        return [m for m in self.messages if m["type"] == "phase"]
