//! GR3xx: host data inside the step, which capture bakes in or cannot record.

pub mod rules;

use ruff_text_size::TextRange;
use rustc_hash::FxHashSet;

/// What the host-data rules remember about the function being visited.
#[derive(Debug, Default)]
pub struct State<'a> {
    /// GR303: names holding host copies of device values (`.item()`, `.tolist()`, `int(t)`).
    pub device_reads: FxHashSet<&'a str>,
    /// GR304: `self.<attribute> += ...` in captured code, waiting for a read of the attribute.
    pub counters: Vec<(&'a str, TextRange)>,
    /// GR304: `self.<attribute>` reads in this function.
    pub self_reads: FxHashSet<&'a str>,
    /// GR304: logging calls, and tests of blocks that only log: reads there are not data.
    pub logging: Vec<TextRange>,
    /// GR303: ranks of the tensors this function allocated, by name.
    pub ranks: rustc_hash::FxHashMap<&'a str, usize>,
}
