//! `graphready check`: discover files, check them in parallel, print the findings.

use crate::args::{CheckArgs, ColorChoice, OutputFormat};
use crate::config::{self, Overrides, Resolved};
use crate::printer::{self, Checked};
use crate::report::Report;
use crate::{EXIT_CLEAN, EXIT_FINDINGS};
use anyhow::Result;
use graphready_diagnostics::{sort_diagnostics, Diagnostic};
use graphready_linter::{ModuleInfo, UNREADABLE_CODE};
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
    let run = check_paths(&paths, &overrides)?;
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
    Ok(ExitCode::from(
        if diagnostics.is_empty() || args.exit_zero {
            EXIT_CLEAN
        } else {
            EXIT_FINDINGS
        },
    ))
}

/// The static findings for some paths, with the configuration discovered for them (used by the
/// probe to merge runtime events with static findings).
#[allow(dead_code)]
pub fn static_findings(paths: &[PathBuf]) -> Result<Vec<Diagnostic>> {
    Ok(check_paths(paths, &Overrides::default())?.diagnostics())
}

/// Discovers, filters and checks every Python file under `paths`.
pub fn check_paths(paths: &[PathBuf], overrides: &Overrides) -> Result<CheckRun> {
    let mut configs: Vec<Resolved> = Vec::new();
    let mut config_by_source: FxHashMap<Option<PathBuf>, usize> = FxHashMap::default();
    let mut candidates = Vec::new();
    let mut packages = PackageCache::default();
    let mut seen = rustc_hash::FxHashSet::default();
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
        for file in discover(path, &configs[index]) {
            if seen.insert(file.clone()) {
                let module = packages.module_of(&file);
                candidates.push(Candidate {
                    path: file,
                    config: index,
                    module,
                });
            }
        }
    }
    let results: Vec<Option<Checked>> = candidates
        .par_iter()
        .map(|candidate| check_file(candidate, &configs[candidate.config]))
        .collect();
    let files_checked = results.iter().filter(|r| r.is_some()).count();
    let files = results
        .into_iter()
        .flatten()
        .filter(|checked| !checked.diagnostics.is_empty())
        .collect();
    Ok(CheckRun {
        files,
        files_checked,
    })
}

/// Python files under a path: explicit files always, folders walked with `.gitignore` rules and
/// the configured excludes.
fn discover(path: &Path, config: &Resolved) -> Vec<PathBuf> {
    if path.is_file() {
        return vec![path.to_path_buf()];
    }
    let mut files = Vec::new();
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
            files.push(entry_path.to_path_buf());
        }
    }
    files
}

fn display_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    text.strip_prefix("./").unwrap_or(&text).to_string()
}

fn check_file(candidate: &Candidate, config: &Resolved) -> Option<Checked> {
    let path = display_path(&candidate.path);
    let bytes = match std::fs::read(&candidate.path) {
        Ok(bytes) => bytes,
        Err(err) => {
            let message = format!("file could not be read: {err}");
            return Some(Checked::new(
                path.clone(),
                None,
                vec![graphready_linter::unreadable(
                    "",
                    &path,
                    TextRange::default(),
                    message,
                )],
            ));
        }
    };
    if !graphready_linter::mentions_torch(&bytes) {
        return None;
    }
    let source = match String::from_utf8(bytes) {
        Ok(source) => source,
        Err(err) => {
            let message = format!(
                "file is not valid UTF-8 (invalid byte at offset {})",
                err.utf8_error().valid_up_to()
            );
            return Some(Checked::new(
                path.clone(),
                None,
                vec![graphready_linter::unreadable(
                    "",
                    &path,
                    TextRange::default(),
                    message,
                )],
            ));
        }
    };
    let mut diagnostics =
        graphready_linter::check(&source, &path, &candidate.module, &config.settings);
    // Until a hot-path analysis says otherwise, nothing is known to run captured.
    diagnostics.retain(|d| !d.captured_only || d.reach != graphready_diagnostics::Reach::Unknown);
    let ignored = config.ignored_for(&candidate.path);
    if !ignored.is_empty() {
        diagnostics.retain(|d| {
            d.code == UNREADABLE_CODE
                || graphready_linter::Rule::from_code(&d.code).is_none_or(|r| !ignored.contains(r))
        });
    }
    let source = (!diagnostics.is_empty()).then(|| Arc::<str>::from(source));
    Some(Checked::new(path, source, diagnostics))
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
