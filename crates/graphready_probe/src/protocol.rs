//! The JSON-lines protocol spoken by the Python harness (`python/graphready/protocol.py`).
//!
//! One object per line, tagged by `type`. The first line is `hello` with the protocol version;
//! a driver refuses a harness whose major version differs. Unknown message types and unknown
//! fields are ignored, so a newer harness can add data without breaking an older driver.

use crate::ranks::HangReport;
use crate::report::{Environment, PhaseResult};
use serde::Deserialize;

/// The protocol version this driver speaks.
pub const PROTOCOL_VERSION: u32 = 3;

/// The phases in the order the harness runs them.
pub const PHASES: &[&str] = &[
    "setup",
    "warmup",
    "sync_scan",
    "profiler_scan",
    "allocations",
    "capture",
    "replay",
    "row_isolation",
    "uninitialized",
    "timing",
];

/// Phases that poison memory on purpose (NaN-filled uninitialised memory, hostile pad rows). A
/// device assert in one of them is re-run without poisoning to tell who caused it.
pub const POISONING_PHASES: &[&str] = &["row_isolation", "uninitialized"];

/// The environment variables that place each rank (torchrun's names).
pub const RANK_ENV: &[&str] = &[
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "MASTER_ADDR",
    "MASTER_PORT",
];

/// Set in every child: NVLink multicast stays off (a program that uses it can take a shared
/// host's GPUs out of service).
pub const NVLS_OFF: &[(&str, &str)] = &[
    ("NCCL_NVLS_ENABLE", "0"),
    ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
    ("NVSHMEM_DISABLE_NVLS", "1"),
];

/// The backends a group may use (`--dist-backend`).
pub const BACKENDS: &[&str] = &["nccl", "gloo"];

/// What the driver writes on a rank's stdin to ask for its `hang_report`.
pub const DUMP_REQUEST: &str = "dump";

/// A rank's place, from the `environment` message.
#[derive(Debug, Clone, Deserialize)]
pub struct RankInfo {
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub rank: Option<u32>,
    #[serde(default)]
    pub world_size: Option<u32>,
    #[serde(default)]
    pub device: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    Hello {
        protocol: u32,
        #[serde(default)]
        harness: Option<String>,
        #[serde(default)]
        python: Option<String>,
        #[serde(default)]
        executable: Option<String>,
    },
    Environment {
        #[serde(flatten)]
        environment: Environment,
        #[serde(default)]
        distributed: Option<RankInfo>,
    },
    EnvError {
        kind: String,
        message: String,
    },
    PhaseStart {
        bucket: u32,
        phase: String,
    },
    Phase {
        bucket: u32,
        #[serde(flatten)]
        result: Box<PhaseResult>,
    },
    Done {
        bucket: u32,
    },
    HangReport(Box<HangReport>),
    #[serde(other)]
    Unknown,
}

impl Message {
    /// Parse one line. `Ok(None)` for a line that is not a JSON object (noise), `Err` for a JSON
    /// object that does not fit the protocol.
    pub fn parse(line: &str) -> Result<Option<Message>, serde_json::Error> {
        let trimmed = line.trim();
        if !trimmed.starts_with('{') {
            return Ok(None);
        }
        serde_json::from_str(trimmed).map(Some)
    }
}
