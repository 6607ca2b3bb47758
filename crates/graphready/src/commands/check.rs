//! `graphready check`: discover files, check them in parallel, print the findings.

use crate::args::{CheckArgs, ColorChoice, OutputFormat};
use crate::config::{self, Overrides, Resolved};
use crate::printer::{self, Checked};
use crate::report::Report;
use crate::{EXIT_CLEAN, EXIT_FINDINGS};
use anyhow::Result;
use graphready_diagnostics::{sort_diagnostics, Diagnostic, Reach};
use graphready_linter::checker::semantic::Ty;
use graphready_linter::hot_path::HotPath;
use graphready_linter::{ExternalReturns, ModuleInfo, UNREADABLE_CODE};
use rayon::prelude::*;
use ruff_text_size::TextRange;
use rustc_hash::FxHashMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// One file to check, with the configuration that governs it.
struct Candidate {
    path: PathBuf,
    config: usize,
    module: ModuleInfo,
}

/// The outcome of checking a set of paths.
pub struct CheckRun {
    pub files: Vec<Checked>,
    pub files_checked: usize,
    /// What `--show-scope` prints.
    pub scope_report: String,
    /// No entry point was found, so every function was reported.
    pub no_entries: bool,
}

impl CheckRun {
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut all: Vec<Diagnostic> = self
            .files
            .iter()
            .flat_map(|file| file.diagnostics.iter().cloned())
            .collect();
        sort_diagnostics(&mut all);
        all
    }
}

/// Which findings `check` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Scope {
    /// Only findings reached from an entry point (captured, or per-step outside the graph).
    #[default]
    Hot,
    /// Every finding in every function (captured-only rules still only in captured code).
    All,
}

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let overrides = Overrides {
        select: args.select.clone(),
        ignore: args.ignore.clone(),
        config: args.config.clone(),
        isolated: args.isolated,
    };
    let paths = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let run = check_paths(&paths, &overrides, args.scope, args.show_scope)?;
    if args.show_scope {
        printer::write_stdout(&run.scope_report)?;
        return Ok(ExitCode::from(EXIT_CLEAN));
    }
    if run.no_entries && args.scope == Scope::Hot {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "graphready: note: no entry point found (no capture site, marker, configured entry \
                 or nn.Module forward); reporting every function as with --scope all"
            );
        }
    }
    let diagnostics = run.diagnostics();
    let color = match args.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        }
    };
    let output = if args.statistics {
        printer::statistics(&diagnostics, args.output_format)
    } else {
        match args.output_format {
            OutputFormat::Text => printer::text::render(&run.files, color),
            OutputFormat::Json => {
                let mut json = Report::check_only(diagnostics.clone(), run.files_checked).to_json();
                json.push('\n');
                json
            }
            OutputFormat::Sarif => printer::sarif::render(&diagnostics),
            OutputFormat::Github => printer::github::render(&diagnostics),
        }
    };
    printer::write_stdout(&output)?;
    // The process ends here: freeing the run's many small allocations one by one would only
    // delay the exit.
    let clean = diagnostics.is_empty() || args.exit_zero;
    std::mem::forget(run);
    std::mem::forget(diagnostics);
    Ok(ExitCode::from(if clean {
        EXIT_CLEAN
    } else {
        EXIT_FINDINGS
    }))
}

/// The static findings for some paths, with the configuration discovered for them (used by the
/// probe to merge runtime events with static findings). Every function is in scope as with
/// `--scope all`; the step of a `graphready.ProbeTarget` is a captured entry point, so the
/// captured-only rules apply to it and to what it calls, not to the factory that builds it.
pub fn static_findings(paths: &[PathBuf]) -> Result<Vec<Diagnostic>> {
    Ok(check_paths(paths, &Overrides::default(), Scope::All, false)?.diagnostics())
}

/// One analysed file.
struct Outcome {
    candidate: usize,
    path: String,
    source: Option<Arc<str>>,
    analysis: graphready_linter::FileAnalysis,
}

