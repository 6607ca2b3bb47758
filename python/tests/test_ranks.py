"""Issue 15: the pure parts of several ranks — environment, devices, collectives, agreeing on
phases, the watchdog's report — without torch."""

import io
import json
import sys
import threading
import types

import pytest

from graphready import ranks as rk
from graphready.frames import FrameFilter
from graphready.protocol import Collector
from graphready.watchdog import DUMP, Watchdog

ENV = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29555"}


def test_read_env_places_the_rank_and_explains_what_is_missing():
    env = rk.read_env(ENV)
    assert (env.rank, env.local_rank, env.world_size, env.master_port) == (1, 1, 2, 29555)
    with pytest.raises(rk.RankError, match="MASTER_PORT"):
        rk.read_env({k: v for k, v in ENV.items() if k != "MASTER_PORT"})
    with pytest.raises(rk.RankError, match=r"RANK=2 is not in \[0, WORLD_SIZE=2\)"):
        rk.read_env(dict(ENV, RANK="2"))
    with pytest.raises(rk.RankError, match="not an integer"):
        rk.read_env(dict(ENV, WORLD_SIZE="two"))


def test_rank_environ_is_torchrun_s_with_multicast_off():
    env = rk.rank_environ(3, 4, 29600, {"PATH": "/bin", "NCCL_NVLS_ENABLE": "1"})
    assert rk.read_env(env) == rk.RankEnv(3, 3, 4, 4, "127.0.0.1", 29600)
    assert env["PATH"] == "/bin"
    for key, value in rk.NVLS_OFF:
        assert env[key] == value, "the user's setting never turns multicast back on"


def test_too_few_gpus_for_nccl_but_gloo_ranks_share_them():
    env = rk.read_env(ENV)
    assert "needs 2 GPUs" in rk.device_problem("nccl", env, 1)
    assert "CUDA_VISIBLE_DEVICES='0'" in rk.device_problem("nccl", env, 1, "0")
    assert rk.device_problem("nccl", env, 2) is None
    assert rk.device_problem("gloo", env, 1) is None
    assert rk.device_index(env, 1) == 0 and rk.device_index(env, 8) == 1
    assert "no CUDA device" in rk.device_problem("gloo", env, 0)


def fake_dist():
    calls = []

    def all_reduce(t, group=None):
        calls.append(("all_reduce", t))

    def all_gather(out, t, group=None):
        calls.append(("all_gather", t))

    def all_gather_object(out, obj, group=None):
        module.all_gather(out, obj)  # the real one calls all_gather through its module
        calls.append(("all_gather_object", obj))

    module = types.SimpleNamespace(all_reduce=all_reduce, all_gather=all_gather, all_gather_object=all_gather_object, get_rank=lambda: 0)
    alias = types.SimpleNamespace(all_reduce=all_reduce, all_gather=all_gather, all_gather_object=all_gather_object)
    return module, alias, calls


def test_collectives_are_counted_per_phase_with_the_caller_s_line():
    module, alias, calls = fake_dist()
    activity = rk.Activity()
    restore = rk.patch_collectives((module, alias), activity)
    assert module.all_reduce is alias.all_reduce, "one wrapper per function, whichever module"
    activity.enter(1, "warmup")
    module.all_reduce("t")
    alias.all_reduce("t"); line = sys._getframe().f_lineno  # noqa: E702
    activity.enter(1, "capture")
    module.all_gather_object([None], {"n": 1})
    assert [c[0] for c in calls] == ["all_reduce", "all_reduce", "all_gather", "all_gather_object"]
    assert activity.counts == {"warmup": {"all_reduce": 2}, "capture": {"all_gather_object": 1}}, "all_gather inside is not counted"
    assert activity.phase_counts("timing") == {}
    activity.enter(1, "warmup")
    alias.all_reduce("t"); line = sys._getframe().f_lineno  # noqa: E702
    last = activity.last_json(FrameFilter([], [], ["/nonexistent-harness"]))
    assert (last["what"], last["phase"], last["seq"]) == ("all_reduce", "warmup", 3)
    assert (last["location"]["path"], last["location"]["line"]) == (__file__, line)
    restore()
    module.all_reduce("t")
    assert activity.seq == 4, "restored: calls are no longer recorded"


def test_the_probe_s_own_exchange_is_never_the_step_s_collective():
    module, _, calls = fake_dist()
    activity = rk.Activity()
    rk.patch_collectives((module,), activity)
    activity.enter(1, "warmup")
    module.all_reduce("t")
    with rk.unrecorded():
        module.all_gather_object([None], ("pass", None))
    assert [c[0] for c in calls] == ["all_reduce", "all_gather", "all_gather_object"]
    assert activity.counts == {"warmup": {"all_reduce": 1}}
    assert activity.last["what"] == "all_reduce"
    module.all_reduce("t")
    assert activity.counts["warmup"]["all_reduce"] == 2, "recording resumes after the exchange"


