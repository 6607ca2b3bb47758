//! Helpers that keep host data on the host: a function of this module whose body only runs
//! PyTorch and NumPy operations, methods of the values it holds, builtins and other such
//! helpers, and never moves or makes data on a device (`.cuda()`, `.to(device)`,
//! `torch.zeros(..., device=device)`, a module's forward; `device=seq_lens.device`, an input's,
//! keeps the data with the input), returns host data when it is given host tensors and no
//! device tensor: `pool_columns(clip_cpu, 4)` after `clip_cpu = clip.cpu()` is a host tensor,
//! in this module and, through the project's facts, in any other. Anything else it calls
//! (another module's function, an object of unknown type) may move the data, and the helper is
//! not one.

use super::model::SemanticModel;
use super::syntax::keyword;
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr};

/// The builtins a helper may call without moving data.
const BUILTINS: &[&str] = &[
    "int",
    "float",
    "bool",
    "str",
    "len",
    "range",
    "min",
    "max",
    "abs",
    "round",
    "sum",
    "list",
    "tuple",
    "dict",
    "set",
    "sorted",
    "enumerate",
    "zip",
    "isinstance",
    "getattr",
    "hasattr",
    "print",
    "divmod",
    "map",
    "any",
    "all",
    "reversed",
    "slice",
    "type",
    "ValueError",
    "RuntimeError",
    "TypeError",
    "AssertionError",
    "KeyError",
    "IndexError",
];

/// The roots of the libraries whose functions keep host data on the host unless told a device.
const HOST_LIBRARIES: &[&str] = &["torch", "numpy", "math"];

impl SemanticModel<'_> {
    /// Whether a call, made in a helper, keeps host data on the host (see the module doc).
    pub fn keeps_data_on_host(&self, call: &ast::ExprCall) -> bool {
        if let Some(qualified) = self.qualified_name(&call.func) {
            let root = qualified.split('.').next().unwrap_or_default();
            // `torch.cuda.*` serves the device; a factory told a device makes data there.
            return HOST_LIBRARIES.contains(&root)
                && !qualified.starts_with("torch.cuda")
                && keyword(call, "device")
                    .is_none_or(|device| self.is_host_device(device) || self.input_device(device));
        }
        match &*call.func {
            Expr::Name(name) => {
                let name = name.id.as_str();
                BUILTINS.contains(&name) || self.types.host_preserving.contains(name)
            }
            Expr::Attribute(attribute) => {
                let method = attribute.attr.as_str();
                match method {
                    "cuda" => return false,
                    "to" => return !self.moves_to_device(call),
                    // A tensor's metadata, whatever holds it (`assert dcp_rank.numel() == 1`).
                    "numel" | "dim" | "size" | "stride" | "nelement" | "ndimension"
                    | "element_size" | "is_contiguous" | "get_device" => return true,
                    _ => {}
                }
                if let Some(class) = self.instance_class(&attribute.value) {
                    return self
                        .types
                        .host_preserving
                        .contains(&format!("{class}.{method}"));
                }
                let receiver = self.ty(&attribute.value);
                receiver.is_tensor() || receiver.is_host() || receiver == Ty::TensorSeq
            }
            _ => false,
        }
    }

    /// Whether a device is a parameter's (`device=seq_lens.device`): data made there stays
    /// where the helper's input is.
    fn input_device(&self, device: &Expr) -> bool {
        matches!(device, Expr::Attribute(attribute)
            if attribute.attr.as_str() == "device"
                && matches!(&*attribute.value, Expr::Name(name) if self.is_parameter(name.id.as_str())))
    }

    /// Whether `x.to(...)` may move `x` to a device: a target that is not the host, a dtype or a
    /// host tensor.
    fn moves_to_device(&self, call: &ast::ExprCall) -> bool {
        let target = keyword(call, "device").or_else(|| call.arguments.args.first());
        target.is_some_and(|target| {
            !(self.is_host_device(target)
                || self.is_dtype(target)
                || self.ty(target).is_host_tensor())
        })
    }

    /// Records that a function of this module keeps host data on the host.
    pub fn learn_host_preserving(&mut self, qualname: &str) {
        self.invalidate();
        self.types.host_preserving.insert(qualname.to_string());
    }

    /// What a call of this module's function `qualname` returns, `ty` as its body says: host
    /// data when the function keeps host data on the host and the call gives it host tensors
    /// and no device tensor.
    pub(super) fn host_in_host_out(&self, qualname: &str, call: &ast::ExprCall, ty: Ty) -> Ty {
        self.host_if_preserving(self.types.host_preserving.contains(qualname), call, ty)
    }

    /// `ty`, the return of a function called by `call`, or a host tensor when the function is
    /// `preserving` (keeps host data on the host) and the call gives it host tensors and no
    /// device tensor.
    pub(super) fn host_if_preserving(&self, preserving: bool, call: &ast::ExprCall, ty: Ty) -> Ty {
        if ty == Ty::Tensor && preserving && self.host_args(call) {
            Ty::CpuTensor
        } else {
            ty
        }
    }

    /// Whether a call gives host tensors and no device tensor (nor a value of unknown place).
    pub(super) fn host_args(&self, call: &ast::ExprCall) -> bool {
        let args = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value));
        let mut host = false;
        for arg in args {
            match self.ty(arg) {
                Ty::Tensor | Ty::TensorSeq | Ty::Unknown if !is_literal(arg) => return false,
                arg_ty => host |= arg_ty.is_host_tensor(),
            }
        }
        host
    }
}

/// A literal argument (`4`, `"max"`, `None`): no data.
fn is_literal(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
    )
}
