//! Resolved settings: what the checker needs, already validated and converted.

use crate::registry::RuleSet;
use ruff_python_ast::{comparable::ComparableExpr, Expr};
use thiserror::Error;

/// A configured debug guard (`VERBOSE >= 2`): code under it runs only when debugging, never in a
/// captured production step.
#[derive(Debug)]
pub struct DebugGuard {
    source: String,
    expr: Expr,
}

#[derive(Debug, Error)]
#[error("`{source_text}` is not a Python expression: {reason}")]
pub struct GuardParseError {
    pub source_text: String,
    pub reason: String,
}

impl DebugGuard {
    pub fn parse(source: &str) -> Result<Self, GuardParseError> {
        let parsed =
            ruff_python_parser::parse_expression(source).map_err(|err| GuardParseError {
                source_text: source.to_string(),
                reason: err.error.to_string(),
            })?;
        Ok(DebugGuard {
            source: source.to_string(),
            expr: *parsed.into_syntax().body,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Structural equality, ignoring positions and parentheses.
    pub fn matches(&self, expr: &Expr) -> bool {
        ComparableExpr::from(&self.expr) == ComparableExpr::from(expr)
    }
}

/// The GPUs whose graphs the analysis targets. NVIDIA's (CUDA) always; AMD's (ROCm, whose HIP
/// graphs PyTorch captures through the same `torch.cuda.graph`) unless left out: then code only
/// a ROCm build runs (`if current_platform.is_rocm():`, a `rocm_aiter_*` backend, a model's
/// `amd/` package, `forward_hip`) is code for another device, neither reported nor followed,
/// like code for an XPU or an NPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platforms {
    pub rocm: bool,
}

impl Default for Platforms {
    /// Both: engines capture graphs on AMD's GPUs too, and fix hazards in their ROCm code.
    fn default() -> Self {
        Platforms { rocm: true }
    }
}

/// Everything [`crate::check`] needs for one file.
#[derive(Debug)]
pub struct Settings {
    /// The rules that may report in this file.
    pub rules: RuleSet,
    pub debug_guards: Vec<DebugGuard>,
    /// Function names whose truthy result means "capturing" (matched on the last dotted segment).
    pub capture_predicates: Vec<String>,
    pub platforms: Platforms,
}

/// The capture predicates known out of the box: PyTorch's own, and the engine equivalents.
pub const DEFAULT_CAPTURE_PREDICATES: &[&str] = &[
    "is_current_stream_capturing",
    "get_is_capture_mode",
    "is_in_breakable_cuda_graph",
];

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rules: RuleSet::default_selection(),
            debug_guards: Vec::new(),
            capture_predicates: DEFAULT_CAPTURE_PREDICATES
                .iter()
                .map(|name| (*name).to_string())
                .collect(),
            platforms: Platforms::default(),
        }
    }
}
