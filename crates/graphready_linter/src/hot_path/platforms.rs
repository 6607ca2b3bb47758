//! Classes that exist only on a device without CUDA graphs. A factory that builds a class only
//! under a platform test (`if current_platform.is_xpu() and backend == "batched_triton": return
//! BatchedPrepareAndFinalize(...)`), or only in a module for such a device, makes no instance of
//! it on a CUDA GPU: a call through its base class (class hierarchy analysis) never runs its
//! overrides there, and its `forward` is no model the engine captures.

use super::index::{ClassId, NodeId, ProjectIndex};
use super::processors::less_built_elsewhere;
use rustc_hash::FxHashSet;

/// The classes the project constructs somewhere, and only in code for a device without CUDA
/// graphs. A class with subclasses stays: they inherit its methods.
pub(super) fn platform_only(index: &ProjectIndex) -> FxHashSet<ClassId> {
    let nodes: Vec<NodeId> = index.nodes().collect();
    let mut only: FxHashSet<ClassId> = nodes
        .iter()
        .flat_map(|&node| {
            index
                .function(node)
                .platform_constructions
                .iter()
                .filter_map(move |reference| index.class_of(node.module, reference))
        })
        .filter(|&class| index.subclasses_of(class).is_empty())
        .collect();
    if only.is_empty() {
        return only;
    }
    // Less what code for every platform constructs.
    less_built_elsewhere(index, nodes, &mut only, &FxHashSet::default(), false);
    only
}

/// The methods of `classes`.
pub(super) fn methods(index: &ProjectIndex, classes: &FxHashSet<ClassId>) -> Vec<NodeId> {
    classes
        .iter()
        .flat_map(|&class| {
            let summary = index.class_summary(class);
            summary.methods.iter().filter_map(move |method| {
                index
                    .own_method(class.0, &summary.name, method)
                    .map(|function| NodeId {
                        module: class.0,
                        function,
                    })
            })
        })
        .collect()
}
