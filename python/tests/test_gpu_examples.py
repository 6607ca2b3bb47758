"""GPU acceptance for issues 5 and 13: every example in examples/probe is reported in the right
phase with the right line (and, where marked, the library line inside it); the clean ones capture
and replay bit-exactly. Skipped without CUDA; the transformers examples without transformers."""

import json
import os
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(REPO, "examples", "probe")
EXPECT = re.compile(r"#\s*expect:\s*([\w ]+)$")
INNERMOST = re.compile(r"^expect-innermost:\s*(\S+)$", re.M)
NEEDS_TRANSFORMERS = {"mixtral_moe", "llama_static_cache"}

HAZARDS = [
    "item", "tolist", "if_any", "assert_all", "nonzero", "mask_index", "bincount",
    "tensor_from_list", "setitem_int", "cuda_synchronize", "empty_scale", "ue8m0_original",
    "transformer_encoder", "mixtral_moe",
]
CLEAN = {
    "clean_mlp": (1, 4),
    "moe_decode": (1, 2, 4, 8),
    "ue8m0_final": (1, 8),
    "kv_cache_decode": (1, 4),
    "llama_static_cache": (1, 4),
}


def needs(name):
    if name in NEEDS_TRANSFORMERS:
        pytest.importorskip("transformers", reason="transformers is not installed")


def example(name):
    return os.path.realpath(os.path.join(EXAMPLES, name + ".py"))


def expectations(path):
    out = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            m = EXPECT.search(line.rstrip())
            if m:
                out[number] = m.group(1).split()
    return out


def run_harness(name, buckets=(1,), timeout=300, extra=()):
    cmd = [sys.executable, "-m", "graphready.harness", "--target", example(name) + ":factory"]
    for b in buckets:
        cmd += ["--bucket", str(b)]
    cmd += list(extra)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return proc, lines


def phases_of(lines, bucket=1):
    return {m["phase"]: m for m in lines if m["type"] == "phase" and m["bucket"] == bucket}


def describe(phases):
    return json.dumps({k: {"status": v["status"], "message": v.get("message"), "events": v.get("events")} for k, v in phases.items()}, indent=1)[:6000]


@pytest.mark.parametrize("name", HAZARDS)
def test_hazard_is_reported_in_the_right_phase_at_the_right_line(name):
    needs(name)
    path = example(name)
    wanted = expectations(path)
    assert wanted, f"{name} has no `# expect:` marker"
    innermost = INNERMOST.findall(open(path).read())
    proc, lines = run_harness(name)
    phases = phases_of(lines)
    assert "timing" in phases, proc.stderr[-3000:]
    for line, expected_phases in wanted.items():
        for phase in expected_phases:
            result = phases[phase]
            assert result["status"] == "fail", f"{phase}: {describe(phases)}"
            hits = [
                e for e in result["events"]
                if e["location"] and e["location"]["path"] == path and e["location"]["line"] == line
            ]
            assert hits, f"{phase} does not name {name}.py:{line}: {describe(phases)}"
            for suffix in innermost:  # issue 13: the library line that issued it
                inner = [e["stack"][0] for e in hits if e["stack"]]
                assert any(f["path"].endswith(suffix) and f["scope"] != "user" for f in inner), (
                    f"{phase}: no event's innermost frame is in {suffix}: {describe(phases)}"
                )


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_program_captures_and_replays_bit_exactly(name):
    needs(name)
    buckets = CLEAN[name]
    proc, lines = run_harness(name, buckets)
    for bucket in buckets:
        phases = phases_of(lines, bucket)
        for phase in ("setup", "warmup", "sync_scan", "profiler_scan", "capture", "replay", "uninitialized", "timing"):
            assert phases[phase]["status"] == "pass", f"bucket {bucket} {phase}: {describe(phases)}\n{proc.stderr[-2000:]}"
        assert phases["row_isolation"]["status"] in ("pass", "skipped"), describe(phases)
        comparisons = phases["replay"]["comparisons"]
        assert len(comparisons) == 3 and all(c["equal"] for c in comparisons)
        assert phases["timing"]["timing"]["speedup"] > 0
        graph = phases["capture"]["graph"]
        assert graph["capture_seconds"] > 0 and graph["pool_reserved_bytes"] > 0


def test_segfault_is_the_phase_that_died():
    proc, lines = run_harness("crash_segfault")
    assert proc.returncode < 0, proc.returncode
    started = [m["phase"] for m in lines if m["type"] == "phase_start"]
    finished = [m["phase"] for m in lines if m["type"] == "phase"]
    assert started[-1] == "warmup" and finished == ["setup"]


def test_device_assert_poisons_later_phases_but_every_phase_reports():
    proc, lines = run_harness("device_assert")
    phases = phases_of(lines)
    assert phases["warmup"]["status"] == "error", describe(phases)
    assert phases["warmup"]["context_lost"] and not phases["warmup"]["poisoning"]
    assert "the step itself triggered it" in phases["warmup"]["message"]
    assert phases["timing"]["status"] == "skipped"
    assert "unusable" in phases["timing"]["message"]


def test_ue8m0_final_still_rejects_malformed_input_eagerly():
    sys.path.insert(0, EXAMPLES)
    try:
        import ue8m0_final
    finally:
        sys.path.remove(EXAMPLES)
    good = ue8m0_final.ceil_to_ue8m0(torch.randn(4, 8, device="cuda"))
    ue8m0_final.pack_ue8m0_to_int(good)
    with pytest.raises(AssertionError, match="mantissa"):
        ue8m0_final.pack_ue8m0_to_int(good * 1.5)
    with pytest.raises(AssertionError, match="non-negative"):
        ue8m0_final.pack_ue8m0_to_int(-good)
    cpu_bad = torch.full((1, 4), 0.3)
    with pytest.raises(AssertionError):
        ue8m0_final.pack_ue8m0_to_int(cpu_bad)


def test_assert_capturable_passes_for_a_clean_step_and_raises_with_the_summary():
    import graphready

    sys.path.insert(0, EXAMPLES)
    try:
        import clean_mlp
        import item
    finally:
        sys.path.remove(EXAMPLES)
    graphready.assert_capturable(clean_mlp.factory, buckets=(1, 2))
    with pytest.raises(graphready.NotCapturable) as info:
        graphready.assert_capturable(item.factory, buckets=(1,))
    assert "item.py:" in str(info.value) and "NOT ready" in str(info.value)
