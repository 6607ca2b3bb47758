//! Command-line arguments (clap derive).

use clap::{Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "graphready",
    version,
    about = "Make PyTorch inference code CUDA-graph ready, and keep it that way"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Statically check Python files for CUDA-graph capture hazards.
    Check(CheckArgs),
    /// Run a step function on a GPU and measure syncs, capture, replay and latency.
    Probe(ProbeArgs),
    /// Print the documentation of one rule.
    Rule {
        /// A rule code such as GR101, or a rule name.
        code: String,
    },
    /// List every rule: code, name, family.
    Rules {
        #[arg(long, value_enum, default_value_t = RulesFormat::Text)]
        output_format: RulesFormat,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Text,
    Json,
    Sarif,
    Github,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

/// Which findings `check` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Scope {
    /// Only findings reached from an entry point (captured, or per-step outside the graph).
    #[default]
    Hot,
    /// Every finding in every function (captured-only rules still only in captured code).
    All,
}

impl From<Scope> for graphready_linter::project::Scope {
    fn from(scope: Scope) -> Self {
        match scope {
            Scope::Hot => graphready_linter::project::Scope::Hot,
            Scope::All => graphready_linter::project::Scope::All,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Files or folders to check (default: the current folder).
    pub paths: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub output_format: OutputFormat,
    /// Comma-separated codes or prefixes to enable, replacing the configured selection.
    #[arg(long, value_delimiter = ',')]
    pub select: Option<Vec<String>>,
    /// Comma-separated codes or prefixes to disable, on top of the configuration.
    #[arg(long, value_delimiter = ',')]
    pub ignore: Vec<String>,
    /// Use this configuration file instead of discovering one.
    #[arg(long, conflicts_with = "isolated")]
    pub config: Option<PathBuf>,
    /// Ignore every configuration file.
    #[arg(long)]
    pub isolated: bool,
    /// Print the number of findings per rule instead of the findings.
    #[arg(long)]
    pub statistics: bool,
    /// Exit 0 even when there are findings.
    #[arg(long)]
    pub exit_zero: bool,
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// `hot`: only findings reached from an entry point; `all`: every function.
    #[arg(long, value_enum, default_value_t = Scope::Hot)]
    pub scope: Scope,
    /// Print the entry points found (and why), the eager breaks and the reachable functions.
    #[arg(long)]
    pub show_scope: bool,
    /// Apply the excludes (configured and default) to paths named on the command line too;
    /// without it a named path is checked even where an exclude would skip it.
    #[arg(long)]
    pub force_exclude: bool,
    /// Read the source from standard input and check it as the file PATH (with PATH's
    /// configuration and project; the file need not exist).
    #[arg(long, value_name = "PATH", conflicts_with = "paths")]
    pub stdin_filename: Option<PathBuf>,
    /// Print the findings only: no closing line, no notes or warnings on stderr.
    #[arg(short, long)]
    pub quiet: bool,
    /// Also report suppression comments that suppress nothing (GR001): `# graphready:
    /// ignore[...]`, and `# noqa: ...` naming graphready codes (a bare `# noqa` is never judged).
    #[arg(long)]
    pub report_unused_suppressions: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeFormat {
    Text,
    Json,
}

/// Which frames of each event the text shows (JSON keeps every frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum FramesArg {
    /// The user's line, and the innermost frame (library or not) when it is another.
    #[default]
    User,
    /// The whole stack, innermost first.
    All,
}

/// The torch.distributed backend of the ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum DistBackend {
    /// NCCL: one GPU per rank; its collectives can be captured.
    #[default]
    Nccl,
    /// gloo: collectives on the host; ranks may share a GPU.
    Gloo,
}

impl DistBackend {
    pub fn name(self) -> &'static str {
        match self {
            DistBackend::Nccl => "nccl",
            DistBackend::Gloo => "gloo",
        }
    }
}

#[derive(Debug, clap::Args)]
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
    /// Check these files or folders statically and correlate the findings with the run
    /// (installed packages too: a folder under site-packages or a virtual environment is
    /// analysed file by file).
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
    /// Frames shown per event in the text.
    #[arg(long, value_enum, default_value_t = FramesArg::User)]
    pub frames: FramesArg,
    /// Run N ranks on this host (one GPU each), with torch.distributed initialised before the
    /// factory is called; every phase runs on every rank.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub nproc_per_node: Option<u32>,
    /// With --nproc-per-node: a rank that stays in a phase this long after another rank
    /// finished it is hung; the group is stopped and the report written (at most --timeout).
    #[arg(long, value_name = "SECS", default_value_t = 120, requires = "nproc_per_node",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub hang_timeout: u64,
    /// With --nproc-per-node: the ranks' backend.
    #[arg(long, value_enum, default_value_t = DistBackend::Nccl, requires = "nproc_per_node")]
    pub dist_backend: DistBackend,
}
