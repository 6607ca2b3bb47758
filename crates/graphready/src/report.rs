//! The JSON report: the data model that every output format renders. Documented in
//! `docs/report.md`; bump [`SCHEMA_VERSION`] on any incompatible change.

use graphready_diagnostics::{Diagnostic, Severity};
use graphready_linter::project::Suppressed;
use serde::Serialize;
use std::collections::BTreeMap;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

impl Tool {
    pub const fn current() -> Self {
        Tool {
            name: "graphready",
            version: env!("CARGO_PKG_VERSION"),
        }
    }
}

/// Counts that let a pipeline decide without reading every finding.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// No static finding of severity `error` and, when the probe ran, every bucket captured and
    /// replayed bit-exactly without syncs.
    pub ready: bool,
    pub findings: usize,
    pub by_severity: BTreeMap<&'static str, usize>,
    pub by_rule: BTreeMap<String, usize>,
    /// Python files analysed (files that never mention `torch` are skipped, not counted).
    pub files_checked: usize,
}

/// A runtime section (the probe's results) that can say whether the run was clean.
pub trait RuntimeSection: Serialize {
    fn ready(&self) -> bool;
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub tool: Tool,
    pub findings: Vec<Diagnostic>,
    /// Findings silenced by suppression comments (only from `graphready check`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<Vec<Suppressed>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub correlation: Option<serde_json::Value>,
    pub summary: Summary,
}

impl Report {
    /// A report of static findings only, with the findings suppression comments silenced.
    pub fn check_only(
        findings: Vec<Diagnostic>,
        suppressed: Vec<Suppressed>,
        files_checked: usize,
    ) -> Self {
        let mut report = Self::build(findings, files_checked, None, true, None);
        report.suppressed = Some(suppressed);
        report
    }

    /// A report merging static findings with a probe run.
    pub fn new<R: RuntimeSection, C: Serialize>(
        findings: Vec<Diagnostic>,
        runtime: Option<R>,
        correlation: Option<C>,
    ) -> Self {
        let runtime_ready = runtime.as_ref().is_none_or(RuntimeSection::ready);
        let runtime = runtime.and_then(|r| serde_json::to_value(r).ok());
        let correlation = correlation.and_then(|c| serde_json::to_value(c).ok());
        Self::build(findings, 0, runtime, runtime_ready, correlation)
    }

    fn build(
        findings: Vec<Diagnostic>,
        files_checked: usize,
        runtime: Option<serde_json::Value>,
        runtime_ready: bool,
        correlation: Option<serde_json::Value>,
    ) -> Self {
        let mut by_severity = BTreeMap::new();
        let mut by_rule = BTreeMap::new();
        for finding in &findings {
            *by_severity.entry(finding.severity.as_str()).or_insert(0) += 1;
            *by_rule.entry(finding.code.clone()).or_insert(0) += 1;
        }
        let ready = runtime_ready && !findings.iter().any(|f| f.severity == Severity::Error);
        Report {
            schema_version: SCHEMA_VERSION,
            tool: Tool::current(),
            summary: Summary {
                ready,
                findings: findings.len(),
                by_severity,
                by_rule,
                files_checked,
            },
            findings,
            suppressed: None,
            runtime,
            correlation,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|err| {
            format!("{{\"error\": \"could not serialise the report: {err}\"}}")
        })
    }
}
