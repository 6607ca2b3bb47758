//! GR2xx: operations whose output shape depends on data, which capture cannot record.

pub mod rules;

use rustc_hash::FxHashSet;

/// What the dynamic-shape rules remember about the function being visited.
#[derive(Debug, Default)]
pub struct State<'a> {
    /// GR205: names bound to `<device tensor>.tolist()`.
    pub device_lists: FxHashSet<&'a str>,
}
