//! `graphready probe TARGET`: run the user's step on a GPU through the embedded Python harness
//! (one child process per bucket, with a time limit), then print and write the report.
//!
//! Exit codes: 0 every bucket captures, replays bit-exactly and never synchronises (and, with
//! `--check`, no static finding of severity error); 1 otherwise; 2 environment errors (no
//! torch, no CUDA device, bad TARGET, no interpreter), reported as errors.

use crate::printer::write_stdout;
use crate::report::{Report, RuntimeSection};
use anyhow::{bail, Context, Result};
use graphready_probe::{
    correlate, render_summary, run_probe, HarnessDir, Launcher, ProbeError, ProbeOptions,
    RuntimeReport,
};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Interpreter used when neither `--python` nor this variable is set: `python3`.
pub const PYTHON_ENV: &str = "GRAPHREADY_PYTHON";

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProbeFormat {
    Text,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    /// `path/to/file.py:factory` or `package.module:factory`; the factory takes the bucket
    /// (batch size) and returns a `graphready.ProbeTarget`.
    pub target: String,
    /// Batch-size buckets, one graph each, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pub buckets: Vec<u32>,
    /// Also write the JSON report to FILE.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Check these files or folders statically and correlate the findings with the run.
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub check: Vec<PathBuf>,
    /// Time limit for each bucket, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub timeout: u64,
    /// Python interpreter that has torch [default: $GRAPHREADY_PYTHON, else python3].
    #[arg(long, value_name = "PATH")]
    pub python: Option<OsString>,
    #[arg(long, value_enum, default_value_t = ProbeFormat::Text)]
    pub output_format: ProbeFormat,
}

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
    let harness = HarnessDir::create().context("writing the embedded probe harness")?;
    let launcher = Launcher::python(python.clone(), harness.root());
    let options = ProbeOptions {
        target: args.target.clone(),
        buckets,
        timeout: Duration::from_secs(args.timeout),
    };
    let runtime = run_probe(&launcher, &options).map_err(|err| environment_error(err, &python))?;

    let (findings, correlation) = if args.check.is_empty() {
        (Vec::new(), None)
    } else {
        let findings = crate::commands::check::static_findings(&args.check)?;
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

    #[test]
    fn python_flag_wins_over_the_default() {
        let flag = OsString::from("/opt/venv/bin/python");
        assert_eq!(resolve_python(Some(&flag)), flag);
    }
}
