//! Prefill branches of captured code. Serving engines capture decode batches; what a captured
//! function does for a batch's prefill work (`if attn_metadata.num_prefills > 0:`, the rest of
//! a function after `if is_decode: return ...`; see `semantic::prefill`) runs eagerly, on every
//! step that has some. The captured search does not follow the calls made there; the functions
//! they call are per-step entries instead, and the findings there are stalls, with the chain
//! that captures the function that makes the call.

use super::index::{NodeId, ProjectIndex};
use super::{Entry, HotPath};
use crate::summary::EntryReason;
use rustc_hash::FxHashMap;

impl ProjectIndex<'_> {
    /// The functions a function calls only where it handles prefill work (calls the constant
    /// parameters rule out aside).
    pub(super) fn prefill_only_callees(&self, node: NodeId) -> Vec<NodeId> {
        let calls = &self.function(node).calls;
        if !calls.iter().any(|site| site.prefill) {
            return Vec::new();
        }
        let sites = calls
            .iter()
            .zip(self.resolved_sites(node))
            .enumerate()
            .filter(|(i, _)| !self.is_dead_site(node, *i))
            .map(|(_, site)| site);
        let mut other: Vec<NodeId> = sites
            .clone()
            .filter(|(site, _)| !site.prefill)
            .flat_map(|(_, targets)| targets.iter().copied())
            .collect();
        other.sort_unstable();
        let mut only: Vec<NodeId> = sites
            .filter(|(site, _)| site.prefill)
            .flat_map(|(_, targets)| targets.iter().copied())
            .filter(|target| other.binary_search(target).is_err())
            .collect();
        only.sort_unstable();
        only.dedup();
        only
    }
}

/// The per-step entries the captured functions' prefill branches call, each with the captured
/// function that calls it, in a stable order.
pub(super) fn entries(
    index: &ProjectIndex,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
) -> Vec<Entry> {
    let mut callers: Vec<NodeId> = captured
        .keys()
        .copied()
        .filter(|node| index.function(*node).calls.iter().any(|site| site.prefill))
        .collect();
    callers.sort_unstable();
    callers
        .into_iter()
        .flat_map(|caller| {
            index
                .prefill_only_callees(caller)
                .into_iter()
                .filter(|callee| !captured.contains_key(callee))
                .map(move |callee| Entry {
                    node: callee,
                    reason: EntryReason::PrefillBranch,
                    via: Some(caller),
                })
        })
        .collect()
}

impl HotPath<'_> {
    /// Whether a line of a function is in one of its prefill branches.
    pub(super) fn in_prefill_block(&self, node: NodeId, line: u32) -> bool {
        self.index
            .function(node)
            .prefill_blocks
            .iter()
            .any(|(start, end)| (*start..=*end).contains(&line))
    }
}
