//! GR5xx: calls that are illegal or unsafe while a CUDA graph is being captured.

pub mod rules;

use rustc_hash::FxHashSet;

/// What the capture-illegal rules remember about the function being visited.
#[derive(Debug, Default)]
pub struct State<'a> {
    /// GR506: names holding host clock readings.
    pub clock_names: FxHashSet<&'a str>,
}
