//! The driver against a fake harness that prints canned protocol lines.

use graphready_probe::{
    correlate_from, render_summary, render_summary_with, run_probe, run_probe_with_progress,
    FrameDisplay, Launcher, Outcome, PhaseStatus, ProbeError, ProbeOptions, RuntimeReport, PHASES,
};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fake() -> Launcher {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_harness.sh");
    Launcher::custom("sh", &[script.to_str().unwrap()])
}

fn probe(scenario: &str, buckets: &[u32], timeout_secs: u64) -> Result<RuntimeReport, ProbeError> {
    run_probe(
        &fake(),
        &ProbeOptions::new(
            scenario.to_string(),
            buckets.to_vec(),
            Duration::from_secs(timeout_secs),
        ),
    )
}

fn status(report: &RuntimeReport, bucket: usize, phase: &str) -> PhaseStatus {
    report.buckets[bucket].phase(phase).unwrap().status
}

#[test]
fn clean_run_is_ready_over_every_bucket() {
    let report = probe("clean", &[1, 2, 4, 8], 20).unwrap();
    assert_eq!(report.buckets.len(), 4);
    assert!(report.ready());
    assert_eq!(
        report.environment.as_ref().unwrap().device.as_deref(),
        Some("NVIDIA H200")
    );
    for bucket in &report.buckets {
        assert_eq!(bucket.outcome, Outcome::Completed);
        assert_eq!(bucket.phases.len(), PHASES.len());
        assert_eq!(bucket.timing().unwrap().speedup, Some(8.0));
    }
    let text = render_summary(&report, None, Path::new("/"));
    assert!(text.contains("speedup   8.00x"), "{text}");
    assert!(text
        .ends_with("ready: every bucket captures, replays bit-exactly and never synchronises\n"));
}

#[test]
fn sync_and_capture_failure_is_not_ready_and_names_the_line() {
    let report = probe("sync", &[1], 20).unwrap();
    assert!(!report.ready());
    assert_eq!(status(&report, 0, "sync_scan"), PhaseStatus::Fail);
    assert_eq!(status(&report, 0, "capture"), PhaseStatus::Fail);
    assert_eq!(status(&report, 0, "replay"), PhaseStatus::Skipped);
    let capture = report.buckets[0].phase("capture").unwrap();
    assert_eq!(capture.events[0].location.as_ref().unwrap().line, 12);
    let text = render_summary(&report, None, Path::new("/work"));
    assert!(
        text.contains("capture_break: aten::_local_scalar_dense at model.py:12 in step"),
        "{text}"
    );
    assert!(
        text.contains("NOT ready: bucket 1: sync_scan fail, capture fail, replay skipped"),
        "{text}"
    );
}

#[test]
fn segfault_is_recorded_as_the_phase_that_died_and_earlier_phases_are_kept() {
    let report = probe("crash", &[1, 2], 20).unwrap();
    assert_eq!(
        report.buckets.len(),
        2,
        "a crash in one bucket does not stop the next"
    );
    let bucket = &report.buckets[0];
    match &bucket.outcome {
        Outcome::Crashed { phase, signal, .. } => {
            assert_eq!(phase.as_deref(), Some("profiler_scan"));
            assert_eq!(*signal, Some(11));
        }
        other => panic!("unexpected outcome {other:?}"),
    }
    assert_eq!(status(&report, 0, "sync_scan"), PhaseStatus::Pass);
    let died = bucket.phase("profiler_scan").unwrap();
    assert_eq!(died.status, PhaseStatus::Crashed);
    assert!(died.message.as_deref().unwrap().contains("SIGSEGV"));
    // The faulthandler dump names the user's line, skipping ctypes and the harness.
    let crash = &died.events[0];
    assert_eq!(crash.kind, "crash");
    let at = crash.location.as_ref().unwrap();
    assert_eq!((at.path.as_str(), at.line), ("/work/examples/crash.py", 15));
    assert_eq!(crash.what, "Fatal Python error: Segmentation fault");
    assert_eq!(status(&report, 0, "capture"), PhaseStatus::NotRun);
    assert!(bucket
        .stderr_tail
        .as_deref()
        .unwrap()
        .contains("Segmentation fault"));
    assert!(!report.ready());
    let json = serde_json::to_string(&report).unwrap();
    let back: RuntimeReport = serde_json::from_str(&json).unwrap();
    assert_eq!(back.buckets[0].outcome, bucket.outcome);
}

