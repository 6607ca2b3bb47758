"""State bookkeeping (issue 13): which written storages are state, snapshot and restore before
every run, and the report's summary. Fake tensors: lists of numbers."""

import pytest

from graphready.frames import Frame, pick_location
from graphready.state import (
    DECLARED,
    FOUND,
    StateEntry,
    StateKeeper,
    describe_state,
    format_bytes,
    merge_declared,
    select_state,
)


def test_state_is_written_alive_and_neither_input_nor_output():
    written = ["cache_k", "tmp", "tokens", "logits", "cache_k", "counter"]
    alive = {"cache_k", "tokens", "logits", "counter"}  # "tmp" died with the step
    keys = select_state(written, alive, inputs={"tokens"}, outputs={"logits"})
    assert keys == ["cache_k", "counter"]


def entry(key, nbytes=8, site=()):
    return StateEntry(key=key, handle=[0] * 4, nbytes=nbytes, device="cuda:0", description="int64[4]", site=list(site))


def test_declared_state_is_added_once_and_counts_as_declared():
    found = [entry("a"), entry("b")]
    declared = [entry("b"), entry("c"), entry("c")]
    merged = merge_declared(found, declared)
    assert [(e.key, e.origin) for e in merged] == [("a", FOUND), ("b", DECLARED), ("c", DECLARED)]


class Counter:
    def __init__(self):
        self.value = 0


def test_every_run_starts_from_the_snapshot_and_reset_is_called_after():
    cache = [0, 0, 0, 0]
    length = [5]
    counter = Counter()
    calls = []

    def reset():
        calls.append(list(length))  # the tensors are restored before reset() runs
        counter.value = 0

    keeper = StateKeeper(
        [StateEntry("cache", cache, 32, "cuda:0", "int64[4]"), StateEntry("length", length, 8, "cuda:0", "int64[]")],
        snapshot=lambda h: list(h),
        restore=lambda h, saved: h.__setitem__(slice(None), saved),
        reset=reset,
    )
    with pytest.raises(RuntimeError, match="before it was snapshotted"):
        keeper.restore()
    keeper.snapshot()

    def step():  # writes the cache at its length, then advances it (a decode step)
        cache[length[0] % 4] += 1
        length[0] += 1
        counter.value += 1
        return sum(cache)

    outputs = []
    for _ in range(50):  # many runs never run off the end
        keeper.restore()
        outputs.append(step())
    assert outputs == [1] * 50
    assert length == [6] and counter.value == 1
    assert calls[0] == [5] and len(calls) == 50
    assert keeper.restores == 50 and keeper.nbytes == 40


def test_summary_counts_bytes_and_groups_allocation_sites():
    cache_site = [
        Frame("/site-packages/transformers/cache_utils.py", 434, "lazy_initialization", "library"),
        Frame("/work/llama.py", 30, "factory", "user"),
    ]
    counter_site = [
        Frame("/site-packages/transformers/cache_utils.py", 444, "lazy_initialization", "library"),
        Frame("/work/llama.py", 30, "factory", "user"),
    ]
    entries = [
        entry("k0", 32768, cache_site),
        entry("v0", 32768, cache_site),
        entry("n0", 8, counter_site),
        entry("x", 4),
    ]
    entries[3].origin = DECLARED
    keeper = StateKeeper(entries, snapshot=list, restore=lambda h, s: None)
    summary = keeper.summary(lambda f: f.to_json(), pick_location)
    assert summary["tensors"] == 4 and summary["bytes"] == 65548
    assert summary["found"] == 3 and summary["declared"] == 1 and summary["unlocated"] == 1
    assert [(s["innermost"]["line"], s["tensors"], s["bytes"]) for s in summary["sites"]] == [(434, 2, 65536), (444, 1, 8)]
    assert summary["sites"][0]["location"]["path"] == "/work/llama.py"
    assert len(summary["storages"]) == 4 and summary["reset"] is False
    text = describe_state(summary)
    assert text == "state: 4 storage(s), 64.0 KiB (1 declared), restored before every judged run"


def test_describe_state_without_state():
    assert describe_state({"tensors": 0, "reset": False}) == "no state found"
    assert describe_state({"tensors": 0, "reset": True}) == "no state found; reset() is called before every run"
    assert format_bytes(512) == "512 B" and format_bytes(3 * 1024 * 1024) == "3.0 MiB"
