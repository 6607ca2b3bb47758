"""Finding the step's state with torch: which storages operators write, and where they were
allocated. The bookkeeping is in `state.py`."""

from __future__ import annotations

import gc
import weakref
from typing import Any, Iterable, Optional

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .compare import flatten
from .frames import FrameFilter, frames_from_dicts
from .runs import is_tensor, restore_storage, snapshot_storage, storage_key
from .state import StateEntry, StateKeeper, merge_declared, select_state


def _write_arguments(func) -> list:
    """(kind, position or name, name) of the arguments the operator's schema marks as written
    (`Tensor(a!)`: in-place `self`, `out=`)."""
    cached = _WRITES.get(func)
    if cached is not None:
        return cached
    found = []
    try:
        position = 0
        for arg in func._schema.arguments:
            written = arg.alias_info is not None and arg.alias_info.is_write
            if arg.kwarg_only:
                if written:
                    found.append(("kw", None, arg.name))
            else:
                if written:
                    found.append(("pos", position, arg.name))
                position += 1
    except Exception:  # noqa: BLE001 - an operator without a readable schema writes nothing we know of
        found = []
    _WRITES[func] = found
    return found


_WRITES: dict = {}


def _tensors(value: Any) -> Iterable[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            if isinstance(v, torch.Tensor):
                yield v


class MutationWatch(TorchDispatchMode):
    """Records every storage an operator writes in place or through `out=` during one step, by
    weak reference to its base tensor: a temporary of the step is gone once the step returns."""

    def __init__(self) -> None:
        super().__init__()
        self.written: dict[tuple, weakref.ref] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        for kind, position, name in _write_arguments(func):
            if kind == "pos":
                value = args[position] if position < len(args) else kwargs.get(name)
            else:
                value = kwargs.get(name)
            for t in _tensors(value):
                root = t._base if t._base is not None else t
                key = storage_key(root)
                if key is not None and key not in self.written:
                    try:
                        self.written[key] = weakref.ref(root)
                    except TypeError:  # not weak-referenceable: cannot tell whether it outlives the step
                        continue
        return out


class AllocationHistory:
    """PyTorch's allocator history (`torch.cuda.memory._record_memory_history`, Python stacks),
    on from the factory to the end of the warm-up, to say where each state storage was
    allocated. Best effort: without it the state has no sites."""

    def __init__(self) -> None:
        self.on = False
        self.error: Optional[str] = None

    def start(self) -> None:
        try:
            torch.cuda.memory._record_memory_history(enabled="state", context="alloc", stacks="python")
            self.on = True
        except Exception as exc:  # noqa: BLE001 - an older or different allocator
            self.error = f"{type(exc).__name__}: {exc}"

    def stop(self) -> None:
        if self.on:
            self.on = False
            try:
                torch.cuda.memory._record_memory_history(enabled=None)
            except Exception:  # noqa: BLE001 - best effort
                pass

    def sites(self, keys: Iterable[tuple], filt: FrameFilter) -> dict:
        """key -> stack (innermost first) of the allocation holding that address."""
        wanted = {k for k in keys if k[0] == "cuda"}
        if not self.on or not wanted:
            return {}
        try:
            snapshot = torch.cuda.memory._snapshot()
        except Exception as exc:  # noqa: BLE001
            self.error = f"{type(exc).__name__}: {exc}"
            return {}
        found = {}
        for segment in snapshot.get("segments", []):
            device = segment.get("device", 0)
            address = segment.get("address", 0)
            for block in segment.get("blocks", []):
                start = block.get("address", address)
                size = block.get("size", 0)
                address = start + size
                for key in wanted:
                    if key not in found and key[1] == device and start <= key[2] < start + size:
                        found[key] = frames_from_dicts(block.get("frames", []), filt)
        return found


def discover_state(target, inputs: list, filt: FrameFilter, history: Optional[AllocationHistory]) -> tuple:
    """Run one step under `MutationWatch` and build the `StateKeeper` (not yet snapshotted).
    Returns (keeper, step outputs' count of leaves)."""
    watch = MutationWatch()
    with watch:
        out = target.step(*inputs)
    torch.cuda.synchronize()
    output_keys = {storage_key(v) for _, v in flatten(out) if is_tensor(v)}
    leaves = len(flatten(out))
    del out
    gc.collect()
    alive = {}
    for key, ref in watch.written.items():
        tensor = ref()
        if tensor is not None:
            alive[key] = tensor
    input_keys = {storage_key(x) for x in inputs if is_tensor(x)}
    keys = select_state(watch.written.keys(), alive.keys(), input_keys, output_keys)
    found = [_entry(key, alive[key]) for key in keys]
    declared = [_entry(storage_key(t), t) for t in target.state if is_tensor(t) and storage_key(t) is not None]
    entries = merge_declared(found, declared)
    if history is not None:
        sites = history.sites([e.key for e in entries], filt)
        for entry in entries:
            entry.site = sites.get(entry.key, [])
    keeper = StateKeeper(entries, snapshot_storage, restore_storage, target.reset)
    return keeper, leaves


def _entry(key: tuple, tensor: torch.Tensor) -> StateEntry:
    dtype = str(tensor.dtype).replace("torch.", "")
    return StateEntry(
        key=key,
        handle=tensor,
        nbytes=tensor.untyped_storage().nbytes(),
        device=str(tensor.device),
        description=f"{dtype}{list(tensor.shape)}",
    )
