"""Padded-bucket row isolation: the pad rows of a bucket must never change the real rows.

A serving engine pads a batch of `n` requests up to the next captured bucket. Whatever the pad
rows hold — stale data, NaN — must not reach rows `[0, n)`: a per-tensor amax or scale computed
over the whole bucket, say, turns every real row's scale into NaN. With `ProbeTarget(batch_dim=d)`
the probe fills rows `[n, bucket)` of every batch input first with neutral values, then with
hostile ones, replays the graph each time, and requires rows `[0, n)` of every batch output (and
every output without a batch dimension, whole) to be bit-exact between the two.

Hostile values never leave the input's valid range for integers: an out-of-range token id or
index would trip a device assert instead of showing a leak, so integer pad rows take other values
the input already holds.

Pure planning and verdicts; the tensor work lives in `runs.py`.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

NEUTRAL = "neutral"
HOSTILE = "hostile"
# Symbolic float fill values; `runs.py` maps them to the dtype's values.
NAN, HUGE, MINUS_HUGE = "nan", "max", "-max"


def real_row_counts(bucket: int, real_rows: Optional[Sequence[int]] = None) -> list[int]:
    """The real-row counts to try: `real_rows`, else 1 and bucket // 2; only 1 <= n < bucket."""
    if bucket <= 1:
        return []
    wanted = real_rows if real_rows is not None else (1, bucket // 2)
    return sorted({int(n) for n in wanted if 1 <= int(n) < bucket})


def ignored_real_rows(bucket: int, real_rows: Optional[Sequence[int]]) -> list[int]:
    """Requested counts that leave no pad row (or no real row) in this bucket."""
    if real_rows is None:
        return []
    return sorted({int(n) for n in real_rows if not 1 <= int(n) < bucket})


def normalise_dim(batch_dim: int, ndim: int) -> Optional[int]:
    dim = batch_dim + ndim if batch_dim < 0 else batch_dim
    return dim if 0 <= dim < ndim else None


def batch_positions(shapes: Sequence[Optional[Sequence[int]]], batch_dim: int, bucket: int) -> list[int]:
    """Indices of the leaves (None for a non-tensor) whose size in `batch_dim` is the bucket."""
    out = []
    for i, shape in enumerate(shapes):
        if shape is None:
            continue
        dim = normalise_dim(batch_dim, len(shape))
        if dim is not None and shape[dim] == bucket:
            out.append(i)
    return out


def fill_values(kind: str, fill: str, observed: Sequence[Any] = ()) -> list:
    """The values written, cycling, into the pad rows of one input.

    `kind` is `float`, `int` or `bool`; `observed` holds values the input took (capture inputs and
    new inputs), from which integer hostile values are drawn: the largest and the smallest other
    than the neutral 0, so token ids and indices stay valid."""
    if fill == NEUTRAL:
        return [False] if kind == "bool" else [0]
    if kind == "float":
        return [NAN, HUGE, MINUS_HUGE]
    if kind == "bool":
        return [True]
    others = sorted({int(v) for v in observed if int(v) != 0})
    if not others:
        return [0]  # nothing valid but 0 was seen: these pad rows cannot be made hostile
    return [others[-1], others[0]] if others[0] != others[-1] else [others[-1]]


def leaking_rows(row_differs: Sequence[bool]) -> list[int]:
    return [i for i, differs in enumerate(row_differs) if differs]


def describe_rows(rows: Sequence[int], limit: int = 8) -> str:
    shown = ", ".join(str(r) for r in rows[:limit])
    return shown + (f", ... ({len(rows)} rows)" if len(rows) > limit else "")


def verdict(bucket: int, cases: Sequence[dict]) -> tuple[str, str]:
    """(status, message) from the cases: `{"real_rows": n, "leaks": [{"path", "rows",
    "batched"}]}`."""
    leaks = [(case["real_rows"], leak) for case in cases for leak in case["leaks"]]
    tried = ", ".join(str(case["real_rows"]) for case in cases)
    if not leaks:
        return "pass", f"real rows bit-exact with neutral and hostile pad rows ({tried} real of {bucket})"
    n, first = leaks[0]
    if first.get("batched", True):
        where = f"{first['path']} rows {describe_rows(first.get('rows', []))}"
    else:
        where = f"{first['path']} (no batch dimension: compared whole)"
    outputs = sorted({leak["path"] for _, leak in leaks})
    return "fail", (
        f"pad rows leak into real rows: {where} change when rows {n}..{bucket - 1} of the inputs hold "
        f"hostile values ({n} real of {bucket}); leaking output(s): {', '.join(outputs)}"
    )
