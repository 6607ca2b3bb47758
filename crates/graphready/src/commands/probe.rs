//! `graphready probe` — placeholder until the probe driver lands (owned by the probe work;
//! overwrite freely).

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct ProbeArgs {
    /// `path/to/file.py:factory` or `package.module:factory`.
    pub target: String,
}

pub fn run(_args: &ProbeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`graphready probe` is not available in this build yet")
}
