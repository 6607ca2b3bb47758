//! Classes flowing from arguments into unannotated parameters: `_apply_metadata_gate(polls,
//! reqs, self.metadata_buffers)` makes the callee's `metadata_buffers` a `MetadataBuffers`
//! when every reached call site that fills the parameter passes an instance of a project class
//! (a site passing anything else, or nothing the index can type, leaves it unknown). The
//! host-data fields those classes carry (see [`super::properties::attribute_types`]) are then
//! host values in the callee too.

use super::args::{bound, param_of};
use super::index::{ClassId, NodeId, ProjectIndex};
use crate::semantic::AttributeType;
use rustc_hash::{FxHashMap, FxHashSet};

/// Adds to `out` the host-data fields read through unannotated parameters, by the classes
/// every reached call site passes them.
pub(super) fn add_attribute_types(
    index: &ProjectIndex,
    callers: impl Iterator<Item = NodeId>,
    copies: &super::properties::HostCopies,
    out: &mut FxHashMap<NodeId, Vec<AttributeType>>,
) {
    let callers: Vec<NodeId> = callers.collect();
    // The callees some reached site passes an argument of a known type: only their parameters
    // are worth deciding.
    let mut candidates: FxHashSet<NodeId> = FxHashSet::default();
    for &caller in &callers {
        let sites = &index.function(caller).calls;
        for (site, callees) in sites.iter().zip(index.resolved_sites(caller)) {
            if !site.typed_args.is_empty() {
                candidates.extend(callees.iter().copied());
            }
        }
    }
    let mut passed: FxHashMap<(NodeId, &str), Option<Vec<ClassId>>> = FxHashMap::default();
    for &caller in &callers {
        let sites = &index.function(caller).calls;
        for (site, callees) in sites.iter().zip(index.resolved_sites(caller)) {
            for &callee in callees.iter().filter(|callee| candidates.contains(callee)) {
                let function = index.function(callee);
                let bound = bound(&site.target);
                let keys = site
                    .tensor_args
                    .iter()
                    .chain(site.other_args.iter().map(|(key, _)| key));
                for key in keys {
                    let Some(param) = param_of(function, bound, key) else {
                        continue;
                    };
                    if param.annotation.is_some() || param.name == "self" {
                        continue;
                    }
                    let classes = site
                        .typed_args
                        .iter()
                        .find(|(typed, _)| typed == key)
                        .map(|(_, path)| index.eval_path(caller.module, path))
                        .filter(|value| {
                            !value.elements && !value.class_object && !value.classes.is_empty()
                        })
                        .map(|value| value.classes);
                    let slot = passed
                        .entry((callee, param.name.as_str()))
                        .or_insert_with(|| Some(Vec::new()));
                    match (slot.as_mut(), classes) {
                        (Some(known), Some(classes)) => {
                            for class in classes {
                                if !known.contains(&class) {
                                    known.push(class);
                                }
                            }
                        }
                        _ => *slot = None,
                    }
                }
            }
        }
    }
    for ((callee, param), classes) in passed {
        let Some(classes) = classes else {
            continue;
        };
        for class in classes.iter().flat_map(|&class| index.lineage(class, 16)) {
            let known = out.entry(callee).or_default();
            super::properties::push_host_fields(index, copies, class, param, known);
        }
    }
    out.retain(|_, known| !known.is_empty());
}
