"""Instruments that watch user code run: dispatch modes, profile hooks and patched sync APIs.

Imported only after torch was found.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
import warnings
from typing import Callable, Optional, Sequence

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import events as ev
from .frames import Frame, FrameFilter, has_code_frame, live_stack, pick_location

aten = torch.ops.aten

_CAPTURE_STATUS = {0: "none", 1: "active", 2: "invalidated"}


class CaptureStatus:
    """The current stream's capture status: active vs invalidated.

    `torch.cuda.is_current_stream_capturing()` is True for both, so ask the driver
    (`cuStreamIsCapturing`) or the runtime (`cudaStreamIsCapturing`) through ctypes.
    """

    def __init__(self) -> None:
        self._fn = None
        self.source: Optional[str] = None
        for lib, symbol in (
            ("libcuda.so.1", "cuStreamIsCapturing"),
            ("libcudart.so.13", "cudaStreamIsCapturing"),
            ("libcudart.so.12", "cudaStreamIsCapturing"),
            ("libcudart.so", "cudaStreamIsCapturing"),
        ):
            try:
                fn = getattr(ctypes.CDLL(lib), symbol)
            except (OSError, AttributeError):
                continue
            fn.restype = ctypes.c_int
            fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            self._fn = fn
            self.source = f"{lib}:{symbol}"
            break

    def __call__(self) -> Optional[str]:
        if self._fn is None:
            return None
        status = ctypes.c_int(0)
        handle = torch.cuda.current_stream().cuda_stream
        if self._fn(ctypes.c_void_p(handle), ctypes.byref(status)) != 0:
            return None
        return _CAPTURE_STATUS.get(status.value)


def op_name(func) -> str:
    name = getattr(func, "name", None)
    if callable(name):
        try:
            return name()
        except Exception:  # noqa: BLE001 - a name is best effort
            pass
    return str(func)


@contextlib.contextmanager
def profile_hook(hook: Callable):
    """`sys.setprofile` for the block, restoring whatever was there."""
    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        yield
    finally:
        sys.setprofile(previous)


# ---------------------------------------------------------------- sync scan


@contextlib.contextmanager
def capturing_as_in_a_graph():
    """Make `torch.cuda.is_current_stream_capturing()` answer True, so the eager scans take the
    branches the captured graph will take: validation guarded by it (the capture-safe
    `pack_ue8m0_to_int`) is skipped here exactly as it is during capture."""
    patched = []
    for owner in (torch.cuda, getattr(torch.cuda, "graphs", None)):
        original = getattr(owner, "is_current_stream_capturing", None)
        if original is not None:
            patched.append((owner, original))
            setattr(owner, "is_current_stream_capturing", lambda: True)
    try:
        yield
    finally:
        for owner, original in reversed(patched):
            setattr(owner, "is_current_stream_capturing", original)


_SYNC_APIS = (
    (torch.cuda, "synchronize", "torch.cuda.synchronize()"),
    (torch.cuda.Event, "synchronize", "torch.cuda.Event.synchronize()"),
    (torch.cuda.Event, "query", "torch.cuda.Event.query()"),
    (torch.cuda.Stream, "synchronize", "torch.cuda.Stream.synchronize()"),
    (torch.cuda.Stream, "query", "torch.cuda.Stream.query()"),
)

_SYNC_WARNING = "called a synchronizing CUDA operation"


@contextlib.contextmanager
def patched_sync_apis(on_call: Callable[[str], Optional[contextlib.AbstractContextManager]]):
    """Patch the sync APIs that sync-debug mode does not report. `on_call(what)` runs first and
    may return a context manager to hold around the real call."""
    saved = []
    for owner, attr, what in _SYNC_APIS:
        original = getattr(owner, attr, None)
        if original is None:
            continue

        # Named in frames.PASS_THROUGH: a stack through it goes on to the user's frame.
        def _graphready_sync_api(*args, __original=original, __what=what, **kwargs):
            with on_call(__what) or contextlib.nullcontext():
                return __original(*args, **kwargs)

        saved.append((owner, attr, original))
        setattr(owner, attr, _graphready_sync_api)
    try:
        yield
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)


class SyncScan(TorchDispatchMode):
    """Records every sync of one step with the user's frame, plus pageable host copies.

    Sync-debug mode ("warn") turns each synchronising CUDA call into a Python warning raised
    while the operator is still on the stack; the warning hook records it against the operator
    being dispatched and the user's innermost frame.
    """

    def __init__(self, filt: FrameFilter, log: ev.EventLog):
        super().__init__()
        self.filt = filt
        self.log = log
        self._op_stack: list[str] = []
        # torch may hold a warning back until the outermost C++ call returns, after the operator
        # that raised it left the dispatch mode: the last operator finished is the culprit then.
        self._last_op: Optional[str] = None
        self.inside_step = False
        self._thread: Optional[int] = None
        # Sync warnings raised outside the step, or on another thread (torch's own background
        # work), are not the user's: counted, not reported.
        self.ignored = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = op_name(func)
        self._op_stack.append(name)
        try:
            out = func(*args, **kwargs)
        finally:
            self._op_stack.pop()
            self._last_op = name
        self._check_pageable_copy(func, args, kwargs, name)
        return out

    def on_warning(self, message, category, filename, lineno, file=None, line=None):
        if _SYNC_WARNING not in str(message):
            return
        if not self.inside_step or threading.get_ident() != self._thread:
            self.ignored += 1
            return
        what = self._op_stack[-1] if self._op_stack else (self._last_op or "synchronizing CUDA call")
        self.log.add(ev.SYNC, what, live_stack(self.filt), "synchronizing CUDA operation (sync-debug mode)")

    def on_api(self, what: str) -> None:
        self._last_op = what
        self.log.add(ev.SYNC, what, live_stack(self.filt), "host synchronisation not reported by sync-debug mode")

    def _check_pageable_copy(self, func, args, kwargs, name):
        src, dst_device, non_blocking = _copy_endpoints(func, args, kwargs)
        if src is None or dst_device is None:
            return
        if src.device.type == dst_device.type:
            return
        host = src if src.device.type == "cpu" else None
        if host is None:
            # device -> host: the destination is the host tensor of copy_
            dst = args[0] if func is aten.copy_.default else None
            if dst is None or dst.device.type != "cpu" or dst.is_pinned() or not non_blocking:
                return
            host = dst
        elif host.is_pinned():
            return
        direction = "host->device" if src.device.type == "cpu" else "device->host"
        mode = "non_blocking " if non_blocking else ""
        self.log.add(
            ev.PAGEABLE_COPY,
            name,
            live_stack(self.filt),
            f"{mode}{direction} copy through pageable host memory (pin it, and copy_ into a static buffer)",
        )

    @contextlib.contextmanager
    def active(self):
        """Sync-debug mode, the warning hook, the patched APIs and this dispatch mode together."""
        previous_mode = torch.cuda.get_sync_debug_mode()
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = self.on_warning
            with patched_sync_apis(self.on_api), self:
                torch.cuda.set_sync_debug_mode("warn")
                self._thread = threading.get_ident()
                self.inside_step = True
                try:
                    yield
                finally:
                    self.inside_step = False
                    torch.cuda.set_sync_debug_mode(previous_mode)


def _copy_endpoints(func, args, kwargs):
    """(source tensor, destination device, non_blocking) of a copy op, or Nones."""
    if func is aten.copy_.default and len(args) >= 2 and isinstance(args[1], torch.Tensor):
        non_blocking = kwargs.get("non_blocking", args[2] if len(args) > 2 else False)
        return args[1], args[0].device, bool(non_blocking)
    if func is aten._to_copy.default and args and isinstance(args[0], torch.Tensor):
        device = kwargs.get("device")
        if device is None:
            return None, None, False
        return args[0], torch.device(device), bool(kwargs.get("non_blocking", False))
    return None, None, False


class Coverage:
    """Lines of user and library code executed during one step (`sys.settrace`), for the static
    correlation; also lines under `roots` (the `--check` paths, torch's own files included)."""

    def __init__(self, filt: FrameFilter, roots: Sequence[str] = ()):
        self.filt = filt
        self.lines: dict[str, set[int]] = {}
        self._roots = tuple(os.path.join(os.path.realpath(r), "") for r in roots)
        self._traced: dict[str, bool] = {}

    def _wanted(self, filename: str) -> bool:
        wanted = self._traced.get(filename)
        if wanted is None:
            if self.filt.is_harness(filename):
                wanted = False
            elif self.filt.is_instrumented(filename):
                wanted = True
            else:
                real = os.path.realpath(filename) if filename and not filename.startswith("<") else ""
                wanted = bool(real) and any(real.startswith(r) or real + os.sep == r for r in self._roots)
            self._traced[filename] = wanted
        return wanted

    def _global(self, frame, event, arg):
        filename = frame.f_code.co_filename
        if not self._wanted(filename):
            return None
        lines = self.lines.setdefault(self.filt.real(filename), set())
        lines.add(frame.f_lineno)

        def local(frame, event, arg):
            if event == "line":
                lines.add(frame.f_lineno)
            return local

        return local

    @contextlib.contextmanager
    def active(self):
        previous = sys.gettrace()
        sys.settrace(self._global)
        try:
            yield
        finally:
            sys.settrace(previous)

    def to_json(self) -> dict:
        return {path: sorted(lines) for path, lines in sorted(self.lines.items())}


# ---------------------------------------------------------------- profiler scan


class ProfilerLabels(TorchDispatchMode):
    """Wraps each operator, each C call made directly from user code, and each patched sync API
    in a profiler range named `gr@<n>`, where n indexes `self.locations`; runtime calls inside
    a range are attributed to that location."""

    PREFIX = "gr@"

    def __init__(self, filt: FrameFilter):
        super().__init__()
        self.filt = filt
        self.locations: list[list[Frame]] = []
        self._index: dict[tuple, int] = {}
        self._open: list = []

    def label(self, stack: list[Frame]) -> str:
        location = pick_location(stack)
        key = tuple((f.path, f.line) for f in (location, stack[0] if stack else None) if f is not None)
        index = self._index.get(key)
        if index is None:
            index = len(self.locations)
            self.locations.append(stack)
            self._index[key] = index
        return f"{self.PREFIX}{index}"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if getattr(func, "namespace", "") == "profiler":
            return func(*args, **kwargs)
        with torch.profiler.record_function(self.label(live_stack(self.filt))):
            return func(*args, **kwargs)

    def on_profile(self, frame, event, arg):
        if event == "c_call":
            if not self.filt.is_instrumented(frame.f_code.co_filename):
                self._open.append(None)
                return
            handle = torch.ops.profiler._record_function_enter_new(
                self.label(live_stack(self.filt, start=frame)), None
            )
            self._open.append(handle)
        elif event in ("c_return", "c_exception"):
            if self._open:
                handle = self._open.pop()
                if handle is not None:
                    torch.ops.profiler._record_function_exit._RecordFunction(handle)

    def on_api(self, what: str):
        """Used with `patched_sync_apis`: label the real call so its runtime call is attributed."""
        return torch.profiler.record_function(self.label(live_stack(self.filt)))

    @contextlib.contextmanager
    def active(self):
        try:
            with patched_sync_apis(self.on_api), self, profile_hook(self.on_profile):
                yield
        finally:
            while self._open:
                handle = self._open.pop()
                if handle is not None:
                    torch.ops.profiler._record_function_exit._RecordFunction(handle)


# ---------------------------------------------------------------- capture


class CaptureWatch(TorchDispatchMode):
    """Finds the first operation that broke stream capture.

    After every operator, and after every C call made from user code, it asks the driver for
    the capture stream's status; the first call after which the status is `invalidated` (or
    that raised) is the culprit. torch itself reports only the later `capture_end` error.
    """

    def __init__(self, filt: FrameFilter, status: CaptureStatus):
        super().__init__()
        self.filt = filt
        self.status = status
        self.first: Optional[dict] = None
        self.ops_seen = 0

    def _record(self, what: str, stack: list[Frame], how: str, error: Optional[BaseException]):
        if self.first is not None:
            return
        self.first = {"what": what, "stack": stack, "how": how, "error": str(error) if error else None}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops_seen += 1
        try:
            out = func(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - re-raised
            self._record(op_name(func), live_stack(self.filt), "raised", exc)
            raise
        if self.first is None and self.status() == "invalidated":
            self._record(op_name(func), live_stack(self.filt), "invalidated", None)
        return out

    def on_profile(self, frame, event, arg):
        if self.first is not None or event not in ("c_return", "c_exception"):
            return
        if not self.filt.is_instrumented(frame.f_code.co_filename):
            return
        if self.status() == "invalidated":
            name = getattr(arg, "__qualname__", None) or getattr(arg, "__name__", None) or repr(arg)
            self._record(f"{name}()", live_stack(self.filt, start=frame), "invalidated", None)

    @contextlib.contextmanager
    def active(self):
        with self, profile_hook(self.on_profile):
            yield


# ---------------------------------------------------------------- uninitialised memory / allocations

_EMPTY_OPS = {
    aten.empty.memory_format,
    aten.empty_like.default,
    aten.empty_strided.default,
    aten.new_empty.default,
    aten.new_empty_strided.default,
}
if hasattr(aten, "empty_permuted"):
    _EMPTY_OPS.add(aten.empty_permuted.default)

_FACTORY_PREFIXES = (
    "aten::empty", "aten::zeros", "aten::ones", "aten::full", "aten::arange", "aten::rand",
    "aten::new_", "aten::clone", "aten::scalar_tensor", "aten::lift_fresh", "aten::linspace",
)


class EmptyTracker(TorchDispatchMode):
    """Keeps each torch.empty-family output of one step (with its line) to see, after the step,
    which still hold the fill pattern of `fill_uninitialized_memory` (NaN / integer max)."""

    def __init__(self, filt: FrameFilter):
        super().__init__()
        self.filt = filt
        self.buffers: list[tuple[str, list[Frame], torch.Tensor]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in _EMPTY_OPS and isinstance(out, torch.Tensor) and out.is_cuda:
            stack = live_stack(self.filt)
            if has_code_frame(stack):
                self.buffers.append((op_name(func), stack, out))
        return out

    def unwritten(self, log: ev.EventLog) -> int:
        found = 0
        for what, stack, tensor in self.buffers:
            count = _fill_pattern_count(tensor)
            if count:
                found += 1
                log.add(
                    ev.UNINITIALIZED,
                    what,
                    stack,
                    f"{count} of {tensor.numel()} elements of this {tuple(tensor.shape)} "
                    f"{str(tensor.dtype).replace('torch.', '')} buffer were never written in the step",
                )
        return found


def _fill_pattern_count(t: torch.Tensor) -> int:
    if t.numel() == 0:
        return 0
    if t.is_floating_point() or t.is_complex():
        return int(torch.isnan(t).sum())
    if t.dtype == torch.bool:
        return 0
    return int((t == torch.iinfo(t.dtype).max).sum())


class FactoryCalls(TorchDispatchMode):
    """Counts tensor factory calls (fresh allocations) of one step, by user line."""

    def __init__(self, filt: FrameFilter, log: ev.EventLog):
        super().__init__()
        self.filt = filt
        self.log = log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = op_name(func)
        if name.startswith(_FACTORY_PREFIXES) and isinstance(out, torch.Tensor) and out.is_cuda:
            stack = live_stack(self.filt)
            if has_code_frame(stack):
                self.log.add(ev.ALLOCATION, name, stack, "fresh device tensor allocated every step (preallocate, write in place)")
        return out
