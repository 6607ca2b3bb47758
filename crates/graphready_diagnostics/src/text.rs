//! Human output: code frames like rustc and ruff, one per finding, then a count. Shared by the
//! CLI and the linter's rule tests, which snapshot it.

use crate::{Diagnostic, FileDiagnostics, Reach, Severity};
use annotate_snippets::{Level, Renderer, Snippet};
use rayon::prelude::*;
use std::fmt::Write as _;

/// Renders every finding of `files` as a code frame (in path and position order), then the count.
pub fn render(files: &[FileDiagnostics], color: bool) -> String {
    let mut out = render_findings(files, color);
    let total: usize = files.iter().map(|file| file.diagnostics.len()).sum();
    out.push_str(&count_line(total));
    out
}

/// The closing line: `All checks passed.` or the number of findings.
pub fn count_line(total: usize) -> String {
    match total {
        0 => "All checks passed.\n".to_string(),
        1 => "Found 1 finding.\n".to_string(),
        n => format!("Found {n} findings.\n"),
    }
}

/// Renders every finding of `files` as a code frame, in path and position order, and nothing
/// else.
pub fn render_findings(files: &[FileDiagnostics], color: bool) -> String {
    let mut by_path: Vec<&FileDiagnostics> = files.iter().collect();
    by_path.sort_by(|a, b| a.path.cmp(&b.path));
    // Files render independently; code frames are the costly part of a large report.
    let rendered: Vec<String> = by_path
        .par_iter()
        .map(|file| {
            let renderer = if color {
                Renderer::styled()
            } else {
                Renderer::plain()
            };
            let mut out = String::new();
            let mut diagnostics: Vec<&Diagnostic> = file.diagnostics.iter().collect();
            diagnostics.sort_by_key(|d| (d.span.start, d.code.clone()));
            for diagnostic in diagnostics {
                render_one(&mut out, &renderer, file, diagnostic);
            }
            out
        })
        .collect();
    rendered.concat()
}

fn level(severity: Severity) -> Level {
    match severity {
        Severity::Error => Level::Error,
        Severity::Warning => Level::Warning,
        Severity::Info => Level::Info,
    }
}

fn render_one(
    out: &mut String,
    renderer: &Renderer,
    file: &FileDiagnostics,
    diagnostic: &Diagnostic,
) {
    let level = level(diagnostic.severity);
    let chain = diagnostic.chain_text().map(|chain| match diagnostic.reach {
        Reach::Stall => format!("runs every step, outside the graph, via {chain}"),
        _ => format!("captured via {chain}"),
    });
    let fix = diagnostic.fix.as_deref();
    let mut footers = Vec::new();
    if let Some(fix) = fix {
        footers.push(Level::Help.title(fix));
    }
    if let Some(chain) = &chain {
        footers.push(Level::Note.title(chain));
    }
    let docs = diagnostic.url.as_ref().map(|url| format!("see {url}"));
    if let Some(docs) = &docs {
        footers.push(Level::Note.title(docs));
    }
    let Some(source) = file.source.as_deref() else {
        let location = format!(
            "{}:{}:{}",
            diagnostic.path, diagnostic.span.start.line, diagnostic.span.start.column
        );
        let message = level
            .title(&diagnostic.message)
            .id(&diagnostic.code)
            .footer(Level::Note.title(&location))
            .footers(footers);
        let _ = writeln!(out, "{}\n", renderer.render(message));
        return;
    };
    // Only the lines of the finding travel into the snippet: rendering stays cheap in big files.
    let (start, end) = (diagnostic.offsets.0 as usize, diagnostic.offsets.1 as usize);
    let line_start = source[..start.min(source.len())]
        .rfind('\n')
        .map_or(0, |index| index + 1);
    let line_end = source[end.min(source.len())..]
        .find('\n')
        .map_or(source.len(), |index| end + index);
    let excerpt = &source[line_start..line_end];
    let span = (start - line_start)..(end.max(start + 1).min(line_end) - line_start);
    let label = diagnostic.name.as_str();
    let snippet = Snippet::source(excerpt)
        .line_start(diagnostic.span.start.line as usize)
        .origin(&diagnostic.path)
        .fold(false)
        .annotation(level.span(span).label(label));
    let message = level
        .title(&diagnostic.message)
        .id(&diagnostic.code)
        .snippet(snippet)
        .footers(footers);
    let _ = writeln!(out, "{}\n", renderer.render(message));
}
