"""graphready's Python side: the probe harness and the factory API.

    from graphready import ProbeTarget, assert_capturable

    def factory(bucket: int) -> ProbeTarget:
        ...
        return ProbeTarget(step=model.decode_step, inputs=[tokens, positions], make_inputs=new_batch)

    def test_decode_step_is_capturable():
        assert_capturable(factory, buckets=(1, 2, 4, 8))
"""

from __future__ import annotations

from typing import Callable, Iterable

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


def probe(factory: Callable, buckets: Iterable[int] = (1,)) -> list:
    """Run every phase in this process for each bucket; returns the phase results (dicts)."""
    try:
        import torch
    except ImportError as exc:
        raise ProbeEnvironmentError(f"PyTorch is not importable: {exc}") from exc
    if not torch.cuda.is_available():
        raise ProbeEnvironmentError("no CUDA device is available")
    from .frames import FrameFilter
    from .phases import run_bucket
    from .protocol import Collector
    from .watch import CaptureStatus

    collector = Collector()
    filt = FrameFilter.for_this_process()
    status = CaptureStatus()
    for bucket in buckets:
        run_bucket(collector, factory, int(bucket), filt, status)
    return collector.phases()


def assert_capturable(factory: Callable, buckets: Iterable[int] = (1,)) -> list:
    """Raise `NotCapturable` with the summary unless every bucket captures, replays bit-exactly
    (also after new inputs) and never synchronises. Returns the phase results otherwise."""
    from .summary import is_ready, render

    phases = probe(factory, buckets)
    if not is_ready(phases):
        raise NotCapturable(render(phases), phases)
    return phases
