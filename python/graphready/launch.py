"""Several ranks from Python, for `assert_capturable(factory, nproc_per_node=N)`: the harness in
N child processes, one per rank, with torchrun's environment, a free loopback port, and the same
watchdog rules as the `graphready probe` driver:

- a rank that stays in a phase `hang_timeout` seconds after another rank finished it is hung;
- a rank that exits without finishing stops the others (they would wait for it forever);
- the time limit stops everyone still running.

Before the group is killed, every live rank is asked for its hang report (`dump` on stdin).
No torch here: the parent process never touches the GPU.
"""

from __future__ import annotations

import inspect
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from .ranks import BACKENDS, rank_environ

# How long the ranks get to answer `dump`, and to exit after `done`.
DUMP_WAIT = 2.0
EXIT_GRACE = 10.0
STDERR_TAIL = 16 * 1024


class LaunchError(RuntimeError):
    """The ranks could not start (a harness `env_error`, or no hello): the probe cannot run."""


@dataclass
class RankRun:
    rank: int
    messages: list = field(default_factory=list)
    returncode: Optional[int] = None
    stderr: str = ""
    # `completed`, `crashed`, `hung`, `timed_out` or `stopped` (killed for another rank's sake).
    ending: str = "completed"
    running: Optional[str] = None
    hang: Optional[dict] = None
    done: bool = False
    results: int = 0
    eof: bool = False
    stop_reason: str = ""

    def phases(self) -> list:
        return [m for m in self.messages if m.get("type") == "phase"]


def target_of(factory) -> str:
    """`path/to/file.py:qualname` for a module-level factory (each rank imports it by name)."""
    if isinstance(factory, str):
        return factory
    qualname = getattr(factory, "__qualname__", "")
    if not qualname or "<" in qualname:
        raise TypeError(
            "nproc_per_node needs a factory each rank can import: a module-level function, or a "
            f"'path/to/file.py:factory' string (got {factory!r})"
        )
    try:
        path = inspect.getsourcefile(factory)
    except TypeError:
        path = None
    if not path:
        raise TypeError(f"cannot find the file that defines {qualname}")
    return f"{os.path.abspath(path)}:{qualname}"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def harness_command(python: str, target: str, buckets: Sequence[int], backend: str, timeout: float) -> list:
    cmd = [python, "-u", "-m", "graphready.harness", "--target", target]
    for bucket in buckets:
        cmd += ["--bucket", str(int(bucket))]
    return cmd + ["--watchdog", "--distributed", backend, "--dist-timeout", str(int(timeout) + 60)]


def launch(
    target: str,
    buckets: Sequence[int],
    nproc_per_node: int,
    *,
    backend: str = "nccl",
    timeout: float = 600.0,
    hang_timeout: float = 120.0,
    command: Optional[Callable[[int], list]] = None,
) -> list:
    """Run the ranks; returns one `RankRun` per rank. `command(rank)` replaces the harness
    command line (tests use a fake harness)."""
    if nproc_per_node < 1:
        raise ValueError("nproc_per_node must be at least 1")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}")
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    base = dict(os.environ)
    base["PYTHONPATH"] = package_root + (os.pathsep + base["PYTHONPATH"] if base.get("PYTHONPATH") else "")
    base["PYTHONUNBUFFERED"] = "1"
    port = free_port()
    lines: queue.Queue = queue.Queue()
    runs = [RankRun(rank) for rank in range(nproc_per_node)]
    procs = []
    for run in runs:
        argv = command(run.rank) if command else harness_command(sys.executable, target, buckets, backend, timeout)
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=rank_environ(run.rank, nproc_per_node, port, base),
            text=True,
            start_new_session=True,
        )
        procs.append(proc)
        threading.Thread(target=_read_lines, args=(run.rank, proc.stdout, lines), daemon=True).start()
        threading.Thread(target=_read_stderr, args=(run, proc.stderr), daemon=True).start()
    try:
        _watch(runs, procs, lines, time.monotonic() + timeout, hang_timeout)
    finally:
        for proc in procs:
            _kill(proc)
        for run, proc in zip(runs, procs):
            run.returncode = proc.returncode
    return runs


def _read_lines(rank: int, stream, lines: queue.Queue) -> None:
    for line in stream:
        lines.put((rank, line))
    lines.put((rank, None))


def _read_stderr(run: RankRun, stream) -> None:
    for line in stream:
        run.stderr = (run.stderr + line)[-STDERR_TAIL:]


def _take(run: RankRun, line: Optional[str]) -> None:
    if line is None:
        run.eof = True
    else:
        _handle(run, line)


def _handle(run: RankRun, line: str) -> None:
    import json

    line = line.strip()
    if not line.startswith("{"):
        return
    try:
        message = json.loads(line)
    except ValueError:
        return
    kind = message.get("type")
    if kind == "hang_report":
        run.hang = message
        return
    run.messages.append(message)
    if kind == "phase_start":
        run.running = message.get("phase")
    elif kind == "phase":
        run.results += 1
        if run.running == message.get("phase"):
            run.running = None
    elif kind == "done":
        run.done = True
        run.results += 1


def _progress(run: RankRun) -> int:
    return run.results


