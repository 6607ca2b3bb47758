//! The runtime section of graphready's JSON report: what the probe measured, per bucket and phase.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Phases whose `pass` is required for a bucket to be ready.
pub const BLOCKING_PHASES: &[&str] = &["sync_scan", "capture", "replay"];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    #[serde(default)]
    pub torch: Option<String>,
    #[serde(default)]
    pub cuda: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub capability: Option<String>,
}

/// How a phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    /// Ran and found nothing wrong.
    Pass,
    /// Ran and found a hazard (a sync, a broken capture, a replay mismatch, ...).
    Fail,
    /// Could not complete: user code raised, or the phase's tooling failed.
    Error,
    /// Not attempted because a phase it needs did not pass.
    Skipped,
    /// The harness process died (segfault, abort) while this phase ran.
    Crashed,
    /// The time limit ran out while this phase ran.
    TimedOut,
    /// Never reached: the harness died or timed out in an earlier phase.
    NotRun,
}

impl PhaseStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            PhaseStatus::Pass => "pass",
            PhaseStatus::Fail => "fail",
            PhaseStatus::Error => "error",
            PhaseStatus::Skipped => "skipped",
            PhaseStatus::Crashed => "crashed",
            PhaseStatus::TimedOut => "timed_out",
            PhaseStatus::NotRun => "not_run",
        }
    }

    /// A status that keeps a bucket from being ready wherever it appears.
    pub const fn is_failure(self) -> bool {
        matches!(
            self,
            PhaseStatus::Fail | PhaseStatus::Crashed | PhaseStatus::TimedOut
        )
    }
}

/// A frame of user code.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    pub path: String,
    pub line: u32,
    pub function: String,
}

/// One distinct runtime event (kind, operation, user line), with how often it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeEvent {
    /// `sync`, `pageable_copy`, `runtime_sync`, `runtime_alloc`, `capture_break`,
    /// `uninitialized`, `allocation`, `error` or `crash`.
    pub kind: String,
    /// The operator or API: `aten::_local_scalar_dense`, `torch.cuda.synchronize()`, ...
    pub what: String,
    #[serde(default)]
    pub message: String,
    /// The user's innermost frame; `None` when no user frame was on the stack.
    #[serde(default)]
    pub location: Option<Frame>,
    /// User frames, innermost first.
    #[serde(default)]
    pub stack: Vec<Frame>,
    #[serde(default = "one")]
    pub count: u64,
}

fn one() -> u64 {
    1
}

impl RuntimeEvent {
    /// Events that are graph hazards (an `error` is user code raising, a `crash` the
    /// interpreter dying: facts about the run, not about capturability).
    pub fn is_hazard(&self) -> bool {
        self.kind != "error" && self.kind != "crash"
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MismatchedLeaf {
    pub path: String,
    pub detail: String,
    #[serde(default)]
    pub mismatched: Option<u64>,
    #[serde(default)]
    pub total: Option<u64>,
    #[serde(default)]
    pub max_abs_diff: Option<f64>,
    #[serde(default)]
    pub first_index: Option<Vec<u64>>,
}

/// A bit-exact comparison of two runs' outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub name: String,
    pub equal: bool,
    #[serde(default)]
    pub leaves: u64,
    #[serde(default)]
    pub mismatched_leaves: Vec<MismatchedLeaf>,
    #[serde(default)]
    pub message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub iterations: u32,
    pub eager_median_us: f64,
    #[serde(default)]
    pub replay_median_us: Option<f64>,
    #[serde(default)]
    pub speedup: Option<f64>,
}

/// Caching-allocator activity of one eager step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocations {
    pub count: i64,
    pub bytes: i64,
    /// New segments, i.e. `cudaMalloc` calls by the caching allocator.
    #[serde(default)]
    pub segments: i64,
}

/// The result of one phase for one bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub phase: String,
    pub status: PhaseStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<RuntimeEvent>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<Timing>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocations: Option<Allocations>,
    /// The error torch raised at the end of a failed capture (usually from `capture_end`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceback: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
    /// User lines executed during the sync scan, by canonical path (used for correlation only).
    #[serde(default, skip_serializing)]
    pub coverage: BTreeMap<String, Vec<u32>>,
}

impl PhaseResult {
    /// A result the driver writes itself (crash, timeout, not run).
    pub fn synthetic(phase: &str, status: PhaseStatus, message: String) -> Self {
        PhaseResult {
            phase: phase.to_string(),
            status,
            message: Some(message),
            events: Vec::new(),
            comparisons: Vec::new(),
            timing: None,
            allocations: None,
            capture_error: None,
            traceback: None,
            details: None,
            seconds: None,
            coverage: BTreeMap::new(),
        }
    }
}

/// How the harness process for one bucket ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// Every phase reported.
    Completed,
    /// The process exited or was killed by a signal before finishing.
    Crashed {
        #[serde(default)]
        phase: Option<String>,
        #[serde(default)]
        exit_code: Option<i32>,
        #[serde(default)]
        signal: Option<i32>,
    },
    /// The time limit ran out; the process was killed.
    TimedOut {
        #[serde(default)]
        phase: Option<String>,
        limit_secs: f64,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketReport {
    pub bucket: u32,
    pub outcome: Outcome,
    pub phases: Vec<PhaseResult>,
    /// The end of the harness's stderr, kept when something went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
}

impl BucketReport {
    pub fn phase(&self, name: &str) -> Option<&PhaseResult> {
        self.phases.iter().find(|p| p.phase == name)
    }

    /// Captured, replayed bit-exactly (also after new inputs), no syncs, nothing failed.
    pub fn ready(&self) -> bool {
        self.outcome == Outcome::Completed
            && BLOCKING_PHASES.iter().all(|name| {
                self.phase(name)
                    .is_some_and(|p| p.status == PhaseStatus::Pass)
            })
            && !self.phases.iter().any(|p| p.status.is_failure())
    }

    pub fn timing(&self) -> Option<&Timing> {
        self.phase("timing").and_then(|p| p.timing.as_ref())
    }

    /// Every hazard event of every phase, with the phase's name.
    pub fn events(&self) -> impl Iterator<Item = (&str, &RuntimeEvent)> {
        self.phases
            .iter()
            .flat_map(|p| p.events.iter().map(move |e| (p.phase.as_str(), e)))
    }
}

/// The probe's results: the `runtime` section of the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeReport {
    pub protocol: u32,
    pub target: String,
    #[serde(default)]
    pub harness: Option<String>,
    #[serde(default)]
    pub python: Option<String>,
    #[serde(default)]
    pub environment: Option<Environment>,
    pub buckets: Vec<BucketReport>,
}

impl RuntimeReport {
    /// Every bucket captures and replays bit-exactly with no syncs.
    pub fn ready(&self) -> bool {
        !self.buckets.is_empty() && self.buckets.iter().all(BucketReport::ready)
    }

    /// Executed user lines over all buckets, by canonical path.
    pub fn coverage(&self) -> BTreeMap<&str, Vec<u32>> {
        let mut out: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
        for phase in self.buckets.iter().flat_map(|b| b.phases.iter()) {
            for (path, lines) in &phase.coverage {
                out.entry(path.as_str()).or_default().extend(lines);
            }
        }
        for lines in out.values_mut() {
            lines.sort_unstable();
            lines.dedup();
        }
        out
    }
}
