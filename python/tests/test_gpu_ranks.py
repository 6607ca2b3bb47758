"""GPU acceptance for issue 15: tensor-parallel steps on several ranks (the Python launcher of
`assert_capturable(..., nproc_per_node=N)`; `scripts/gpu/probe.sh` runs the same examples through
`graphready probe --nproc-per-node N`). Skipped without CUDA; the two-rank NCCL tests need two
GPUs, and say so. On one GPU: one NCCL rank, and two gloo ranks sharing the GPU for the hang."""

import os
import re
import time

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)
if not torch.distributed.is_available():
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)

import graphready  # noqa: E402
from graphready.summary import bucket_ready, render  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLES = os.path.join(REPO, "examples", "probe")
GPUS = torch.cuda.device_count()
two_gpus = pytest.mark.skipif(GPUS < 2, reason=f"needs 2 GPUs for 2 NCCL ranks, found {GPUS}")


def target(name):
    return os.path.realpath(os.path.join(EXAMPLES, name + ".py")) + ":factory"


def markers(name, tag="expect"):
    out = {}
    with open(os.path.join(EXAMPLES, name + ".py")) as f:
        for number, line in enumerate(f, 1):
            m = re.search(rf"#\s*{tag}:\s*([\w ]+)$", line.rstrip())
            if m:
                out[number] = m.group(1).split()
    return out


def by_rank(phases, bucket=1):
    out = {}
    for p in phases:
        if p["bucket"] == bucket:
            out.setdefault(p["rank"], {})[p["phase"]] = p
    return out


@pytest.mark.parametrize("ranks", [1, pytest.param(2, marks=two_gpus)])
def test_tensor_parallel_mlp_is_ready_and_bit_exact_on_every_rank(ranks):
    phases = graphready.assert_capturable(target("tp_mlp"), buckets=(1, 4), nproc_per_node=ranks, timeout=300)
    for bucket in (1, 4):
        results = by_rank(phases, bucket)
        assert sorted(results) == list(range(ranks))
        for rank, mine in results.items():
            assert bucket_ready(mine.values()), render(phases)
            comparisons = mine["replay"]["comparisons"]
            assert len(comparisons) == 3 and all(c["equal"] for c in comparisons), comparisons
            assert mine["capture"]["collectives"] == {"all_reduce": 1}, "the all_reduce is inside the graph"
            assert mine["setup"]["collectives"] == {"broadcast": 1}
            timing = mine["timing"]["timing"]
            assert timing["replay_median_us"] > 0 and timing["speedup"] > 0, f"rank {rank}: {timing}"
            if bucket == 4:
                assert mine["row_isolation"]["status"] == "pass", mine["row_isolation"]


@pytest.mark.parametrize("name", ["tp_all_gather_object", "tp_item_all_reduce"])
@pytest.mark.parametrize("ranks", [1, pytest.param(2, marks=two_gpus)])
def test_a_host_read_feeding_a_collective_is_not_ready_at_its_line_on_every_rank(name, ranks):
    path = os.path.realpath(os.path.join(EXAMPLES, name + ".py"))
    wanted = markers(name)
    assert wanted
    with pytest.raises(graphready.NotCapturable) as failure:
        graphready.assert_capturable(target(name), nproc_per_node=ranks, timeout=300)
    results = by_rank(failure.value.phases)
    assert sorted(results) == list(range(ranks)), failure.value.summary
    for rank, mine in results.items():
        for line, phases in wanted.items():
            for phase in phases:
                result = mine[phase]
                assert result["status"] == "fail", f"rank {rank} {phase}: {failure.value.summary}"
                hits = [e for e in result["events"] if e["location"] and (e["location"]["path"], e["location"]["line"]) == (path, line)]
                assert hits, f"rank {rank} {phase} does not name {name}.py:{line}:\n{failure.value.summary}"
        if name == "tp_all_gather_object":
            kinds = {e["kind"] for e in mine["sync_scan"]["events"]}
            assert "host_collective" in kinds, mine["sync_scan"]


def _hang(ranks, backend):
    started = time.monotonic()
    phases = graphready.probe(target("tp_rank0_all_reduce"), nproc_per_node=ranks, backend=backend, timeout=240, hang_timeout=20)
    took = time.monotonic() - started
    results = by_rank(phases)
    rank0 = results[0]
    assert rank0["warmup"]["status"] == "hung", render(phases)
    event = rank0["warmup"]["events"][0]
    line = next(iter(markers("tp_rank0_all_reduce", "expect-hang")))
    assert event["location"]["line"] == line, event
    assert "all_reduce" in event["message"], event
    for rank in range(1, ranks):
        assert results[rank]["warmup"]["status"] == "pass"
        stopped = [p for p in results[rank].values() if p["status"] == "stopped"]
        assert not stopped or "hung in warmup" in stopped[0]["message"]
    assert took < 240, "caught by the watchdog, within the time limit"
    return phases


@two_gpus
def test_an_all_reduce_on_rank_0_only_is_a_hang_within_the_time_limit():
    _hang(2, "nccl")


def test_an_all_reduce_on_rank_0_only_hangs_the_host_with_gloo_on_one_gpu():
    """Two gloo ranks share the GPU: rank 0 waits in the all_reduce itself (its line is on the
    stack), rank 1 waits for rank 0 after the warm-up."""
    _hang(2, "gloo")


def test_one_rank_alone_never_waits_for_anyone():
    graphready.assert_capturable(target("tp_rank0_all_reduce"), nproc_per_node=1, timeout=300)


def test_more_nccl_ranks_than_gpus_is_an_environment_error():
    with pytest.raises(graphready.ProbeEnvironmentError, match=f"needs {GPUS + 1} GPUs"):
        graphready.probe(target("tp_mlp"), nproc_per_node=GPUS + 1, timeout=120)