def _watch(runs, procs, lines: queue.Queue, deadline: float, hang_timeout: float) -> None:
    behind_since: dict = {}
    done_at: dict = {}
    while True:
        try:
            rank, line = lines.get(timeout=0.05)
            _take(runs[rank], line)
        except queue.Empty:
            pass
        now = time.monotonic()
        errors = [m for r in runs for m in r.messages if m.get("type") == "env_error"]
        if errors:
            _drain(runs, lines, 0.2)
            raise LaunchError(errors[0].get("message", "the probe cannot run"))
        # A rank has ended once it exited and its last line was read.
        ended = [p.poll() is not None and r.eof for r, p in zip(runs, procs)]
        live = [r for r, e in zip(runs, ended) if not e]
        if not live:
            _drain(runs, lines, 0.5)
            for run, proc in zip(runs, procs):
                if not run.done:
                    run.ending = "crashed"
            return
        for run, proc in zip(runs, procs):
            if run.done and proc.poll() is None:
                done_at.setdefault(run.rank, now)
                if now - done_at[run.rank] > EXIT_GRACE:
                    _kill(proc)
        gone = [r for r, e in zip(runs, ended) if e and not r.done]
        silent = [r for r in gone if not any(m.get("type") == "hello" for m in r.messages)]
        if silent:
            time.sleep(0.05)  # the stderr reader's last lines
            raise LaunchError(
                f"rank {silent[0].rank} of the probe harness exited before it said hello; its stderr ends with:\n"
                + silent[0].stderr[-3000:]
            )
        if gone:
            _drain(runs, lines, 0.2)
            for run in gone:
                run.ending = "crashed"
            _stop(runs, procs, lines, "stopped", f"rank {gone[0].rank} exited during {gone[0].running or 'start-up'}")
            return
        if now >= deadline:
            _stop(runs, procs, lines, "timed_out", "the time limit ran out")
            return
        most = max(_progress(r) for r in runs)
        for run in live:
            if run.done or _progress(run) >= most:
                behind_since.pop(run.rank, None)
            else:
                behind_since.setdefault(run.rank, (now, _progress(run)))
                since, progress = behind_since[run.rank]
                if progress != _progress(run):
                    behind_since[run.rank] = (now, _progress(run))
        stuck = [runs[r] for r, (since, _) in behind_since.items() if now - since >= hang_timeout]
        if stuck:
            for run in stuck:
                run.ending = "hung"
            _stop(runs, procs, lines, "stopped", f"rank {stuck[0].rank} hung in {stuck[0].running}")
            return


def _drain(runs, lines: queue.Queue, seconds: float) -> None:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            rank, line = lines.get(timeout=0.05)
        except queue.Empty:
            continue
        _take(runs[rank], line)


def _stop(runs, procs, lines: queue.Queue, ending: str, reason: str) -> None:
    """Ask every live rank for its hang report, then kill the group."""
    live = [(r, p) for r, p in zip(runs, procs) if p.poll() is None]
    for run, proc in live:
        if run.ending == "completed":
            run.ending = ending
        run.stop_reason = reason
        try:
            proc.stdin.write("dump\n")
            proc.stdin.flush()
        except (OSError, ValueError):
            pass
    until = time.monotonic() + DUMP_WAIT
    while time.monotonic() < until and any(r.hang is None for r, _ in live):
        try:
            rank, line = lines.get(timeout=0.05)
        except queue.Empty:
            continue
        _take(runs[rank], line)
    for _, proc in live:
        _kill(proc)


def _kill(proc) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (OSError, AttributeError):
            proc.kill()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


# ---------------------------------------------------------------- results


def rank_phases(run: RankRun, buckets: Sequence[int]) -> list:
    """The rank's phase results, each with `rank`; the phase it was stopped in gets a result
    saying how (with the hang report's place as an event)."""
    phases = [dict(p, rank=run.rank) for p in run.phases()]
    if run.ending == "completed" and run.done:
        return phases
    bucket = (run.hang or {}).get("bucket")
    if bucket is None:
        started = [m for m in run.messages if m.get("type") == "phase_start"]
        bucket = started[-1]["bucket"] if started else (buckets[0] if buckets else 1)
    phase = run.running or (run.hang or {}).get("phase") or "setup"
    why = {
        "hung": "this rank stopped progressing while the others moved on; the group was killed",
        "timed_out": "still running when the time limit ran out; the group was killed",
        "crashed": f"the rank exited (status {run.returncode}) before finishing",
    }.get(run.ending, f"stopped: {run.stop_reason or 'another rank failed'}")
    events = []
    if run.hang:
        last = run.hang.get("last_collective") or {}
        where = run.hang.get("location") or last.get("location")
        message = run.hang.get("waiting") or ""
        if last:
            message += f"; last collective {last.get('what')} #{last.get('seq')} in {last.get('phase')}"
        events.append(
            {"kind": "hang", "what": last.get("what") or "(no collective)", "message": message, "location": where, "stack": run.hang.get("stack") or [], "count": 1}
        )
    if not any(p["phase"] == phase and p.get("bucket") == bucket for p in phases):
        phases.append({"rank": run.rank, "bucket": bucket, "phase": phase, "status": run.ending if run.ending != "completed" else "stopped", "message": why, "events": events})
    return phases
