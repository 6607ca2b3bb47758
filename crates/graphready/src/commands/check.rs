//! `graphready check`: resolve the configuration, run the linter over the files, print.

use crate::args::{CheckArgs, ColorChoice, OutputFormat};
use crate::config::Overrides;
use crate::files::Request;
use crate::printer;
use crate::report::Report;
use crate::{EXIT_CLEAN, EXIT_FINDINGS};
use anyhow::{Context, Result};
use graphready_linter::project::{ProjectReport, Timing};
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(args: &CheckArgs) -> Result<ExitCode> {
    let overrides = Overrides {
        select: args.select.clone(),
        ignore: args.ignore.clone(),
        config: args.config.clone(),
        isolated: args.isolated,
    };
    let paths = if args.paths.is_empty() && args.stdin_filename.is_none() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.clone()
    };
    let stdin = match &args.stdin_filename {
        Some(path) => Some((path.as_path(), read_stdin(path)?)),
        None => None,
    };
    let request = Request {
        paths: &paths,
        stdin: stdin
            .as_ref()
            .map(|(path, source)| (*path, source.as_slice())),
        overrides: &overrides,
        force_exclude: args.force_exclude,
        scope: args.scope.into(),
        show_scope: args.show_scope,
        unused_suppressions: args.report_unused_suppressions,
    };
    let analysis = crate::files::analyse_request(&request)?;
    let run = analysis.report;
    if let Some(timing) = &run.timing {
        print_timing(timing);
    }
    if let Some(scope) = &run.scope {
        let output = match args.output_format {
            OutputFormat::Json => printer::scope::render_json(scope),
            _ => printer::scope::render(scope),
        };
        printer::write_stdout(&output)?;
        return Ok(ExitCode::from(EXIT_CLEAN));
    }
    let nothing_checked = analysis.files == 0;
    if !args.quiet {
        print_notes(args, &run, nothing_checked, analysis.excluded);
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
        // The closing line says what was checked: nothing, when nothing was.
        let closing = !args.quiet && !nothing_checked;
        render(&run, &diagnostics, args.output_format, color, closing)
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

/// Standard input, whole: the source of `--stdin-filename PATH`.
fn read_stdin(path: &Path) -> Result<Vec<u8>> {
    let mut source = Vec::new();
    std::io::stdin().read_to_end(&mut source).with_context(|| {
        format!(
            "--stdin-filename {}: reading standard input",
            path.display()
        )
    })?;
    Ok(source)
}

/// What stderr says besides errors (`--quiet` leaves it out): a run that checked no file says
/// so (the exit status stays 0, as ruff's); a run without entry points reports every function.
fn print_notes(args: &CheckArgs, run: &ProjectReport, nothing_checked: bool, excluded: usize) {
    let note = if nothing_checked {
        let why = match excluded {
            0 => String::new(),
            1 => " (1 path excluded)".to_string(),
            n => format!(" ({n} paths excluded)"),
        };
        format!("warning: no Python files were checked{why}")
    } else if run.no_entries && args.scope == crate::args::Scope::Hot && run.files_checked > 0 {
        "note: no entry point found (no capture site, marker, configured entry or nn.Module \
         forward); the public functions count as captured entry points, as in a library"
            .to_string()
    } else {
        return;
    };
    #[allow(clippy::print_stderr)]
    {
        eprintln!("graphready: {note}");
    }
}

/// The findings in one format; `closing`: text ends with the count (`All checks passed.`).
fn render(
    run: &ProjectReport,
    diagnostics: &[graphready_diagnostics::Diagnostic],
    format: OutputFormat,
    color: bool,
    closing: bool,
) -> String {
    match format {
        OutputFormat::Text if closing => graphready_diagnostics::text::render(&run.files, color),
        OutputFormat::Text => graphready_diagnostics::text::render_findings(&run.files, color),
        OutputFormat::Json => {
            let report = Report::check_only(
                diagnostics.to_vec(),
                run.suppressed.clone(),
                run.files_checked,
            );
            let mut json = report.to_json();
            json.push('\n');
            json
        }
        OutputFormat::Sarif => printer::sarif::render(diagnostics),
        OutputFormat::Github => printer::github::render(diagnostics),
    }
}

/// `GRAPHREADY_TIMING=1`: the phase times of the run, on stderr.
fn print_timing(timing: &Timing) {
    #[allow(clippy::print_stderr)]
    {
        eprintln!(
            "timing: discovery {:?} (overlapping phase1), phase1 {:?}, hot path {:?}, phase3 {:?} \
             ({} files again); resident after phase1 {} MiB, now {} MiB",
            timing.discovery,
            timing.phase1,
            timing.hot_path,
            timing.phase3,
            timing.rechecked,
            timing.resident_after_phase1_kib / 1024,
            timing.resident_at_end_kib / 1024
        );
    }
}
