//! Configuration: `[tool.graphready]` in `pyproject.toml`, or a `graphready.toml`, found by
//! walking up from each checked path; resolved once into plain settings.

use anyhow::{bail, Context, Result};
use globset::{Glob, GlobSet, GlobSetBuilder};
use graphready_linter::registry::rules_matching;
use graphready_linter::settings::{DebugGuard, Platforms, DEFAULT_CAPTURE_PREDICATES};
use graphready_linter::HotPathSettings;
use graphready_linter::{RuleSet, Settings};
use serde::Deserialize;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// The options as written. Every field is optional; unknown keys are errors.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Options {
    /// Rule codes or prefixes to enable (default: all).
    pub select: Option<Vec<String>>,
    /// Rule codes or prefixes to disable.
    pub ignore: Option<Vec<String>>,
    /// Glob (relative to the configuration file) → codes to disable in matching files.
    pub per_file_ignores: Option<BTreeMap<String, Vec<String>>>,
    /// Globs of files and folders to skip.
    pub exclude: Option<Vec<String>>,
    /// Expressions (`VERBOSE >= 2`) that guard debug-only code.
    pub debug_guards: Option<Vec<String>>,
    /// Extra functions whose truthy result means "capturing".
    pub capture_predicates: Option<Vec<String>>,
    /// Captured entry points: `pkg.module:Class.method`.
    pub entry_points: Option<Vec<String>>,
    /// Per-step entry points outside the graph (findings there stall rather than break capture).
    pub step_entry_points: Option<Vec<String>>,
    /// Eager breaks: functions the captured path does not descend into.
    pub eager: Option<Vec<String>>,
    /// Whether `nn.Module` forwards are entry points (default true): those no other function
    /// calls are captured; those only uncaptured code calls run on the host path.
    pub module_forwards: Option<bool>,
    /// Whether AMD GPUs (ROCm) are a target besides NVIDIA's (default true); with `false`, code
    /// only a ROCm build runs is code for another device, neither reported nor followed.
    pub rocm: Option<bool>,
}

/// Flags from the command line that override configuration.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub select: Option<Vec<String>>,
    pub ignore: Vec<String>,
    pub config: Option<PathBuf>,
    pub isolated: bool,
}

/// Configuration resolved for the files under one root.
#[derive(Debug)]
pub struct Resolved {
    /// The configuration file, when there is one.
    pub source: Option<PathBuf>,
    pub settings: Settings,
    pub hot_path: HotPathSettings,
    pub files: FileFilters,
}

/// Which files a configuration skips, and which rules it disables per file.
#[derive(Debug)]
pub struct FileFilters {
    /// The folder globs are relative to.
    root: PathBuf,
    /// The working folder, against which relative paths (`./tests/a.py`) are made absolute.
    cwd: PathBuf,
    per_file_ignores: Vec<(GlobSet, RuleSet)>,
    exclude: GlobSet,
}

const DEFAULT_EXCLUDES: &[&str] = &[
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pytest_cache",
    ".ruff_cache",
    ".svn",
    ".tox",
    ".venv",
    "__pypackages__",
    "_build",
    "buck-out",
    "node_modules",
    "site-packages",
    "venv",
];

