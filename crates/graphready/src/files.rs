//! Which files a command analyses, and under which configuration: each path's configuration is
//! found once, folders are walked with `.gitignore` rules and the configured excludes, and each
//! file is handed to the linter with its settings and per-file ignores.
//!
//! When folders are named, their files are the project. When files are named (pre-commit's
//! changed files, an editor's one file, `--stdin-filename`), the call graph still spans the
//! whole project, so that a finding never appears or vanishes with the choice of files: the
//! folder of the nearest configuration, else the outermost package (folders with
//! `__init__.py`) above each file, is walked too, and only the named files' findings are
//! reported.

use crate::config::{self, current_dir, normalize, FileFilters, Overrides, Resolved};
use anyhow::{bail, Result};
use graphready_linter::project::{self, ProjectReport, Scope, SourceFile};
use graphready_linter::HotPathSettings;
use graphready_linter::Settings;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};

/// What to analyse, and how.
pub struct Request<'a> {
    pub paths: &'a [PathBuf],
    /// `--stdin-filename`: the path the source is reported under, and the source.
    pub stdin: Option<(&'a Path, &'a [u8])>,
    pub overrides: &'a Overrides,
    /// Apply the excludes to the named paths too.
    pub force_exclude: bool,
    pub scope: Scope,
    pub show_scope: bool,
    pub unused_suppressions: bool,
}

/// A run's report, and what discovery found.
pub struct Analysis {
    pub report: ProjectReport,
    /// Python files whose findings are reported (including those skipped unread for never
    /// mentioning `torch`).
    pub files: usize,
    /// Named paths, files and folders the excludes left out (a folder counts once).
    pub excluded: usize,
}

/// A path named on the command line (or by `--stdin-filename`).
struct Named {
    path: PathBuf,
    /// Absolute, with `.` and `..` resolved: the identity of the file across walks.
    absolute: PathBuf,
    config: usize,
    is_dir: bool,
}

/// The paths of one command and the configurations that govern them.
pub struct Workspace {
    named: Vec<Named>,
    /// When files are named: the project folders walked for the call graph, as walked (relative
    /// to the working folder where they can be), with their configuration.
    roots: Vec<(PathBuf, usize)>,
    /// Files are named: report only the named paths' findings.
    subset: bool,
    /// Named paths left out by `--force-exclude`.
    excluded: usize,
    cwd: PathBuf,
    /// One per configuration, indexed like `filters`.
    pub settings: Vec<Settings>,
    filters: Vec<FileFilters>,
    /// The hot-path options of the first path's configuration (the call graph is one).
    pub hot_path: HotPathSettings,
}

impl Workspace {
    /// Resolves the configuration of every path; a path that does not exist is an error (the
    /// `--stdin-filename` path need not exist).
    pub fn new(
        paths: &[PathBuf],
        stdin: Option<&Path>,
        overrides: &Overrides,
        force_exclude: bool,
    ) -> Result<Self> {
        let mut workspace = Workspace {
            named: Vec::with_capacity(paths.len()),
            roots: Vec::new(),
            subset: stdin.is_some(),
            excluded: 0,
            cwd: current_dir(),
            settings: Vec::new(),
            filters: Vec::new(),
            hot_path: HotPathSettings::default(),
        };
        let mut by_source: FxHashMap<Option<PathBuf>, usize> = FxHashMap::default();
        let mut roots: Vec<PathBuf> = Vec::new();
        let named = paths.iter().map(|path| (path.as_path(), false));
        for (path, from_stdin) in named.chain(stdin.map(|path| (path, true))) {
            let is_dir = path.is_dir();
            if from_stdin && is_dir {
                bail!("--stdin-filename {}: is a folder", path.display());
            }
            if !from_stdin && !is_dir && !path.exists() {
                bail!("{}: no such file or folder", path.display());
            }
            let resolved = config::find(path, overrides)?;
            let absolute = normalize(path, &workspace.cwd);
            let root = (!is_dir)
                .then(|| project_root(&resolved, &absolute))
                .flatten();
            let config = workspace.register(resolved, &mut by_source);
            if force_exclude && workspace.filters[config].is_excluded_named(path) {
                workspace.excluded += 1;
                continue;
            }
            workspace.subset |= !is_dir;
            roots.extend(root);
            workspace.named.push(Named {
                path: path.to_path_buf(),
                absolute,
                config,
                is_dir,
            });
        }
        if workspace.subset {
            roots.sort();
            roots.dedup();
            // A project inside another is walked with it.
            let outer: Vec<PathBuf> = roots
                .iter()
                .filter(|root| !roots.iter().any(|r| r != *root && root.starts_with(r)))
                .cloned()
                .collect();
            for root in outer {
                let config = workspace.register(config::find(&root, overrides)?, &mut by_source);
                let walked = relative_to(&root, &workspace.cwd);
                workspace.roots.push((walked, config));
            }
        }
        Ok(workspace)
    }

