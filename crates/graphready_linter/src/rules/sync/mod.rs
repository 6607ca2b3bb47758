//! GR1xx: device→host synchronisations.

pub mod rules;

use rustc_hash::FxHashSet;

/// What the sync rules remember about the function being visited.
#[derive(Debug, Default)]
pub struct State<'a> {
    /// GR104: names assigned a Python `bool` literal in this function (host flags).
    pub host_flags: FxHashSet<&'a str>,
}
