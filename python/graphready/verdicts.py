"""Verdicts of the comparison phases, honest about what can be judged.

A replay (or an uninitialised-memory fill) is judged against eager. When eager itself gives two
different outputs from the same inputs and the same restored state, no comparison with it means
anything: the phase is `inconclusive`, says what differed, and why (from a re-run with
deterministic algorithms), never blames the graph or uninitialised memory for it.

Pure: comparisons are the protocol's `comparison` dicts.
"""

from __future__ import annotations

from typing import Optional, Sequence

PASS = "pass"
FAIL = "fail"
INCONCLUSIVE = "inconclusive"


def not_reproducible(determinism: dict, deterministic_retry: Optional[bool], state_tensors: int) -> str:
    """Why eager differs from itself. `deterministic_retry`: whether two eager runs with
    `torch.use_deterministic_algorithms(True)` agreed (None: not tried)."""
    what = determinism.get("message") or "the outputs differ"
    restored = f"its {state_tensors} restored state storage(s)" if state_tensors else "its state (none found)"
    if deterministic_retry:
        why = (
            "with torch.use_deterministic_algorithms(True) two runs agree, so a kernel is "
            "non-deterministic (atomics); make it deterministic to judge the graph"
        )
    else:
        why = (
            "the step reads something the probe neither restores nor controls: state written "
            "outside PyTorch's operators (a Triton or CUDA kernel writing through a raw pointer: "
            "name it in ProbeTarget(state=[...])), a Python value that changes every step "
            "(ProbeTarget(reset=...)), or a non-deterministic kernel"
        )
    return f"eager is not reproducible from its inputs and {restored} ({what}): {why}"


def replay_verdict(
    determinism: dict, same: dict, mutated: dict, reason: str, notes: Sequence[str] = ()
) -> tuple[str, Optional[str]]:
    if not determinism["equal"]:
        return INCONCLUSIVE, f"{reason}; so whether replay is bit-exact cannot be judged"
    failed = [c for c in (same, mutated) if not c["equal"]]
    parts = list(notes)
    if failed:
        parts.insert(0, f"{failed[0]['name']}: {failed[0]['message']}")
        return FAIL, "; ".join(parts)
    return PASS, "; ".join(parts) or None


def uninitialized_verdict(
    determinism: dict, comparisons: Sequence[dict], reason: str, unwritten: int
) -> tuple[str, Optional[str]]:
    if not determinism["equal"]:
        return INCONCLUSIVE, f"{reason}; so whether the output depends on uninitialised memory cannot be judged"
    bad = [c for c in comparisons if not c["equal"]]
    if not bad:
        return PASS, None
    where = f"; {unwritten} torch.empty-family buffer(s) left partly unwritten" if unwritten else ""
    return FAIL, f"output depends on uninitialised memory ({bad[0]['message']}){where}"
