//! `graphready check`: resolve the configuration, run the linter over the files, print.

use crate::args::{CheckArgs, ColorChoice, OutputFormat};
use crate::config::Overrides;
use crate::printer;
use crate::report::Report;
use crate::{EXIT_CLEAN, EXIT_FINDINGS};
use anyhow::Result;
use graphready_linter::project::{ProjectReport, Timing};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

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
    let run = crate::files::analyse(&paths, &overrides, args.scope.into(), args.show_scope)?;
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
    if run.no_entries && args.scope == crate::args::Scope::Hot {
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
        render(&run, &diagnostics, args.output_format, color)
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

fn render(
    run: &ProjectReport,
    diagnostics: &[graphready_diagnostics::Diagnostic],
    format: OutputFormat,
    color: bool,
) -> String {
    match format {
        OutputFormat::Text => graphready_diagnostics::text::render(&run.files, color),
        OutputFormat::Json => {
            let mut json = Report::check_only(diagnostics.to_vec(), run.files_checked).to_json();
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
