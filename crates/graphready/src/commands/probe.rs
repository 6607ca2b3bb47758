//! `graphready probe TARGET`: run the user's step on a GPU through the embedded Python harness
//! (one child process per bucket, with a time limit), then print and write the report.
//!
//! Exit codes: 0 every bucket captures, replays bit-exactly and never synchronises (and, with
//! `--check`, no static finding of severity error); 1 otherwise; 2 environment errors (no
//! torch, no CUDA device, bad TARGET, no interpreter), reported as errors.

use crate::args::{ProbeArgs, ProbeFormat};
use crate::printer::write_stdout;
use crate::report::{Report, RuntimeSection};
use anyhow::{bail, Context, Result};
use graphready_probe::{
    correlate, render_summary, run_probe, ProbeError, ProbeOptions, RuntimeReport,
};
use std::ffi::OsString;
use std::path::PathBuf;
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
    let options = ProbeOptions {
        target: args.target.clone(),
        buckets,
        timeout: Duration::from_secs(args.timeout),
    };
    let runtime = run_probe(&launcher, &options).map_err(|err| environment_error(err, &python))?;

    let (findings, correlation) = if args.check.is_empty() {
        (Vec::new(), None)
    } else {
        let findings = static_findings(&args.check)?;
        let correlation = correlate(&runtime, &findings);
        (findings, Some(correlation))
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut text = render_summary(&runtime, correlation.as_ref(), &cwd);
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

    #[test]
    fn python_flag_wins_over_the_default() {
        let flag = OsString::from("/opt/venv/bin/python");
        assert_eq!(resolve_python(Some(&flag)), flag);
    }
}
