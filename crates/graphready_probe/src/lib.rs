//! The Rust side of `graphready probe`: runs the embedded Python harness in a child process per
//! bucket (time limit, crash and timeout recorded as the phase that died), reads its versioned
//! JSON-lines protocol, and builds the report's `runtime` section, its correlation with static
//! findings, and a text summary. This crate never prints.

pub mod correlate;
pub mod crash;
pub mod driver;
pub mod harness;
pub mod protocol;
pub mod report;
pub mod rerun;
pub mod summary;

pub use correlate::{correlate, correlate_from, Confirmed, Correlation, RuntimeSite, StaticRef};
pub use driver::{
    run_probe, run_probe_with_progress, Launcher, ProbeError, ProbeOptions, Progress,
};
pub use harness::{write_harness, HarnessDir, HARNESS_FILES};
pub use protocol::{Message, PHASES, POISONING_PHASES, PROTOCOL_VERSION};
pub use report::{
    Allocations, BucketReport, Comparison, Environment, Frame, GraphMemory, GraphTotals, Outcome,
    PhaseResult, PhaseStatus, Rerun, RowIsolation, RuntimeEvent, RuntimeReport, StateReport,
    Timing,
};
pub use summary::{render as render_summary, render_with as render_summary_with, FrameDisplay};
