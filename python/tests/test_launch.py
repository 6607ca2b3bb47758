"""Issue 15: `assert_capturable(..., nproc_per_node=N)`'s launcher against fake ranks
(`fixtures/fake_rank.py`): the environment, per-rank results, and the watchdog."""

import os
import sys
import time

import pytest

import graphready
from graphready import launch as ln
from graphready.summary import is_ready, render

FAKE = os.path.join(os.path.dirname(__file__), "fixtures", "fake_rank.py")


def fake(scenario):
    return lambda rank: [sys.executable, FAKE, "--target", scenario, "--bucket", "1"]


def run(scenario, n=2, timeout=30.0, hang_timeout=1.0):
    return ln.launch(scenario, [1], n, timeout=timeout, hang_timeout=hang_timeout, command=fake(scenario))


def test_each_rank_gets_its_place_a_shared_free_port_and_multicast_off():
    runs = run("clean", n=3)
    envs = [r.phases()[0]["details"]["env"] for r in runs]
    assert [e["RANK"] for e in envs] == ["0", "1", "2"]
    assert [e["LOCAL_RANK"] for e in envs] == ["0", "1", "2"]
    assert {e["WORLD_SIZE"] for e in envs} == {"3"}
    assert {e["MASTER_ADDR"] for e in envs} == {"127.0.0.1"}
    assert len({e["MASTER_PORT"] for e in envs}) == 1 and int(envs[0]["MASTER_PORT"]) > 0
    assert {e["NCCL_NVLS_ENABLE"] for e in envs} == {"0"}
    phases = [p for r in runs for p in ln.rank_phases(r, [1])]
    assert is_ready(phases)
    assert "bucket 1, rank 2:" in render(phases)


def test_the_harness_command_asks_for_the_watchdog_and_the_backend():
    cmd = ln.harness_command("/py", "m.py:f", [1, 4], "gloo", 100)
    assert cmd[:4] == ["/py", "-u", "-m", "graphready.harness"]
    assert cmd[-5:] == ["--watchdog", "--distributed", "gloo", "--dist-timeout", "160"]
    assert cmd.count("--bucket") == 2


def test_one_rank_that_differs_makes_the_group_not_ready():
    runs = run("differ")
    phases = [p for r in runs for p in ln.rank_phases(r, [1])]
    assert not is_ready(phases)
    assert is_ready([p for p in phases if p["rank"] == 0])
    text = render(phases)
    assert "bucket 1, rank 1:" in text and "replay vs eager: out[0] differs" in text


def test_a_rank_that_hangs_is_stopped_with_its_last_collective():
    started = time.monotonic()
    runs = run("hang_rank0", timeout=30.0)
    assert time.monotonic() - started < 12, "caught by the watchdog, not the time limit"
    assert [r.ending for r in runs] == ["hung", "stopped"]
    assert runs[0].hang["last_collective"]["what"] == "all_reduce"
    phases = ln.rank_phases(runs[0], [1])
    hung = [p for p in phases if p["phase"] == "warmup"][0]
    assert hung["status"] == "hung"
    assert hung["events"][0]["location"]["line"] == 27
    assert "last collective all_reduce #1 in warmup" in hung["events"][0]["message"]
    assert not is_ready([p for r in runs for p in ln.rank_phases(r, [1])])


def test_a_crashed_rank_stops_the_others():
    runs = run("crash_rank1")
    assert runs[1].ending == "crashed" and runs[1].returncode == 7
    assert runs[0].ending == "stopped"
    assert "rank 1 exited during warmup" in runs[0].stop_reason
    phases = ln.rank_phases(runs[1], [1])
    assert phases[-1]["status"] == "crashed"


def test_an_environment_error_on_one_rank_ends_the_group():
    started = time.monotonic()
    with pytest.raises(ln.LaunchError, match="needs 2 GPUs"):
        run("env_error")
    assert time.monotonic() - started < 10


def test_a_rank_that_dies_before_hello_shows_its_stderr():
    with pytest.raises(ln.LaunchError, match="rank 1 .* before it said hello(.|\n)*no module named torch.distributed"):
        run("silent")


def test_the_factory_must_be_importable_by_name(tmp_path):
    def local(bucket):
        return None

    with pytest.raises(TypeError, match="module-level"):
        ln.target_of(local)
    with pytest.raises(TypeError):
        ln.target_of(lambda bucket: None)
    assert ln.target_of("m.py:f") == "m.py:f"
    assert ln.target_of(ln.free_port) == f"{os.path.abspath(ln.__file__)}:free_port"
    with pytest.raises(ValueError):
        ln.launch("m.py:f", [1], 0)


def test_probe_with_ranks_reports_an_environment_error(monkeypatch):
    def failing(*args, **kwargs):
        raise ln.LaunchError("--nproc-per-node 2 needs 2 GPUs")

    monkeypatch.setattr(ln, "launch", failing)
    with pytest.raises(graphready.ProbeEnvironmentError, match="needs 2 GPUs"):
        graphready.assert_capturable("m.py:factory", nproc_per_node=2)
