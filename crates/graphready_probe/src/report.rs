//! The runtime section of graphready's JSON report: what the probe measured, per bucket and phase.

use crate::ranks::{Distributed, GroupStop, RankReport};
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
    /// Ran, but could not judge: eager differs from itself on the same inputs and state.
    Inconclusive,
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
    /// Several ranks: this rank stayed in this phase long after another rank finished it (a
    /// collective the others never joined, a capture that never ends); the group was killed.
    Hung,
    /// Several ranks: the group was killed while this phase ran, because another rank hung,
    /// crashed or ran out of time.
    Stopped,
}

impl PhaseStatus {
    pub const fn as_str(self) -> &'static str {
        match self {
            PhaseStatus::Pass => "pass",
            PhaseStatus::Fail => "fail",
            PhaseStatus::Inconclusive => "inconclusive",
            PhaseStatus::Error => "error",
            PhaseStatus::Skipped => "skipped",
            PhaseStatus::Crashed => "crashed",
            PhaseStatus::TimedOut => "timed_out",
            PhaseStatus::NotRun => "not_run",
            PhaseStatus::Hung => "hung",
            PhaseStatus::Stopped => "stopped",
        }
    }

    /// A status that keeps a bucket from being ready wherever it appears.
    pub const fn is_failure(self) -> bool {
        matches!(
            self,
            PhaseStatus::Fail | PhaseStatus::Crashed | PhaseStatus::TimedOut | PhaseStatus::Hung
        )
    }

    /// How much a status says is wrong, for the merge over ranks: the worst one stands for the
    /// group.
    pub const fn severity(self) -> u8 {
        match self {
            PhaseStatus::Pass => 0,
            PhaseStatus::Skipped => 1,
            PhaseStatus::NotRun => 2,
            PhaseStatus::Stopped => 3,
            PhaseStatus::Inconclusive => 4,
            PhaseStatus::Error => 5,
            PhaseStatus::Fail => 6,
            PhaseStatus::TimedOut => 7,
            PhaseStatus::Hung => 8,
            PhaseStatus::Crashed => 9,
        }
    }
}

/// A Python frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Frame {
    pub path: String,
    pub line: u32,
    pub function: String,
    /// `user` (the user's own code), `library` (third-party packages such as transformers) or
    /// `framework` (PyTorch, the standard library).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl Frame {
    /// Same file and line.
    pub fn same_place(&self, other: &Frame) -> bool {
        self.path == other.path && self.line == other.line
    }
}

/// One distinct runtime event (kind, operation, user line, innermost line), with how often it
/// happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeEvent {
    /// `sync`, `pageable_copy`, `runtime_sync`, `runtime_alloc`, `capture_break`,
    /// `uninitialized`, `allocation`, `host_collective`, `hang`, `error` or `crash`.
    pub kind: String,
    /// The operator or API: `aten::_local_scalar_dense`, `torch.cuda.synchronize()`, ...
    pub what: String,
    #[serde(default)]
    pub message: String,
    /// The user's innermost frame (else the innermost library frame); `None` when neither was
    /// on the stack.
    #[serde(default)]
    pub location: Option<Frame>,
    /// Every frame from the operation out to the step's caller, innermost first.
    #[serde(default)]
    pub stack: Vec<Frame>,
    #[serde(default = "one")]
    pub count: u64,
    /// Several ranks, in a bucket's merged phases: the ranks where it happened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<u32>,
}

fn one() -> u64 {
    1
}

impl RuntimeEvent {
    /// The frame that issued the operation (library or not).
    pub fn innermost(&self) -> Option<&Frame> {
        self.stack.first().or(self.location.as_ref())
    }

    /// The frames from the innermost out to the user's frame (inclusive): the chain a static
    /// finding may sit on.
    pub fn frames_to_location(&self) -> Vec<&Frame> {
        let Some(location) = &self.location else {
            return self.stack.iter().collect();
        };
        match self.stack.iter().position(|f| f.same_place(location)) {
            Some(end) => self.stack[..=end].iter().collect(),
            None => vec![location],
        }
    }

