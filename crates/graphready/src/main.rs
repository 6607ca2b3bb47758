//! The `graphready` binary: arguments → resolved configuration → command → printer.

mod args;
mod commands;
mod config;
mod files;
mod harness;
mod printer;
mod report;

use clap::Parser;
use std::process::ExitCode;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Exit codes: 0 clean, 1 findings (or probe not ready), 2 usage, configuration or internal error.
pub const EXIT_CLEAN: u8 = 0;
pub const EXIT_FINDINGS: u8 = 1;
pub const EXIT_ERROR: u8 = 2;

fn main() -> ExitCode {
    // A panic is a bug in graphready, never the user's: say so, and exit with the error code
    // (release builds abort on panic, so this hook is the last word).
    std::panic::set_hook(Box::new(|info| {
        let payload = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "graphready: internal error (panicked at {location}): {payload}\n\
                 This is a bug in graphready; please report it with the file that triggered it."
            );
        }
        std::process::exit(i32::from(EXIT_ERROR));
    }));
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Check(args) => commands::check::run(&args),
        args::Command::Probe(args) => commands::probe::run(&args),
        args::Command::Rule { code } => commands::rule::run_rule(&code),
        args::Command::Rules { output_format } => commands::rule::run_rules(output_format),
    };
    match result {
        Ok(code) => code,
        Err(err) if printer::is_broken_pipe(&err) => ExitCode::from(EXIT_CLEAN),
        Err(err) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("graphready: error: {err:#}");
            }
            ExitCode::from(EXIT_ERROR)
        }
    }
}
