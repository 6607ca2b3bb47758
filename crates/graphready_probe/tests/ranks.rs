//! Issue 15: several ranks against fake rank processes (`fixtures/fake_rank.sh`): the launcher's
//! environment, the per-rank report and its merge, and the watchdog (a rank that hangs while the
//! others moved on, a rank that never answers, a crash, the time limit).

use graphready_probe::{
    render_summary, render_summary_with, run_probe, FrameDisplay, Launcher, Outcome, PhaseStatus,
    ProbeError, ProbeOptions, RuntimeReport, NVLS_OFF,
};
use std::path::Path;
use std::time::{Duration, Instant};

fn fake() -> Launcher {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_rank.sh");
    Launcher::custom("sh", &[script.to_str().unwrap()])
}

fn options(scenario: &str, ranks: u32, timeout_secs: u64) -> ProbeOptions {
    let mut options =
        ProbeOptions::new(scenario, vec![1], Duration::from_secs(timeout_secs)).with_ranks(ranks);
    options.hang_timeout = Duration::from_secs(1);
    options
}

fn probe(scenario: &str, ranks: u32, timeout_secs: u64) -> Result<RuntimeReport, ProbeError> {
    run_probe(&fake(), &options(scenario, ranks, timeout_secs))
}

fn details(report: &RuntimeReport, rank: usize) -> serde_json::Value {
    report.buckets[0].ranks[rank]
        .phase("setup")
        .unwrap()
        .details
        .clone()
        .unwrap()
}

#[test]
fn every_rank_gets_torchrun_environment_a_shared_port_and_multicast_off() {
    let report = probe("tp_clean", 3, 20).unwrap();
    let bucket = &report.buckets[0];
    assert_eq!(bucket.ranks.len(), 3);
    let mut ports = Vec::new();
    for rank in 0..3 {
        let env = details(&report, rank)["env"].as_str().unwrap().to_string();
        assert!(
            env.contains(&format!("RANK={rank} LOCAL_RANK={rank} WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1")),
            "{env}"
        );
        for (key, value) in NVLS_OFF {
            assert!(env.contains(&format!("{key}={value}")), "{env}");
        }
        let port: u16 = env
            .split("MASTER_PORT=")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        ports.push(port);
        let args = details(&report, rank)["args"].as_str().unwrap().to_string();
        assert!(
            args.contains("--watchdog") && args.contains("--distributed nccl --dist-timeout 80"),
            "{args}"
        );
        assert_eq!(
            bucket.ranks[rank].device.as_deref(),
            Some(format!("cuda:{rank}").as_str())
        );
    }
    assert!(
        ports[0] > 0 && ports.iter().all(|p| *p == ports[0]),
        "{ports:?}"
    );
    // A fresh port for the next group: never a previous group's rendezvous.
    let again = probe("tp_clean", 2, 20).unwrap();
    let next = details(&again, 0)["env"].as_str().unwrap().to_string();
    assert!(
        !next.contains(&format!("MASTER_PORT={} ", ports[0])),
        "{next}"
    );
}

