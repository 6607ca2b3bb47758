//! Prefill branches of captured code. Serving engines capture decode batches; what a captured
//! function does for a batch's prefill work (`if attn_metadata.num_prefills > 0:`, the rest of
//! a function after `if is_decode: return ...`; see `semantic::prefill`) runs eagerly, on every
//! step that has some. The captured search does not follow the calls made there; the functions
//! they call are per-step entries instead, and the findings there are stalls, with the chain
//! that captures the function that makes the call. The fallbacks every captured call skips
//! (see `given`) are handled alike.

use super::index::{NodeId, ProjectIndex};
use super::{Entry, HotPath};
use crate::summary::{CallSite, EntryReason};
use rustc_hash::FxHashMap;

impl ProjectIndex<'_> {
    /// Whether a call site runs outside the graph when its function is captured: made where the
    /// function handles prefill work, or in a fallback every captured call skips (see `given`).
    fn eager_site(&self, node: NodeId, i: usize, site: &CallSite) -> bool {
        site.prefill || self.is_fallback_site(node, i)
    }

    /// The functions a function calls only where it handles prefill work, or in a fallback
    /// every captured call skips (calls the constant parameters rule out aside).
    pub(super) fn eager_only_callees(&self, node: NodeId) -> Vec<NodeId> {
        let calls = &self.function(node).calls;
        if !calls
            .iter()
            .enumerate()
            .any(|(i, site)| self.eager_site(node, i, site))
        {
            return Vec::new();
        }
        let sites = calls
            .iter()
            .zip(self.resolved_sites(node))
            .enumerate()
            .filter(|(i, _)| !self.is_dead_site(node, *i));
        let mut other: Vec<NodeId> = sites
            .clone()
            .filter(|(i, (site, _))| !self.eager_site(node, *i, site))
            .flat_map(|(_, (_, targets))| targets.iter().copied())
            .collect();
        other.sort_unstable();
        let mut only: Vec<NodeId> = sites
            .filter(|(i, (site, _))| self.eager_site(node, *i, site))
            .flat_map(|(_, (_, targets))| targets.iter().copied())
            .filter(|target| other.binary_search(target).is_err())
            .collect();
        only.sort_unstable();
        only.dedup();
        only
    }

    /// Whether a function calls `callee` where it handles prefill work.
    fn calls_for_prefill(&self, node: NodeId, callee: NodeId) -> bool {
        self.function(node)
            .calls
            .iter()
            .zip(self.resolved_sites(node))
            .any(|(site, targets)| site.prefill && targets.contains(&callee))
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
        .filter(|node| {
            index
                .function(*node)
                .calls
                .iter()
                .enumerate()
                .any(|(i, site)| index.eager_site(*node, i, site))
        })
        .collect();
    callers.sort_unstable();
    callers
        .into_iter()
        .flat_map(|caller| {
            index
                .eager_only_callees(caller)
                .into_iter()
                .filter(|callee| !captured.contains_key(callee))
                .map(move |callee| Entry {
                    node: callee,
                    reason: if index.calls_for_prefill(caller, callee) {
                        EntryReason::PrefillBranch
                    } else {
                        EntryReason::FallbackBranch
                    },
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
