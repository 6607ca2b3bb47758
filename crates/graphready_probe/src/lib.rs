//! The Rust side of `graphready probe`: runs the embedded Python harness in a child process per
//! bucket (time limit, crash and timeout recorded as the phase that died), reads its versioned
//! JSON-lines protocol, and builds the report's `runtime` section, its correlation with static
//! findings, and a text summary. This crate never prints.

pub mod correlate;
pub mod crash;
pub mod driver;
mod group;
pub mod harness;
pub mod protocol;
pub mod ranks;
pub mod report;
pub mod rerun;
mod stream;
pub mod summary;

pub use correlate::{correlate, correlate_from, Confirmed, Correlation, RuntimeSite, StaticRef};
pub use driver::{
    run_probe, run_probe_with_progress, Launcher, ProbeError, ProbeOptions, Progress,
    DEFAULT_HANG_TIMEOUT,
};
pub use harness::{write_harness, HarnessDir, HARNESS_FILES};
pub use protocol::{
    Message, BACKENDS, DUMP_REQUEST, NVLS_OFF, PHASES, POISONING_PHASES, PROTOCOL_VERSION, RANK_ENV,
};
pub use ranks::{CollectiveCall, Distributed, GroupStop, HangReport, RankReport};
pub use report::{
    Allocations, BucketReport, Comparison, Environment, Frame, GraphMemory, GraphTotals, Outcome,
    PhaseResult, PhaseStatus, RankPhase, Rerun, RowIsolation, RuntimeEvent, RuntimeReport,
    StateReport, Timing,
};
pub use summary::{render as render_summary, render_with as render_summary_with, FrameDisplay};