#[test]
fn a_clean_group_is_ready_with_latency_per_rank() {
    let report = probe("tp_clean", 2, 20).unwrap();
    assert!(report.ready());
    let group = report.distributed.as_ref().unwrap();
    assert_eq!((group.world_size, group.backend.as_str()), (2, "nccl"));
    let bucket = &report.buckets[0];
    assert_eq!(bucket.outcome, Outcome::Completed);
    assert!(bucket.ranks.iter().all(|r| r.ready()));
    // The merged timing is the slowest rank's; each rank keeps its own.
    let merged = bucket.timing().unwrap();
    assert_eq!(
        (merged.eager_median_us, merged.replay_median_us),
        (500.0, Some(60.0))
    );
    assert_eq!(bucket.ranks[0].timing().unwrap().eager_median_us, 400.0);
    // Graph memory per GPU: the largest rank's.
    let graph = bucket.phase("capture").unwrap().graph.as_ref().unwrap();
    assert_eq!(graph.pool_reserved_bytes, 2 * 2_097_152);
    assert!(bucket.phase("replay").unwrap().by_rank.is_empty());
    let text = render_summary(&report, None, Path::new("/"));
    assert!(text.contains("on 2 rank(s), nccl"), "{text}");
    assert!(text.contains("bucket 1 (2 rank(s)):"), "{text}");
    assert!(
        text.contains("bucket    1 rank 0: eager     400.0 us  replay      50.0 us"),
        "{text}"
    );
    assert!(
        text.contains("bucket    1 rank 1: eager     500.0 us  replay      60.0 us"),
        "{text}"
    );
    assert!(text
        .ends_with("ready: every bucket captures, replays bit-exactly and never synchronises\n"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["distributed"]["world_size"], 2);
    assert_eq!(json["buckets"][0]["ranks"][1]["rank"], 1);
    let back: RuntimeReport = serde_json::from_value(json).unwrap();
    assert_eq!(back, report);
}

#[test]
fn a_rank_whose_replay_differs_stands_out_and_the_group_is_not_ready() {
    let report = probe("tp_differ", 2, 20).unwrap();
    assert!(!report.ready());
    let bucket = &report.buckets[0];
    assert!(bucket.ranks[0].ready() && !bucket.ranks[1].ready());
    let replay = bucket.phase("replay").unwrap();
    assert_eq!(replay.status, PhaseStatus::Fail);
    let statuses: Vec<(u32, PhaseStatus)> =
        replay.by_rank.iter().map(|r| (r.rank, r.status)).collect();
    assert_eq!(
        statuses,
        vec![(0, PhaseStatus::Pass), (1, PhaseStatus::Fail)]
    );
    assert!(replay
        .message
        .as_deref()
        .unwrap()
        .starts_with("ranks differ: pass on rank 0, FAIL on rank 1"));
    assert!(!replay.comparisons[0].equal);
    assert_eq!(
        replay.comparisons[0].message.as_deref(),
        Some("rank 1: out[0]: 3 of 8 elements differ")
    );
    let text = render_summary(&report, None, Path::new("/"));
    assert!(
        text.contains("      rank 1: FAIL replay vs eager"),
        "{text}"
    );
    assert!(
        text.contains("NOT ready: bucket 1: replay fail (rank 1)"),
        "{text}"
    );
}

#[test]
fn a_host_collective_is_named_at_its_line_on_every_rank() {
    let report = probe("tp_host_collective", 2, 20).unwrap();
    assert!(!report.ready());
    let bucket = &report.buckets[0];
    for phase in ["sync_scan", "capture"] {
        let merged = bucket.phase(phase).unwrap();
        assert_eq!(merged.status, PhaseStatus::Fail, "{phase}");
        assert_eq!(merged.events.len(), 1, "{phase}: one event, on both ranks");
        let event = &merged.events[0];
        assert_eq!(event.ranks, vec![0, 1]);
        assert_eq!(event.count, 2);
        assert_eq!(event.location.as_ref().unwrap().line, 30);
    }
    let text = render_summary(&report, None, Path::new("/work"));
    assert!(
        text.contains("host_collective: torch.distributed.all_gather_object at tp.py:30 in step (x2): cannot be captured"),
        "{text}"
    );
}

#[test]
fn a_rank_that_alone_issues_an_all_reduce_is_diagnosed_as_a_hang() {
    let started = Instant::now();
    let report = probe("tp_hang_rank0", 2, 30).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "the hang was not caught early: {:?}",
        started.elapsed()
    );
    assert!(!report.ready());
    let bucket = &report.buckets[0];
    let stop = bucket.group_stop.as_ref().unwrap();
    assert_eq!(
        (
            stop.cause.as_str(),
            stop.ranks.as_slice(),
            stop.phase.as_deref()
        ),
        ("hang", &[0][..], Some("warmup"))
    );
    assert!(
        stop.message
            .contains("rank 0 stayed in warmup 1 s after rank 1 finished it"),
        "{}",
        stop.message
    );
    assert!(
        stop.message.contains(
            "the ranks issued different collectives in warmup: rank 0 all_reduce x3; rank 1 none"
        ),
        "{}",
        stop.message
    );
    let rank0 = &bucket.ranks[0];
    assert!(matches!(&rank0.outcome, Outcome::Hung { phase: Some(p), .. } if p == "warmup"));
    let warmup = rank0.phase("warmup").unwrap();
    assert_eq!(warmup.status, PhaseStatus::Hung);
    let hang = &warmup.events[0];
    assert_eq!(
        (hang.kind.as_str(), hang.what.as_str()),
        ("hang", "all_reduce")
    );
    let at = hang.location.as_ref().unwrap();
    assert_eq!((at.path.as_str(), at.line), ("/work/tp_rank0.py", 27));
    let last = rank0
        .hang
        .as_ref()
        .unwrap()
        .last_collective
        .as_ref()
        .unwrap();
    assert_eq!((last.what.as_str(), last.seq), ("all_reduce", 3));
    let rank1 = &bucket.ranks[1];
    assert_eq!(
        rank1.outcome,
        Outcome::Stopped {
            phase: None,
            reason: "rank 0 hung in warmup".into()
        }
    );
    assert_eq!(rank1.phase("warmup").unwrap().status, PhaseStatus::Pass);
    let next = rank1.phase("sync_scan").unwrap();
    assert_eq!(next.status, PhaseStatus::NotRun);
    assert_eq!(
        next.message.as_deref(),
        Some("not run: rank 0 hung in warmup")
    );
    assert!(rank1.hang.as_ref().unwrap().last_collective.is_none());
    assert_eq!(bucket.phase("warmup").unwrap().status, PhaseStatus::Hung);
    let text = render_summary(&report, None, Path::new("/work"));
    for expected in [
        "HANG after",
        "    rank 0: HUNG in warmup; in the probe's phase_warmup (phases.py:101) in synchronize\n        last collective: all_reduce #3 in warmup at tp_rank0.py:27 in step\n        stack: /usr/lib/torch/cuda/__init__.py:1083 in synchronize [framework]",
        "    rank 1: stopped between phases; waiting for every rank to finish warmup (the probe's exchange)\n        last collective: none issued",
        "NOT ready: bucket 1: warmup hung (rank 0), sync_scan not_run, capture not_run, replay not_run, hang (rank 0)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in\n{text}");
    }
    let back: RuntimeReport =
        serde_json::from_str(&serde_json::to_string(&report).unwrap()).unwrap();
    assert_eq!(back, report);
}

