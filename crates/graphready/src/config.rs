//! Configuration: `[tool.graphready]` in `pyproject.toml`, or a `graphready.toml`, found by
//! walking up from each checked path; resolved once into plain settings.

use anyhow::{bail, Context, Result};
use globset::{Glob, GlobSet, GlobSetBuilder};
use graphready_linter::registry::rules_matching;
use graphready_linter::settings::{DebugGuard, DEFAULT_CAPTURE_PREDICATES};
use graphready_linter::HotPathSettings;
use graphready_linter::{RuleSet, Settings};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    /// Whether every `forward` of an `nn.Module` subclass is an entry point (default true).
    pub module_forwards: Option<bool>,
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
    /// Whether a file or folder is excluded by the configured globs or the defaults.
    pub fn is_excluded(&self, path: &Path) -> bool {
        if path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| DEFAULT_EXCLUDES.contains(&name))
        {
            return true;
        }
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        self.exclude.is_match(relative) || self.exclude.is_match(path)
    }

    /// The rules disabled for one file by `per-file-ignores`.
    pub fn ignored_for(&self, path: &Path) -> RuleSet {
        let relative = path.strip_prefix(&self.root).unwrap_or(path);
        let mut ignored = RuleSet::empty();
        for (globs, rules) in &self.per_file_ignores {
            if globs.is_match(relative) || globs.is_match(path) {
                for rule in rules.iter() {
                    ignored.insert(rule);
                }
            }
        }
        ignored
    }
}

/// Finds the configuration for a path: an explicit `--config`, else the nearest
/// `graphready.toml` or `pyproject.toml` with a `[tool.graphready]` table above it.
pub fn find(path: &Path, overrides: &Overrides) -> Result<Resolved> {
    if overrides.isolated {
        let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        return resolve(Options::default(), None, root, overrides);
    }
    if let Some(config) = &overrides.config {
        let options = load(config)?
            .with_context(|| format!("{} has no [tool.graphready] table", config.display()))?;
        let root = config
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
        return resolve(options, Some(config.clone()), root, overrides);
    }
    let start = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
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
    let root = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    resolve(Options::default(), None, root, overrides)
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

fn globs(patterns: &[String], key: &str, source: &Option<PathBuf>) -> Result<GlobSet> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let place = source.as_ref().map_or_else(
            || "the command line".to_string(),
            |p| p.display().to_string(),
        );
        let glob = Glob::new(pattern)
            .with_context(|| format!("invalid value in {place}: `{key}` pattern `{pattern}`"))?;
        builder.add(glob);
        // `dir` also excludes everything below it, as users expect.
        if !pattern.ends_with("/**") {
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
        let set = globs(std::slice::from_ref(pattern), "per-file-ignores", &source)?;
        per_file_ignores.push((set, selectors(codes, "per-file-ignores", &source)?));
    }
    let exclude = globs(
        options.exclude.as_deref().unwrap_or_default(),
        "exclude",
        &source,
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
        },
        files: FileFilters {
            root,
            per_file_ignores,
            exclude,
        },
    })
}
