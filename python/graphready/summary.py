"""Readiness and a readable summary of phase results (the Python twin of the driver's text)."""

from __future__ import annotations

from typing import Iterable

BLOCKING = ("sync_scan", "capture", "replay")


def bucket_ready(phases: Iterable[dict]) -> bool:
    by_name = {p["phase"]: p for p in phases}
    if any(by_name.get(name, {}).get("status") != "pass" for name in BLOCKING):
        return False
    return all(p.get("status") != "fail" for p in by_name.values())


def is_ready(phases: list[dict]) -> bool:
    buckets = sorted({p["bucket"] for p in phases})
    return bool(buckets) and all(bucket_ready(p for p in phases if p["bucket"] == b) for b in buckets)


def _where(event: dict) -> str:
    loc = event.get("location")
    if not loc:
        return "(no user frame)"
    return f"{loc['path']}:{loc['line']} in {loc['function']}"


def render(phases: list[dict]) -> str:
    lines = []
    for bucket in sorted({p["bucket"] for p in phases}):
        lines.append(f"bucket {bucket}:")
        for p in (p for p in phases if p["bucket"] == bucket):
            status = p["status"].upper()
            head = f"  {p['phase']:<14} {status:<7}"
            if p.get("message"):
                head += f" {p['message']}"
            timing = p.get("timing")
            if timing and timing.get("speedup"):
                head += (
                    f" eager {timing['eager_median_us']:.1f} us, replay "
                    f"{timing['replay_median_us']:.1f} us, speedup {timing['speedup']:.2f}x"
                )
            alloc = p.get("allocations")
            if alloc:
                head += f" {alloc['count']} allocation(s), {alloc['bytes']} bytes per eager step"
            lines.append(head)
            for event in p.get("events", []):
                if event["kind"] == "allocation":
                    continue
                count = f" (x{event['count']})" if event.get("count", 1) > 1 else ""
                lines.append(f"      {event['kind']}: {event['what']} at {_where(event)}{count}: {event['message']}")
    verdict = "ready" if is_ready(phases) else "NOT ready"
    lines.append(f"graph {verdict}: every bucket must capture, replay bit-exactly and never synchronise")
    return "\n".join(lines)
