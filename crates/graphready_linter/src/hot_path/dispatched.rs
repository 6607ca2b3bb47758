//! Module forwards a class decorator replaces with a dispatcher (see
//! `crate::summary::builder::dispatch`): the class's own `forward` runs only when a setting
//! selects it (transformers' eager experts loop under `@use_experts_implementation`), so it is
//! no entry point and no call is followed into it, as for a class only another platform builds.

use super::index::{Definition, NodeId, ProjectIndex};
use rustc_hash::FxHashSet;

/// The own `forward` of every class whose decorator replaces it with a dispatcher.
pub(super) fn dispatched_forwards(index: &ProjectIndex) -> FxHashSet<NodeId> {
    let mut out = FxHashSet::default();
    for (module, summary) in index.modules().iter().enumerate() {
        for class in summary.classes.iter().filter(|c| !c.decorators.is_empty()) {
            let dispatches = class.decorators.iter().any(|decorator| {
                matches!(index.lookup(module, decorator), Some(Definition::Function(node))
                    if index.function(node).dispatches_forward)
            });
            if !dispatches {
                continue;
            }
            if let Some(function) = index.own_method(module, &class.name, "forward") {
                out.insert(NodeId { module, function });
            }
        }
    }
    out
}
