//! GitHub Actions workflow commands: one `::error`/`::warning`/`::notice` line per finding.

use graphready_diagnostics::{Diagnostic, Severity};
use std::fmt::Write as _;

fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

pub fn render(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for diagnostic in diagnostics {
        let command = match diagnostic.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let mut message = format!("{}: {}", diagnostic.code, diagnostic.message);
        if let Some(fix) = &diagnostic.fix {
            let _ = write!(message, "\nhelp: {fix}");
        }
        if let Some(chain) = diagnostic.chain_text() {
            let _ = write!(message, "\n{} via {chain}", diagnostic.reach.as_str());
        }
        let _ = writeln!(
            out,
            "::{command} title={},file={},line={},col={},endLine={},endColumn={}::{}",
            escape_property(&format!("graphready ({})", diagnostic.code)),
            escape_property(&diagnostic.path),
            diagnostic.span.start.line,
            diagnostic.span.start.column,
            diagnostic.span.end.line,
            diagnostic.span.end.column,
            escape_data(&message),
        );
    }
    out
}