#[test]
fn exiting_without_done_is_a_crash_in_the_running_phase() {
    let report = probe("exit_early", &[1], 20).unwrap();
    let bucket = &report.buckets[0];
    assert!(matches!(
        bucket.outcome,
        Outcome::Crashed {
            exit_code: Some(0),
            ..
        }
    ));
    let warmup = bucket.phase("warmup").unwrap();
    assert_eq!(warmup.status, PhaseStatus::Crashed);
    assert!(warmup
        .message
        .as_deref()
        .unwrap()
        .contains("exited with status 0"));
}

#[test]
fn timeout_kills_the_harness_and_names_the_phase() {
    let started = Instant::now();
    let report = probe("timeout", &[1], 1).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the child was not killed in time"
    );
    let bucket = &report.buckets[0];
    assert!(matches!(&bucket.outcome, Outcome::TimedOut { phase: Some(p), .. } if p == "warmup"));
    assert_eq!(status(&report, 0, "setup"), PhaseStatus::Pass);
    assert_eq!(status(&report, 0, "warmup"), PhaseStatus::TimedOut);
    assert_eq!(status(&report, 0, "capture"), PhaseStatus::NotRun);
    assert!(bucket
        .stderr_tail
        .as_deref()
        .unwrap()
        .contains("warming up forever"));
}

/// Issue 15: before the kill at the time limit, the harness's watchdog says where it waits.
#[test]
fn a_timeout_names_the_line_the_harness_was_stuck_at() {
    let report = probe("timeout_answers", &[1], 1).unwrap();
    let capture = report.buckets[0].phase("capture").unwrap();
    assert_eq!(capture.status, PhaseStatus::TimedOut);
    let event = &capture.events[0];
    assert_eq!(event.kind, "hang");
    assert_eq!(event.location.as_ref().unwrap().line, 40);
    assert!(event
        .message
        .starts_with("in the step, at /work/model.py:40"));
    assert!(report.buckets[0].ranks.is_empty() && report.distributed.is_none());
}

#[test]
fn environment_error_is_an_error_with_its_kind() {
    let err = probe("no_torch", &[1], 20).unwrap_err();
    assert_eq!(err.environment_kind(), Some("no_torch"));
    assert!(err.to_string().contains("PyTorch cannot be imported"));
}

#[test]
fn protocol_mismatch_and_malformed_lines_are_errors() {
    let err = probe("old_protocol", &[1], 20).unwrap_err();
    assert!(matches!(
        err,
        ProbeError::ProtocolVersion {
            found: 99,
            expected: graphready_probe::PROTOCOL_VERSION
        }
    ));
    let err = probe("garbage", &[1], 20).unwrap_err();
    assert!(matches!(err, ProbeError::Protocol { .. }), "{err}");
}

#[test]
fn a_harness_that_never_says_hello_shows_its_stderr() {
    let err = probe("silent", &[1], 20).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("before it said hello"), "{text}");
    assert!(text.contains("something broke before hello"), "{text}");
}

#[test]
fn missing_interpreter_is_a_spawn_error() {
    let launcher = Launcher::custom("/nonexistent/python3", &[]);
    let err = run_probe(
        &launcher,
        &ProbeOptions::new("x.py:f", vec![1], Duration::from_secs(5)),
    )
    .unwrap_err();
    assert!(matches!(err, ProbeError::Spawn { .. }));
}

