//! `--show-scope`: what graphready thinks is captured, and why.

use graphready_linter::project::scope::ScopeEntry;
use graphready_linter::project::ScopeReport;
use std::fmt::Write as _;

fn entry_line(out: &mut String, entry: &ScopeEntry) {
    let _ = match &entry.via {
        Some(via) => writeln!(
            out,
            "  {}:{}  {}  ({}: {via})",
            entry.path, entry.line, entry.function, entry.reason
        ),
        None => writeln!(
            out,
            "  {}:{}  {}  ({})",
            entry.path, entry.line, entry.function, entry.reason
        ),
    };
}

pub fn render(scope: &ScopeReport) -> String {
    let mut out = String::new();
    let explicit = scope.capture_entries.iter().filter(|e| e.explicit).count();
    let _ = writeln!(
        out,
        "Captured entry points: {} ({} explicit, {} nn.Module forwards)",
        scope.capture_entries.len(),
        explicit,
        scope.capture_entries.len() - explicit
    );
    for entry in &scope.capture_entries {
        entry_line(&mut out, entry);
    }
    let _ = writeln!(
        out,
        "Step entry points (outside the graph, every step): {}",
        scope.step_entries.len()
    );
    for entry in &scope.step_entries {
        entry_line(&mut out, entry);
    }
    let _ = writeln!(out, "Eager breaks: {}", scope.eager.len());
    for link in &scope.eager {
        let _ = writeln!(out, "  {}:{}  {}", link.path, link.line, link.function);
    }
    let _ = writeln!(
        out,
        "Classes only devices without CUDA graphs build (not followed): {}",
        scope.platform_only.len()
    );
    for class in &scope.platform_only {
        let _ = writeln!(out, "  {}  {}", class.path, class.class);
    }
    for name in &scope.unmatched {
        let _ = writeln!(out, "warning: configured name `{name}` matches no function");
    }
    let _ = writeln!(
        out,
        "Class-hierarchy dispatch: {} call sites run overrides (largest fan-out {}, {} cut at {})",
        scope.dispatch.call_sites,
        scope.dispatch.largest,
        scope.dispatch.capped,
        scope.dispatch.bound
    );
    let _ = writeln!(
        out,
        "Reachable functions: {} captured, {} per-step only, of {} functions in {} files",
        scope.captured, scope.stalled, scope.functions, scope.files
    );
    out
}

/// The scope as JSON: the same facts, plus every reachable function with its reach.
pub fn render_json(scope: &ScopeReport) -> String {
    let mut out = serde_json::to_string_pretty(scope).unwrap_or_default();
    out.push('\n');
    out
}
