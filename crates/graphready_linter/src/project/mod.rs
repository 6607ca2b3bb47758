//! A whole analysis run over a project: the files a caller discovers, checked in three phases,
//! scoped to the hot path.
//!
//! 1. Every file on its own, in parallel, as the caller finds it: parse, check with the file's
//!    rules (per-file ignores already folded in), summarise.
//! 2. The hot path over every summary: entry points, the call graph, reach and chains.
//! 3. Files where a reached function calls another module's tensor-returning function are
//!    checked again with those return types known (under [`Scope::Hot`], only the functions
//!    whose findings can be reported).
//!
//! Then each finding gets its reach and chain, and the findings the scope does not report are
//! dropped. The caller walks folders and resolves configuration; this module reads, analyses
//! and returns data, never prints.

mod external;
mod file;
mod modules;
mod phase1;
pub mod scope;

use crate::hot_path::{HotPath, HotPathSettings};
use crate::noqa::{self, Directive};
use crate::registry::RuleSet;
use crate::semantic::ProjectFacts;
use crate::settings::Settings;
use crate::summary::ModuleSummary;
use crate::{
    FileAnalysis, ModuleInfo, SuppressedFinding, UNREADABLE_CODE, UNUSED_SUPPRESSION_CODE,
};
use external::{external_returns, ExternalFacts};
use file::{check_file, Preread};
use graphready_diagnostics::{Diagnostic, FileDiagnostics, Reach};
use phase1::phase1;
use rayon::prelude::*;
use ruff_source_file::LineIndex;
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use scope::ScopeReport;

/// Which findings a run reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Only findings reached from an entry point (captured, or per-step outside the graph).
    #[default]
    Hot,
    /// Every finding in every function (captured-only rules still only in captured code).
    All,
}

/// One file to check, as the caller found it.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    /// Index of the file's settings in [`Options::settings`].
    pub settings: usize,
    /// Rules disabled for this file (`per-file-ignores`): folded into its rule set before
    /// analysis.
    pub ignored: RuleSet,
}

/// What a run needs besides the files.
pub struct Options<'s> {
    /// One per configuration; each file names its own.
    pub settings: &'s [Settings],
    pub hot_path: &'s HotPathSettings,
    pub scope: Scope,
    /// Also describe the hot path ([`ProjectReport::scope`]).
    pub show_scope: bool,
    /// Measure phase times and resident memory ([`ProjectReport::timing`]).
    pub timing: bool,
    /// Report only the findings of these files (paths as discovery hands them out); the other
    /// files still take part in the call graph and the cross-module types. `None`: every file.
    pub report_only: Option<&'s FxHashSet<PathBuf>>,
    /// Source text that stands for one file's content on disk (standard input, an editor's
    /// unsaved buffer), by the path discovery hands out; the file need not exist.
    pub source_override: Option<(&'s Path, &'s [u8])>,
    /// Report suppression comments that suppress nothing (`GR001`): `# graphready: ignore`,
    /// and `# noqa: ...` naming graphready codes of enabled rules or unknown `GR` codes.
    pub unused_suppressions: bool,
}

impl<'s> Options<'s> {
    /// Options for a run reporting every file, without timing or a scope description.
    pub fn new(settings: &'s [Settings], hot_path: &'s HotPathSettings, scope: Scope) -> Self {
        Options {
            settings,
            hot_path,
            scope,
            show_scope: false,
            timing: false,
            report_only: None,
            source_override: None,
            unused_suppressions: false,
        }
    }

    fn reports(&self, path: &Path) -> bool {
        self.report_only.is_none_or(|paths| paths.contains(path))
    }

    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        match self.source_override {
            Some((overridden, bytes)) if overridden == path => Ok(bytes.to_vec()),
            _ => std::fs::read(path),
        }
    }
}

/// Phase times of a run, and resident memory, when [`Options::timing`] asked for them.
#[derive(Debug, Clone, Default)]
pub struct Timing {
    pub discovery: Duration,
    pub phase1: Duration,
    pub hot_path: Duration,
    pub phase3: Duration,
    /// Files checked again in phase 3.
    pub rechecked: usize,
    pub resident_after_phase1_kib: u64,
    pub resident_at_end_kib: u64,
}