#[test]
fn correlation_lists_blind_spots_confirmed_and_unexercised() {
    use graphready_diagnostics::Diagnostic;
    let report = probe("sync", &[1, 2], 20).unwrap();
    // Built from JSON so that fields the checker adds later keep their defaults.
    let finding = |line: u32, code: &str| -> Diagnostic {
        serde_json::from_value(serde_json::json!({
            "code": code,
            "name": "x",
            "severity": "error",
            "reach": "capture",
            "path": "model.py",
            "span": {"start": {"line": line, "column": 1}, "end": {"line": line, "column": 5}},
            "message": "m",
        }))
        .unwrap()
    };
    let findings = vec![
        finding(12, "GR101"),
        finding(30, "GR102"),
        finding(40, "GR103"),
    ];
    // `/work` need not exist: paths that cannot be canonicalised are compared as given.
    let correlation = correlate_from(&report, &findings, &PathBuf::from("/work"));
    assert_eq!(correlation.confirmed.len(), 1);
    let confirmed = &correlation.confirmed[0];
    assert_eq!(confirmed.runtime.line, Some(12));
    assert_eq!(confirmed.findings[0].code, "GR101");
    assert!(confirmed
        .runtime
        .kinds
        .contains(&"capture_break".to_string()));
    assert_eq!(confirmed.runtime.buckets, vec![1, 2]);
    assert_eq!(correlation.static_blind_spots.len(), 1);
    assert_eq!(correlation.static_blind_spots[0].line, Some(20));
    assert_eq!(correlation.ran_without_event.len(), 1);
    assert_eq!(correlation.ran_without_event[0].line, 30);
    assert_eq!(correlation.not_exercised.len(), 1);
    assert_eq!(correlation.not_exercised[0].line, 40);
    // Blind spots come first in the JSON too.
    let json = serde_json::to_string(&correlation).unwrap();
    assert!(json.find("static_blind_spots").unwrap() < json.find("confirmed").unwrap());
    let text = render_summary(&report, Some(&correlation), Path::new("/work"));
    assert!(
        text.contains("static blind spot  model.py:20 sync (torch.cuda.synchronize())"),
        "{text}"
    );
    assert!(text.contains("confirmed          model.py:12"), "{text}");
}

