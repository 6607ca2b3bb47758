//! The `graphready` binary: arguments → resolved configuration → command → printer.

mod args;
mod commands;
mod config;
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