/// Discovers, filters and checks every Python file under `paths`, then scopes the findings to
/// the hot path.
pub fn check_paths(
    paths: &[PathBuf],
    overrides: &Overrides,
    scope: Scope,
    show_scope: bool,
) -> Result<CheckRun> {
    let mut configs: Vec<Resolved> = Vec::new();
    let mut config_by_source: FxHashMap<Option<PathBuf>, usize> = FxHashMap::default();
    let mut path_configs = Vec::with_capacity(paths.len());
    for path in paths {
        if !path.exists() {
            anyhow::bail!("{}: no such file or folder", path.display());
        }
        let resolved = config::find(path, overrides)?;
        let index = *config_by_source
            .entry(resolved.source.clone())
            .or_insert_with(|| {
                configs.push(resolved);
                configs.len() - 1
            });
        path_configs.push(index);
    }
    let timing = std::env::var_os("GRAPHREADY_TIMING").is_some();
    let started = std::time::Instant::now();
    // Discovery and phase 1 (every file on its own) overlap: one worker walks the folders and
    // hands out each file as it is found; the others check them meanwhile.
    let checked = std::sync::Mutex::new(Vec::new());
    let mut discovered = std::time::Duration::ZERO;
    rayon::scope(|scope| {
        let configs = &configs;
        let checked = &checked;
        let mut packages = PackageCache::default();
        let mut seen = rustc_hash::FxHashSet::default();
        let mut next = 0;
        for (path, &config) in paths.iter().zip(&path_configs) {
            discover(path, &configs[config], |file| {
                if !seen.insert(file.clone()) {
                    return;
                }
                let candidate = Candidate {
                    module: packages.module_of(&file),
                    path: file,
                    config,
                };
                let index = next;
                next += 1;
                scope.spawn(move |_| {
                    let outcome = check_file(index, &candidate, &configs[config], None, None);
                    if let Ok(mut checked) = checked.lock() {
                        checked.push((index, candidate, outcome));
                    }
                });
            });
        }
        discovered = started.elapsed();
    });
    let mut checked = checked.into_inner().unwrap_or_default();
    checked.sort_unstable_by_key(|(index, _, _)| *index);
    let mut candidates = Vec::with_capacity(checked.len());
    let mut outcomes: Vec<Outcome> = Vec::new();
    for (_, candidate, outcome) in checked {
        candidates.push(candidate);
        outcomes.extend(outcome);
    }
    let phase1 = started.elapsed();
    let rss_phase1 = if timing { resident_kib() } else { 0 };
    // Phase 2: the hot path over the whole project.
    let hot_settings = configs
        .first()
        .map(|config| config.hot_path.clone())
        .unwrap_or_default();
    let summaries: Vec<_> = outcomes
        .iter_mut()
        .map(|outcome| std::mem::take(&mut outcome.analysis.summary))
        .collect();
    // The cross-module return types for phase 3 are gathered meanwhile.
    let (hot, external) = rayon::join(
        || HotPath::analyze(&summaries, &hot_settings),
        || external_returns(&summaries),
    );
    let no_entries = !hot.has_entries();
    let scope = match scope {
        Scope::Hot if no_entries => Scope::All,
        other => other,
    };
    let scope_report = if show_scope {
        printer::scope::render(&hot, &summaries)
    } else {
        String::new()
    };
    let phase2 = started.elapsed();
    // Phase 3: files calling other modules' tensor-returning functions, again with their types;
    // under `--scope hot`, only files with reachable functions (the others report nothing).
    let mut redone_count = 0;
    if !external.is_empty() {
        let again: Vec<usize> = match scope {
            Scope::All => summaries
                .iter()
                .enumerate()
                .filter(|(_, summary)| {
                    summary
                        .imported_callees
                        .iter()
                        .any(|c| external.contains_key(c))
                })
                .map(|(i, _)| i)
                .collect(),
            // Only where a reached function itself calls one: nothing else is reported.
            Scope::Hot => hot.modules_calling(&external),
        };
        let redone: Vec<(usize, Outcome)> = again
            .into_par_iter()
            .filter_map(|i| {
                let c = outcomes[i].candidate;
                // Under `--scope hot`, only the functions whose findings can be reported.
                let only = (scope == Scope::Hot).then(|| hot.reportable_functions(i));
                check_file(
                    c,
                    &candidates[c],
                    &configs[candidates[c].config],
                    Some(&external),
                    only.as_ref(),
                )
                .map(|outcome| (i, outcome))
            })
            .collect();
        redone_count = redone.len();
        for (i, outcome) in redone {
            outcomes[i].source = outcome.source;
            outcomes[i].analysis.diagnostics = outcome.analysis.diagnostics;
        }
    }
    let files_checked = outcomes.len();
    if timing {
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "timing: discovery {discovered:?} (overlapping phase1), phase1 {:?}, hot path {:?}, phase3 {:?} ({redone_count} files again); resident after phase1 {} MiB, now {} MiB",
                phase1,
                phase2 - phase1,
                started.elapsed() - phase2,
                rss_phase1 / 1024,
                resident_kib() / 1024
            );
        }
    }
    let per_file: Vec<_> = outcomes
        .into_iter()
        .map(|o| (o.candidate, o.path, o.source, o.analysis.diagnostics))
        .collect();
    let mut files = Vec::new();
    for (candidate, path, source, mut diagnostics) in per_file {
        let config = &configs[candidates[candidate].config];
        for diagnostic in &mut diagnostics {
            hot.annotate(diagnostic);
        }
        diagnostics.retain(|d| {
            d.code == UNREADABLE_CODE
                || match d.reach {
                    Reach::Capture => true,
                    // Captured-only hazards (a per-step allocation, a replay counter) are
                    // ordinary code outside the graph.
                    Reach::Stall => !d.captured_only,
                    Reach::Unknown => scope == Scope::All && !d.captured_only,
                }
        });
        let ignored = config.ignored_for(&candidates[candidate].path);
        if !ignored.is_empty() {
            diagnostics.retain(|d| {
                d.code == UNREADABLE_CODE
                    || graphready_linter::Rule::from_code(&d.code)
                        .is_none_or(|r| !ignored.contains(r))
            });
        }
        if !diagnostics.is_empty() {
            let source = source.or_else(|| {
                std::fs::read_to_string(&candidates[candidate].path)
                    .ok()
                    .map(Arc::<str>::from)
            });
            files.push(Checked::new(path, source, diagnostics));
        }
    }
    drop(hot);
    // Freeing the project's summaries, one small allocation at a time, takes longer than the
    // printing that follows: a helper thread does it meanwhile.
    std::thread::spawn(move || drop((summaries, external)));
    Ok(CheckRun {
        files,
        files_checked,
        scope_report,
        no_entries,
    })
}