def test_counts_start_again_with_each_bucket():
    """Seen on an H200: one process probing buckets 1 and 4 counted bucket 1's capture in 4's."""
    module, _, _ = fake_dist()
    activity = rk.Activity()
    rk.patch_collectives((module,), activity)
    for bucket in (1, 4):
        activity.enter(bucket, "capture")
        module.all_reduce("t")
        assert activity.phase_counts("capture") == {"all_reduce": 1}, bucket


def test_the_sync_scan_hears_host_collectives_and_timed_loops_skip_the_stack():
    module, alias, _ = fake_dist()
    activity = rk.Activity()
    rk.patch_collectives((module,), activity)
    heard = []
    activity.listener = heard.append
    activity.enter(1, "sync_scan")
    module.all_gather_object([None], 1)
    module.all_reduce("t")
    assert heard == ["all_gather_object", "all_reduce"]
    assert "all_gather_object" in rk.HOST_COLLECTIVES and "all_reduce" not in rk.HOST_COLLECTIVES
    assert "cannot be captured" in rk.host_collective_message("all_gather_object")
    assert "blocks the host" in rk.host_collective_message("barrier")
    activity.locate = False
    module.all_reduce("t")
    assert activity.last["raw"] == []


def test_a_phase_runs_only_where_what_it_needs_passed_on_every_rank():
    by_rank = {"setup": ["pass", "pass"], "capture": ["pass", "fail"]}
    assert rk.unmet(("setup",), by_rank) is None
    assert rk.unmet(("setup", "capture"), by_rank) == "needs capture (rank 1: fail) to pass on every rank"
    assert rk.unmet(("warmup",), by_rank) == "needs warmup to pass on every rank"
    assert rk.group_outcome(["pass", "pass"]) == "pass"
    assert rk.group_outcome(["pass", "inconclusive", "fail"]) == "inconclusive"
    assert rk.first_poisoned([None, "uninitialized (device-side assert)"]) == "rank 1: uninitialized (device-side assert)"
    assert rk.first_poisoned([None, None]) is None


def harness_filter(tmp_path):
    return FrameFilter(["/usr/lib/torch"], [], [str(tmp_path)])


def test_the_hang_report_names_where_the_main_thread_waits(tmp_path):
    """A thread stands in for the main thread; the probe's frames are a file under tmp_path."""
    probe_file = tmp_path / "bucket.py"
    probe_file.write_text("def agree(wait):\n    wait()\n")
    namespace = {}
    exec(compile(probe_file.read_text(), str(probe_file), "exec"), namespace)
    activity = rk.Activity()
    activity.enter(1, "warmup")
    module, _, _ = fake_dist()
    rk.patch_collectives((module,), activity)
    module.all_reduce("t"); line = sys._getframe().f_lineno  # noqa: E702
    entered, release = threading.Event(), threading.Event()

    def wait():
        entered.set()
        release.wait(5)

    worker = threading.Thread(target=namespace["agree"], args=(wait,))
    worker.start()
    entered.wait(5)
    try:
        filt = harness_filter(tmp_path)
        frame = sys._current_frames()[worker.ident]
        report = rk.hang_report(activity, filt, frame)
    finally:
        release.set()
        worker.join()
    assert report["phase"] == "warmup" and report["bucket"] == 1
    # The innermost frames are this test's `wait` (user code), called by the probe's `agree`.
    assert report["location"]["function"] == "wait"
    assert report["waiting"].startswith("in the step, at ")
    assert report["last_collective"]["location"]["line"] == line
    assert report["collectives"] == {"warmup": {"all_reduce": 1}}
    # Waiting in the probe's exchange, whose all_gather_object goes through the probe's own
    # collective wrapper (seen on an H200: the wrapper was once named instead of the exchange).
    raw = [
        ("/usr/lib/torch/distributed/distributed_c10d.py", 4086, "all_gather"),
        (str(tmp_path / "ranks.py"), 241, "_graphready_collective"),
        ("/usr/lib/torch/distributed/distributed_c10d.py", 3312, "all_gather_object"),
        (str(probe_file), 2, "agree"),
    ]
    assert rk.waiting_for(raw, filt, "warmup") == "waiting for every rank to finish warmup (the probe's exchange)"


def test_the_watchdog_answers_dump_with_a_report():
    activity = rk.Activity()
    activity.enter(2, "capture")
    collector = Collector()
    requests = io.StringIO("noise\n" + DUMP + "\n")
    dog = Watchdog(requests, collector, activity, FrameFilter([], [], ["/nonexistent"]), threading.get_ident())
    dog.start()
    dog.join(5)
    assert [m["type"] for m in collector.messages] == ["hang_report"]
    report = collector.messages[0]
    assert (report["bucket"], report["phase"], report["last_collective"]) == (2, "capture", None)
    assert report["stack"], "the stack of the thread that ran the watchdog's target"
    json.dumps(report)
