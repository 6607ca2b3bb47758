//! Attribute reads: what `x.attr` holds, by what the model knows of `x` (a tensor's metadata,
//! a host mirror's name, a class's annotated or assigned attributes, a reduction's values).

use super::host_memory;
use super::model::SemanticModel;
use super::syntax::host_named;
use super::tensor_api::{self, Returns};
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr};

impl SemanticModel<'_> {
    pub(super) fn attribute_ty(&self, attribute: &ast::ExprAttribute) -> Ty {
        let attr = attribute.attr.id.as_str();
        if self.is_host_field(attr) {
            return Ty::CpuTensor;
        }
        if let Some(ty) = self.record_read(attribute) {
            return ty;
        }
        if let Some(ty) = self.known_attribute(attribute) {
            return ty;
        }
        // The `(values, indices)` of a reduction, sort or top-k (`x.max(dim=1).values`) live
        // where the tensor they were computed from lives, in new memory.
        if matches!(attr, "values" | "indices") {
            match self.ty(&attribute.value) {
                Ty::TensorSeq => return Ty::Tensor,
                ty if ty == Ty::HostTensorSeq || ty.is_host_tensor() => {
                    return Ty::PageableTensor;
                }
                _ => {}
            }
        }
        if let Some(class) = self.instance_class(&attribute.value) {
            return match self.class_attribute(class, attr, 4).unwrap_or_default() {
                Ty::Unknown | Ty::Tensor if host_named(attr) => Ty::CpuTensor,
                ty => ty,
            };
        }
        match self.ty(&attribute.value) {
            Ty::Tensor => tensor_api::tensor_attribute(attr).map_or(Ty::Unknown, Ty::from),
            ty if ty.is_host_tensor() => match tensor_api::tensor_attribute(attr) {
                Some(Returns::Tensor) => host_memory::method_memory(ty, "view"),
                other => other.map_or(Ty::Unknown, Ty::from),
            },
            Ty::Array => Ty::Array,
            // A field of what a tokenizer or processor returned (`inputs.pixel_values`).
            Ty::HostTensorSeq if attr != "data" => Ty::CpuTensor,
            Ty::Unknown if attr == "np" => Ty::Array,
            // Whatever holds it (an object, or `None` on a path that fails), an attribute named
            // like a host mirror (`dp_meta.num_tokens_across_dp_cpu`).
            Ty::Unknown | Ty::Host if host_named(attr) || super::syntax::is_host_half(attr) => {
                Ty::CpuTensor
            }
            // A configuration's settings (`config.fullatt_block_indexes`,
            // `self.vision_config.patch_size`) are plain Python values: configurations are read
            // from JSON and command lines, never hold tensors.
            Ty::Unknown | Ty::Host if is_configuration(&attribute.value) => Ty::Host,
            Ty::Unknown if self.qualified_name(&attribute.value).is_none() => {
                // Host metadata whatever the receiver is.
                match attr {
                    "shape" | "dtype" | "device" | "ndim" | "is_cuda" => Ty::Host,
                    _ => Ty::Unknown,
                }
            }
            _ => Ty::Unknown,
        }
    }
}

/// Whether an expression names a configuration object: a name or attribute `config`, `cfg`, or
/// one ending in `_config` (`hf_config`, `self.vision_config`).
fn is_configuration(expr: &Expr) -> bool {
    let name = match expr {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    matches!(name, "config" | "cfg") || name.ends_with("_config")
}

/// `a.b.c` as text, for a chain of attribute reads on a name.
pub(super) fn attribute_path(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Name(name) => Some(name.id.to_string()),
        Expr::Attribute(attribute) => {
            let mut path = attribute_path(&attribute.value)?;
            path.push('.');
            path.push_str(attribute.attr.as_str());
            Some(path)
        }
        _ => None,
    }
}
