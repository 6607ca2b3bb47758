//! Properties that wait for the device. Reading `batch.seq_lens_cpu` runs a `@property` whose
//! body copies a device tensor to the host: the attribute read is a sync, though nothing at the
//! read says so. The reads are reported where they happen, in the functions whose parameters
//! (or `self`) are instances of the property's class; a property's own sync is judged by its
//! body (a cache made once on a lasting object does not count, one on a dataclass record does).

use super::index::{NodeId, ProjectIndex};
use crate::semantic::PropertyRead;
use rustc_hash::{FxHashMap, FxHashSet};

/// The property reads each function's parameters may make that wait for the device, for every
/// function with one.
pub(super) fn property_reads(index: &ProjectIndex) -> FxHashMap<NodeId, Vec<PropertyRead>> {
    let names: FxHashSet<&str> = index
        .nodes()
        .map(|node| index.function(node))
        .filter(|function| function.property && function.host_sync.is_some())
        .filter_map(|function| function.qualname.rsplit('.').next())
        .collect();
    let mut reads = FxHashMap::default();
    if names.is_empty() {
        return reads;
    }
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    for node in index.nodes() {
        let function = index.function(node);
        let mut found = Vec::new();
        for (position, param) in function.params.iter().enumerate() {
            let classes = match &param.annotation {
                Some(annotation) if !annotation.elements && !annotation.class_object => {
                    index.type_of_ref(node.module, annotation).classes
                }
                // `self` of a method.
                None if position == 0 && param.name == "self" => function
                    .class
                    .as_deref()
                    .and_then(|class| index.class_named(node.module, class))
                    .into_iter()
                    .collect(),
                _ => continue,
            };
            for class in classes {
                for name in &names {
                    let Some(property) = index.method_in_class(class, name) else {
                        continue;
                    };
                    let summary = index.function(property);
                    if let (true, Some(code)) = (summary.property, summary.host_sync) {
                        found.push(PropertyRead {
                            receiver: param.name.clone(),
                            attribute: (*name).to_string(),
                            property: summary.qualname.clone(),
                            code,
                        });
                    }
                }
            }
        }
        if !found.is_empty() {
            found.dedup();
            reads.insert(node, found);
        }
    }
    reads
}