impl FileFilters {
    /// The folder the globs are relative to: the configuration's, else the working folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether a file or folder met in a walk is excluded by the configured globs or the
    /// defaults (matched on its own name: the walk has already judged the folders above it).
    pub fn is_excluded(&self, path: &Path) -> bool {
        if path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| DEFAULT_EXCLUDES.contains(&name))
        {
            return true;
        }
        if self.exclude.is_empty() {
            return false;
        }
        self.exclude.is_match(self.relative(path)) || self.exclude.is_match(path)
    }

    /// Whether a path named on the command line is excluded (`--force-exclude`): any folder
    /// on its way down from the configuration root, or the path itself, is excluded by name or
    /// by a glob.
    pub fn is_excluded_named(&self, path: &Path) -> bool {
        let relative = self.relative(path);
        let mut prefix = PathBuf::new();
        for component in relative.components() {
            let Component::Normal(name) = component else {
                prefix.push(component);
                continue;
            };
            prefix.push(name);
            if name
                .to_str()
                .is_some_and(|name| DEFAULT_EXCLUDES.contains(&name))
                || self.exclude.is_match(&prefix)
            {
                return true;
            }
        }
        false
    }

    /// The rules disabled for one file by `per-file-ignores`.
    pub fn ignored_for(&self, path: &Path) -> RuleSet {
        let mut ignored = RuleSet::empty();
        if self.per_file_ignores.is_empty() {
            return ignored;
        }
        let relative = self.relative(path);
        for (globs, rules) in &self.per_file_ignores {
            if globs.is_match(&relative) || globs.is_match(path) {
                for rule in rules.iter() {
                    ignored.insert(rule);
                }
            }
        }
        ignored
    }

    /// A path relative to the configuration root, when it lies under it; otherwise as given,
    /// without a leading `./`.
    fn relative<'p>(&self, path: &'p Path) -> Cow<'p, Path> {
        if let Ok(relative) = path.strip_prefix(&self.root) {
            return Cow::Borrowed(relative);
        }
        let absolute = normalize(path, &self.cwd);
        match absolute.strip_prefix(&self.root) {
            Ok(relative) => Cow::Owned(relative.to_path_buf()),
            Err(_) => Cow::Borrowed(path.strip_prefix(".").unwrap_or(path)),
        }
    }
}

/// `path` made absolute against `cwd`, with `.` and `..` resolved lexically (symbolic links are
/// not followed).
pub fn normalize(path: &Path, cwd: &Path) -> PathBuf {
    let joined;
    let path = if path.is_absolute() {
        path
    } else {
        joined = cwd.join(path);
        &joined
    };
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The working folder, or `.` when it cannot be read.
pub fn current_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// Finds the configuration for a path: an explicit `--config`, else the nearest
/// `graphready.toml` or `pyproject.toml` with a `[tool.graphready]` table above it.
pub fn find(path: &Path, overrides: &Overrides) -> Result<Resolved> {
    if overrides.isolated {
        return resolve(Options::default(), None, current_dir(), overrides);
    }
    if let Some(config) = &overrides.config {
        let options = load(config)?
            .with_context(|| format!("{} has no [tool.graphready] table", config.display()))?;
        let root = normalize(config.parent().unwrap_or(Path::new("")), &current_dir());
        return resolve(options, Some(config.clone()), root, overrides);
    }
    let start = normalize(path, &current_dir());
    let mut dir = if start.is_dir() {
        Some(start.as_path())
    } else {
        start.parent()
    };
    while let Some(current) = dir {
        for name in ["graphready.toml", "pyproject.toml"] {
            let candidate = current.join(name);
            if candidate.is_file() {
                if let Some(options) = load(&candidate)? {
                    return resolve(options, Some(candidate), current.to_path_buf(), overrides);
                }
            }
        }
        dir = current.parent();
    }
    resolve(Options::default(), None, current_dir(), overrides)
}

/// Reads the options from a file; `None` for a `pyproject.toml` without our table.
fn load(path: &Path) -> Result<Option<Options>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read configuration file {}", path.display()))?;
    let is_pyproject = path
        .file_name()
        .is_some_and(|name| name == "pyproject.toml");
    let value: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not valid TOML", path.display()))?;
    let table = if is_pyproject {
        match value.get("tool").and_then(|tool| tool.get("graphready")) {
            Some(table) => table.clone(),
            None => return Ok(None),
        }
    } else {
        toml::Value::Table(value)
    };
    let section = if is_pyproject {
        "[tool.graphready]"
    } else {
        "the top level"
    };
    let options = Options::deserialize(table).map_err(|err| {
        anyhow::anyhow!(
            "invalid configuration in {} ({section}): {}",
            path.display(),
            err.message()
        )
    })?;
    Ok(Some(options))
}

