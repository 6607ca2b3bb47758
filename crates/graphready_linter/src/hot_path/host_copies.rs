//! Fields the project's classes replace with host copies of themselves (see
//! [`crate::summary::HostCopy`]): a step result's `copy_to_cpu()` that rebinds
//! `self.next_token_ids = async_d2h(self.next_token_ids)`. Readers of such a field through a
//! parameter typed with the class (`result: GenerationBatchResult`) read host data: the copy is
//! how the class hands its results to the host. A field is one only where the copy is certain
//! to give host data: a move to the host, or a project function every return of which is a
//! host tensor.

use super::index::{Definition, ProjectIndex};
use crate::semantic::Ty;

/// Per class, the fields some method replaces with host copies, typed as host tensors (lists
/// of them where the copy is element-wise).
pub(super) fn host_copies(index: &ProjectIndex) -> super::properties::HostCopies {
    let mut out = super::properties::HostCopies::default();
    for (m, module) in index.modules().iter().enumerate() {
        for (c, class) in module.classes.iter().enumerate() {
            for copy in &class.host_copies {
                let host = match &copy.via {
                    None => true,
                    Some(reference) => match index.lookup(m, reference) {
                        Some(Definition::Function(node)) => {
                            index.function(node).returns.is_host_tensor()
                        }
                        _ => false,
                    },
                };
                if !host {
                    continue;
                }
                let owners = match &copy.holder {
                    None => vec![(m, c)],
                    Some(holder) => index.field_classes((m, c), holder),
                };
                let ty = if copy.elements {
                    Ty::HostTensorSeq
                } else {
                    Ty::CpuTensor
                };
                for owner in owners {
                    let fields = out.entry(owner).or_default();
                    if !fields.iter().any(|(field, _)| *field == copy.field) {
                        fields.push((copy.field.clone(), ty));
                    }
                }
            }
        }
    }
    out
}