/// A finding that a suppression comment silenced, for a reviewer to see what was silenced and
/// why. Listed when the run's scope would have reported the finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Suppressed {
    pub code: String,
    pub path: String,
    pub line: u32,
    /// The comment's reason (`# graphready: ignore[GR101] -- reason`), when it gives one.
    pub reason: Option<String>,
}

/// The outcome of a run.
pub struct ProjectReport {
    /// Files with findings, in discovery order, with their sources for code frames.
    pub files: Vec<FileDiagnostics>,
    /// Findings silenced by suppression comments, sorted by path, line and code.
    pub suppressed: Vec<Suppressed>,
    /// Python files analysed whose findings are reported (files that never mention `torch`
    /// are skipped, not counted).
    pub files_checked: usize,
    /// No entry point of the project's own was found: its public functions were taken as entry
    /// points (a library), or, without any, every function was reported.
    pub no_entries: bool,
    pub scope: Option<ScopeReport>,
    pub timing: Option<Timing>,
}

impl ProjectReport {
    /// Every finding, sorted by path, position and code.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut all: Vec<Diagnostic> = self
            .files
            .iter()
            .flat_map(|file| file.diagnostics.iter().cloned())
            .collect();
        graphready_diagnostics::sort_diagnostics(&mut all);
        all
    }
}

/// A file found by discovery, with where it sits in its package.
struct Candidate {
    file: SourceFile,
    module: ModuleInfo,
}

/// One analysed file.
struct Outcome {
    candidate: usize,
    path: String,
    analysis: FileAnalysis,
    /// With [`Options::unused_suppressions`], in reported files: the suppression comments that
    /// can be judged, and the (line, code) of every finding suppressed in any phase.
    directives: Vec<Directive>,
    used: Vec<(u32, String)>,
    /// The source's length in bytes: phase 3 starts with the largest files.
    bytes: usize,
}

