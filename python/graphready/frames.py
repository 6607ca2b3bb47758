"""Stacks of runtime events: every Python frame, each with its scope.

Each frame of the live stack is one of
- the harness (graphready itself): never reported;
- `framework`: PyTorch and its compilers, and the standard library;
- `library`: third-party packages (anything under `site-packages` / `dist-packages`, say
  transformers);
- `user`: the rest, the user's own code.

An event keeps the whole stack between the operation and the harness's call into the step,
innermost first. Its `location` is the user's innermost frame (else the innermost library frame):
the line the user wrote. Its innermost frame is where the operation was issued, library or not
(the line inside `torch.nn.TransformerEncoder` that built a nested tensor). Paths are canonical
(`os.path.realpath`) so the driver can match them against static findings.

No torch import here: this module is pure and tested without a GPU.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence

# Packages whose frames are the framework, never the user's line.
LIBRARY_PACKAGES = ("torch", "triton", "functorch", "torchgen", "typing_extensions")
# Files (relative to the torch package) that only route a call to an operator: the innermost
# frame shown for an event skips them.
DISPATCH_PLUMBING = (
    "_ops.py",
    os.path.join("utils", "_python_dispatch.py"),
    "overrides.py",
    # `torch._disable_dynamo` wraps the call into a Python dispatch mode in `_fn`.
    os.path.join("_dynamo", "eval_frame.py"),
    "_compile.py",
)
# More frames than this are cut (deep recursion); the innermost ones are kept.
MAX_FRAMES = 256
# The probe's wrappers around torch's own functions (sync APIs, torch.distributed's
# collectives) sit between the user's call and torch's frames: a stack goes through them.
PASS_THROUGH = ("_graphready_sync_api", "_graphready_collective")

USER = "user"
LIBRARY = "library"
FRAMEWORK = "framework"
HARNESS = "harness"
SCOPES = (USER, LIBRARY, FRAMEWORK)


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str
    scope: str = USER

    def to_json(self) -> dict:
        return {"path": self.path, "line": self.line, "function": self.function, "scope": self.scope}


def _norm(path: str) -> str:
    return os.path.normcase(os.path.realpath(path))


def _with_sep(path: str) -> str:
    return path if path.endswith(os.sep) else path + os.sep


def _is_package_dir(path: str) -> bool:
    return os.path.basename(path.rstrip(os.sep)) in ("site-packages", "dist-packages")


class FrameFilter:
    """Classifies files into scopes. Built once; `scope` is cached per filename."""

    def __init__(
        self,
        library_roots: Iterable[str],
        stdlib_roots: Iterable[str] = (),
        harness_roots: Iterable[str] = (),
        plumbing_files: Iterable[str] = (),
    ):
        # A root is a package folder, or one file for a single-file module. A root that is a
        # whole `site-packages` folder would make every third-party package framework code, so
        # it is refused (issue 13: `typing_extensions.py` once did exactly that).
        self._library = tuple(
            _with_sep(_norm(r)) for r in library_roots if r and not _is_package_dir(_norm(r))
        )
        self._stdlib = tuple(_with_sep(_norm(r)) for r in stdlib_roots if r)
        self._harness = tuple(_with_sep(_norm(r)) for r in harness_roots if r)
        self._plumbing = frozenset(_norm(p) for p in plumbing_files if p)
        self._cache: dict[str, str] = {}
        self._real: dict[str, str] = {}

    @classmethod
    def for_this_process(cls) -> "FrameFilter":
        harness = os.path.dirname(os.path.abspath(__file__))
        roots = []
        plumbing = []
        for name in LIBRARY_PACKAGES:
            module = sys.modules.get(name)
            root = module_root(getattr(module, "__file__", None))
            if root:
                roots.append(root)
                if name == "torch":
                    plumbing.extend(os.path.join(root, p) for p in DISPATCH_PLUMBING)
        # Python's warnings machinery sits between a sync-debug warning and the user's line.
        plumbing.append(getattr(sys.modules.get("warnings"), "__file__", None) or "")
        paths = sysconfig.get_paths()
        stdlib = [paths.get("stdlib", ""), paths.get("platstdlib", "")]
        return cls(roots, stdlib, [harness], plumbing)

    def scope(self, filename: str) -> str:
        cached = self._cache.get(filename)
        if cached is None:
            cached = self._classify(filename)
            self._cache[filename] = cached
        return cached

    def is_instrumented(self, filename: str) -> bool:
        """User or third-party code: the code whose lines the probe watches (not the framework,
        not the standard library, not the harness)."""
        return self.scope(filename) in (USER, LIBRARY)

    def is_harness(self, filename: str) -> bool:
        return self.scope(filename) == HARNESS

    def is_plumbing(self, filename: str) -> bool:
        return bool(filename) and _norm(filename) in self._plumbing

    def _classify(self, filename: str) -> str:
        if not filename or filename.startswith("<"):
            return FRAMEWORK
        path = _with_sep(_norm(filename))
        if any(path.startswith(root) for root in self._harness):
            return HARNESS
        if any(path.startswith(root) for root in self._library):
            return FRAMEWORK
        parts = path.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            return LIBRARY
        if any(path.startswith(root) for root in self._stdlib):
            return FRAMEWORK
        return USER

    def real(self, filename: str) -> str:
        real = self._real.get(filename)
        if real is None:
            real = os.path.realpath(filename)
            self._real[filename] = real
        return real


def module_root(file: Optional[str]) -> Optional[str]:
    """The folder of a package (`.../torch/__init__.py` -> `.../torch`), or the file itself for a
    single-file module (`.../site-packages/typing_extensions.py`)."""
    if not file:
        return None
    file = os.path.abspath(file)
    if os.path.basename(file) == "__init__.py":
        return os.path.dirname(file)
    return file


# ---------------------------------------------------------------- stack selection


def select_frames(raw: Iterable[tuple[str, int, str]], filt: FrameFilter, limit: int = MAX_FRAMES) -> list[Frame]:
    """The reported stack from raw frames given innermost first as (filename, line, function).

    Leading harness frames (the probe's own hooks) and dispatch plumbing are skipped; the stack
    ends at the first harness frame after that (the harness's call into the step: everything
    further out is the harness's own), except the wrappers of `PASS_THROUGH`, which are left
    out."""
    out: list[Frame] = []
    started = False
    for filename, line, function in raw:
        scope = filt.scope(filename)
        if not started:
            if scope == HARNESS or filt.is_plumbing(filename):
                continue
            started = True
        if scope == HARNESS:
            if function in PASS_THROUGH:
                continue
            break
        out.append(Frame(filt.real(filename), int(line), function, scope))
        if len(out) >= limit:
            break
    return out


def pick_location(stack: Sequence[Frame]) -> Optional[Frame]:
    """The user's innermost frame; else the innermost library frame; else None."""
    for wanted in (USER, LIBRARY):
        for frame in stack:
            if frame.scope == wanted:
                return frame
    return None


def has_code_frame(stack: Sequence[Frame]) -> bool:
    """Whether user or library code is on the stack (not framework internals alone)."""
    return any(f.scope in (USER, LIBRARY) for f in stack)


def _walk(frame) -> Iterator[tuple[str, int, str]]:
    while frame is not None:
        code = frame.f_code
        yield code.co_filename, frame.f_lineno, code.co_name
        frame = frame.f_back


def live_stack(filt: FrameFilter, start=None, limit: int = MAX_FRAMES) -> list[Frame]:
    """The live stack, innermost first (from the caller by default; the harness is skipped)."""
    frame = start if start is not None else sys._getframe(1)
    return select_frames(_walk(frame), filt, limit)


def traceback_stack(tb, filt: FrameFilter, limit: int = MAX_FRAMES) -> list[Frame]:
    """The stack of a traceback, innermost first (a traceback lists outermost first)."""
    raw = []
    while tb is not None:
        code = tb.tb_frame.f_code
        raw.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    raw.reverse()
    return select_frames(raw, filt, limit)


# Functions that only ever run at the outer end of a stack.
_OUTERMOST = ("<module>", "_run_module_as_main")


def frames_from_dicts(frames: Sequence[dict], filt: FrameFilter) -> list[Frame]:
    """A stack from `{filename, line, name}` dicts (PyTorch's memory snapshot: innermost first;
    a list that starts at the program's outermost frame is turned around)."""
    raw = [(f.get("filename", ""), int(f.get("line", 0) or 0), f.get("name", "")) for f in frames]
    if raw and raw[0][2] in _OUTERMOST and raw[-1][2] not in _OUTERMOST:
        raw.reverse()
    return select_frames(raw, filt)


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
