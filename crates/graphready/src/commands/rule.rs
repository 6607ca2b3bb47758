//! `graphready rule CODE` and `graphready rules`.

use crate::args::RulesFormat;
use crate::printer::write_stdout;
use anyhow::{bail, Result};
use graphready_linter::Rule;
use std::fmt::Write as _;
use std::process::ExitCode;

pub fn run_rule(code: &str) -> Result<ExitCode> {
    let Some(rule) = Rule::from_code(code) else {
        bail!("unknown rule `{code}`; `graphready rules` lists them");
    };
    write_stdout(&rule.page())?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_rules(format: RulesFormat) -> Result<ExitCode> {
    let mut out = String::new();
    match format {
        RulesFormat::Text => {
            for rule in Rule::ALL {
                let _ = writeln!(
                    out,
                    "{:<6} {:<28} {:<16} {}",
                    rule.code(),
                    rule.name(),
                    rule.family().as_str(),
                    rule.summary()
                );
            }
        }
        RulesFormat::Json => {
            let rules: Vec<_> = Rule::ALL
                .iter()
                .map(|rule| {
                    serde_json::json!({
                        "code": rule.code(),
                        "name": rule.name(),
                        "family": rule.family().as_str(),
                        "severity": rule.severity(),
                        "summary": rule.summary(),
                    })
                })
                .collect();
            out = serde_json::to_string_pretty(&rules)?;
            out.push('\n');
        }
    }
    write_stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
