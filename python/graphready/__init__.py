"""graphready's Python side: the probe harness and the factory API.

    from graphready import ProbeTarget, assert_capturable

    def factory(bucket: int) -> ProbeTarget:
        ...
        return ProbeTarget(step=model.decode_step, inputs=[tokens, positions], make_inputs=new_batch)

    def test_decode_step_is_capturable():
        assert_capturable(factory, buckets=(1, 2, 4, 8))
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from .target import ProbeTarget

__all__ = ["ProbeTarget", "NotCapturable", "ProbeEnvironmentError", "probe", "assert_capturable"]
from ._version import __version__


class NotCapturable(AssertionError):
    """Raised by `assert_capturable`; the message is the readable summary."""

    def __init__(self, summary: str, phases: list):
        super().__init__(summary)
        self.summary = summary
        self.phases = phases


class ProbeEnvironmentError(RuntimeError):
    """No torch, no CUDA device: the probe cannot run here."""


def probe(
    factory: Callable,
    buckets: Iterable[int] = (1,),
    *,
    nproc_per_node: Optional[int] = None,
    backend: str = "nccl",
    timeout: float = 600.0,
    hang_timeout: float = 120.0,
) -> list:
    """Run every phase for each bucket; returns the phase results (dicts).

    In this process by default. With `nproc_per_node=N`, in N ranks (child processes, one GPU
    each, torch.distributed initialised before the factory is called): `factory` must then be
    importable by name (a module-level function, or a `"path/to/file.py:factory"` string), and
    each result carries its `rank`; a rank that hangs is stopped by the watchdog (`launch.py`)."""
    if nproc_per_node is not None:
        return _probe_ranks(factory, buckets, nproc_per_node, backend, timeout, hang_timeout)
    try:
        import torch
    except ImportError as exc:
        raise ProbeEnvironmentError(f"PyTorch is not importable: {exc}") from exc
    if not torch.cuda.is_available():
        raise ProbeEnvironmentError("no CUDA device is available")
    from .bucket import run_bucket
    from .frames import FrameFilter
    from .protocol import Collector
    from .watch import CaptureStatus

    collector = Collector()
    filt = FrameFilter.for_this_process()
    status = CaptureStatus()
    for bucket in buckets:
        run_bucket(collector, factory, int(bucket), filt, status)
    return collector.phases()


def _probe_ranks(factory, buckets, nproc_per_node, backend, timeout, hang_timeout) -> list:
    from .launch import LaunchError, launch, rank_phases, target_of

    buckets = [int(b) for b in buckets]
    try:
        runs = launch(target_of(factory), buckets, int(nproc_per_node), backend=backend, timeout=timeout, hang_timeout=hang_timeout)
    except LaunchError as exc:
        raise ProbeEnvironmentError(str(exc)) from exc
    return [phase for run in runs for phase in rank_phases(run, buckets)]


def assert_capturable(factory: Callable, buckets: Iterable[int] = (1,), **options) -> list:
    """Raise `NotCapturable` with the summary unless every bucket captures, replays bit-exactly
    (also after new inputs) and never synchronises — on every rank with `nproc_per_node=N`.
    Returns the phase results otherwise. `options` are those of `probe`."""
    from .summary import is_ready, render

    phases = probe(factory, buckets, **options)
    if not is_ready(phases):
        raise NotCapturable(render(phases), phases)
    return phases