#[test]
fn a_rank_that_cannot_answer_is_read_from_its_thread_dump() {
    let report = probe("tp_hang_silent", 2, 30).unwrap();
    let bucket = &report.buckets[0];
    let hang = bucket.ranks[0].hang.as_ref().unwrap();
    assert_eq!(hang.source, "faulthandler");
    let lines: Vec<(&str, u32)> = hang
        .stack
        .iter()
        .map(|f| (f.path.as_str(), f.line))
        .collect();
    assert_eq!(
        lines,
        vec![
            ("/usr/lib/torch/distributed/distributed_c10d.py", 2501),
            ("/work/tp_silent.py", 33)
        ],
        "the main thread, not the watchdog thread; the harness's frames cut, its collective \
         wrapper passed through"
    );
    let event = &bucket.ranks[0].phase("capture").unwrap().events[0];
    assert_eq!(event.location.as_ref().unwrap().line, 33);
    let all = render_summary_with(&report, None, Path::new("/work"), FrameDisplay::All);
    assert!(
        all.contains("rank 0: HUNG in capture; in the step, at /work/tp_silent.py:33 in step"),
        "{all}"
    );
}

#[test]
fn a_crashed_rank_stops_the_group_and_the_report_is_written() {
    let started = Instant::now();
    let report = probe("tp_crash_rank1", 2, 30).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let bucket = &report.buckets[0];
    let stop = bucket.group_stop.as_ref().unwrap();
    assert_eq!(
        (stop.cause.as_str(), stop.ranks.as_slice()),
        ("crash", &[1][..])
    );
    assert!(matches!(
        &bucket.ranks[1].outcome,
        Outcome::Crashed { phase: Some(p), signal: Some(11), .. } if p == "capture"
    ));
    let crash = &bucket.ranks[1].phase("capture").unwrap().events[0];
    assert_eq!(crash.location.as_ref().unwrap().line, 41);
    assert!(matches!(
        &bucket.ranks[0].outcome,
        Outcome::Stopped { reason, .. } if reason == "rank 1 was killed by signal 11 (SIGSEGV) during capture"
    ));
    assert!(matches!(bucket.outcome, Outcome::Crashed { .. }));
    assert_eq!(
        bucket.phase("capture").unwrap().status,
        PhaseStatus::Crashed
    );
    let text = render_summary(&report, None, Path::new("/work"));
    assert!(text.contains("CRASH after"), "{text}");
    assert!(text.contains("rank 1 stderr (during capture):"), "{text}");
}