    /// Events that are graph hazards (an `error` is user code raising, a `crash` the
    /// interpreter dying, a `hang` a rank that stopped: facts about the run, not about
    /// capturability).
    pub fn is_hazard(&self) -> bool {
        !matches!(self.kind.as_str(), "error" | "crash" | "hang")
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

/// The graph of one bucket: its private memory pool after capture, and the capture's wall time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphMemory {
    pub capture_seconds: f64,
    /// Bytes the allocator reserved for the graph's pool (segments).
    pub pool_reserved_bytes: i64,
    /// Bytes still allocated in it after capture (static outputs, kept intermediates).
    pub pool_allocated_bytes: i64,
}

/// Sums over the bucket ladder (each bucket's graph captured into its own pool).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphTotals {
    pub graphs: u32,
    pub capture_seconds: f64,
    pub pool_reserved_bytes: i64,
    pub pool_allocated_bytes: i64,
}

impl GraphTotals {
    pub fn over(buckets: &[BucketReport]) -> Option<GraphTotals> {
        let graphs: Vec<&GraphMemory> = buckets
            .iter()
            .filter_map(|b| b.phase("capture").and_then(|p| p.graph.as_ref()))
            .collect();
        if graphs.is_empty() {
            return None;
        }
        Some(GraphTotals {
            graphs: u32::try_from(graphs.len()).unwrap_or(u32::MAX),
            capture_seconds: graphs.iter().map(|g| g.capture_seconds).sum(),
            pool_reserved_bytes: graphs.iter().map(|g| g.pool_reserved_bytes).sum(),
            pool_allocated_bytes: graphs.iter().map(|g| g.pool_allocated_bytes).sum(),
        })
    }
}

/// Where a group of state storages was allocated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateSite {
    #[serde(default)]
    pub location: Option<Frame>,
    #[serde(default)]
    pub innermost: Option<Frame>,
    pub tensors: u64,
    pub bytes: u64,
}

/// What the step mutates besides its outputs, restored before every judged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateReport {
    pub tensors: u64,
    pub bytes: u64,
    #[serde(default)]
    pub found: u64,
    #[serde(default)]
    pub declared: u64,
    /// `ProbeTarget(reset=...)` is called after the tensors are restored.
    #[serde(default)]
    pub reset: bool,
    #[serde(default)]
    pub sites: Vec<StateSite>,
    /// Storages with no known allocation site.
    #[serde(default)]
    pub unlocated: u64,
    /// The first storages, one by one (`bytes`, `device`, `tensor`, `origin`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub storages: Vec<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sites_unavailable: Option<String>,
}

/// An output whose real rows changed with the pad rows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowLeak {
    pub path: String,
    /// Leaking real rows (empty for an output without a batch dimension, compared whole).
    #[serde(default)]
    pub rows: Vec<u64>,
    #[serde(default = "yes")]
    pub batched: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowCase {
    pub real_rows: u64,
    #[serde(default)]
    pub leaks: Vec<RowLeak>,
}

/// Padded-bucket row isolation of one bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowIsolation {
    pub batch_dim: i64,
    #[serde(default)]
    pub batch_inputs: Vec<u64>,
    /// False in a re-run without poisoning (both fills neutral).
    #[serde(default = "yes")]
    pub hostile: bool,
    #[serde(default)]
    pub cases: Vec<RowCase>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_real_rows: Vec<u64>,
}