/// Runs the three phases over the files `discover` hands out. Discovery and phase 1 overlap:
/// `discover` runs on the calling thread and every file it yields is checked at once by the
/// worker threads.
pub fn check(
    options: &Options,
    discover: impl FnOnce(&mut dyn FnMut(SourceFile)) + Send,
) -> ProjectReport {
    let started = Instant::now();
    let (candidates, mut outcomes, discovered, declared) = phase1(options, discover);
    let phase1_done = started.elapsed();
    let rss_phase1 = if options.timing { resident_kib() } else { 0 };

    // Phase 2: the hot path over the whole project; the cross-module return types for phase 3
    // are gathered meanwhile.
    let summaries: Vec<ModuleSummary> = outcomes
        .iter_mut()
        .map(|outcome| std::mem::take(&mut outcome.analysis.summary))
        .collect();
    let (hot, mut external) = rayon::join(
        || HotPath::analyze(&summaries, options.hot_path),
        || external_returns(&summaries),
    );
    external.host_fields = declared.host_fields;
    external.off_flags = declared.off_flags;
    external.records = declared.records;
    let no_entries = hot.library || !hot.has_entries();
    let scope = match options.scope {
        Scope::Hot if !hot.has_entries() => Scope::All,
        other => other,
    };
    let scope_report = options
        .show_scope
        .then(|| ScopeReport::new(&hot, &summaries));
    let phase2_done = started.elapsed();

    let rechecked = phase3(
        options,
        scope,
        &candidates,
        &mut outcomes,
        &summaries,
        &hot,
        &external,
    );
    let files_checked = outcomes
        .iter()
        .filter(|o| options.reports(&candidates[o.candidate].file.path))
        .count();
    let timing = options.timing.then(|| Timing {
        discovery: discovered,
        phase1: phase1_done,
        hot_path: phase2_done - phase1_done,
        phase3: started.elapsed() - phase2_done,
        rechecked,
        resident_after_phase1_kib: rss_phase1,
        resident_at_end_kib: resident_kib(),
    });
    let mut suppressed = Vec::new();
    let files = outcomes
        .into_iter()
        .filter(|outcome| options.reports(&candidates[outcome.candidate].file.path))
        .filter_map(|outcome| {
            let file = &candidates[outcome.candidate].file;
            let mut diagnostics = outcome.analysis.diagnostics;
            for diagnostic in &mut diagnostics {
                hot.annotate(diagnostic);
            }
            diagnostics.retain(|d| reported(d, scope));
            for SuppressedFinding {
                mut diagnostic,
                reason,
            } in outcome.analysis.suppressed
            {
                hot.annotate(&mut diagnostic);
                if reported(&diagnostic, scope) {
                    suppressed.push(Suppressed {
                        code: diagnostic.code,
                        path: diagnostic.path,
                        line: diagnostic.span.start.line,
                        reason,
                    });
                }
            }
            let unused = noqa::unused(
                &outcome.directives,
                &outcome.used,
                file_rules(options, file),
            );
            if diagnostics.is_empty() && unused.is_empty() {
                return None;
            }
            // The source is read again for the few files whose findings survive: holding every
            // source until now would double the peak memory.
            let source = options
                .read(&file.path)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .map(Arc::<str>::from);
            if let Some(text) = source.as_deref() {
                let index = LineIndex::from_source_text(text);
                for unused in &unused {
                    diagnostics.push(noqa::unused_diagnostic(&outcome.path, text, &index, unused));
                }
            }
            Some(FileDiagnostics::new(outcome.path, source, diagnostics))
        })
        .collect();
    suppressed.sort_by(|a, b| (&a.path, a.line, &a.code).cmp(&(&b.path, b.line, &b.code)));
    drop(hot);
    // Freeing the project's summaries, one small allocation at a time, takes longer than the
    // printing that follows: a helper thread does it meanwhile.
    std::thread::spawn(move || drop((summaries, external)));
    ProjectReport {
        files,
        suppressed,
        files_checked,
        no_entries,
        scope: scope_report,
        timing,
    }
}

pub(super) fn non_empty(
    fields: &rustc_hash::FxHashSet<String>,
) -> Option<&rustc_hash::FxHashSet<String>> {
    (!fields.is_empty()).then_some(fields)
}

