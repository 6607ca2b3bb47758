//! Merge runtime events with static findings by file and line.
//!
//! A runtime event at the line of a static finding *confirms* it. A runtime event with no static
//! finding there is a *static blind spot* — listed first, because it is what the checker missed.
//! A static finding with no runtime event either *ran without an event* (its line executed during
//! the sync scan; the hazard did not show, e.g. the value was on the CPU) or was *not exercised*.

use crate::report::{RuntimeEvent, RuntimeReport};
use graphready_diagnostics::{Diagnostic, Severity};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What happened at one user line at runtime, over all buckets and phases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeSite {
    /// `None` for events with no user frame on the stack.
    pub path: Option<String>,
    pub line: Option<u32>,
    pub function: Option<String>,
    /// Event kinds seen here, e.g. `sync`, `runtime_sync`, `capture_break`.
    pub kinds: Vec<String>,
    /// Operators or APIs seen here, e.g. `aten::_local_scalar_dense`.
    pub operations: Vec<String>,
    pub phases: Vec<String>,
    pub buckets: Vec<u32>,
    pub count: u64,
    pub message: String,
}

/// A static finding, referenced by place and rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaticRef {
    pub code: String,
    pub name: String,
    pub severity: Severity,
    pub path: String,
    pub line: u32,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Confirmed {
    pub runtime: RuntimeSite,
    pub findings: Vec<StaticRef>,
}

/// Field order is the reading order: blind spots first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Correlation {
    pub static_blind_spots: Vec<RuntimeSite>,
    pub confirmed: Vec<Confirmed>,
    pub ran_without_event: Vec<StaticRef>,
    pub not_exercised: Vec<StaticRef>,
}

impl Correlation {
    pub fn is_empty(&self) -> bool {
        self.static_blind_spots.is_empty()
            && self.confirmed.is_empty()
            && self.ran_without_event.is_empty()
            && self.not_exercised.is_empty()
    }
}

/// Canonicalise a path for matching; relative paths are taken from `base`. A path that does
/// not exist is compared as given (made absolute).
pub fn canonical(path: &str, base: &Path) -> PathBuf {
    let raw = Path::new(path);
    let absolute = if raw.is_absolute() {
        raw.to_path_buf()
    } else {
        base.join(raw)
    };
    std::fs::canonicalize(&absolute).unwrap_or(absolute)
}

type SiteKey = (Option<PathBuf>, Option<u32>, Option<String>);

/// Correlate with relative paths resolved against the current directory.
pub fn correlate(runtime: &RuntimeReport, findings: &[Diagnostic]) -> Correlation {
    let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    correlate_from(runtime, findings, &base)
}

/// Correlate with relative paths (of findings and of runtime events) resolved against `base`.
pub fn correlate_from(
    runtime: &RuntimeReport,
    findings: &[Diagnostic],
    base: &Path,
) -> Correlation {
    let sites = runtime_sites(runtime, base);

    let mut by_line: HashMap<(PathBuf, u32), Vec<&Diagnostic>> = HashMap::new();
    for finding in findings {
        by_line
            .entry((canonical(&finding.path, base), finding.line()))
            .or_default()
            .push(finding);
    }

    let mut correlation = Correlation::default();
    let mut matched: BTreeSet<(PathBuf, u32)> = BTreeSet::new();
    for (key, site) in sites {
        let hits = match (&key.0, key.1) {
            (Some(path), Some(line)) => by_line.get(&(path.clone(), line)),
            _ => None,
        };
        match hits {
            Some(hits) => {
                if let (Some(path), Some(line)) = (key.0, key.1) {
                    matched.insert((path, line));
                }
                correlation.confirmed.push(Confirmed {
                    runtime: site,
                    findings: hits.iter().map(|d| static_ref(d)).collect(),
                });
            }
            None => correlation.static_blind_spots.push(site),
        }
    }

    let coverage: BTreeMap<PathBuf, BTreeSet<u32>> = runtime
        .coverage()
        .into_iter()
        .map(|(path, lines)| (canonical(path, base), lines.into_iter().collect()))
        .collect();
    for finding in findings {
        let key = (canonical(&finding.path, base), finding.line());
        if matched.contains(&key) {
            continue;
        }
        let ran = coverage.get(&key.0).is_some_and(|l| l.contains(&key.1));
        let target = if ran {
            &mut correlation.ran_without_event
        } else {
            &mut correlation.not_exercised
        };
        target.push(static_ref(finding));
    }
    correlation
}

fn static_ref(d: &Diagnostic) -> StaticRef {
    StaticRef {
        code: d.code.clone(),
        name: d.name.clone(),
        severity: d.severity,
        path: d.path.clone(),
        line: d.line(),
        message: d.message.clone(),
    }
}

/// Runtime hazard events grouped by user line (events without a line, by operation), in the
/// order first seen, with the most serious kinds first.
fn runtime_sites(runtime: &RuntimeReport, base: &Path) -> Vec<(SiteKey, RuntimeSite)> {
    let mut order: Vec<SiteKey> = Vec::new();
    let mut sites: HashMap<SiteKey, RuntimeSite> = HashMap::new();
    for bucket in &runtime.buckets {
        for (phase, event) in bucket.events() {
            if !event.is_hazard() {
                continue;
            }
            let key = site_key(event, base);
            let site = sites.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                RuntimeSite {
                    path: event.location.as_ref().map(|l| l.path.clone()),
                    line: event.location.as_ref().map(|l| l.line),
                    function: event.location.as_ref().map(|l| l.function.clone()),
                    kinds: Vec::new(),
                    operations: Vec::new(),
                    phases: Vec::new(),
                    buckets: Vec::new(),
                    count: 0,
                    message: event.message.clone(),
                }
            });
            // The message of the most serious kind seen here describes the site.
            if kind_rank(&event.kind)
                < site
                    .kinds
                    .iter()
                    .map(|k| kind_rank(k))
                    .min()
                    .unwrap_or(u8::MAX)
            {
                site.message = event.message.clone();
            }
            push_unique(&mut site.kinds, &event.kind);
            push_unique(&mut site.operations, &event.what);
            push_unique(&mut site.phases, phase);
            if !site.buckets.contains(&bucket.bucket) {
                site.buckets.push(bucket.bucket);
            }
            site.count += event.count;
        }
    }
    let mut out: Vec<(SiteKey, RuntimeSite)> = order
        .into_iter()
        .filter_map(|key| sites.remove(&key).map(|site| (key, site)))
        .collect();
    out.sort_by_key(|(_, site)| severity_rank(site));
    out
}

fn site_key(event: &RuntimeEvent, base: &Path) -> SiteKey {
    match &event.location {
        Some(loc) => (Some(canonical(&loc.path, base)), Some(loc.line), None),
        None => (None, None, Some(event.what.clone())),
    }
}

fn push_unique(list: &mut Vec<String>, value: &str) {
    if !list.iter().any(|v| v == value) {
        list.push(value.to_string());
    }
}

/// Capture breakers and syncs before copies and allocations (stable within a rank).
fn severity_rank(site: &RuntimeSite) -> u8 {
    site.kinds
        .iter()
        .map(|k| kind_rank(k))
        .min()
        .unwrap_or(u8::MAX)
}

fn kind_rank(kind: &str) -> u8 {
    const ORDER: &[&str] = &[
        "capture_break",
        "sync",
        "runtime_sync",
        "pageable_copy",
        "uninitialized",
        "runtime_alloc",
        "allocation",
    ];
    ORDER
        .iter()
        .position(|o| *o == kind)
        .map_or(u8::MAX, |p| p as u8)
}
