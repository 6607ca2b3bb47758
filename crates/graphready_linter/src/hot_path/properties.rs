//! Properties that wait for the device. Reading `batch.seq_lens_cpu` runs a `@property` whose
//! body copies a device tensor to the host: the attribute read is a sync, though nothing at the
//! read says so. The reads are reported where they happen, in the functions whose parameters
//! (or `self`) are instances of the property's class; a property's own sync is judged by its
//! body (a cache made once on a lasting object does not count, one on a dataclass record does).
//! Also the fields those classes annotate as host data (`num_scheduled_tokens: np.ndarray`):
//! read through such a parameter, they are host values.

use super::index::{ClassId, NodeId, ProjectIndex};
use crate::semantic::{AttributeType, PropertyRead, Ty};
use rayon::prelude::*;
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
    if names.is_empty() {
        return FxHashMap::default();
    }
    let mut names: Vec<&str> = names.into_iter().collect();
    names.sort_unstable();
    let nodes: Vec<NodeId> = index.nodes().collect();
    nodes
        .into_par_iter()
        .filter_map(|node| {
            let mut found = Vec::new();
            for (param, classes) in typed_params(index, node) {
                for class in classes {
                    for name in &names {
                        let Some(property) = index.method_in_class(class, name) else {
                            continue;
                        };
                        let summary = index.function(property);
                        if let (true, Some(code)) = (summary.property, summary.host_sync) {
                            found.push(PropertyRead {
                                receiver: param.to_string(),
                                attribute: (*name).to_string(),
                                property: summary.qualname.clone(),
                                code,
                            });
                        }
                    }
                }
            }
            found.dedup();
            (!found.is_empty()).then_some((node, found))
        })
        .collect()
}

/// A function's parameters that are instances of project classes (by annotation, or `self` of
/// a method), with the classes.
fn typed_params<'i>(index: &'i ProjectIndex, node: NodeId) -> Vec<(&'i str, Vec<ClassId>)> {
    let function = index.function(node);
    function
        .params
        .iter()
        .enumerate()
        .filter_map(|(position, param)| {
            let classes = match &param.annotation {
                Some(annotation) if !annotation.elements && !annotation.class_object => {
                    index.type_of_ref(node.module, annotation).classes
                }
                // `self` of a method.
                None if position == 0 && param.name == "self" => {
                    index.method_class(node).into_iter().collect()
                }
                // An override's unannotated parameter: what the method it overrides says.
                None if position > 0 => index.inherited_param_type(node, &param.name)?,
                _ => return None,
            };
            (!classes.is_empty()).then_some((param.name.as_str(), classes))
        })
        .collect()
}

/// The host-data fields each function's class-typed parameters carry, by the annotations of
/// their classes' bodies and bases' (`input_batch: InputBatch` whose dataclass says
/// `num_scheduled_tokens: np.ndarray`): `(receiver, attribute, type)`, for every function with
/// one, with the fields the classes replace with host copies (`copies`, see
/// [`super::host_copies`]). `self` is left out: the class's own module already knows its fields.
pub(super) fn attribute_types(
    index: &ProjectIndex,
    copies: &HostCopies,
) -> FxHashMap<NodeId, Vec<AttributeType>> {
    if copies.is_empty()
        && !index
            .modules()
            .iter()
            .any(|m| m.classes.iter().any(|c| !c.host_fields.is_empty()))
    {
        return FxHashMap::default();
    }
    let nodes: Vec<NodeId> = index.nodes().collect();
    nodes
        .into_par_iter()
        .filter_map(|node| {
            let mut found: Vec<AttributeType> = Vec::new();
            for (param, classes) in typed_params(index, node) {
                if param == "self" {
                    continue;
                }
                let lineages = classes
                    .iter()
                    .rev()
                    .flat_map(|&class| index.lineage(class, 16));
                for class in lineages {
                    push_host_fields(index, copies, class, param, &mut found);
                }
            }
            (!found.is_empty()).then_some((node, found))
        })
        .collect()
}

/// The fields each class replaces with host copies of themselves.
pub(super) type HostCopies = FxHashMap<ClassId, Vec<(String, Ty)>>;

/// The host-data fields of one class, read through `receiver`, added to `found` (once each):
/// those it declares, then those it replaces with host copies.
pub(super) fn push_host_fields(
    index: &ProjectIndex,
    copies: &HostCopies,
    class: ClassId,
    receiver: &str,
    found: &mut Vec<AttributeType>,
) {
    let copied = copies.get(&class).into_iter().flatten();
    for (field, ty) in index.class_summary(class).host_fields.iter().chain(copied) {
        if !found
            .iter()
            .any(|f| f.receiver == receiver && f.field == *field)
        {
            found.push(AttributeType {
                receiver: receiver.to_string(),
                field: field.clone(),
                ty: *ty,
            });
        }
    }
}