/// Issue 13: graph memory and capture time per bucket, with totals over the ladder; the state
/// the warm-up found, with where it was allocated.
#[test]
fn graph_memory_totals_and_state_are_reported() {
    let report = probe("clean", &[1, 2, 4], 20).unwrap();
    let totals = report.graph_totals.as_ref().unwrap();
    assert_eq!(totals.graphs, 3);
    assert_eq!(totals.pool_reserved_bytes, 7 * 2_097_152);
    assert_eq!(totals.pool_allocated_bytes, 7 * 1024);
    assert!((totals.capture_seconds - 0.75).abs() < 1e-9);
    let state = report.buckets[0]
        .phase("warmup")
        .unwrap()
        .state
        .as_ref()
        .unwrap();
    assert_eq!((state.tensors, state.bytes), (6, 65560));
    let text = render_summary(&report, None, Path::new("/work"));
    assert!(
        text.contains("graph pool 4.0 MiB reserved, 2.0 KiB allocated; captured in 250.0 ms"),
        "{text}"
    );
    assert!(
        text.contains(
            "total (3 graph(s)): pool 14.0 MiB reserved 7.0 KiB allocated  capture 750.0 ms"
        ),
        "{text}"
    );
    assert!(
        text.contains("state: 4 storage(s), 64.0 KiB allocated at /site-packages/transformers/cache_utils.py:434 in lazy_initialization (from llama.py:30 in factory)"),
        "{text}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["graph_totals"]["graphs"], 3);
    assert_eq!(
        json["buckets"][1]["phases"][5]["graph"]["pool_reserved_bytes"],
        4_194_304
    );
}

/// Issue 13: a device assert while poisoning is re-run without poisoning; no assert then means
/// the poison caused it, and the phases the lost context skipped come from the re-run.
#[test]
fn a_device_assert_while_poisoning_is_re_run_without_poisoning() {
    let mut seen = Vec::new();
    let report = run_probe_with_progress(
        &fake(),
        &ProbeOptions::new("poison_assert", vec![1], Duration::from_secs(20)),
        &mut |p| seen.push((p.phase.to_string(), p.rerun)),
    )
    .unwrap();
    let bucket = &report.buckets[0];
    let phase = bucket.phase("uninitialized").unwrap();
    assert_eq!(phase.status, PhaseStatus::Fail);
    let rerun = phase.rerun.as_ref().unwrap();
    assert!(rerun.poison_caused_it);
    assert_eq!(rerun.status, PhaseStatus::Pass);
    assert!(phase
        .message
        .as_deref()
        .unwrap()
        .contains("reads memory it never wrote"));
    assert_eq!(status(&report, 0, "timing"), PhaseStatus::Pass);
    assert_eq!(
        status(&report, 0, "sync_scan"),
        PhaseStatus::Pass,
        "earlier phases are kept"
    );
    assert!(!report.ready());
    assert!(seen.contains(&("uninitialized".to_string(), false)));
    assert!(seen.contains(&("uninitialized".to_string(), true)));
    let text = render_summary(&report, None, Path::new("/"));
    assert!(text.contains("re-run without poisoning: pass"), "{text}");
}

/// Issue 13: the event is at the user's line, its innermost frame at the library line; a static
/// finding at the library line is confirmed (not "not exercised"), and no blind spot remains.
#[test]
fn correlation_matches_a_finding_at_any_frame_of_the_stack() {
    use graphready_diagnostics::Diagnostic;
    let report = probe("library_stack", &[1], 20).unwrap();
    let finding = |path: &str, line: u32, code: &str| -> Diagnostic {
        serde_json::from_value(serde_json::json!({
            "code": code, "name": "x", "severity": "error", "reach": "capture", "path": path,
            "span": {"start": {"line": line, "column": 1}, "end": {"line": line, "column": 5}},
            "message": "m",
        }))
        .unwrap()
    };
    let findings = vec![
        finding("/site/transformers/modeling_mixtral.py", 79, "GR201"),
        finding("/site/transformers/modeling_mixtral.py", 85, "GR201"),
        finding("/site/transformers/modeling_mixtral.py", 90, "GR104"),
        finding("/work/serve.py", 5, "GR101"),
    ];
    let correlation = correlate_from(&report, &findings, Path::new("/"));
    assert!(correlation.static_blind_spots.is_empty(), "{correlation:?}");
    let confirmed: Vec<(Option<u32>, u32, Vec<String>)> = correlation
        .confirmed
        .iter()
        .map(|c| {
            (
                c.runtime.line,
                c.runtime.innermost.as_ref().unwrap().line,
                c.runtime.kinds.clone(),
            )
        })
        .collect();
    assert_eq!(
        confirmed,
        vec![
            (
                Some(20),
                79,
                vec!["sync".to_string(), "capture_break".to_string()]
            ),
            (Some(20), 85, vec!["sync".to_string()]),
        ]
    );
    let lines: Vec<u32> = correlation
        .confirmed
        .iter()
        .map(|c| c.findings[0].line)
        .collect();
    assert_eq!(lines, vec![79, 85]);
    assert_eq!(correlation.ran_without_event.len(), 1);
    assert_eq!(correlation.ran_without_event[0].line, 90);
    // The caller's frame beyond the user's line is not part of the chain.
    assert_eq!(correlation.not_exercised.len(), 1);
    assert_eq!(correlation.not_exercised[0].path, "/work/serve.py");
    let text = render_summary(&report, Some(&correlation), Path::new("/work"));
    assert!(
        text.contains("capture_break: aten::nonzero at moe.py:20 in step: aten::nonzero invalidated the capture\n        innermost (library): /site/transformers/modeling_mixtral.py:79 in forward"),
        "{text}"
    );
    assert!(
        text.contains("confirmed          moe.py:20 via /site/transformers/modeling_mixtral.py:79 sync+capture_break (aten::nonzero) [GR201 at /site/transformers/modeling_mixtral.py:79]"),
        "{text}"
    );
    // Without the finding at line 85, the event there is a blind spot at the user's line, via
    // the library line.
    let fewer = correlate_from(&report, &findings[..1], Path::new("/"));
    assert_eq!(fewer.static_blind_spots.len(), 1);
    let blind = &fewer.static_blind_spots[0];
    assert_eq!(
        (blind.line, blind.innermost.as_ref().map(|f| f.line)),
        (Some(20), Some(85))
    );
    let all = render_summary_with(&report, None, Path::new("/work"), FrameDisplay::All);
    assert!(
        all.contains("        stack: /site/transformers/modeling_mixtral.py:79 in forward [library]\n               /site/torch/nn/modules/module.py:1780 in _call_impl [framework]\n               moe.py:20 in step [user]"),
        "{all}"
    );
}

#[test]
fn trace_paths_reach_the_harness() {
    let mut options = ProbeOptions::new("traced", vec![1], Duration::from_secs(20));
    options.trace = vec![PathBuf::from("/site/transformers"), PathBuf::from("/work")];
    let report = run_probe(&fake(), &options).unwrap();
    let details = report.buckets[0]
        .phase("sync_scan")
        .unwrap()
        .details
        .clone()
        .unwrap();
    assert_eq!(details["traces"], " /site/transformers /work");
}
