//! Output: one module per format. Everything renders to a `String`; only [`write_stdout`] writes.

pub mod github;
pub mod sarif;
pub mod scope;

use crate::args::OutputFormat;
use graphready_diagnostics::Diagnostic;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;

/// Writes to stdout; a closed pipe (`graphready check | head`) is reported as such so the
/// binary can exit 0.
pub fn write_stdout(text: &str) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    lock.write_all(text.as_bytes())?;
    lock.flush()?;
    Ok(())
}

pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// `--statistics`: findings per rule, most frequent first.
pub fn statistics(diagnostics: &[Diagnostic], format: OutputFormat) -> String {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for diagnostic in diagnostics {
        *counts
            .entry((diagnostic.code.as_str(), diagnostic.name.as_str()))
            .or_insert(0) += 1;
    }
    let mut rows: Vec<_> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    if format == OutputFormat::Json {
        let rows: Vec<_> = rows
            .iter()
            .map(|((code, name), count)| serde_json::json!({"code": code, "name": name, "count": count}))
            .collect();
        let mut out = serde_json::to_string_pretty(&rows).unwrap_or_default();
        out.push('\n');
        return out;
    }
    let mut out = String::new();
    for ((code, name), count) in &rows {
        let _ = writeln!(out, "{count:>6}  {code}  {name}");
    }
    let _ = writeln!(out, "{:>6}  total", diagnostics.len());
    out
}