fn selectors(codes: &[String], key: &str, source: &Option<PathBuf>) -> Result<RuleSet> {
    let mut set = RuleSet::empty();
    for code in codes {
        let Some(rules) = rules_matching(code) else {
            let place = source.as_ref().map_or_else(
                || "the command line".to_string(),
                |p| p.display().to_string(),
            );
            bail!(
                "invalid value in {place}: `{key}` names `{code}`, which matches no rule \
                 (expected `ALL`, a code such as `GR101`, a prefix such as `GR1`, or a rule name; \
                 `graphready rules` lists them)"
            );
        };
        for rule in rules.iter() {
            set.insert(rule);
        }
    }
    Ok(set)
}

/// A glob set; with `below`, a pattern `dir` also matches everything below `dir`.
fn globs(patterns: &[String], key: &str, source: &Option<PathBuf>, below: bool) -> Result<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let place = source.as_ref().map_or_else(
            || "the command line".to_string(),
            |p| p.display().to_string(),
        );
        let glob = Glob::new(pattern)
            .with_context(|| format!("invalid value in {place}: `{key}` pattern `{pattern}`"))?;
        builder.add(glob);
        if below && !pattern.ends_with("/**") {
            if let Ok(glob) = Glob::new(&format!("{}/**", pattern.trim_end_matches('/'))) {
                builder.add(glob);
            }
        }
    }
    builder
        .build()
        .with_context(|| format!("invalid `{key}` patterns"))
}

fn resolve(
    options: Options,
    source: Option<PathBuf>,
    root: PathBuf,
    overrides: &Overrides,
) -> Result<Resolved> {
    // Configuration first, then the command line as a later layer: `--select` replaces the
    // configured selection (its ignores included), `--ignore` removes on top.
    let mut rules = match &options.select {
        Some(select) => selectors(select, "select", &source)?,
        None => RuleSet::default_selection(),
    };
    for rule in selectors(
        options.ignore.as_deref().unwrap_or_default(),
        "ignore",
        &source,
    )?
    .iter()
    {
        rules.remove(rule);
    }
    if let Some(select) = &overrides.select {
        rules = selectors(select, "--select", &None)?;
    }
    for rule in selectors(&overrides.ignore, "--ignore", &None)?.iter() {
        rules.remove(rule);
    }
    let mut per_file_ignores = Vec::new();
    for (pattern, codes) in options.per_file_ignores.iter().flatten() {
        // `dir` also covers everything below it, as users expect.
        let set = globs(
            std::slice::from_ref(pattern),
            "per-file-ignores",
            &source,
            true,
        )?;
        per_file_ignores.push((set, selectors(codes, "per-file-ignores", &source)?));
    }
    // Without `dir/**`: a walk skips an excluded folder with everything below it, while a
    // folder named on the command line is walked, its entries judged on their own.
    let exclude = globs(
        options.exclude.as_deref().unwrap_or_default(),
        "exclude",
        &source,
        false,
    )?;
    let mut debug_guards = Vec::new();
    for guard in options.debug_guards.iter().flatten() {
        let place = source.as_ref().map_or_else(
            || "the command line".to_string(),
            |p| p.display().to_string(),
        );
        debug_guards.push(
            DebugGuard::parse(guard).map_err(|err| {
                anyhow::anyhow!("invalid value in {place}: `debug-guards`: {err}")
            })?,
        );
    }
    let mut capture_predicates: Vec<String> = DEFAULT_CAPTURE_PREDICATES
        .iter()
        .map(|name| (*name).to_string())
        .collect();
    for predicate in options.capture_predicates.iter().flatten() {
        let name = predicate.rsplit('.').next().unwrap_or(predicate);
        capture_predicates.push(name.to_string());
    }
    let hot_path = HotPathSettings {
        entry_points: options.entry_points.clone().unwrap_or_default(),
        step_entry_points: options.step_entry_points.clone().unwrap_or_default(),
        eager: options.eager.clone().unwrap_or_default(),
        module_forwards: options.module_forwards.unwrap_or(true),
    };
    Ok(Resolved {
        hot_path,
        source,
        settings: Settings {
            rules,
            debug_guards,
            capture_predicates,
            platforms: Platforms {
                rocm: options.rocm.unwrap_or(true),
            },
        },
        files: FileFilters {
            root,
            cwd: current_dir(),
            per_file_ignores,
            exclude,
        },
    })
}