/// Tensor-returning module-level functions by qualified name, including re-exports.
fn external_returns(summaries: &[graphready_linter::summary::ModuleSummary]) -> ExternalReturns {
    let mut table = ExternalReturns::default();
    for summary in summaries {
        let Some(module) = &summary.module else {
            continue;
        };
        for function in &summary.functions {
            if function.class.is_none()
                && !function.qualname.contains('.')
                && matches!(function.returns, Ty::Tensor | Ty::TensorSeq)
            {
                table.insert(format!("{module}.{}", function.qualname), function.returns);
            }
        }
    }
    let mut aliases = Vec::new();
    for summary in summaries {
        let Some(module) = &summary.module else {
            continue;
        };
        for (name, qualified) in &summary.imports {
            if let Some(ty) = table.get(qualified) {
                aliases.push((format!("{module}.{name}"), *ty));
            }
        }
    }
    table.extend(aliases);
    table
}

/// Python files under a path, in path order: explicit files always, folders walked with
/// `.gitignore` rules and the configured excludes.
fn discover(path: &Path, config: &Resolved, mut found: impl FnMut(PathBuf)) {
    if path.is_file() {
        found(path.to_path_buf());
        return;
    }
    let walker = ignore::WalkBuilder::new(path)
        .hidden(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    let mut skipped_dirs: Vec<PathBuf> = Vec::new();
    for entry in walker.flatten() {
        let entry_path = entry.path();
        if skipped_dirs.iter().any(|dir| entry_path.starts_with(dir)) {
            continue;
        }
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        if entry.depth() > 0 && config.is_excluded(entry_path) {
            if is_dir {
                skipped_dirs.push(entry_path.to_path_buf());
            }
            continue;
        }
        if !is_dir && entry_path.extension().is_some_and(|ext| ext == "py") {
            found(entry_path.to_path_buf());
        }
    }
}

/// The process's resident memory in KiB (Linux; 0 elsewhere), for `GRAPHREADY_TIMING`.
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

fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_string()
}

