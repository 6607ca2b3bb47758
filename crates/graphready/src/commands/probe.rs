//! `graphready probe TARGET`: run the user's step on a GPU through the embedded Python harness
//! (one child process per bucket, with a time limit), then print and write the report.
//!
//! Exit codes: 0 every bucket captures, replays bit-exactly and never synchronises (and, with
//! `--check`, no static finding of severity error); 1 otherwise; 2 environment errors (no
//! torch, no CUDA device, bad TARGET, no interpreter), reported as errors.
//!
//! While it runs, the bucket and phase are shown on stderr when stderr is a terminal.

use crate::args::{FramesArg, ProbeArgs, ProbeFormat};
use crate::printer::write_stdout;
use crate::report::{Report, RuntimeSection};
use anyhow::{bail, Context, Result};
use graphready_probe::{
    correlate, render_summary_with, run_probe_with_progress, FrameDisplay, ProbeError,
    ProbeOptions, Progress, RuntimeReport,
};
use std::ffi::OsString;
use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Interpreter used when neither `--python` nor this variable is set: `python3`.
pub const PYTHON_ENV: &str = "GRAPHREADY_PYTHON";

impl RuntimeSection for RuntimeReport {
    fn ready(&self) -> bool {
        RuntimeReport::ready(self)
    }
}

pub fn run(args: &ProbeArgs) -> Result<ExitCode> {
    let buckets = buckets(&args.buckets)?;
    if args.timeout == 0 {
        bail!("--timeout must be at least 1 second");
    }
    let python = resolve_python(args.python.as_ref());
    // The installed `graphready` package of the same version, else the embedded copy.
    let harness =
        crate::harness::Harness::choose(&python).context("writing the embedded probe harness")?;
    let launcher = harness.launcher(python.clone());
    let mut options = ProbeOptions::new(
        args.target.clone(),
        buckets,
        Duration::from_secs(args.timeout),
    );
    options.nproc_per_node = args.nproc_per_node;
    options.backend = args.dist_backend.name().to_string();
    options.hang_timeout = Duration::from_secs(args.hang_timeout.min(args.timeout));
    options.trace = args
        .check
        .iter()
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .collect();
    let mut progress = ProgressLine::new(std::io::stderr().is_terminal());
    let runtime = run_probe_with_progress(&launcher, &options, &mut |p| progress.show(p));
    progress.clear();
    let runtime = runtime.map_err(|err| environment_error(err, &python))?;

    let (findings, correlation) = if args.check.is_empty() {
        (Vec::new(), None)
    } else {
        let mut findings = static_findings(&check_inputs(&args.check)?)?;
        findings.retain(|finding| !unreached_set_up(finding, &args.target));
        let correlation = correlate(&runtime, &findings);
        (findings, Some(correlation))
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let frames = match args.frames {
        FramesArg::User => FrameDisplay::User,
        FramesArg::All => FrameDisplay::All,
    };
    let mut text = render_summary_with(&runtime, correlation.as_ref(), &cwd, frames);
    if !args.check.is_empty() {
        text.push_str(&format!(
            "static findings in {}: {}\n",
            display_paths(&args.check),
            findings.len()
        ));
    }
    let report = Report::new(findings, Some(runtime), correlation);
    let json = report.to_json();
    if let Some(path) = &args.output {
        std::fs::write(path, format!("{json}\n"))
            .with_context(|| format!("writing the report to {}", path.display()))?;
    }
    match args.output_format {
        ProbeFormat::Text => write_stdout(&text)?,
        ProbeFormat::Json => write_stdout(&format!("{json}\n"))?,
    }
    Ok(ExitCode::from(if report.summary.ready { 0 } else { 1 }))
}

/// The static findings for the `--check` paths, with the configuration discovered for them.
/// Every function is in scope as with `--scope all`; the step of a `graphready.ProbeTarget` is
/// a captured entry point, so the captured-only rules apply to it and to what it calls, not to
/// the factory that builds it.
fn static_findings(paths: &[PathBuf]) -> Result<Vec<graphready_diagnostics::Diagnostic>> {
    let run = crate::files::analyse(
        paths,
        &crate::config::Overrides::default(),
        graphready_linter::project::Scope::All,
        false,
    )?;
    Ok(run.diagnostics())
}

/// Whether a finding lies in set-up that the step does not reach: the probe target's factory
/// itself, which runs once to build the target (loading weights, `.cuda()` copies of host data),
/// and constructors and other set-up by name (`__init__` and what it nests, `load_weights`).
fn unreached_set_up(finding: &graphready_diagnostics::Diagnostic, target: &str) -> bool {
    if finding.reach != graphready_diagnostics::Reach::Unknown {
        return false;
    }
    let Some(function) = finding.function.as_deref() else {
        return false;
    };
    if graphready_linter::runs_once(function) {
        return true;
    }
    let Some((location, factory)) = target.rsplit_once(':') else {
        return false;
    };
    if function != factory {
        return false;
    }
    let finding_path = Path::new(&finding.path);
    if Path::new(location)
        .extension()
        .is_some_and(|ext| ext == "py")
    {
        let canonical = |path: &Path| std::fs::canonicalize(path).ok();
        canonical(finding_path).is_some_and(|found| Some(found) == canonical(Path::new(location)))
    } else {
        // `package.module:factory`: the module's file, wherever the package lies.
        let module_file = PathBuf::from(format!("{}.py", location.replace('.', "/")));
        finding_path.ends_with(&module_file)
    }
}

/// One overwritten line on a terminal: bucket, phase, elapsed time. Silent otherwise.
struct ProgressLine {
    enabled: bool,
    shown: bool,
}

impl ProgressLine {
    fn new(enabled: bool) -> Self {
        ProgressLine {
            enabled,
            shown: false,
        }
    }

    fn show(&mut self, p: &Progress) {
        if !self.enabled {
            return;
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", progress_text(p));
        let _ = err.flush();
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}

fn progress_text(p: &Progress) -> String {
    format!(
        "graphready probe: bucket {} ({}/{}){}: {}{} [{:.0} s]",
        p.bucket,
        p.position,
        p.buckets,
        if p.ranks > 1 {
            format!(", {} ranks", p.ranks)
        } else {
            String::new()
        },
        p.phase,
        if p.rerun {
            " (re-run without poisoning)"
        } else {
            ""
        },
        p.elapsed.as_secs_f64()
    )
}

/// `graphready check` skips virtual environments and installed packages when it walks a folder,
/// and a folder below one is ignored whole (uv and venv write a `.gitignore` of `*` there). A
/// path given to `--check` is analysed anyway: such a folder becomes the list of its Python
/// files, which the checker takes as given.
fn check_inputs(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.exists() {
            bail!("--check {}: no such file or folder", path.display());
        }
        if !path.is_dir() || !is_installed_code(path) {
            out.push(path.clone());
            continue;
        }
        let mut files = Vec::new();
        python_files(path, &mut files)
            .with_context(|| format!("reading --check {}", path.display()))?;
        files.sort();
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "graphready probe: --check {}: installed code (site-packages or a virtual environment), {} Python file(s) analysed one by one",
                path.display(),
                files.len()
            );
        }
        out.extend(files);
    }
    Ok(out)
}