    /// The index of a configuration, added when it is new.
    fn register(
        &mut self,
        resolved: Resolved,
        by_source: &mut FxHashMap<Option<PathBuf>, usize>,
    ) -> usize {
        if let Some(&index) = by_source.get(&resolved.source) {
            return index;
        }
        if self.settings.is_empty() {
            self.hot_path = resolved.hot_path;
        }
        by_source.insert(resolved.source, self.settings.len());
        self.settings.push(resolved.settings);
        self.filters.push(resolved.files);
        self.settings.len() - 1
    }

    /// Hands every Python file under the named paths to `found`, in path order; returns how
    /// many files and folders the excludes left out.
    fn discover(&self, found: &mut dyn FnMut(SourceFile)) -> usize {
        let mut excluded = self.excluded;
        for named in &self.named {
            let filters = &self.filters[named.config];
            walk(&named.path, filters, &mut excluded, |file| {
                found(self.source_file(file, named.config));
            });
        }
        excluded
    }

    /// With files named: every file of their projects, each named one under its name as given,
    /// in the order a walk of the project finds them, then the named paths outside them.
    /// Returns the files and the paths among them whose findings are reported.
    fn discover_subset(&self) -> (Vec<SourceFile>, FxHashSet<PathBuf>, usize) {
        let mut files = Vec::new();
        let mut reported = FxHashSet::default();
        let mut handed: FxHashSet<PathBuf> = FxHashSet::default();
        let mut excluded = self.excluded;
        let named_files: FxHashMap<&Path, &Named> = self
            .named
            .iter()
            .filter(|named| !named.is_dir)
            .map(|named| (named.absolute.as_path(), named))
            .collect();
        for (root, config) in &self.roots {
            // Files the project's excludes leave out are not counted: nobody named them.
            let mut uncounted = 0;
            walk(root, &self.filters[*config], &mut uncounted, |file| {
                let absolute = normalize(&file, &self.cwd);
                if handed.contains(&absolute) {
                    return;
                }
                let (path, config, report) = if let Some(named) = named_files.get(&*absolute) {
                    (named.path.clone(), named.config, true)
                } else if let Some(named) = self
                    .named
                    .iter()
                    .find(|named| named.is_dir && absolute.starts_with(&named.absolute))
                {
                    let below = absolute.strip_prefix(&named.absolute).unwrap_or(&absolute);
                    (named.path.join(below), named.config, true)
                } else {
                    (file, *config, false)
                };
                if report {
                    reported.insert(path.clone());
                }
                files.push(self.source_file(path, config));
                handed.insert(absolute);
            });
        }
        for named in &self.named {
            let filters = &self.filters[named.config];
            if !named.is_dir {
                if handed.insert(named.absolute.clone()) {
                    reported.insert(named.path.clone());
                    files.push(self.source_file(named.path.clone(), named.config));
                }
                continue;
            }
            walk(&named.path, filters, &mut excluded, |file| {
                if handed.insert(normalize(&file, &self.cwd)) {
                    reported.insert(file.clone());
                    files.push(self.source_file(file, named.config));
                }
            });
        }
        (files, reported, excluded)
    }

