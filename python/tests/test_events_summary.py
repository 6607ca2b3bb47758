from graphready.events import EventLog
from graphready.frames import Frame
from graphready.summary import bucket_ready, is_ready, render


def test_event_log_merges_by_kind_what_and_line():
    log = EventLog()
    here = [Frame("/m.py", 12, "step")]
    log.add("sync", "aten::_local_scalar_dense", here, "sync")
    log.add("sync", "aten::_local_scalar_dense", here, "sync")
    log.add("sync", "aten::nonzero", here, "sync")
    log.add("runtime_sync", "cudaDeviceSynchronize", [], "unattributed")
    events = log.events()
    assert [e["count"] for e in events] == [2, 1, 1]
    assert events[0]["location"] == {"path": "/m.py", "line": 12, "function": "step", "scope": "user"}
    assert events[2]["location"] is None
    assert len(log) == 3


def test_events_at_one_user_line_are_told_apart_by_their_innermost_frame():
    log = EventLog()
    user = Frame("/m.py", 12, "step")
    first = [Frame("/site-packages/transformers/moe.py", 79, "forward", "library"), user]
    second = [Frame("/site-packages/transformers/moe.py", 85, "forward", "library"), user]
    log.add("sync", "aten::nonzero", first)
    log.add("sync", "aten::nonzero", first)
    log.add("sync", "aten::nonzero", second)
    events = log.events()
    assert [(e["stack"][0]["line"], e["count"]) for e in events] == [(79, 2), (85, 1)]
    assert all(e["location"]["path"] == "/m.py" for e in events)
    assert len(events[0]["stack"]) == 2


def phase(bucket, name, status, **extra):
    return {"bucket": bucket, "phase": name, "status": status, "events": [], **extra}


def clean(bucket):
    return [phase(bucket, n, "pass") for n in ("setup", "warmup", "sync_scan", "capture", "replay")]


def test_readiness_needs_blocking_phases_to_pass_in_every_bucket():
    assert is_ready(clean(1) + clean(2))
    assert not is_ready([])
    broken = clean(1) + [phase(2, "capture", "fail")]
    assert not is_ready(broken)
    assert not bucket_ready(clean(1)[:-1] + [phase(1, "replay", "skipped")])
    assert not bucket_ready(clean(1) + [phase(1, "uninitialized", "fail")])
    assert bucket_ready(clean(1) + [phase(1, "profiler_scan", "error")])


def test_render_names_the_line_and_the_verdict():
    event = {
        "kind": "capture_break",
        "what": "aten::_local_scalar_dense",
        "message": "invalidated the capture",
        "location": {"path": "/m.py", "line": 12, "function": "step"},
        "count": 1,
    }
    timing = {"eager_median_us": 400.0, "replay_median_us": 50.0, "speedup": 8.0}
    text = render(
        [phase(1, "capture", "fail", events=[event], message="broke"), phase(1, "timing", "pass", timing=timing)]
    )
    assert "capture_break: aten::_local_scalar_dense at /m.py:12 in step: invalidated the capture" in text
    assert "speedup 8.00x" in text
    assert text.endswith("graph NOT ready: every bucket must capture, replay bit-exactly and never synchronise")


def test_every_rank_must_be_ready_and_a_hung_rank_never_is():
    """Issue 15: results of several ranks carry `rank`; each rank is judged on its own."""
    ranks = [dict(p, rank=r) for r in (0, 1) for p in clean(1)]
    assert is_ready(ranks)
    hung = ranks + [phase(1, "timing", "hung", rank=1)]
    assert not is_ready(hung)
    text = render(hung)
    assert "bucket 1, rank 0:" in text and "bucket 1, rank 1:" in text
    assert "timing         HUNG" in text
    differ = [dict(p, status="fail") if (p["rank"], p["phase"]) == (1, "replay") else p for p in ranks]
    assert not is_ready(differ)
    assert bucket_ready(p for p in differ if p["rank"] == 0)
