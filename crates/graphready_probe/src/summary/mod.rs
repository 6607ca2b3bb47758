//! A readable text summary of a probe run (and its correlation with static findings).

mod ranks;

use crate::correlate::{Correlation, RuntimeSite};
use crate::ranks::rank_list;
use crate::report::{
    BucketReport, Frame, GraphMemory, Outcome, PhaseResult, PhaseStatus, RuntimeEvent,
    RuntimeReport, StateReport, Timing,
};
use ranks::render_group_stop;
use std::fmt::Write as _;
use std::path::Path;

/// Which frames of an event's stack the text shows (JSON always keeps them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrameDisplay {
    /// The user's frame, and the innermost frame when it is another (library or not).
    #[default]
    User,
    /// Every frame, innermost first.
    All,
}

/// Render the runtime report; paths under `base` are shown relative to it.
pub fn render(report: &RuntimeReport, correlation: Option<&Correlation>, base: &Path) -> String {
    render_with(report, correlation, base, FrameDisplay::User)
}

/// [`render`], choosing which frames of each event are shown.
pub fn render_with(
    report: &RuntimeReport,
    correlation: Option<&Correlation>,
    base: &Path,
    frames: FrameDisplay,
) -> String {
    let mut out = String::new();
    let _ = write!(out, "graphready probe {}", report.target);
    if let Some(env) = &report.environment {
        let _ = write!(
            out,
            " (torch {}, CUDA {}, {})",
            env.torch.as_deref().unwrap_or("?"),
            env.cuda.as_deref().unwrap_or("?"),
            env.device.as_deref().unwrap_or("?")
        );
    }
    if let Some(group) = &report.distributed {
        let _ = write!(out, " on {} rank(s), {}", group.world_size, group.backend);
    }
    out.push('\n');
    for bucket in &report.buckets {
        render_bucket(&mut out, bucket, base, frames);
    }
    render_speedups(&mut out, report);
    render_graph_memory(&mut out, report);
    if let Some(correlation) = correlation {
        render_correlation(&mut out, correlation, base);
    }
    let _ = writeln!(out, "{}", verdict(report));
    out
}

fn render_bucket(out: &mut String, bucket: &BucketReport, base: &Path, frames: FrameDisplay) {
    let world = bucket.ranks.len();
    if world == 0 {
        let _ = writeln!(out, "bucket {}:", bucket.bucket);
    } else {
        let _ = writeln!(out, "bucket {} ({world} rank(s)):", bucket.bucket);
    }
    for phase in &bucket.phases {
        render_phase(out, phase, base, frames, world);
    }
    match &bucket.outcome {
        Outcome::Completed => {}
        _ if world > 0 => {}
        outcome => {
            if let Some(tail) = bucket.stderr_tail.as_deref() {
                let _ = writeln!(
                    out,
                    "  harness stderr (during {}):",
                    outcome.phase().unwrap_or("start-up")
                );
                for line in stderr_excerpt(tail) {
                    let _ = writeln!(out, "    | {line}");
                }
            }
        }
    }
    if let Some(stop) = &bucket.group_stop {
        render_group_stop(out, stop, &bucket.ranks, base, frames);
    }
    for rank in &bucket.ranks {
        if let (Outcome::Crashed { phase, .. }, Some(tail)) = (&rank.outcome, &rank.stderr_tail) {
            let _ = writeln!(
                out,
                "  rank {} stderr (during {}):",
                rank.rank,
                phase.as_deref().unwrap_or("start-up")
            );
            for line in stderr_excerpt(tail) {
                let _ = writeln!(out, "    | {line}");
            }
        }
    }
}