#[test]
fn the_time_limit_catches_ranks_stuck_together_and_names_each_line() {
    let started = Instant::now();
    let report = probe("tp_time_limit", 2, 2).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    let bucket = &report.buckets[0];
    let stop = bucket.group_stop.as_ref().unwrap();
    assert_eq!(
        (stop.cause.as_str(), stop.ranks.as_slice()),
        ("time_limit", &[0, 1][..])
    );
    for rank in &bucket.ranks {
        assert!(
            matches!(&rank.outcome, Outcome::TimedOut { phase: Some(p), .. } if p == "capture")
        );
        let capture = rank.phase("capture").unwrap();
        assert_eq!(capture.status, PhaseStatus::TimedOut);
        assert_eq!(capture.events[0].location.as_ref().unwrap().line, 40);
    }
    let merged = &bucket.phase("capture").unwrap().events[0];
    assert_eq!(merged.ranks, vec![0, 1]);
}

#[test]
fn a_device_assert_on_one_rank_re_runs_the_group() {
    let report = probe("tp_poison", 2, 20).unwrap();
    let bucket = &report.buckets[0];
    let rank1 = bucket.ranks[1].phase("uninitialized").unwrap();
    assert_eq!(rank1.status, PhaseStatus::Fail);
    assert!(rank1.rerun.as_ref().unwrap().poison_caused_it);
    assert_eq!(
        bucket.ranks[0].phase("uninitialized").unwrap().status,
        PhaseStatus::Pass
    );
    assert_eq!(
        bucket.ranks[1].phase("timing").unwrap().status,
        PhaseStatus::Pass
    );
    let merged = bucket.phase("uninitialized").unwrap();
    assert_eq!(merged.status, PhaseStatus::Fail);
    assert_eq!(merged.by_rank.len(), 2);
}

#[test]
fn too_few_gpus_is_an_environment_error_and_no_rank_is_left_running() {
    let started = Instant::now();
    let err = probe("tp_too_few_gpus", 2, 30).unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "rank 1 was left waiting"
    );
    assert_eq!(err.environment_kind(), Some("too_few_gpus"));
    assert!(err.to_string().contains("needs 2 GPUs"), "{err}");
}

#[test]
fn zero_ranks_is_refused() {
    let err = run_probe(&fake(), &options("tp_clean", 0, 5)).unwrap_err();
    assert!(err.to_string().contains("--nproc-per-node"), "{err}");
}