    fn source_file(&self, path: PathBuf, config: usize) -> SourceFile {
        let ignored = self.filters[config].ignored_for(&path);
        SourceFile {
            path,
            settings: config,
            ignored,
        }
    }
}

/// The project a named file belongs to: its configuration's folder, else the outermost
/// package above it; `None` for a file outside both. (A `--config` file elsewhere does not
/// make its folder the project.)
fn project_root(resolved: &Resolved, file: &Path) -> Option<PathBuf> {
    let root = resolved.files.root();
    if resolved.source.is_some() && file.starts_with(root) {
        return Some(root.to_path_buf());
    }
    let mut outermost = None;
    let mut dir = file.parent();
    while let Some(current) = dir {
        if !current.join("__init__.py").is_file() {
            break;
        }
        outermost = Some(current.to_path_buf());
        dir = current.parent();
    }
    outermost
}

/// `path` (absolute) as a walk from `cwd` should name it: relative where it can be (`.`,
/// `pkg`, `../..`), so that the files found under it read as the user would write them.
fn relative_to(path: &Path, cwd: &Path) -> PathBuf {
    if let Ok(below) = path.strip_prefix(cwd) {
        return if below.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            below.to_path_buf()
        };
    }
    if let Ok(above) = cwd.strip_prefix(path) {
        return above.components().map(|_| "..").collect();
    }
    path.to_path_buf()
}

/// Python files under a path, in path order: a file as it is, folders walked with `.gitignore`
/// rules and the configured excludes (`excluded` counts what they leave out).
fn walk(path: &Path, filters: &FileFilters, excluded: &mut usize, mut found: impl FnMut(PathBuf)) {
    if !path.is_dir() {
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
        let is_python = !is_dir && entry_path.extension().is_some_and(|ext| ext == "py");
        if entry.depth() > 0 && (is_dir || is_python) && filters.is_excluded(entry_path) {
            *excluded += 1;
            if is_dir {
                skipped_dirs.push(entry_path.to_path_buf());
            }
            continue;
        }
        if is_python {
            found(entry_path.to_path_buf());
        }
    }
}

/// Analyses what a request names, with the configuration found for it.
pub fn analyse_request(request: &Request) -> Result<Analysis> {
    let workspace = Workspace::new(
        request.paths,
        request.stdin.map(|(path, _)| path),
        request.overrides,
        request.force_exclude,
    )?;
    let mut options =
        project::Options::new(&workspace.settings, &workspace.hot_path, request.scope);
    options.show_scope = request.show_scope;
    options.timing = std::env::var_os("GRAPHREADY_TIMING").is_some();
    options.unused_suppressions = request.unused_suppressions;
    options.source_override = request.stdin;
    if !workspace.subset {
        // Folders only: discovery and the analysis overlap, as files are found.
        let mut files = 0;
        let mut excluded = 0;
        let report = project::check(&options, |found| {
            excluded = workspace.discover(&mut |file| {
                files += 1;
                found(file);
            });
        });
        return Ok(Analysis {
            report,
            files,
            excluded,
        });
    }
    let (files, reported, excluded) = workspace.discover_subset();
    options.report_only = Some(&reported);
    let report = project::check(&options, |found| {
        for file in files {
            found(file);
        }
    });
    Ok(Analysis {
        report,
        files: reported.len(),
        excluded,
    })
}

/// Analyses the files under `paths` with the configuration found for them.
pub fn analyse(
    paths: &[PathBuf],
    overrides: &Overrides,
    scope: Scope,
    show_scope: bool,
) -> Result<ProjectReport> {
    let request = Request {
        paths,
        stdin: None,
        overrides,
        force_exclude: false,
        scope,
        show_scope,
        unused_suppressions: false,
    };
    Ok(analyse_request(&request)?.report)
}
