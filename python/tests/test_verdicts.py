"""Honest verdicts (issue 13): never judge against an eager run that is not reproducible."""

from graphready.verdicts import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    not_reproducible,
    replay_verdict,
    uninitialized_verdict,
)

EQUAL = {"name": "x", "equal": True, "message": None}


def differs(name, message="out[0]: 3 of 64 elements differ, max |diff| 0.25"):
    return {"name": name, "equal": False, "message": message}


def test_replay_is_inconclusive_when_eager_differs_from_itself():
    reason = not_reproducible(differs("eager vs eager"), None, 6)
    status, message = replay_verdict(differs("eager vs eager"), differs("replay"), EQUAL, reason)
    assert status == INCONCLUSIVE
    assert "eager is not reproducible from its inputs and its 6 restored state storage(s)" in message
    assert "max |diff| 0.25" in message and "ProbeTarget(state=[...])" in message
    assert message.endswith("so whether replay is bit-exact cannot be judged")


def test_non_deterministic_kernels_are_named_when_deterministic_algorithms_agree():
    reason = not_reproducible(differs("eager vs eager"), True, 0)
    assert "its state (none found)" in reason and "non-deterministic (atomics)" in reason


def test_replay_fails_on_a_real_mismatch_and_passes_otherwise():
    status, message = replay_verdict(EQUAL, EQUAL, differs("replay vs eager (new inputs)"), "", ["note"])
    assert status == FAIL and message.startswith("replay vs eager (new inputs): out[0]") and message.endswith("; note")
    assert replay_verdict(EQUAL, EQUAL, EQUAL, "") == (PASS, None)
    assert replay_verdict(EQUAL, EQUAL, EQUAL, "", ["new inputs equal"]) == (PASS, "new inputs equal")


def test_uninitialised_memory_is_never_blamed_for_state():
    reason = not_reproducible(differs("eager vs eager"), False, 0)
    status, message = uninitialized_verdict(differs("eager vs eager"), [differs("filled vs not")], reason, 2)
    assert status == INCONCLUSIVE
    assert "uninitialised memory cannot be judged" in message
    assert "depends on uninitialised memory (" not in message
    status, message = uninitialized_verdict(EQUAL, [differs("filled vs not", "out[0]: 252 of 256 elements differ")], "", 1)
    assert status == FAIL
    assert message == (
        "output depends on uninitialised memory (out[0]: 252 of 256 elements differ); "
        "1 torch.empty-family buffer(s) left partly unwritten"
    )
    assert uninitialized_verdict(EQUAL, [EQUAL, EQUAL], "", 0) == (PASS, None)
