//! Host memory: which host tensors are pinned (page-locked) and which are pageable.
//!
//! A copy to the device is asynchronous only from pinned memory. PyTorch allocates every new
//! host tensor in pageable memory unless told `pin_memory=True` (or `.pin_memory()` copies it),
//! so the result of any host operation that makes a new tensor is pageable, while views and
//! in-place methods keep the memory they were given. Where graphready cannot tell (a parameter
//! named `*_cpu`, a method that may return its receiver), the answer is
//! [`Ty::CpuTensor`]: host memory, pinning unknown. A name is weak evidence (`cpu_chunk_size` may
//! be an integer), so what is computed from a [`Ty::CpuTensor`] stays one: only tensors known to
//! be host tensors make pageable results.

use super::model::SemanticModel;
use super::syntax::{expr_host_named, is_cpu_move, keyword};
use super::tensor_api;
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr};

impl SemanticModel<'_> {
    /// What a `torch.<function>(...)` call without a device (or with `device="cpu"`) makes on
    /// the host: factories and wrappers by their memory, functions of host tensors a new host
    /// tensor. `None` when the call does not make a host tensor.
    pub(super) fn host_function_ty(&self, qualified: &str, call: &ast::ExprCall) -> Option<Ty> {
        let name = qualified.strip_prefix("torch.")?;
        // `F.pad(cpu_t, ...)`, `torch.linalg.norm(cpu_t)`: functions of a host tensor too.
        let name = tensor_api::FUNCTION_NAMESPACES
            .iter()
            .find_map(|namespace| name.strip_prefix(namespace))
            .unwrap_or(name);
        if name.contains('.') || !name.starts_with(char::is_lowercase) {
            // Classes: `nn.Parameter(torch.ones(1))` moves with its module.
            return None;
        }
        let first = call.arguments.args.first();
        match name {
            "as_tensor" | "asarray" | "from_numpy" => {
                let data = first.or_else(|| keyword(call, "data"))?;
                return Some(wrapped_memory(data, self.ty(data)));
            }
            "frombuffer" => return Some(Ty::CpuTensor),
            _ if tensor_api::is_host_factory(qualified) => return Some(factory_memory(call)),
            _ => {}
        }
        // Told to build on the host (`torch.normal(mean=m, size=(1,), device="cpu")`).
        if keyword(call, "device").is_some_and(|device| self.is_host_device(device)) {
            return Some(factory_memory(call));
        }
        // Functions of host tensors stay on the host, in a new tensor (`torch.sin(cpu_t)`,
        // `torch.cat([a_cpu, b_cpu])`).
        let first = first?;
        let ty = match first {
            // `torch.cat([torch.zeros(1), prefix])`: joining needs every part on one device, so
            // one part known to be made on the host puts the result there.
            Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. })
                if JOINS.contains(&name)
                    && elts.iter().any(|elt| self.ty(elt).is_made_on_host()) =>
            {
                return Some(Ty::PageableTensor);
            }
            // The same through a list bound with such a part and appended to since
            // (`parts = [torch.tensor([0])]`, `parts.append(...)`, `torch.cat(parts)`).
            Expr::Name(list) if JOINS.contains(&name) && self.has_host_part(list.id.as_str()) => {
                return Some(Ty::PageableTensor);
            }
            Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. })
                if !elts.is_empty() && elts.iter().all(|elt| self.ty(elt).is_host_tensor()) =>
            {
                let known = elts.iter().all(|elt| self.ty(elt).is_made_on_host());
                return Some(if known {
                    Ty::PageableTensor
                } else {
                    Ty::CpuTensor
                });
            }
            other => match self.ty(other) {
                // `torch.stack(parts)` of a list of host tensors.
                Ty::HostTensorSeq => Ty::CpuTensor,
                ty => ty,
            },
        };
        ty.is_host_tensor().then(|| new_host_tensor(ty))
    }

    /// What a method that moves or converts a tensor between host and device memory returns
    /// (`.cpu()`, `.to(...)`, `.cuda()`, `.numpy()`, `.pin_memory()`, `.type(torch.BoolTensor)`),
    /// or `None` for any other method.
    pub(super) fn transfer_ty(
        &self,
        call: &ast::ExprCall,
        method: &str,
        receiver: Ty,
        receiver_expr: &Expr,
    ) -> Option<Ty> {
        let tensor_or_unknown = receiver.is_tensor() || receiver == Ty::Unknown;
        match method {
            "numpy" if call.arguments.is_empty() => Some(Ty::Array),
            "pin_memory" if tensor_or_unknown => Some(Ty::PinnedTensor),
            "cpu" | "to" if receiver.is_host_tensor() && self.stays_on_host(call, method) => {
                Some(method_memory(receiver, method))
            }
            // A fresh copy of device memory, unless the receiver is a host mirror.
            "cpu" if tensor_or_unknown => Some(if expr_host_named(receiver_expr) {
                Ty::CpuTensor
            } else {
                Ty::PageableTensor
            }),
            "to" if is_cpu_move(call) => Some(Ty::PageableTensor),
            "to" if receiver.is_tensor() => Some(Ty::Tensor),
            "cuda" if receiver != Ty::Module => Some(Ty::Tensor),
            "type" if call.arguments.args.len() == 1 => {
                let target = &call.arguments.args[0];
                let qualified = self.qualified_name(target);
                if is_legacy_host_type(qualified.as_deref(), target) {
                    Some(match receiver {
                        ty if ty.is_host_tensor() => method_memory(ty, method),
                        _ => Ty::PageableTensor,
                    })
                } else if qualified.is_some_and(|q| q.starts_with("torch.cuda.")) {
                    Some(Ty::Tensor)
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// `.cpu()`, `.to("cpu")` and `.to(dtype)` of a host tensor stay in host memory.
    fn stays_on_host(&self, call: &ast::ExprCall, method: &str) -> bool {
        method == "cpu" || is_cpu_move(call) || self.is_dtype_conversion(call)
    }

    /// `.to(dtype)`: no device named, every positional argument a dtype.
    pub(super) fn is_dtype_conversion(&self, call: &ast::ExprCall) -> bool {
        keyword(call, "device").is_none()
            && call.arguments.args.iter().all(|arg| self.is_dtype(arg))
    }

    /// A dtype: `torch.float32`, `x.dtype`, a name `dtype`.
    pub(super) fn is_dtype(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Attribute(attribute) if attribute.attr.id.as_str() == "dtype" => true,
            Expr::Name(name) if name.id.as_str().ends_with("dtype") => true,
            _ => self.qualified_name(expr).is_some_and(|qualified| {
                qualified.strip_prefix("torch.").is_some_and(|name| {
                    !name.contains('.')
                        && (name.starts_with("float")
                            || name.starts_with("int")
                            || name.starts_with("uint")
                            || name.starts_with("bfloat")
                            || matches!(name, "bool" | "long" | "half" | "double" | "short"))
                })
            }),
        }
    }
}

/// Methods that return a view of (or the same) memory: the result keeps the receiver's pinning.
const VIEWS: &[&str] = &[
    "view",
    "view_as",
    "reshape",
    "reshape_as",
    "flatten",
    "unflatten",
    "squeeze",
    "unsqueeze",
    "transpose",
    "permute",
    "t",
    "narrow",
    "select",
    "expand",
    "expand_as",
    "as_strided",
    "diagonal",
    "detach",
    "unfold",
    "movedim",
    "swapaxes",
    "cpu",
];

/// Methods that return their receiver when nothing needs converting (`x.long()` of a long
/// tensor): the result may or may not be the same memory.
const MAYBE_SELF: &[&str] = &[
    "contiguous",
    "to",
    "type",
    "type_as",
    "long",
    "int",
    "float",
    "half",
    "bfloat16",
    "double",
    "bool",
    "byte",
    "char",
    "short",
    "share_memory_",
];

/// A host factory's memory: pinned when it is asked for (`pin_memory=True`, or an expression the
/// author computed, such as vLLM's `pin_memory=is_pin_memory_available()`), else pageable.
pub(super) fn factory_memory(call: &ast::ExprCall) -> Ty {
    match keyword(call, "pin_memory") {
        None | Some(Expr::BooleanLiteral(ast::ExprBooleanLiteral { value: false, .. })) => {
            Ty::PageableTensor
        }
        Some(_) => Ty::PinnedTensor,
    }
}

/// What `host_tensor.<method>(...)` is, for a method that returns a tensor.
pub(super) fn method_memory(receiver: Ty, method: &str) -> Ty {
    if method == "pin_memory" {
        return Ty::PinnedTensor;
    }
    if VIEWS.contains(&method) || (method.ends_with('_') && !method.starts_with('_')) {
        return receiver;
    }
    if MAYBE_SELF.contains(&method) {
        return match receiver {
            Ty::PageableTensor => Ty::PageableTensor,
            _ => Ty::CpuTensor,
        };
    }
    new_host_tensor(receiver)
}

/// A new tensor computed from a host tensor: pageable when the source is known to be a host
/// tensor, of unknown pinning when only its name says so.
pub(super) fn new_host_tensor(source: Ty) -> Ty {
    match source {
        Ty::PinnedTensor | Ty::PageableTensor => Ty::PageableTensor,
        _ => Ty::CpuTensor,
    }
}

/// What indexing a host tensor gives: a view for basic indexing (slices, integers, `None`,
/// `...`), a new pageable tensor for an index tensor or list.
pub(super) fn subscript_memory(receiver: Ty, index: &Expr, index_ty: impl Fn(&Expr) -> Ty) -> Ty {
    fn basic(index: &Expr, index_ty: &impl Fn(&Expr) -> Ty) -> Option<bool> {
        match index {
            Expr::Slice(_)
            | Expr::NumberLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::EllipsisLiteral(_) => Some(true),
            Expr::UnaryOp(unary) => basic(&unary.operand, index_ty),
            Expr::Tuple(tuple) => tuple.elts.iter().try_fold(true, |all, elt| {
                basic(elt, index_ty).map(|this| all && this)
            }),
            Expr::List(_) | Expr::ListComp(_) => Some(false),
            other => match index_ty(other) {
                Ty::Host => Some(true),
                ty if ty.is_tensor() || matches!(ty, Ty::HostList | Ty::HostLists | Ty::Array) => {
                    Some(false)
                }
                _ => None,
            },
        }
    }
    match (receiver, basic(index, &index_ty)) {
        (receiver, Some(true)) => receiver,
        (receiver, Some(false)) => new_host_tensor(receiver),
        (Ty::PageableTensor, None) => Ty::PageableTensor,
        (_, None) => Ty::CpuTensor,
    }
}

/// Functions that join tensors, which must all live on one device.
const JOINS: &[&str] = &[
    "cat",
    "concat",
    "concatenate",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
    "row_stack",
];

/// What `torch.as_tensor(data)` and `torch.from_numpy(array)` share or copy: a host tensor's
/// memory is shared (pinning kept), a Python list or scalar is copied into pageable memory, a
/// NumPy array made right there is pageable, and any other array shares memory graphready
/// cannot judge (vLLM's `*_np` mirrors are views of pinned buffers).
pub(super) fn wrapped_memory(data: &Expr, data_ty: Ty) -> Ty {
    match data_ty {
        ty if ty.is_host_tensor() => ty,
        Ty::HostList | Ty::HostLists | Ty::Host => Ty::PageableTensor,
        Ty::Array if is_fresh_array(data) => Ty::PageableTensor,
        _ => Ty::CpuTensor,
    }
}

/// A NumPy call that allocates a new array (`np.array(...)`, `np.zeros(...)`), by the name of the
/// callee: its memory is pageable.
fn is_fresh_array(expr: &Expr) -> bool {
    const FRESH: &[&str] = &[
        "array",
        "asarray",
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "concatenate",
        "stack",
        "cumsum",
        "repeat",
        "fromiter",
    ];
    let Expr::Call(call) = expr else {
        return false;
    };
    matches!(&*call.func, Expr::Attribute(attribute)
        if FRESH.contains(&attribute.attr.id.as_str())
            && matches!(&*attribute.value, Expr::Name(n) if matches!(n.id.as_str(), "np" | "numpy")))
}

/// A legacy tensor type naming host memory: `torch.BoolTensor`, `torch.FloatTensor`, ... (the
/// `torch.cuda.*Tensor` types live on the device), also as a string.
pub fn is_legacy_host_type(qualified: Option<&str>, expr: &Expr) -> bool {
    let name = match (qualified, expr) {
        (Some(qualified), _) => qualified,
        (None, Expr::StringLiteral(literal)) => literal.value.to_str(),
        _ => return false,
    };
    name.strip_prefix("torch.").is_some_and(|type_name| {
        !type_name.contains('.') && type_name.ends_with("Tensor") && type_name != "Tensor"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expr(source: &str) -> Expr {
        *ruff_python_parser::parse_expression(source)
            .expect("an expression")
            .into_syntax()
            .body
    }

    /// The index of `x[...]`.
    fn index(source: &str) -> Expr {
        match expr(&format!("x[{source}]")) {
            Expr::Subscript(subscript) => *subscript.slice,
            other => panic!("not a subscript: {other:?}"),
        }
    }

    fn call(source: &str) -> ast::ExprCall {
        match expr(source) {
            Expr::Call(call) => call,
            other => panic!("not a call: {other:?}"),
        }
    }

    #[test]
    fn factories_are_pinned_only_when_asked() {
        assert_eq!(factory_memory(&call("torch.zeros(4)")), Ty::PageableTensor);
        assert_eq!(
            factory_memory(&call("torch.zeros(4, pin_memory=False)")),
            Ty::PageableTensor
        );
        assert_eq!(
            factory_memory(&call("torch.zeros(4, pin_memory=True)")),
            Ty::PinnedTensor
        );
        assert_eq!(
            factory_memory(&call("torch.zeros(4, pin_memory=self.pin)")),
            Ty::PinnedTensor
        );
    }

    #[test]
    fn views_keep_pinning_and_new_tensors_are_pageable() {
        assert_eq!(method_memory(Ty::PinnedTensor, "view"), Ty::PinnedTensor);
        assert_eq!(method_memory(Ty::PinnedTensor, "copy_"), Ty::PinnedTensor);
        assert_eq!(method_memory(Ty::PinnedTensor, "long"), Ty::CpuTensor);
        assert_eq!(method_memory(Ty::PinnedTensor, "sum"), Ty::PageableTensor);
        assert_eq!(method_memory(Ty::CpuTensor, "pin_memory"), Ty::PinnedTensor);
        let host = |_: &Expr| Ty::Host;
        assert_eq!(
            subscript_memory(Ty::PinnedTensor, &index(":n"), host),
            Ty::PinnedTensor
        );
        assert_eq!(
            subscript_memory(Ty::PinnedTensor, &index("[0, 2]"), host),
            Ty::PageableTensor
        );
        assert_eq!(
            subscript_memory(Ty::PinnedTensor, &index("idx"), |_| Ty::Unknown),
            Ty::CpuTensor
        );
    }

    #[test]
    fn wrapped_data() {
        assert_eq!(
            wrapped_memory(&expr("np.array(x)"), Ty::Array),
            Ty::PageableTensor
        );
        assert_eq!(wrapped_memory(&expr("x_np"), Ty::Array), Ty::CpuTensor);
        assert_eq!(
            wrapped_memory(&expr("pinned"), Ty::PinnedTensor),
            Ty::PinnedTensor
        );
        assert_eq!(
            wrapped_memory(&expr("[1, 2]"), Ty::HostList),
            Ty::PageableTensor
        );
    }

    #[test]
    fn legacy_types() {
        assert!(is_legacy_host_type(
            Some("torch.BoolTensor"),
            &expr("torch.BoolTensor")
        ));
        assert!(is_legacy_host_type(None, &expr("'torch.FloatTensor'")));
        assert!(!is_legacy_host_type(
            Some("torch.cuda.BoolTensor"),
            &expr("x")
        ));
        assert!(!is_legacy_host_type(Some("torch.Tensor"), &expr("x")));
        assert!(!is_legacy_host_type(None, &expr("torch.float32")));
    }
}