/// The verdict of the re-run without poisoning, after a device assert in a poisoning phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rerun {
    /// The re-run phase's status.
    pub status: PhaseStatus,
    #[serde(default)]
    pub message: Option<String>,
    /// Whether the poisoning caused the assert (the re-run did not assert).
    pub poison_caused_it: bool,
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
    /// Warm-up: the state found and restored before every judged run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateReport>,
    /// Capture: graph memory and capture time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<GraphMemory>,
    /// Row isolation: what was tried and what leaked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<RowIsolation>,
    /// The phase lost the CUDA context (a device-side assert).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub context_lost: bool,
    /// It was poisoning memory on purpose when that happened.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub poisoning: bool,
    /// After `context_lost` while poisoning: the re-run without poisoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<Rerun>,
    /// Several ranks: the collectives this rank issued in this phase (name -> calls).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub collectives: BTreeMap<String, u64>,
    /// Several ranks, in a bucket's merged phases: each rank's status and message, when the
    /// ranks differ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_rank: Vec<RankPhase>,
    /// User lines executed during the sync scan, by canonical path (used for correlation only).
    #[serde(default, skip_serializing)]
    pub coverage: BTreeMap<String, Vec<u32>>,
}

/// One rank's status in a merged phase whose ranks differ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankPhase {
    pub rank: u32,
    pub status: PhaseStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
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
            state: None,
            graph: None,
            rows: None,
            context_lost: false,
            poisoning: false,
            rerun: None,
            collectives: BTreeMap::new(),
            by_rank: Vec::new(),
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
    /// Several ranks: this rank stayed in `phase` for `waited_secs` after another rank had
    /// finished it; the group was killed.
    Hung {
        #[serde(default)]
        phase: Option<String>,
        waited_secs: f64,
    },
    /// Several ranks: killed because another rank hung, crashed or ran out of time.
    Stopped {
        #[serde(default)]
        phase: Option<String>,
        reason: String,
    },
}

impl Outcome {
    /// The phase that was running when the process ended, if it did not complete.
    pub fn phase(&self) -> Option<&str> {
        match self {
            Outcome::Completed => None,
            Outcome::Crashed { phase, .. }
            | Outcome::TimedOut { phase, .. }
            | Outcome::Hung { phase, .. }
            | Outcome::Stopped { phase, .. } => phase.as_deref(),
        }
    }

    /// For the merge over ranks: the worst outcome stands for the bucket.
    pub const fn severity(&self) -> u8 {
        match self {
            Outcome::Completed => 0,
            Outcome::Stopped { .. } => 1,
            Outcome::TimedOut { .. } => 2,
            Outcome::Hung { .. } => 3,
            Outcome::Crashed { .. } => 4,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BucketReport {
    pub bucket: u32,
    /// With several ranks, the worst rank's outcome.
    pub outcome: Outcome,
    /// With several ranks, merged over the ranks (see `ranks::merge_phases`).
    pub phases: Vec<PhaseResult>,
    /// The end of the harness's stderr, kept when something went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// Several ranks (`--nproc-per-node`): each rank's own results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankReport>,
    /// Several ranks: why the group was stopped early (a hang, a crash, the time limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_stop: Option<GroupStop>,
}

/// Captured, replayed bit-exactly (also after new inputs), no syncs, nothing failed.
pub(crate) fn phases_ready(outcome: &Outcome, phases: &[PhaseResult]) -> bool {
    let phase = |name: &str| phases.iter().find(|p| p.phase == name);
    *outcome == Outcome::Completed
        && BLOCKING_PHASES
            .iter()
            .all(|name| phase(name).is_some_and(|p| p.status == PhaseStatus::Pass))
        && !phases.iter().any(|p| p.status.is_failure())
}

impl BucketReport {
    pub fn phase(&self, name: &str) -> Option<&PhaseResult> {
        self.phases.iter().find(|p| p.phase == name)
    }

    /// Captured, replayed bit-exactly (also after new inputs), no syncs, nothing failed — on
    /// every rank.
    pub fn ready(&self) -> bool {
        phases_ready(&self.outcome, &self.phases)
            && self.group_stop.is_none()
            && self.ranks.iter().all(RankReport::ready)
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
    /// Several ranks (`--nproc-per-node`): the group's size and backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<Distributed>,
    #[serde(default)]
    pub harness: Option<String>,
    #[serde(default)]
    pub python: Option<String>,
    #[serde(default)]
    pub environment: Option<Environment>,
    pub buckets: Vec<BucketReport>,
    /// Graph memory and capture time summed over the buckets that captured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_totals: Option<GraphTotals>,
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
