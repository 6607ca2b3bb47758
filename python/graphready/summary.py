"""Readiness and a readable summary of phase results (the Python twin of the driver's text)."""

from __future__ import annotations

from typing import Iterable, Optional

from .state import format_bytes

BLOCKING = ("sync_scan", "capture", "replay")
# Statuses that keep a bucket from being ready wherever they appear (the last three are written
# by a launcher for a rank that died, hung or was stopped).
FAILURES = ("fail", "crashed", "timed_out", "hung", "stopped")


def bucket_ready(phases: Iterable[dict]) -> bool:
    by_name = {p["phase"]: p for p in phases}
    if any(by_name.get(name, {}).get("status") != "pass" for name in BLOCKING):
        return False
    return all(p.get("status") not in FAILURES for p in by_name.values())


def _groups(phases: list[dict]) -> list[tuple]:
    """(rank, bucket) pairs in order; rank is None for a single process."""
    return sorted({(p.get("rank"), p["bucket"]) for p in phases}, key=lambda k: (k[0] if k[0] is not None else -1, k[1]))


def is_ready(phases: list[dict]) -> bool:
    groups = _groups(phases)
    return bool(groups) and all(
        bucket_ready(p for p in phases if p.get("rank") == rank and p["bucket"] == b) for rank, b in groups
    )


def _frame(frame: Optional[dict]) -> str:
    if not frame:
        return "(no user frame)"
    return f"{frame['path']}:{frame['line']} in {frame['function']}"


def _details(p: dict) -> str:
    text = ""
    timing = p.get("timing")
    if timing and timing.get("speedup"):
        text += (
            f" eager {timing['eager_median_us']:.1f} us, replay "
            f"{timing['replay_median_us']:.1f} us, speedup {timing['speedup']:.2f}x"
        )
    alloc = p.get("allocations")
    if alloc:
        text += f" {alloc['count']} allocation(s), {alloc['bytes']} bytes per eager step"
    graph = p.get("graph")
    if graph:
        text += (
            f" graph pool {format_bytes(graph['pool_reserved_bytes'])} reserved,"
            f" {format_bytes(graph['pool_allocated_bytes'])} allocated;"
            f" captured in {graph['capture_seconds'] * 1e3:.1f} ms"
        )
    return text


def render(phases: list[dict]) -> str:
    lines = []
    for rank, bucket in _groups(phases):
        lines.append(f"bucket {bucket}:" if rank is None else f"bucket {bucket}, rank {rank}:")
        for p in (p for p in phases if p.get("rank") == rank and p["bucket"] == bucket):
            head = f"  {p['phase']:<14} {p['status'].upper():<7}" + _details(p)
            if p.get("message"):
                head += f" {p['message']}"
            lines.append(head)
            for event in p.get("events", []):
                if event["kind"] == "allocation":
                    continue
                count = f" (x{event['count']})" if event.get("count", 1) > 1 else ""
                lines.append(
                    f"      {event['kind']}: {event['what']} at {_frame(event.get('location'))}{count}: {event['message']}"
                )
                stack = event.get("stack") or []
                if stack and stack[0] != event.get("location"):
                    lines.append(f"        innermost ({stack[0].get('scope', 'library')}): {_frame(stack[0])}")
    verdict = "ready" if is_ready(phases) else "NOT ready"
    lines.append(f"graph {verdict}: every bucket must capture, replay bit-exactly and never synchronise")
    return "\n".join(lines)
