//! The data model shared by graphready's static checker and its GPU probe.
//!
//! A [`Diagnostic`] is one finding at one place in one file. It is plain data: the printers render
//! it, the JSON report serialises it as it is, and the probe matches runtime events against it by
//! `path` and `span.start.line`.

pub mod text;

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// Where each code's documentation page lives: `<RULE_DOCS_URL><CODE>.md`, the `docs/rules`
/// folder of the repository (`repository` in the workspace's `Cargo.toml`).
pub const RULE_DOCS_URL: &str = "https://github.com/graphready/graphready/blob/main/docs/rules/";

/// The documentation page of a code (`GR101`, and the tool's own `GR000` and `GR001`).
pub fn rule_url(code: &str) -> String {
    format!("{RULE_DOCS_URL}{code}.md")
}

/// How much a finding matters. Serialised in lowercase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Breaks capture, or makes replay silently wrong.
    Error,
    /// Costs performance or stability every step; capture may still work.
    Warning,
    /// Worth knowing; never fails a build on its own.
    Info,
}

impl Severity {
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a finding runs, as far as graphready knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    /// Inside a captured region: the hazard breaks capture or replay.
    Capture,
    /// Runs every step outside the graph: the hazard stalls the pipeline.
    Stall,
    /// Not known to be reached from any entry point (or no hot-path analysis was done).
    #[default]
    Unknown,
}

impl Reach {
    pub const fn as_str(self) -> &'static str {
        match self {
            Reach::Capture => "capture",
            Reach::Stall => "stall",
            Reach::Unknown => "unknown",
        }
    }
}

/// A one-based line and a one-based column counted in Unicode scalar values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Location {
    pub line: u32,
    pub column: u32,
}

/// A source range: `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    pub start: Location,
    pub end: Location,
}

/// One step of a call chain from an entry point to the function holding a finding.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChainLink {
    /// Qualified name inside its module, e.g. `Model.forward`.
    pub function: String,
    pub path: String,
    /// The line of the function's `def`.
    pub line: u32,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Rule code, `GR` and three digits.
    pub code: String,
    /// Rule name, kebab-case, named for the bad pattern.
    pub name: String,
    pub severity: Severity,
    #[serde(default)]
    pub reach: Reach,
    pub path: String,
    pub span: Span,
    /// The enclosing function, qualified inside its module (`Class.method`); `None` at module level.
    #[serde(default)]
    pub function: Option<String>,
    /// Shortest call chain from an entry point; empty when unknown.
    #[serde(default)]
    pub chain: Vec<ChainLink>,
    pub message: String,
    /// Imperative hint naming the graph-safe alternative.
    #[serde(default)]
    pub fix: Option<String>,
    /// The rule's documentation page ([`rule_url`]).
    #[serde(default)]
    pub url: Option<String>,
    /// Byte offsets of the span in the source, for printers that render code frames.
    #[serde(skip)]
    pub offsets: (u32, u32),
    /// Reported only when the hot-path analysis reaches the function from an entry point.
    #[serde(skip)]
    pub captured_only: bool,
}

impl Diagnostic {
    pub fn line(&self) -> u32 {
        self.span.start.line
    }

    /// The call chain as `A → B → C`, when there is one.
    pub fn chain_text(&self) -> Option<String> {
        if self.chain.is_empty() {
            return None;
        }
        Some(
            self.chain
                .iter()
                .map(|link| link.function.as_str())
                .collect::<Vec<_>>()
                .join(" → "),
        )
    }
}

/// A checked file with findings, and its source for code frames.
#[derive(Debug, Clone)]
pub struct FileDiagnostics {
    pub path: String,
    pub source: Option<Arc<str>>,
    pub diagnostics: Vec<Diagnostic>,
}

impl FileDiagnostics {
    pub fn new(path: String, source: Option<Arc<str>>, diagnostics: Vec<Diagnostic>) -> Self {
        FileDiagnostics {
            path,
            source,
            diagnostics,
        }
    }
}

/// Sort key used everywhere output must be stable: path, then position, then code.
pub fn sort_diagnostics(diagnostics: &mut [Diagnostic]) {
    diagnostics.sort_by(|a, b| {
        (a.path.as_str(), a.span.start, a.code.as_str()).cmp(&(
            b.path.as_str(),
            b.span.start,
            b.code.as_str(),
        ))
    });
}
