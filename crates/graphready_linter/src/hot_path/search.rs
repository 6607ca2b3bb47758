//! The breadth-first search that finds what entry points reach.

use super::index::{NodeId, ProjectIndex};
use super::Entry;
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// Functions a search does not enter but records reaching, with their callers: (the
/// functions, the (callee, caller) pairs met, in search order).
pub(super) type Deferred<'a> = (&'a FxHashSet<NodeId>, &'a mut Vec<(NodeId, NodeId)>);

/// Multi-source breadth-first search; `skip` holds nodes another search already owns; the
/// search does not descend into eager breaks, nor into set-up and harness code (which an entry
/// may still be, when named explicitly). An `exact` search (the captured ones) follows no call
/// resolved by a guess by name (see [`super::guesses`]). `deferred` records the calls it meets
/// of the functions it holds (which `eager` blocks), for the entries of another search.
pub(super) fn search(
    index: &ProjectIndex,
    entries: &[Entry],
    eager: &FxHashSet<NodeId>,
    reached: &mut FxHashMap<NodeId, Option<NodeId>>,
    skip: &FxHashMap<NodeId, Option<NodeId>>,
    exact: bool,
    mut deferred: Option<Deferred>,
) {
    let admits = |node: &NodeId, reached: &FxHashMap<NodeId, Option<NodeId>>| {
        !eager.contains(node) && !reached.contains_key(node) && !skip.contains_key(node)
    };
    let mut frontier = Vec::new();
    for entry in entries {
        if admits(&entry.node, reached) {
            reached.insert(entry.node, None);
            frontier.push(entry.node);
        }
    }
    // Breadth first, one level at a time: the level's call sites are resolved in parallel and
    // merged in order, so that reach and parents are those of a first-in, first-out search.
    while !frontier.is_empty() {
        let callees: Vec<Vec<NodeId>> = frontier
            .par_iter()
            .with_max_len(8)
            .map(|node| {
                if exact {
                    index.exact_callees(*node)
                } else {
                    index.callees(*node)
                }
            })
            .collect();
        let mut next = Vec::new();
        for (node, callees) in frontier.iter().zip(callees) {
            for callee in callees {
                if let Some((set, hits)) = deferred.as_mut() {
                    if set.contains(&callee) {
                        hits.push((callee, *node));
                    }
                }
                if admits(&callee, reached) && !index.runs_once_from(*node, callee) {
                    reached.insert(callee, Some(*node));
                    next.push(callee);
                }
            }
        }
        frontier = next;
    }
}
