"""The user-facing factory API, and loading a factory from a `TARGET` string."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence


@dataclass
class ProbeTarget:
    """What a factory returns: one decode step and its static buffers, for one bucket.

    - `step(*inputs)` runs one step reading only `inputs` (and state the step owns) and returns
      its outputs: a tensor, or a tuple/list/dict/dataclass of tensors.
    - `inputs` are the static input buffers. The graph reads them at replay, so the probe writes
      new values into them with `copy_` (they may live on the GPU or in pinned host memory).
    - `make_inputs()` returns fresh values with the same shapes and dtypes as `inputs`, used to
      prove the graph does not freeze the values seen at capture. Without it the probe makes its
      own (random values for floating tensors, a permutation of the originals otherwise).
    - `state`: tensors the step mutates besides its outputs (a KV cache, its counters). The probe
      finds those written through PyTorch operators itself; name here what it cannot see (a
      Triton or CUDA kernel writing through a raw pointer). Every judged run starts from the
      same snapshot of the state.
    - `reset()`: restores state that is not a tensor (a Python step counter); called before
      every judged run, after the tensors are restored.
    - `batch_dim`: the batch dimension of inputs and outputs. Turns on padded-bucket row
      isolation: with `n` real rows, the pad rows `[n, bucket)` of every batch input are filled
      first with neutral then with hostile values, and rows `[0, n)` of every batch output must
      be bit-exact between the two replays.
    - `real_rows`: the real-row counts to try (default: 1 and bucket // 2).
    """

    step: Callable[..., Any]
    inputs: Sequence[Any]
    make_inputs: Optional[Callable[[], Sequence[Any]]] = None
    name: Optional[str] = None
    warmup_steps: int = 3
    timing_steps: int = 30
    state: Sequence[Any] = ()
    reset: Optional[Callable[[], Any]] = None
    batch_dim: Optional[int] = None
    real_rows: Optional[Sequence[int]] = None


class TargetError(Exception):
    """The TARGET string, its module or its factory is unusable (exit code 2)."""


def split_target(spec: str) -> tuple[str, str]:
    """`path/to/file.py:factory` or `package.module:factory` -> (location, attribute)."""
    location, sep, attr = spec.rpartition(":")
    if not sep or not location or not attr:
        raise TargetError(
            f"TARGET {spec!r} must be `path/to/file.py:factory` or `package.module:factory`"
        )
    if not attr.replace(".", "_").isidentifier():
        raise TargetError(f"TARGET {spec!r}: {attr!r} is not a Python attribute name")
    return location, attr


def is_file_target(location: str) -> bool:
    return location.endswith(".py") or os.sep in location or "/" in location


def check_target_exists(spec: str) -> None:
    """Cheap checks that need no import (so a bad path is reported before torch is looked for)."""
    location, _ = split_target(spec)
    if is_file_target(location) and not os.path.isfile(location):
        raise TargetError(f"TARGET file {location!r} does not exist (cwd: {os.getcwd()})")


def load_factory(spec: str) -> Callable[..., Any]:
    location, attr = split_target(spec)
    if is_file_target(location):
        module = _import_file(location)
    else:
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            module = importlib.import_module(location)
        except ImportError as exc:
            raise TargetError(f"TARGET module {location!r} cannot be imported: {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"TARGET {spec!r}: {location} has no attribute {attr!r}") from None
    if not callable(obj):
        raise TargetError(f"TARGET {spec!r}: {attr!r} is not callable")
    return obj


def _import_file(location: str):
    path = os.path.abspath(location)
    if not os.path.isfile(path):
        raise TargetError(f"TARGET file {location!r} does not exist")
    directory = os.path.dirname(path)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = "_graphready_target_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise TargetError(f"TARGET file {location!r} cannot be loaded as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def call_factory(factory: Callable[..., Any], bucket: int) -> ProbeTarget:
    """Call the factory with the bucket (if it takes an argument) and validate what it returns."""
    if _takes_argument(factory):
        made = factory(bucket)
    else:
        made = factory()
    return validate_target(made)


def _takes_argument(factory: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return True
    for p in params:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL):
            return True
    return False


def validate_target(made: Any) -> ProbeTarget:
    if isinstance(made, ProbeTarget):
        target = made
    elif isinstance(made, tuple) and len(made) in (2, 3):
        target = ProbeTarget(*made)
    else:
        raise TypeError(
            "the factory must return graphready.ProbeTarget(step, inputs, make_inputs) "
            f"(got {type(made).__name__})"
        )
    if not callable(target.step):
        raise TypeError("ProbeTarget.step is not callable")
    if not isinstance(target.inputs, (list, tuple)):
        raise TypeError("ProbeTarget.inputs must be a list or tuple of tensors")
    if target.make_inputs is not None and not callable(target.make_inputs):
        raise TypeError("ProbeTarget.make_inputs must be callable or None")
    if not isinstance(target.state, (list, tuple)):
        raise TypeError("ProbeTarget.state must be a list or tuple of tensors")
    if target.reset is not None and not callable(target.reset):
        raise TypeError("ProbeTarget.reset must be callable or None")
    if target.batch_dim is not None and (isinstance(target.batch_dim, bool) or not isinstance(target.batch_dim, int)):
        raise TypeError("ProbeTarget.batch_dim must be an int or None")
    if target.real_rows is not None:
        if target.batch_dim is None:
            raise TypeError("ProbeTarget.real_rows needs ProbeTarget.batch_dim")
        if not isinstance(target.real_rows, (list, tuple)) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in target.real_rows
        ):
            raise TypeError("ProbeTarget.real_rows must be a list of ints")
    target.inputs = list(target.inputs)
    target.state = list(target.state)
    return target
