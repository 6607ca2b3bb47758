//! Several ranks (`--nproc-per-node N`): each rank's own results, a rank's hang report, why a
//! group was stopped, and the bucket's phases merged over the ranks.
//!
//! The merge keeps every rank visible: a phase's status is the worst over the ranks, and when
//! the ranks differ the phase lists each rank's status (`by_rank`) and says so in its message;
//! events are merged by kind, operation and line, with the ranks they happened on; comparisons
//! are bit-exact only if they are on every rank; latency is the slowest rank's (a tensor-parallel
//! step is as fast as its slowest rank), graph memory the largest rank's (per GPU).

use crate::protocol::PHASES;
use crate::report::{
    phases_ready, Comparison, Frame, GraphMemory, Outcome, PhaseResult, PhaseStatus, RankPhase,
    RuntimeEvent, Timing,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The group: its size and backend.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distributed {
    pub world_size: u32,
    pub backend: String,
}

/// One rank's results for one bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankReport {
    pub rank: u32,
    pub outcome: Outcome,
    pub phases: Vec<PhaseResult>,
    /// The rank's GPU (`cuda:1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Where the rank was when the group was stopped (a hang, another rank's crash, the time
    /// limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hang: Option<HangReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
}

impl RankReport {
    pub fn phase(&self, name: &str) -> Option<&PhaseResult> {
        self.phases.iter().find(|p| p.phase == name)
    }

    pub fn ready(&self) -> bool {
        phases_ready(&self.outcome, &self.phases)
    }

    pub fn timing(&self) -> Option<&Timing> {
        self.phase("timing").and_then(|p| p.timing.as_ref())
    }
}

/// A collective call through `torch.distributed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CollectiveCall {
    /// `all_reduce`, `all_gather_object`, ...
    pub what: String,
    pub phase: String,
    /// Its number among the calls of the same name in that phase (1-based).
    pub seq: u64,
    #[serde(default)]
    pub location: Option<Frame>,
    #[serde(default)]
    pub stack: Vec<Frame>,
}

impl CollectiveCall {
    fn describe(&self) -> String {
        let at = self
            .location
            .as_ref()
            .map(|l| format!(" at {}:{}", l.path, l.line))
            .unwrap_or_default();
        format!("{} #{} in {}{at}", self.what, self.seq, self.phase)
    }
}

/// What a rank said (or its thread dump showed) just before the group was killed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HangReport {
    #[serde(default)]
    pub phase: Option<String>,
    /// Where the main thread waits, in words.
    #[serde(default)]
    pub waiting: Option<String>,
    /// The user's frame on the main thread's stack, if any.
    #[serde(default)]
    pub location: Option<Frame>,
    /// The main thread's stack, innermost first (the probe's own frames left out).
    #[serde(default)]
    pub stack: Vec<Frame>,
    /// The last collective the rank issued, and where.
    #[serde(default)]
    pub last_collective: Option<CollectiveCall>,
    /// Collectives issued per phase (phase -> name -> calls).
    #[serde(default)]
    pub collectives: BTreeMap<String, BTreeMap<String, u64>>,
    /// `watchdog` (the rank's own thread answered) or `faulthandler` (its thread dump, when
    /// that thread could not run).
    #[serde(default = "watchdog")]
    pub source: String,
}

fn watchdog() -> String {
    "watchdog".into()
}

impl HangReport {
    /// The report as an event of the phase the rank was stopped in: at the user's line where it
    /// waits, else where it issued its last collective.
    pub fn event(&self) -> RuntimeEvent {
        let last = self.last_collective.as_ref();
        let (location, stack) = match (&self.location, last) {
            (Some(location), _) => (Some(location.clone()), self.stack.clone()),
            (None, Some(call)) if call.location.is_some() => {
                (call.location.clone(), call.stack.clone())
            }
            _ => (None, self.stack.clone()),
        };
        let mut message = self
            .waiting
            .clone()
            .unwrap_or_else(|| "no report from the rank".into());
        match last {
            Some(call) => {
                let _ = write!(message, "; last collective: {}", call.describe());
            }
            None => message.push_str("; no collective issued"),
        }
        RuntimeEvent {
            kind: "hang".into(),
            what: last.map_or_else(|| "(no collective)".into(), |c| c.what.clone()),
            message,
            location,
            stack,
            count: 1,
            ranks: Vec::new(),
        }
    }

    /// The collectives of one phase, as text (`all_reduce x3`, or `none`).
    fn phase_collectives(&self, phase: &str) -> String {
        counts_text(self.collectives.get(phase))
    }
}

