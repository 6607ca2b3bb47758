"""Attribute a runtime event to the user's code.

The user's frame is the innermost frame whose file is neither the standard library, torch (and its
compilers), nor this harness. Paths are reported canonicalised (`os.path.realpath`) so the driver can
match them against static findings.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

# Packages whose frames are plumbing, never the user's line.
LIBRARY_PACKAGES = ("torch", "triton", "functorch", "torchgen", "typing_extensions")


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "function": self.function}


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


class FrameFilter:
    """Decides whether a file is user code. Built once; `is_user` is cached per filename."""

    def __init__(self, library_roots: Iterable[str], stdlib_roots: Iterable[str] = ()):
        self._library = tuple(_with_sep(_norm(r)) for r in library_roots if r)
        self._stdlib = tuple(_with_sep(_norm(r)) for r in stdlib_roots if r)
        self._cache: dict[str, bool] = {}
        self._real: dict[str, str] = {}

    @classmethod
    def for_this_process(cls) -> "FrameFilter":
        roots = [os.path.dirname(os.path.abspath(__file__))]
        for name in LIBRARY_PACKAGES:
            module = sys.modules.get(name)
            file = getattr(module, "__file__", None)
            if file:
                roots.append(os.path.dirname(file))
        paths = sysconfig.get_paths()
        stdlib = [paths.get("stdlib", ""), paths.get("platstdlib", "")]
        return cls(roots, stdlib)

    def is_user(self, filename: str) -> bool:
        cached = self._cache.get(filename)
        if cached is not None:
            return cached
        result = self._classify(filename)
        self._cache[filename] = result
        return result

    def _classify(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        path = _with_sep(_norm(filename))
        if any(path.startswith(root) for root in self._library):
            return False
        for root in self._stdlib:
            if path.startswith(root):
                rest = path[len(root):]
                # Third-party packages installed under the stdlib prefix are still user code.
                return "site-packages" in rest or "dist-packages" in rest
        return True

    def real(self, filename: str) -> str:
        real = self._real.get(filename)
        if real is None:
            real = os.path.realpath(filename)
            self._real[filename] = real
        return real


def _with_sep(path: str) -> str:
    return path if path.endswith(os.sep) else path + os.sep


def select_user_frames(
    raw: Sequence[tuple[str, int, str]], filt: FrameFilter, limit: int = 8
) -> list[Frame]:
    """User frames from a stack given innermost first as (filename, line, function)."""
    out = []
    for filename, line, function in raw:
        if filt.is_user(filename):
            out.append(Frame(filt.real(filename), int(line), function))
            if len(out) >= limit:
                break
    return out


def _walk(frame) -> Iterator[tuple[str, int, str]]:
    while frame is not None:
        code = frame.f_code
        yield code.co_filename, frame.f_lineno, code.co_name
        frame = frame.f_back


def user_stack(filt: FrameFilter, start=None, limit: int = 8) -> list[Frame]:
    """User frames of the live stack, innermost first (starting at the caller by default)."""
    frame = start if start is not None else sys._getframe(1)
    out = []
    for filename, line, function in _walk(frame):
        if filt.is_user(filename):
            out.append(Frame(filt.real(filename), line, function))
            if len(out) >= limit:
                break
    return out


def traceback_user_stack(tb, filt: FrameFilter, limit: int = 8) -> list[Frame]:
    """User frames of a traceback, innermost first (a traceback lists outermost first)."""
    raw = []
    while tb is not None:
        code = tb.tb_frame.f_code
        raw.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    raw.reverse()
    return select_user_frames(raw, filt, limit)


def earliest_exception(exc: BaseException) -> BaseException:
    """Follow `__context__`/`__cause__` back to the exception that started the failure.

    `torch.cuda.graph.__exit__` raises from `capture_end` while the user's exception is
    being handled; the user's is the one that names the line.
    """
    seen = {id(exc)}
    current = exc
    while True:
        nxt = current.__cause__ or current.__context__
        if nxt is None or id(nxt) in seen:
            return current
        seen.add(id(nxt))
        current = nxt
