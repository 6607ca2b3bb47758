//! Merge runtime events with static findings by file and line.
//!
//! Each event is correlated at one frame: walking from the innermost frame (the line that
//! issued the operation, inside a library or not) out to the user's line, the first frame that
//! holds a static finding. A `.nonzero()` inside transformers' MoE loop thus confirms the finding
//! at that line of transformers, not the user's call. Events are grouped into sites by the
//! user's line and that frame (their innermost frame when nothing matched). A site with no
//! finding is a *static blind spot* — listed first, because it is what the checker missed. A
//! static finding with no runtime event either *ran without an event* (its line executed during
//! the sync scan; the hazard did not show, e.g. the value was on the CPU) or was *not exercised*.

use crate::report::{Frame, RuntimeEvent, RuntimeReport};
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
    /// The frame that issued the operation, when it is not the user's line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub innermost: Option<Frame>,
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

/// A site: the user's line (or, without one, the operation) and the frame the site is about —
/// the frame whose static finding the events confirm, else their innermost frame.
type SiteKey = (
    Option<(PathBuf, u32)>,
    Option<(PathBuf, u32)>,
    Option<String>,
);
type Place = (PathBuf, u32);

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
    let mut by_line: HashMap<Place, Vec<&Diagnostic>> = HashMap::new();
    for finding in findings {
        by_line
            .entry((canonical(&finding.path, base), finding.line()))
            .or_default()
            .push(finding);
    }

    let mut correlation = Correlation::default();
    let mut matched: BTreeSet<Place> = BTreeSet::new();
    for (_, site, confirmed_at) in runtime_sites(runtime, base, &by_line) {
        match confirmed_at {
            Some(place) => {
                let hits = &by_line[&place];
                matched.insert(place);
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

/// Where one event is correlated: the innermost frame from the operation out to the user's line
/// that holds a static finding (`confirmed`), else its innermost frame.
fn focus<'a>(
    event: &'a RuntimeEvent,
    base: &Path,
    by_line: &HashMap<Place, Vec<&Diagnostic>>,
) -> (Option<&'a Frame>, Option<Place>) {
    for frame in event.frames_to_location() {
        let place = (canonical(&frame.path, base), frame.line);
        if by_line.contains_key(&place) {
            return (Some(frame), Some(place));
        }
    }
    (event.innermost(), None)
}

/// Runtime hazard events grouped into sites, in the order first seen, with the most serious
/// kinds first; each with the place of the findings it confirms, if any.
fn runtime_sites(
    runtime: &RuntimeReport,
    base: &Path,
    by_line: &HashMap<Place, Vec<&Diagnostic>>,
) -> Vec<(SiteKey, RuntimeSite, Option<Place>)> {
    let mut order: Vec<SiteKey> = Vec::new();
    let mut sites: HashMap<SiteKey, (RuntimeSite, Option<Place>)> = HashMap::new();
    for bucket in &runtime.buckets {
        for (phase, event) in bucket.events() {
            if !event.is_hazard() {
                continue;
            }
            let (frame, confirmed_at) = focus(event, base, by_line);
            let location = event
                .location
                .as_ref()
                .map(|l| (canonical(&l.path, base), l.line));
            let focus_place = frame.map(|f| (canonical(&f.path, base), f.line));
            let key: SiteKey = match &location {
                Some(_) => (location.clone(), focus_place.clone(), None),
                None => (None, focus_place.clone(), Some(event.what.clone())),
            };
            let (site, _) = sites.entry(key.clone()).or_insert_with(|| {
                order.push(key.clone());
                let shown = frame
                    .filter(|f| event.location.as_ref().is_none_or(|l| !l.same_place(f)))
                    .cloned();
                (
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
                        innermost: shown,
                    },
                    confirmed_at,
                )
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
    let mut out: Vec<(SiteKey, RuntimeSite, Option<Place>)> = order
        .into_iter()
        .filter_map(|key| sites.remove(&key).map(|(site, place)| (key, site, place)))
        .collect();
    out.sort_by_key(|(_, site, _)| severity_rank(site));
    out
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