fn render_phase(
    out: &mut String,
    phase: &PhaseResult,
    base: &Path,
    frames: FrameDisplay,
    world: usize,
) {
    let status = match phase.status {
        PhaseStatus::Pass => "pass".to_string(),
        other => other.as_str().to_uppercase(),
    };
    let _ = write!(out, "  {:<14} {:<9}", phase.phase, status);
    if let Some(timing) = &phase.timing {
        let _ = write!(out, " eager {:.1} us", timing.eager_median_us);
        if let (Some(replay), Some(speedup)) = (timing.replay_median_us, timing.speedup) {
            let _ = write!(out, ", replay {replay:.1} us, speedup {speedup:.2}x");
        }
    }
    if let Some(alloc) = &phase.allocations {
        let _ = write!(
            out,
            " {} allocation(s), {} bytes, {} new segment(s) per eager step",
            alloc.count, alloc.bytes, alloc.segments
        );
    }
    if let Some(graph) = &phase.graph {
        let _ = write!(out, " {}", graph_line(graph));
    }
    if let Some(message) = &phase.message {
        let _ = write!(out, " {message}");
    }
    out.push('\n');
    for rank in &phase.by_rank {
        let status = match rank.status {
            PhaseStatus::Pass => "pass".to_string(),
            other => other.as_str().to_uppercase(),
        };
        let _ = writeln!(
            out,
            "      rank {}: {status}{}",
            rank.rank,
            rank.message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default()
        );
    }
    if let Some(state) = &phase.state {
        render_state(out, state, base);
    }
    if let Some(rerun) = &phase.rerun {
        let _ = writeln!(
            out,
            "      re-run without poisoning: {}{}",
            rerun.status.as_str(),
            rerun
                .message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        );
    }
    for event in &phase.events {
        if event.kind == "allocation" && phase.status == PhaseStatus::Pass {
            let where_ = event
                .location
                .as_ref()
                .map(|l| format!("{}:{}", display_path(&l.path, base), l.line))
                .unwrap_or_default();
            let _ = writeln!(out, "      allocation: {} at {where_}", event.what);
            continue;
        }
        let count = if event.count > 1 {
            format!(" (x{})", event.count)
        } else {
            String::new()
        };
        let where_ = match &event.location {
            Some(l) => frame_text(l, base),
            None => "(no user frame)".to_string(),
        };
        // With several ranks, an event on some ranks only names them.
        let ranks = if world > 0 && !event.ranks.is_empty() && event.ranks.len() < world {
            format!(" [{}]", rank_list(&event.ranks))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "      {}: {} at {where_}{count}{ranks}: {}",
            event.kind,
            event.what,
            relative_in_text(&event.message, base)
        );
        render_frames(out, event, base, frames);
    }
    for comparison in &phase.comparisons {
        let verdict = if comparison.equal {
            "bit-exact"
        } else {
            "DIFFERS"
        };
        let _ = write!(out, "      {}: {verdict}", comparison.name);
        if let Some(message) = comparison.message.as_deref().filter(|_| !comparison.equal) {
            let _ = write!(out, " ({message})");
        }
        out.push('\n');
    }
}

/// Stack frames, innermost first, one per line under a `stack:` lead, each with its scope.
fn write_stack<'f>(out: &mut String, frames: impl IntoIterator<Item = &'f Frame>, base: &Path) {
    for (index, frame) in frames.into_iter().enumerate() {
        let lead = if index == 0 { "stack:" } else { "" };
        let scope = frame.scope.as_deref().unwrap_or("");
        let _ = writeln!(
            out,
            "        {lead:<6} {} [{scope}]",
            frame_text(frame, base)
        );
    }
}

fn frame_text(frame: &Frame, base: &Path) -> String {
    format!(
        "{}:{} in {}",
        display_path(&frame.path, base),
        frame.line,
        frame.function
    )
}

fn render_frames(out: &mut String, event: &RuntimeEvent, base: &Path, frames: FrameDisplay) {
    match frames {
        FrameDisplay::User => {
            let Some(innermost) = event.innermost() else {
                return;
            };
            if event
                .location
                .as_ref()
                .is_some_and(|l| l.same_place(innermost))
            {
                return;
            }
            let scope = innermost.scope.as_deref().unwrap_or("library");
            let _ = writeln!(
                out,
                "        innermost ({scope}): {}",
                frame_text(innermost, base)
            );
        }
        FrameDisplay::All => write_stack(out, &event.stack, base),
    }
}

fn render_state(out: &mut String, state: &StateReport, base: &Path) {
    for site in state.sites.iter().take(6) {
        let innermost = site
            .innermost
            .as_ref()
            .map(|f| frame_text(f, base))
            .unwrap_or_default();
        let via = match (&site.location, &site.innermost) {
            (Some(l), Some(i)) if !l.same_place(i) => format!(" (from {})", frame_text(l, base)),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "      state: {} storage(s), {} allocated at {innermost}{via}",
            site.tensors,
            format_bytes(site.bytes)
        );
    }
    if state.sites.len() > 6 {
        let _ = writeln!(
            out,
            "      state: ... {} more site(s)",
            state.sites.len() - 6
        );
    }
    if state.unlocated > 0 && !state.sites.is_empty() {
        let _ = writeln!(
            out,
            "      state: {} storage(s) with no known allocation site",
            state.unlocated
        );
    }
}

