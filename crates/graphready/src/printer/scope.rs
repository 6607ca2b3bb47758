//! `--show-scope`: what graphready thinks is captured, and why.

use graphready_linter::hot_path::{Entry, HotPath};
use graphready_linter::summary::ModuleSummary;
use std::fmt::Write as _;

fn entry_line(out: &mut String, hot: &HotPath, entry: &Entry) {
    let link = hot.index.link(entry.node);
    let _ = writeln!(
        out,
        "  {}:{}  {}  ({})",
        link.path,
        link.line,
        link.function,
        entry.reason.describe()
    );
}

pub fn render(hot: &HotPath, modules: &[ModuleSummary]) -> String {
    let mut out = String::new();
    let total: usize = modules.iter().map(|m| m.functions.len()).sum();
    let explicit = hot
        .capture_entries
        .iter()
        .filter(|e| e.reason.is_explicit())
        .count();
    let _ = writeln!(
        out,
        "Captured entry points: {} ({} explicit, {} nn.Module forwards)",
        hot.capture_entries.len(),
        explicit,
        hot.capture_entries.len() - explicit
    );
    for entry in &hot.capture_entries {
        entry_line(&mut out, hot, entry);
    }
    let _ = writeln!(
        out,
        "Step entry points (outside the graph, every step): {}",
        hot.step_entries.len()
    );
    for entry in &hot.step_entries {
        entry_line(&mut out, hot, entry);
    }
    let _ = writeln!(out, "Eager breaks: {}", hot.eager.len());
    for node in &hot.eager {
        let link = hot.index.link(*node);
        let _ = writeln!(out, "  {}:{}  {}", link.path, link.line, link.function);
    }
    for name in &hot.unmatched {
        let _ = writeln!(out, "warning: configured name `{name}` matches no function");
    }
    let _ = writeln!(
        out,
        "Reachable functions: {} captured, {} per-step only, of {} functions in {} files",
        hot.captured_count(),
        hot.stalled_count(),
        total,
        modules.len()
    );
    out
}
