//! Which files a command analyses, and under which configuration: each path's configuration is
//! found once, folders are walked with `.gitignore` rules and the configured excludes, and each
//! file is handed to the linter with its settings and per-file ignores.

use crate::config::{self, FileFilters, Overrides};
use anyhow::Result;
use graphready_linter::project::{self, ProjectReport, Scope, SourceFile};
use graphready_linter::HotPathSettings;
use graphready_linter::Settings;
use rustc_hash::FxHashMap;
use std::path::{Path, PathBuf};

/// The paths of one command and the configurations that govern them.
pub struct Workspace {
    paths: Vec<(PathBuf, usize)>,
    /// One per configuration, indexed like `filters`.
    pub settings: Vec<Settings>,
    filters: Vec<FileFilters>,
    /// The hot-path options of the first path's configuration (the call graph is one).
    pub hot_path: HotPathSettings,
}

impl Workspace {
    /// Resolves the configuration of every path; a path that does not exist is an error.
    pub fn new(paths: &[PathBuf], overrides: &Overrides) -> Result<Self> {
        let mut workspace = Workspace {
            paths: Vec::with_capacity(paths.len()),
            settings: Vec::new(),
            filters: Vec::new(),
            hot_path: HotPathSettings::default(),
        };
        let mut by_source: FxHashMap<Option<PathBuf>, usize> = FxHashMap::default();
        for path in paths {
            if !path.exists() {
                anyhow::bail!("{}: no such file or folder", path.display());
            }
            let resolved = config::find(path, overrides)?;
            let index = match by_source.get(&resolved.source) {
                Some(&index) => index,
                None => {
                    if workspace.settings.is_empty() {
                        workspace.hot_path = resolved.hot_path;
                    }
                    by_source.insert(resolved.source, workspace.settings.len());
                    workspace.settings.push(resolved.settings);
                    workspace.filters.push(resolved.files);
                    workspace.settings.len() - 1
                }
            };
            workspace.paths.push((path.clone(), index));
        }
        Ok(workspace)
    }

    /// Hands every Python file under the paths to `found`, in path order.
    pub fn discover(&self, found: &mut dyn FnMut(SourceFile)) {
        for (path, config) in &self.paths {
            let filters = &self.filters[*config];
            walk(path, filters, |file| {
                let ignored = filters.ignored_for(&file);
                found(SourceFile {
                    path: file,
                    settings: *config,
                    ignored,
                });
            });
        }
    }
}

/// Python files under a path, in path order: explicit files always, folders walked with
/// `.gitignore` rules and the configured excludes.
fn walk(path: &Path, filters: &FileFilters, mut found: impl FnMut(PathBuf)) {
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
        if entry.depth() > 0 && filters.is_excluded(entry_path) {
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

/// Analyses the files under `paths` with the configuration found for them.
pub fn analyse(
    paths: &[PathBuf],
    overrides: &Overrides,
    scope: Scope,
    show_scope: bool,
) -> Result<ProjectReport> {
    let workspace = Workspace::new(paths, overrides)?;
    let mut options = project::Options::new(&workspace.settings, &workspace.hot_path, scope);
    options.show_scope = show_scope;
    options.timing = std::env::var_os("GRAPHREADY_TIMING").is_some();
    Ok(project::check(&options, |found| workspace.discover(found)))
}
