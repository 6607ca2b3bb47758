//! Classes that cannot be captured. A base class that declares the hooks an engine calls to
//! prepare CUDA-graph capture and leaves them to subclasses (SGLang's attention backends:
//! `def init_cuda_graph_state(self, ...): raise NotImplementedError()`) says which of its
//! subclasses take part in captured steps: those that override one of its CUDA-graph methods.
//! A subclass that overrides none of them, itself, through a base below the declaring class or
//! through a subclass of its own, fails the engine's capture set-up; the engine runs it eagerly
//! (a flex or torch-native attention backend turns CUDA graphs off). The captured search does
//! not enter its methods; those that captured code calls are per-step entries instead, with the
//! chain that captures the caller.

use super::index::{ClassId, NodeId, ProjectIndex};
use super::Entry;
use crate::summary::EntryReason;
use rustc_hash::{FxHashMap, FxHashSet};

/// The classes below a base with capture hooks that override none of the base's CUDA-graph
/// methods (see the module documentation).
pub(super) fn uncapturable(index: &ProjectIndex) -> FxHashSet<ClassId> {
    let mut out = FxHashSet::default();
    for (module, summary) in index.modules().iter().enumerate() {
        for (position, class) in summary.classes.iter().enumerate() {
            if class.capture_hooks.is_empty() {
                continue;
            }
            let subclasses = index.subclasses_of((module, position));
            // Any of the base's CUDA-graph methods counts, the hooks it leaves abstract and those
            // it gives a default that does nothing (`init_decode_cuda_graph_batch_info`).
            let graph_methods: Vec<&String> = class
                .methods
                .iter()
                .filter(|method| crate::summary::names_cuda_graphs(method))
                .collect();
            let implements = |sub: &ClassId| {
                index
                    .class_summary(*sub)
                    .methods
                    .iter()
                    .any(|method| graph_methods.contains(&method))
            };
            let mut capturable: FxHashSet<ClassId> = FxHashSet::default();
            for sub in subclasses.iter().filter(|sub| implements(sub)) {
                capturable.insert(*sub);
                capturable.extend(index.subclasses_of(*sub).iter().copied());
                // The bases between it and the declaring class run for it.
                let mut pending = index.bases_of(*sub);
                while let Some(base) = pending.pop() {
                    if subclasses.contains(&base) && capturable.insert(base) {
                        pending.extend(index.bases_of(base));
                    }
                }
            }
            out.extend(
                subclasses
                    .iter()
                    .copied()
                    .filter(|sub| !capturable.contains(sub)),
            );
        }
    }
    // A class that declares hooks itself is an interface, whoever its bases are.
    out.retain(|class| index.class_summary(*class).capture_hooks.is_empty());
    out
}

/// The per-step entries among the uncapturable classes' methods that captured code calls, each
/// with the captured function that calls it: from `hits`, the (callee, caller) pairs the
/// captured search met, less callees it captured anyway, in a stable order.
pub(super) fn entries(
    hits: Vec<(NodeId, NodeId)>,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
) -> Vec<Entry> {
    // The first caller the search met, as a chain of the captured search would show it.
    let mut seen = FxHashSet::default();
    let mut hits: Vec<(NodeId, NodeId)> = hits
        .into_iter()
        .filter(|(callee, _)| !captured.contains_key(callee) && seen.insert(*callee))
        .collect();
    hits.sort_unstable();
    hits.into_iter()
        .map(|(node, caller)| Entry {
            node,
            reason: EntryReason::Uncapturable,
            via: Some(caller),
        })
        .collect()
}