fn graph_line(graph: &GraphMemory) -> String {
    format!(
        "graph pool {} reserved, {} allocated; captured in {:.1} ms",
        format_bytes_signed(graph.pool_reserved_bytes),
        format_bytes_signed(graph.pool_allocated_bytes),
        graph.capture_seconds * 1e3
    )
}

/// `512 B`, `64.0 KiB`, `3.2 MiB`, `1.5 GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

fn format_bytes_signed(bytes: i64) -> String {
    let text = format_bytes(bytes.unsigned_abs());
    if bytes < 0 {
        format!("-{text}")
    } else {
        text
    }
}

fn render_graph_memory(out: &mut String, report: &RuntimeReport) {
    let rows: Vec<String> = report
        .buckets
        .iter()
        .filter_map(|b| {
            let graph = b.phase("capture")?.graph.as_ref()?;
            Some(format!(
                "  bucket {:>4}: pool {:>10} reserved {:>10} allocated  capture {:>8.1} ms",
                b.bucket,
                format_bytes_signed(graph.pool_reserved_bytes),
                format_bytes_signed(graph.pool_allocated_bytes),
                graph.capture_seconds * 1e3
            ))
        })
        .collect();
    let Some(totals) = &report.graph_totals else {
        return;
    };
    let _ = writeln!(out, "graph memory and capture time:");
    for row in rows {
        let _ = writeln!(out, "{row}");
    }
    let _ = writeln!(
        out,
        "  total ({} graph(s)): pool {} reserved {} allocated  capture {:.1} ms",
        totals.graphs,
        format_bytes_signed(totals.pool_reserved_bytes),
        format_bytes_signed(totals.pool_allocated_bytes),
        totals.capture_seconds * 1e3
    );
}

fn render_speedups(out: &mut String, report: &RuntimeReport) {
    let mut rows: Vec<String> = Vec::new();
    for bucket in &report.buckets {
        if bucket.ranks.is_empty() {
            rows.extend(bucket.timing().map(|t| speedup_row(bucket.bucket, "", t)));
        } else {
            for rank in &bucket.ranks {
                let label = format!(" rank {}", rank.rank);
                rows.extend(rank.timing().map(|t| speedup_row(bucket.bucket, &label, t)));
            }
        }
    }
    if !rows.is_empty() {
        let _ = writeln!(out, "latency (median per step):");
        for row in rows {
            let _ = writeln!(out, "{row}");
        }
    }
}

fn speedup_row(bucket: u32, rank: &str, t: &Timing) -> String {
    match (t.replay_median_us, t.speedup) {
        (Some(replay), Some(speedup)) => format!(
            "  bucket {bucket:>4}{rank}: eager {:>9.1} us  replay {replay:>9.1} us  speedup {speedup:>6.2}x",
            t.eager_median_us
        ),
        _ => format!(
            "  bucket {bucket:>4}{rank}: eager {:>9.1} us  (no graph)",
            t.eager_median_us
        ),
    }
}

fn render_correlation(out: &mut String, correlation: &Correlation, base: &Path) {
    let _ = writeln!(out, "static vs runtime:");
    if correlation.is_empty() {
        let _ = writeln!(out, "  nothing to correlate");
        return;
    }
    for site in &correlation.static_blind_spots {
        let _ = writeln!(out, "  static blind spot  {}", site_line(site, base));
    }
    for confirmed in &correlation.confirmed {
        let site = &confirmed.runtime;
        let codes: Vec<String> = confirmed
            .findings
            .iter()
            .map(|f| {
                if site.path.as_deref() == Some(f.path.as_str()) && site.line == Some(f.line) {
                    f.code.clone()
                } else {
                    format!("{} at {}:{}", f.code, display_path(&f.path, base), f.line)
                }
            })
            .collect();
        let _ = writeln!(
            out,
            "  confirmed          {} [{}]",
            site_line(site, base),
            codes.join(", ")
        );
    }
    for (label, findings) in [
        ("ran, no event", &correlation.ran_without_event),
        ("not exercised", &correlation.not_exercised),
    ] {
        for finding in findings {
            let _ = writeln!(
                out,
                "  {label:<18} {}:{} {} {}",
                display_path(&finding.path, base),
                finding.line,
                finding.code,
                finding.message
            );
        }
    }
}

