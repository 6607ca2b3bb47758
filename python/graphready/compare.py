"""Flatten step outputs and compare them leaf by leaf (bit-exact for tensors)."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

# (reference, candidate) -> {"equal", "mismatched", "total", "max_abs_diff", "first_index", "detail"?}
TensorCompare = Callable[[Any, Any], dict]


def flatten(obj: Any, prefix: str = "out") -> list[tuple[str, Any]]:
    """Leaves of a nested output as (path, leaf), in a stable order. `None` leaves are dropped."""
    if obj is None:
        return []
    if isinstance(obj, (list, tuple)):
        items: list[tuple[str, Any]] = []
        for i, v in enumerate(obj):
            items.extend(flatten(v, f"{prefix}[{i}]"))
        return items
    if isinstance(obj, dict):
        items = []
        for k in sorted(obj, key=str):
            items.extend(flatten(obj[k], f"{prefix}[{k!r}]"))
        return items
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        items = []
        for field in dataclasses.fields(obj):
            items.extend(flatten(getattr(obj, field.name), f"{prefix}.{field.name}"))
        return items
    return [(prefix, obj)]


def compare_flat(
    name: str,
    reference: list[tuple[str, Any]],
    candidate: list[tuple[str, Any]],
    tensor_compare: TensorCompare,
    is_tensor: Callable[[Any], bool],
) -> dict:
    """Compare two flattened outputs; the result is the protocol's `comparison` object."""
    result: dict = {
        "name": name,
        "equal": True,
        "leaves": len(reference),
        "mismatched_leaves": [],
        "message": None,
    }
    ref_paths = [p for p, _ in reference]
    cand_paths = [p for p, _ in candidate]
    if ref_paths != cand_paths:
        result["equal"] = False
        result["message"] = f"output structure differs: {ref_paths} vs {cand_paths}"
        return result
    for (path, ref), (_, cand) in zip(reference, candidate):
        leaf = _compare_leaf(path, ref, cand, tensor_compare, is_tensor)
        if leaf is not None:
            result["equal"] = False
            result["mismatched_leaves"].append(leaf)
    if not result["equal"]:
        first = result["mismatched_leaves"][0]
        result["message"] = f"{first['path']}: {first['detail']}"
    return result


def _compare_leaf(path, ref, cand, tensor_compare, is_tensor) -> Optional[dict]:
    if is_tensor(ref) != is_tensor(cand):
        return {"path": path, "detail": "one side is a tensor, the other is not"}
    if not is_tensor(ref):
        if ref == cand:
            return None
        return {"path": path, "detail": f"{ref!r} != {cand!r}"}
    found = tensor_compare(ref, cand)
    if found["equal"]:
        return None
    detail = found.get("detail")
    if not detail:
        detail = f"{found['mismatched']} of {found['total']} elements differ"
        if found.get("first_index") is not None:
            detail += f", first at index {found['first_index']}"
        if found.get("max_abs_diff") is not None:
            detail += f", max |diff| {found['max_abs_diff']:.6g}"
    return {
        "path": path,
        "detail": detail,
        "mismatched": found.get("mismatched"),
        "total": found.get("total"),
        "max_abs_diff": found.get("max_abs_diff"),
        "first_index": found.get("first_index"),
    }