/// Phase 3: files calling other modules' tensor-returning functions, again with their types;
/// under `--scope hot`, only files with reachable functions (the others report nothing).
/// Returns how many files were checked again.
fn phase3(
    options: &Options,
    scope: Scope,
    candidates: &[Candidate],
    outcomes: &mut [Outcome],
    summaries: &[ModuleSummary],
    hot: &HotPath,
    external: &ExternalFacts,
) -> usize {
    let module_classes = &hot.module_classes();
    let mut again: Vec<usize> = match scope {
        Scope::All => summaries
            .iter()
            .enumerate()
            .filter(|(_, summary)| {
                summary
                    .imported_callees
                    .iter()
                    .any(|c| external.knows(c) || module_classes.contains(c))
            })
            .map(|(i, _)| i)
            .collect(),
        // Only where a reached function itself calls one: nothing else is reported.
        Scope::Hot if external.is_empty() && module_classes.is_empty() => Vec::new(),
        Scope::Hot => {
            hot.modules_calling(|callee| external.knows(callee) || module_classes.contains(callee))
        }
    };
    // Modules whose functions receive device tensors from reached callers.
    again.extend(hot.modules_with_param_types());
    // Modules with findings whose reached functions read host-data fields of typed parameters.
    again.extend(
        hot.modules_with_attribute_types()
            .into_iter()
            .filter(|&i| !outcomes[i].analysis.diagnostics.is_empty()),
    );
    // Modules whose functions read properties that wait for the device.
    again.extend(hot.modules_with_property_reads(scope == Scope::Hot));
    // Modules whose method calls return host data the module cannot see.
    again.extend(hot.modules_with_call_returns());
    again.sort_unstable();
    again.dedup();
    // Files whose findings are not reported only serve the call graph.
    again.retain(|&i| options.reports(&candidates[outcomes[i].candidate].file.path));
    // Largest first, one file per task: a large file left for last would keep one thread busy
    // while the others wait.
    again.sort_by_key(|&i| std::cmp::Reverse(outcomes[i].bytes));
    let redone: Vec<(usize, Outcome)> = again
        .into_par_iter()
        .with_max_len(1)
        .filter_map(|i| {
            let c = outcomes[i].candidate;
            // Under `--scope hot`, only the functions whose findings can be reported.
            let only = (scope == Scope::Hot).then(|| hot.reportable_functions(i));
            let param_types = hot.param_types_in(i);
            let property_reads = hot.property_reads_in(i);
            let attribute_types = hot.attribute_types_in(i);
            let call_returns = hot.call_returns_in(i);
            // Returns of the functions `only` skips, as phase 1 found them.
            let own_returns: rustc_hash::FxHashMap<String, crate::semantic::Ty> = only
                .as_ref()
                .map(|only| {
                    summaries[i]
                        .functions
                        .iter()
                        .filter(|f| f.returns != crate::semantic::Ty::Unknown)
                        .filter(|f| !only.contains(&f.qualname))
                        .map(|f| (f.qualname.clone(), f.returns))
                        .collect()
                })
                .unwrap_or_default();
            let own_host_preserving: FxHashSet<String> = only
                .as_ref()
                .map(|only| {
                    summaries[i]
                        .functions
                        .iter()
                        .filter(|f| f.host_preserving && !only.contains(&f.qualname))
                        .map(|f| f.qualname.clone())
                        .collect()
                })
                .unwrap_or_default();
            let facts = ProjectFacts {
                returns: Some(&external.returns),
                tuple_returns: Some(&external.tuple_returns),
                param_types: Some(&param_types),
                uninitialized_buffers: Some(&external.uninitialized),
                own_returns: Some(&own_returns),
                own_host_preserving: Some(&own_host_preserving),
                host_preserving: Some(&external.host_preserving),
                module_classes: Some(module_classes),
                property_reads: Some(&property_reads),
                host_fields: non_empty(&external.host_fields),
                off_flags: non_empty(&external.off_flags),
                records: non_empty(&external.records),
                attribute_types: Some(&attribute_types),
                call_returns: Some(&call_returns),
            };
            check_file(
                c,
                &candidates[c],
                options,
                facts,
                only.as_ref(),
                false,
                Preread::Unread,
            )
            .map(|outcome| (i, outcome))
        })
        .collect();
    let count = redone.len();
    for (i, outcome) in redone {
        let target = &mut outcomes[i];
        target.analysis.diagnostics = outcome.analysis.diagnostics;
        target.analysis.suppressed = outcome.analysis.suppressed;
        // A suppression is used when a finding under it is silenced in either phase: phase 3
        // sees more types, but under `--scope hot` skips the functions nothing reaches.
        target.used.extend(outcome.used);
    }
    count
}

/// Whether a scope reports a finding, given its reach.
fn reported(diagnostic: &Diagnostic, scope: Scope) -> bool {
    diagnostic.code == UNREADABLE_CODE
        || diagnostic.code == UNUSED_SUPPRESSION_CODE
        || match diagnostic.reach {
            Reach::Capture => true,
            // Captured-only hazards (a per-step allocation, a replay counter) are ordinary code
            // outside the graph.
            Reach::Stall => !diagnostic.captured_only,
            Reach::Unknown => scope == Scope::All && !diagnostic.captured_only,
        }
}

fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_string()
}

/// The rules enabled in one file: its configuration's, less its per-file ignores.
fn file_rules(options: &Options, file: &SourceFile) -> RuleSet {
    let mut rules = options.settings[file.settings].rules;
    for rule in file.ignored.iter() {
        rules.remove(rule);
    }
    rules
}

/// The process's resident memory in KiB (Linux; 0 elsewhere), for [`Timing`].
fn resident_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