/// Under `site-packages`, `dist-packages`, or a virtual environment (a folder with `pyvenv.cfg`).
fn is_installed_code(path: &Path) -> bool {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    path.ancestors().any(|dir| {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("");
        matches!(name, "site-packages" | "dist-packages") || dir.join("pyvenv.cfg").is_file()
    })
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if name != "__pycache__" && !name.starts_with('.') {
                python_files(&path, out)?;
            }
        } else if name.ends_with(".py") {
            out.push(path);
        }
    }
    Ok(())
}

fn buckets(raw: &[u32]) -> Result<Vec<u32>> {
    let mut out: Vec<u32> = Vec::new();
    for &bucket in raw {
        if bucket == 0 {
            bail!("--buckets: a bucket is a batch size and must be at least 1");
        }
        if !out.contains(&bucket) {
            out.push(bucket);
        }
    }
    if out.is_empty() {
        bail!("--buckets: give at least one batch size");
    }
    Ok(out)
}

fn resolve_python(flag: Option<&OsString>) -> OsString {
    flag.cloned()
        .or_else(|| std::env::var_os(PYTHON_ENV).filter(|v| !v.is_empty()))
        .unwrap_or_else(|| OsString::from("python3"))
}

/// Environment problems become errors (exit 2) that say what is missing and what to do.
fn environment_error(err: ProbeError, python: &OsString) -> anyhow::Error {
    let python = python.to_string_lossy();
    match &err {
        ProbeError::Environment { kind, .. } if kind == "no_cuda" => {
            anyhow::anyhow!(
                "{err}\n(interpreter: {python}; choose another with --python or {PYTHON_ENV})"
            )
        }
        ProbeError::Environment { kind, .. } if kind == "too_few_gpus" => anyhow::anyhow!(
            "{err}\n(ask for fewer ranks with --nproc-per-node, or let ranks share a GPU with --dist-backend gloo)"
        ),
        ProbeError::Spawn { .. } => {
            anyhow::anyhow!("{err}\n(choose a Python interpreter with --python or {PYTHON_ENV})")
        }
        _ => anyhow::Error::new(err),
    }
}

fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_positive_and_deduplicated() {
        assert_eq!(buckets(&[1, 2, 2, 8]).unwrap(), vec![1, 2, 8]);
        assert!(buckets(&[0]).is_err());
        assert!(buckets(&[]).is_err());
    }

    fn args(target: &str) -> ProbeArgs {
        ProbeArgs {
            target: target.into(),
            buckets: vec![1],
            output: None,
            check: Vec::new(),
            timeout: 60,
            python: None,
            output_format: ProbeFormat::Text,
            frames: FramesArg::User,
            nproc_per_node: None,
            hang_timeout: 120,
            dist_backend: crate::args::DistBackend::Nccl,
        }
    }

    /// Issue 5: environment errors are errors (exit 2) with a message naming what is missing.
    #[test]
    fn bad_target_and_missing_interpreter_are_errors() {
        if std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok()
        {
            let err = run(&args("no/such/model.py:factory")).unwrap_err();
            assert!(format!("{err:#}").contains("does not exist"), "{err:#}");
        }
        let mut missing = args("model.py:factory");
        missing.python = Some("/nonexistent/python3".into());
        let err = run(&missing).unwrap_err();
        assert!(format!("{err:#}").contains("--python"), "{err:#}");
    }

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

    /// A factory's own host copies and a constructor's run once, when the factory builds the
    /// target: the probe's verdict does not count them (the step, what it calls, and other
    /// helpers still count).
    #[test]
    fn the_factory_itself_is_set_up() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("model.py");
        std::fs::write(
            &file,
            "import torch\nfrom graphready import ProbeTarget\n\n\
             def other():\n    return (torch.randn(4) * 2).cuda()\n\n\
             class Weights:\n    def __init__(self):\n        def param():\n            return (torch.randn(4) * 2).cuda()\n\n\
             \x20       self.w = param()\n\n\
             def factory(bucket):\n    w = (torch.randn(4) * 2).cuda()\n\n\
             \x20   def step(x):\n        return (x * w).tolist()\n\n\
             \x20   return ProbeTarget(step=step, inputs=[w])\n",
        )
        .unwrap();
        let findings = static_findings(std::slice::from_ref(&file)).unwrap();
        let lines = |target: &str| -> Vec<(String, u32)> {
            findings
                .iter()
                .filter(|d| !unreached_set_up(d, target))
                .map(|d| (d.code.clone(), d.span.start.line))
                .collect()
        };
        let mut all: Vec<(String, u32)> = findings
            .iter()
            .map(|d| (d.code.clone(), d.span.start.line))
            .collect();
        all.sort_by_key(|f| f.1);
        assert_eq!(
            all,
            vec![
                ("GR301".to_string(), 5),
                ("GR301".to_string(), 10),
                ("GR301".to_string(), 15),
                ("GR102".to_string(), 18),
            ]
        );
        // The constructor is set-up whatever the target.
        let mut found = lines("unrelated.py:factory");
        found.sort_by_key(|f| f.1);
        assert_eq!(found, vec![all[0].clone(), all[2].clone(), all[3].clone()]);
        let target = format!("{}:factory", file.display());
        let mut found = lines(&target);
        found.sort_by_key(|f| f.1);
        assert_eq!(found, vec![all[0].clone(), all[3].clone()]);
    }

    #[test]
    fn python_flag_wins_over_the_default() {
        let flag = OsString::from("/opt/venv/bin/python");
        assert_eq!(resolve_python(Some(&flag)), flag);
    }

    /// Issue 13: a folder under a virtual environment given to `--check` is analysed, not
    /// silently skipped.
    #[test]
    fn check_paths_under_a_virtual_environment_are_expanded() {
        let venv = tempfile::tempdir().unwrap();
        std::fs::write(venv.path().join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::write(venv.path().join(".gitignore"), "*\n").unwrap();
        let package = venv
            .path()
            .join("lib/python3.12/site-packages/transformers/models");
        std::fs::create_dir_all(package.join("__pycache__")).unwrap();
        std::fs::write(
            package.join("moe.py"),
            "import torch\n\ndef route(mask):\n    return torch.greater(mask, 0).nonzero()\n",
        )
        .unwrap();
        std::fs::write(package.join("__pycache__/moe.cpython-312.py"), "").unwrap();
        std::fs::write(package.join("README.md"), "").unwrap();
        assert!(is_installed_code(&package));
        let inputs = check_inputs(std::slice::from_ref(&package)).unwrap();
        assert_eq!(inputs, vec![package.join("moe.py")]);
        let findings = static_findings(&inputs).unwrap();
        assert!(
            findings.iter().any(|d| d.code == "GR201" && d.line() == 4),
            "{findings:?}"
        );

        let project = tempfile::tempdir().unwrap();
        assert!(!is_installed_code(project.path()));
        assert_eq!(
            check_inputs(&[project.path().to_path_buf()]).unwrap(),
            vec![project.path().to_path_buf()]
        );
        assert!(check_inputs(&[project.path().join("missing")]).is_err());
    }

    #[test]
    fn progress_names_the_bucket_and_phase() {
        let text = progress_text(&Progress {
            bucket: 8,
            position: 3,
            buckets: 4,
            phase: "capture",
            rerun: false,
            ranks: 1,
            elapsed: Duration::from_secs(95),
        });
        assert_eq!(text, "graphready probe: bucket 8 (3/4): capture [95 s]");
        let text = progress_text(&Progress {
            bucket: 1,
            position: 1,
            buckets: 1,
            phase: "warmup",
            rerun: false,
            ranks: 2,
            elapsed: Duration::from_secs(3),
        });
        assert_eq!(
            text,
            "graphready probe: bucket 1 (1/1), 2 ranks: warmup [3 s]"
        );
    }
}