fn site_line(site: &RuntimeSite, base: &Path) -> String {
    let mut place = match (&site.path, site.line) {
        (Some(path), Some(line)) => format!("{}:{line}", display_path(path, base)),
        _ => "(no user frame)".to_string(),
    };
    if let Some(inner) = &site.innermost {
        let _ = write!(
            place,
            " via {}:{}",
            display_path(&inner.path, base),
            inner.line
        );
    }
    format!(
        "{place} {} ({})",
        site.kinds.join("+"),
        site.operations.join(", ")
    )
}

/// The last line: ready or not, and why not.
pub fn verdict(report: &RuntimeReport) -> String {
    if report.ready() {
        return "ready: every bucket captures, replays bit-exactly and never synchronises".into();
    }
    let reasons: Vec<String> = report
        .buckets
        .iter()
        .filter(|b| !b.ready())
        .map(|b| {
            let mut failing: Vec<String> = b
                .phases
                .iter()
                .filter(|p| {
                    p.status.is_failure()
                        || (crate::report::BLOCKING_PHASES.contains(&p.phase.as_str())
                            && p.status != PhaseStatus::Pass)
                })
                .map(|p| format!("{} {}{}", p.phase, p.status.as_str(), on_ranks(p)))
                .collect();
            if let Some(stop) = &b.group_stop {
                failing.push(format!("{} ({})", stop.cause, rank_list(&stop.ranks)));
            }
            format!("bucket {}: {}", b.bucket, failing.join(", "))
        })
        .collect();
    if reasons.is_empty() {
        "NOT ready: no bucket was probed".into()
    } else {
        format!("NOT ready: {}", reasons.join("; "))
    }
}

/// ` (rank 1)` for a merged phase whose ranks differ: the ranks that did not pass.
fn on_ranks(phase: &PhaseResult) -> String {
    let ranks: Vec<u32> = phase
        .by_rank
        .iter()
        .filter(|r| r.status == phase.status)
        .map(|r| r.rank)
        .collect();
    if ranks.is_empty() {
        String::new()
    } else {
        format!(" ({})", rank_list(&ranks))
    }
}

/// `path` relative to `base` when it lies under it.
pub fn display_path(path: &str, base: &Path) -> String {
    let p = Path::new(path);
    let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
    p.strip_prefix(&base)
        .map(|rel| rel.display().to_string())
        .unwrap_or_else(|_| path.to_string())
}

/// A message with the paths under `base` it names shown relative, as frames are (a hung
/// rank's "last collective: all_reduce #1 in warmup at /abs/step.py:24").
fn relative_in_text(text: &str, base: &Path) -> String {
    let base = std::fs::canonicalize(base).unwrap_or_else(|_| base.to_path_buf());
    let prefix = format!("{}/", base.display());
    if prefix.len() <= 1 {
        return text.to_string();
    }
    text.replace(&prefix, "")
}

/// Python's fatal-error dump when there is one (it names the crashing line first), else the
/// last lines.
fn stderr_excerpt(tail: &str) -> Vec<&str> {
    if let Some(start) = tail.rfind("Fatal Python error") {
        return tail[start..].lines().take(12).collect();
    }
    let mut last: Vec<&str> = tail.lines().rev().take(6).collect();
    last.reverse();
    last
}

#[cfg(test)]
mod message_path_tests {
    use super::relative_in_text;
    use std::path::Path;

    #[test]
    fn paths_under_the_base_are_shown_relative_in_messages() {
        let base = Path::new("/nonexistent-graphready-base");
        assert_eq!(
            relative_in_text(
                "last collective: all_reduce #1 in warmup at /nonexistent-graphready-base/ex/step.py:24",
                base
            ),
            "last collective: all_reduce #1 in warmup at ex/step.py:24"
        );
        assert_eq!(
            relative_in_text("at /elsewhere/step.py:3", base),
            "at /elsewhere/step.py:3"
        );
    }
}
