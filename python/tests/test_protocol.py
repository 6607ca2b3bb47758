import json
import math
import os
import re


from graphready.protocol import PHASES, POISONING_PHASES, PROTOCOL_VERSION, STATUSES, Collector, encode, sanitize

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_encode_is_one_strict_json_line():
    line = encode("phase", bucket=2, phase="timing", timing={"speedup": math.inf, "eager": 1.5})
    assert "\n" not in line
    body = json.loads(line)
    assert body == {"type": "phase", "bucket": 2, "phase": "timing", "timing": {"speedup": None, "eager": 1.5}}


def test_sanitize_handles_nan_tuples_and_unknown_objects():
    assert sanitize({"a": (1, float("nan")), 3: object}) == {"a": [1, None], "3": str(object)}


def test_collector_keeps_phase_messages():
    c = Collector()
    c.send("phase_start", bucket=1, phase="setup")
    c.send("phase", bucket=1, phase="setup", status="pass")
    assert [m["type"] for m in c.messages] == ["phase_start", "phase"]
    assert c.phases() == [{"type": "phase", "bucket": 1, "phase": "setup", "status": "pass"}]


def test_phases_and_version_match_the_rust_driver():
    source = open(os.path.join(REPO, "crates/graphready_probe/src/protocol.rs")).read()
    version = int(re.search(r"PROTOCOL_VERSION: u32 = (\d+);", source).group(1))
    block = re.search(r"pub const PHASES: &\[&str\] = &\[(.*?)\];", source, re.S).group(1)
    assert version == PROTOCOL_VERSION
    assert tuple(re.findall(r'"(\w+)"', block)) == PHASES


def test_poisoning_phases_and_statuses_match_the_rust_driver():
    protocol = open(os.path.join(REPO, "crates/graphready_probe/src/protocol.rs")).read()
    block = re.search(r"pub const POISONING_PHASES: &\[&str\] = &\[(.*?)\];", protocol, re.S).group(1)
    assert tuple(re.findall(r'"(\w+)"', block)) == POISONING_PHASES
    assert set(POISONING_PHASES) <= set(PHASES)
    report = open(os.path.join(REPO, "crates/graphready_probe/src/report.rs")).read()
    for status in STATUSES:
        assert f'"{status}"' in report, status


def test_phase_table_follows_the_protocol_order():
    # Read as text: phases.py imports torch, which CI does not have.
    source = open(os.path.join(REPO, "python/graphready/phases.py")).read()
    table = re.search(r"^PHASE_TABLE = \((.*?)^\)", source, re.S | re.M).group(1)
    assert tuple(re.findall(r'\("(\w+)", phase_\1,', table)) == PHASES


def test_rank_constants_match_the_rust_driver():
    """Issue 15: the torchrun environment, multicast off, backends and the dump request."""
    from graphready.ranks import BACKENDS, NVLS_OFF, RANK_ENV
    from graphready.watchdog import DUMP

    source = open(os.path.join(REPO, "crates/graphready_probe/src/protocol.rs")).read()

    def strings(name):
        block = re.search(rf"pub const {name}: &\[[^=]*= &\[(.*?)\];", source, re.S).group(1)
        return re.findall(r'"([^"]*)"', block)

    assert tuple(strings("RANK_ENV")) == RANK_ENV
    assert tuple(strings("BACKENDS")) == BACKENDS
    flat = strings("NVLS_OFF")
    assert tuple(zip(flat[::2], flat[1::2])) == NVLS_OFF
    assert re.search(r'pub const DUMP_REQUEST: &str = "(\w+)";', source).group(1) == DUMP


def test_event_kinds_are_known_to_the_rust_report():
    from graphready.events import KINDS

    report = open(os.path.join(REPO, "crates/graphready_probe/src/report.rs")).read()
    for kind in KINDS:
        assert f"`{kind}`" in report, kind


def test_pass_through_wrappers_match_the_rust_driver():
    from graphready.frames import PASS_THROUGH

    source = open(os.path.join(REPO, "crates/graphready_probe/src/crash.rs")).read()
    block = re.search(r"pub const PASS_THROUGH: &\[&str\] = &\[(.*?)\];", source, re.S).group(1)
    assert tuple(re.findall(r'"(\w+)"', block)) == PASS_THROUGH