fn counts_text(counts: Option<&BTreeMap<String, u64>>) -> String {
    match counts.filter(|c| !c.is_empty()) {
        None => "none".into(),
        Some(counts) => counts
            .iter()
            .map(|(name, n)| format!("{name} x{n}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Why the group was stopped before every rank finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupStop {
    /// `hang` (a rank stayed in a phase long after another finished it), `crash` (a rank
    /// exited before finishing) or `time_limit`.
    pub cause: String,
    /// The ranks that caused it.
    pub ranks: Vec<u32>,
    #[serde(default)]
    pub phase: Option<String>,
    /// Seconds since the bucket's ranks started.
    pub after_secs: f64,
    pub message: String,
}

/// The group stop's message: what happened, where each rank was, and whether the ranks issued
/// different collectives in the phase.
pub fn describe_stop(
    cause: &str,
    culprits: &[u32],
    phase: Option<&str>,
    waited_secs: f64,
    ranks: &[RankReport],
) -> String {
    let who = rank_list(culprits);
    let phase_text = phase.unwrap_or("start-up");
    let others: Vec<u32> = ranks
        .iter()
        .map(|r| r.rank)
        .filter(|r| !culprits.contains(r))
        .collect();
    let mut text = match cause {
        "hang" => format!(
            "{who} stayed in {phase_text} {waited_secs:.0} s after {} finished it",
            if others.is_empty() {
                "the others".to_string()
            } else {
                rank_list(&others)
            }
        ),
        "crash" => format!("{who} exited during {phase_text}; the other ranks could not go on"),
        _ => format!("the {waited_secs:.0} s time limit ran out with {who} in {phase_text}"),
    };
    if let Some(phase) = phase {
        let counts: Vec<(u32, String)> = ranks
            .iter()
            .map(|r| (r.rank, collectives_in(r, phase)))
            .collect();
        if counts.windows(2).any(|w| w[0].1 != w[1].1) {
            let listed: Vec<String> = counts
                .iter()
                .map(|(rank, text)| format!("rank {rank} {text}"))
                .collect();
            let _ = write!(
                text,
                "; the ranks issued different collectives in {phase}: {}",
                listed.join("; ")
            );
        }
    }
    text.push_str("; the group was killed");
    text
}

/// A rank's collectives in one phase: from its hang report, else from the phase's result.
fn collectives_in(rank: &RankReport, phase: &str) -> String {
    if let Some(hang) = &rank.hang {
        if hang.collectives.contains_key(phase) || rank.phase(phase).is_none() {
            return hang.phase_collectives(phase);
        }
    }
    counts_text(rank.phase(phase).map(|p| &p.collectives))
}

/// `rank 0`, `ranks 0, 2`.
pub fn rank_list(ranks: &[u32]) -> String {
    let listed: Vec<String> = ranks.iter().map(u32::to_string).collect();
    match ranks.len() {
        1 => format!("rank {}", listed[0]),
        _ => format!("ranks {}", listed.join(", ")),
    }
}

/// The worst outcome over the ranks.
pub fn merge_outcome(ranks: &[RankReport]) -> Outcome {
    ranks
        .iter()
        .map(|r| &r.outcome)
        .fold(None::<&Outcome>, |worst, o| match worst {
            Some(w) if w.severity() >= o.severity() => Some(w),
            _ => Some(o),
        })
        .cloned()
        .unwrap_or(Outcome::Completed)
}

/// The bucket's phases merged over the ranks, in protocol order.
pub fn merge_phases(ranks: &[RankReport]) -> Vec<PhaseResult> {
    let mut names: Vec<&str> = PHASES.to_vec();
    for rank in ranks {
        for phase in &rank.phases {
            if !names.contains(&phase.phase.as_str()) {
                names.push(&phase.phase);
            }
        }
    }
    names
        .into_iter()
        .filter_map(|name| {
            let results: Vec<(u32, &PhaseResult)> = ranks
                .iter()
                .filter_map(|r| r.phase(name).map(|p| (r.rank, p)))
                .collect();
            merge_phase(&results)
        })
        .collect()
}

fn merge_phase(results: &[(u32, &PhaseResult)]) -> Option<PhaseResult> {
    let (_, worst) = results.iter().copied().fold(
        None::<(u32, &PhaseResult)>,
        |best, (rank, p)| match best {
            Some((_, b)) if PhaseStatus::severity(b.status) >= p.status.severity() => best,
            _ => Some((rank, p)),
        },
    )?;
    let mut merged = worst.clone();
    merged.events = merge_events(results);
    merged.comparisons = merge_comparisons(results);
    merged.timing = slowest(results.iter().filter_map(|(_, p)| p.timing.as_ref()));
    merged.graph = largest(results.iter().filter_map(|(_, p)| p.graph.as_ref()));
    merged.context_lost = results.iter().any(|(_, p)| p.context_lost);
    merged.poisoning = results.iter().any(|(_, p)| p.poisoning);
    merged.collectives = BTreeMap::new();
    merged.coverage = BTreeMap::new();
    for (_, p) in results {
        for (path, lines) in &p.coverage {
            merged
                .coverage
                .entry(path.clone())
                .or_default()
                .extend(lines);
        }
    }
    for lines in merged.coverage.values_mut() {
        lines.sort_unstable();
        lines.dedup();
    }
    let mut notes = Vec::new();
    if results.windows(2).any(|w| w[0].1.status != w[1].1.status) {
        merged.by_rank = results
            .iter()
            .map(|(rank, p)| RankPhase {
                rank: *rank,
                status: p.status,
                message: p.message.clone(),
            })
            .collect();
        notes.push(format!("ranks differ: {}", statuses_text(results)));
    }
    if results
        .windows(2)
        .any(|w| w[0].1.collectives != w[1].1.collectives)
    {
        let listed: Vec<String> = results
            .iter()
            .map(|(rank, p)| format!("rank {rank} {}", counts_text(Some(&p.collectives))))
            .collect();
        notes.push(format!(
            "the ranks issued different collectives: {}",
            listed.join("; ")
        ));
    }
    if !notes.is_empty() {
        // Each rank's own message is listed with it (`by_rank`) when the ranks differ.
        let own = merged.message.take().filter(|_| merged.by_rank.is_empty());
        let mut message = notes.join("; ");
        if let Some(own) = own {
            let _ = write!(message, "; {own}");
        }
        merged.message = Some(message);
    }
    Some(merged)
}

/// `pass on rank 0, FAIL on rank 1`.
fn statuses_text(results: &[(u32, &PhaseResult)]) -> String {
    let mut groups: Vec<(PhaseStatus, Vec<u32>)> = Vec::new();
    for (rank, p) in results {
        match groups.iter_mut().find(|(status, _)| *status == p.status) {
            Some((_, ranks)) => ranks.push(*rank),
            None => groups.push((p.status, vec![*rank])),
        }
    }
    groups
        .iter()
        .map(|(status, ranks)| {
            let shown = match status {
                PhaseStatus::Pass => "pass".to_string(),
                other => other.as_str().to_uppercase(),
            };
            format!("{shown} on {}", rank_list(ranks))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn merge_events(results: &[(u32, &PhaseResult)]) -> Vec<RuntimeEvent> {
    type Key = (String, String, Option<(String, u32)>, Option<(String, u32)>);
    let place = |f: Option<&Frame>| f.map(|f| (f.path.clone(), f.line));
    let mut order: Vec<Key> = Vec::new();
    let mut merged: BTreeMap<Key, RuntimeEvent> = BTreeMap::new();
    for (rank, phase) in results {
        for event in &phase.events {
            let key = (
                event.kind.clone(),
                event.what.clone(),
                place(event.location.as_ref()),
                place(event.innermost()),
            );
            let slot = merged.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                RuntimeEvent {
                    count: 0,
                    ranks: Vec::new(),
                    ..event.clone()
                }
            });
            slot.count += event.count;
            if !slot.ranks.contains(rank) {
                slot.ranks.push(*rank);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|key| merged.remove(&key))
        .collect()
}

fn merge_comparisons(results: &[(u32, &PhaseResult)]) -> Vec<Comparison> {
    let mut out: Vec<Comparison> = Vec::new();
    for (rank, phase) in results {
        for comparison in &phase.comparisons {
            match out.iter_mut().find(|c| c.name == comparison.name) {
                None => {
                    let mut first = comparison.clone();
                    if !first.equal {
                        first.message = Some(on_rank(*rank, first.message.as_deref()));
                    }
                    out.push(first);
                }
                Some(slot) if slot.equal && !comparison.equal => {
                    *slot = comparison.clone();
                    slot.message = Some(on_rank(*rank, comparison.message.as_deref()));
                }
                Some(_) => {}
            }
        }
    }
    out
}

fn on_rank(rank: u32, message: Option<&str>) -> String {
    format!("rank {rank}: {}", message.unwrap_or("differs"))
}

fn slowest<'a>(timings: impl Iterator<Item = &'a Timing>) -> Option<Timing> {
    let timings: Vec<&Timing> = timings.collect();
    let first = timings.first()?;
    let eager = timings
        .iter()
        .map(|t| t.eager_median_us)
        .fold(f64::MIN, f64::max);
    let replay = timings
        .iter()
        .map(|t| t.replay_median_us)
        .collect::<Option<Vec<f64>>>()
        .map(|r| r.into_iter().fold(f64::MIN, f64::max));
    Some(Timing {
        iterations: first.iterations,
        eager_median_us: eager,
        replay_median_us: replay,
        speedup: replay.filter(|r| *r > 0.0).map(|r| eager / r),
    })
}

fn largest<'a>(graphs: impl Iterator<Item = &'a GraphMemory>) -> Option<GraphMemory> {
    graphs.fold(None, |acc: Option<GraphMemory>, g| {
        Some(match acc {
            None => g.clone(),
            Some(a) => GraphMemory {
                capture_seconds: a.capture_seconds.max(g.capture_seconds),
                pool_reserved_bytes: a.pool_reserved_bytes.max(g.pool_reserved_bytes),
                pool_allocated_bytes: a.pool_allocated_bytes.max(g.pool_allocated_bytes),
            },
        })
    })
}
