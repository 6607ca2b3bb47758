//! A readable text summary of a probe run (and its correlation with static findings).

use crate::correlate::{Correlation, RuntimeSite};
use crate::report::{BucketReport, Outcome, PhaseResult, PhaseStatus, RuntimeReport};
use std::fmt::Write as _;
use std::path::Path;

/// Render the runtime report; paths under `base` are shown relative to it.
pub fn render(report: &RuntimeReport, correlation: Option<&Correlation>, base: &Path) -> String {
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
    out.push('\n');
    for bucket in &report.buckets {
        render_bucket(&mut out, bucket, base);
    }
    render_speedups(&mut out, report);
    if let Some(correlation) = correlation {
        render_correlation(&mut out, correlation, base);
    }
    let _ = writeln!(out, "{}", verdict(report));
    out
}

fn render_bucket(out: &mut String, bucket: &BucketReport, base: &Path) {
    let _ = writeln!(out, "bucket {}:", bucket.bucket);
    for phase in &bucket.phases {
        render_phase(out, phase, base);
    }
    match &bucket.outcome {
        Outcome::Completed => {}
        Outcome::Crashed { phase, .. } | Outcome::TimedOut { phase, .. } => {
            if let Some(tail) = bucket.stderr_tail.as_deref() {
                let _ = writeln!(
                    out,
                    "  harness stderr (during {}):",
                    phase.as_deref().unwrap_or("start-up")
                );
                for line in stderr_excerpt(tail) {
                    let _ = writeln!(out, "    | {line}");
                }
            }
        }
    }
}

fn render_phase(out: &mut String, phase: &PhaseResult, base: &Path) {
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
    if let Some(message) = &phase.message {
        let _ = write!(out, " {message}");
    }
    out.push('\n');
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
            Some(l) => format!(
                "{}:{} in {}",
                display_path(&l.path, base),
                l.line,
                l.function
            ),
            None => "(no user frame)".to_string(),
        };
        let _ = writeln!(
            out,
            "      {}: {} at {where_}{count}: {}",
            event.kind, event.what, event.message
        );
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

fn render_speedups(out: &mut String, report: &RuntimeReport) {
    let rows: Vec<String> = report
        .buckets
        .iter()
        .filter_map(|b| {
            let t = b.timing()?;
            Some(match (t.replay_median_us, t.speedup) {
                (Some(replay), Some(speedup)) => format!(
                    "  bucket {:>4}: eager {:>9.1} us  replay {:>9.1} us  speedup {:>6.2}x",
                    b.bucket, t.eager_median_us, replay, speedup
                ),
                _ => format!(
                    "  bucket {:>4}: eager {:>9.1} us  (no graph)",
                    b.bucket, t.eager_median_us
                ),
            })
        })
        .collect();
    if !rows.is_empty() {
        let _ = writeln!(out, "latency (median per step):");
        for row in rows {
            let _ = writeln!(out, "{row}");
        }
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
        let codes: Vec<&str> = confirmed.findings.iter().map(|f| f.code.as_str()).collect();
        let _ = writeln!(
            out,
            "  confirmed          {} [{}]",
            site_line(&confirmed.runtime, base),
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
    let place = match (&site.path, site.line) {
        (Some(path), Some(line)) => format!("{}:{line}", display_path(path, base)),
        _ => "(no user frame)".to_string(),
    };
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
            let failing: Vec<String> = b
                .phases
                .iter()
                .filter(|p| {
                    p.status.is_failure()
                        || (crate::report::BLOCKING_PHASES.contains(&p.phase.as_str())
                            && p.status != PhaseStatus::Pass)
                })
                .map(|p| format!("{} {}", p.phase, p.status.as_str()))
                .collect();
            format!("bucket {}: {}", b.bucket, failing.join(", "))
        })
        .collect();
    if reasons.is_empty() {
        "NOT ready: no bucket was probed".into()
    } else {
        format!("NOT ready: {}", reasons.join("; "))
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