fn check_file(
    index: usize,
    candidate: &Candidate,
    config: &Resolved,
    external: Option<&ExternalReturns>,
    only: Option<&rustc_hash::FxHashSet<String>>,
) -> Option<Outcome> {
    let path = display_path(&candidate.path);
    let unreadable = |message: String| Outcome {
        candidate: index,
        path: path.clone(),
        source: None,
        analysis: graphready_linter::FileAnalysis {
            diagnostics: vec![graphready_linter::unreadable(
                "",
                &path,
                TextRange::default(),
                message,
            )],
            summary: Default::default(),
        },
    };
    let bytes = match std::fs::read(&candidate.path) {
        Ok(bytes) => bytes,
        Err(err) => return Some(unreadable(format!("file could not be read: {err}"))),
    };
    // Files that never mention `torch` hold no hazard; package `__init__.py` files still count,
    // for the re-exports the call graph follows through them.
    let is_init = candidate
        .path
        .file_name()
        .is_some_and(|name| name == "__init__.py");
    if !is_init && !graphready_linter::mentions_torch(&bytes) {
        return None;
    }
    let source = match String::from_utf8(bytes) {
        Ok(source) => source,
        Err(err) => {
            return Some(unreadable(format!(
                "file is not valid UTF-8 (invalid byte at offset {})",
                err.utf8_error().valid_up_to()
            )))
        }
    };
    let analysis = graphready_linter::analyze(
        &source,
        &path,
        &candidate.module,
        &config.settings,
        external,
        only,
    );
    // The source is read again for the few files whose findings survive the hot-path filter:
    // holding every source until then would double the peak memory.
    Some(Outcome {
        candidate: index,
        path,
        source: None,
        analysis,
    })
}

/// Dotted package names of folders, computed once per folder.
#[derive(Default)]
struct PackageCache {
    packages: FxHashMap<PathBuf, Option<String>>,
}

impl PackageCache {
    fn package_of(&mut self, dir: &Path) -> Option<String> {
        if let Some(known) = self.packages.get(dir) {
            return known.clone();
        }
        let package = if dir.join("__init__.py").is_file() {
            let name = dir.file_name()?.to_string_lossy().to_string();
            let absolute = std::path::absolute(dir).ok();
            let parent = absolute
                .as_deref()
                .and_then(Path::parent)
                .map(Path::to_path_buf);
            match parent.and_then(|parent| self.package_of(&parent)) {
                Some(parent) => Some(format!("{parent}.{name}")),
                None => Some(name),
            }
        } else {
            None
        };
        self.packages.insert(dir.to_path_buf(), package.clone());
        package
    }

    fn module_of(&mut self, file: &Path) -> ModuleInfo {
        let absolute = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
        let Some(dir) = absolute.parent() else {
            return ModuleInfo::default();
        };
        let stem = file.file_stem().map(|s| s.to_string_lossy().to_string());
        let is_package = stem.as_deref() == Some("__init__");
        let package = self.package_of(dir);
        let name = match (package, stem) {
            (Some(package), _) if is_package => Some(package),
            (Some(package), Some(stem)) => Some(format!("{package}.{stem}")),
            (None, Some(stem)) if !is_package => Some(stem),
            _ => None,
        };
        ModuleInfo { name, is_package }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe's static side: the captured-only rules apply to the step of a
    /// `graphready.ProbeTarget` and what it calls, not to the factory that builds it.
    #[test]
    fn static_findings_for_the_probe_apply_captured_only_rules_to_the_step() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("step.py"),
            "import torch\nfrom graphready import ProbeTarget\n\n\
             def helper(x):\n    torch.cuda.empty_cache()\n    return x\n\n\
             def factory(bucket):\n    torch.cuda.empty_cache()\n    x = torch.zeros(bucket, device=\"cuda\")\n\n\
             \x20   def step(x):\n        return helper(x) * 2\n\n\
             \x20   return ProbeTarget(step=step, inputs=[x])\n",
        )
        .unwrap();
        let findings = static_findings(&[dir.path().to_path_buf()]).unwrap();
        let found: Vec<(String, u32)> = findings
            .into_iter()
            .map(|d| (d.code, d.span.start.line))
            .collect();
        // Line 5 (in `helper`, reached from the step); not line 9 (in the factory).
        assert_eq!(found, vec![("GR501".to_string(), 5)]);
    }
}
