//! What a call returns: PyTorch's functions and tensor methods, the project's own functions
//! and classes (through the facts of earlier phases), builtins, and calls told where to build
//! their result.

use super::host_memory;
use super::model::{Binding, SemanticModel};
use super::syntax::{is_cpu_device, keyword};
use super::tensor_api::{self, Returns};
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr};

impl SemanticModel<'_> {
    pub(super) fn call_ty(&self, call: &ast::ExprCall) -> Ty {
        // `torch.cat(parts, out=buf)`: the result is `buf`, in its memory (a pinned staging
        // buffer stays pinned). Only PyTorch's own functions: a project helper taking `out=`
        // may return anything.
        if let Some(out) = keyword(call, "out") {
            let ty = self.ty(out);
            let torch_function = self
                .qualified_name(&call.func)
                .is_some_and(|qualified| qualified.starts_with("torch."));
            if ty.is_tensor() && torch_function {
                return ty;
            }
        }
        match self.known_call_ty(call) {
            Ty::Unknown => self.built_on_host(call).unwrap_or_default(),
            ty => ty,
        }
    }

    fn known_call_ty(&self, call: &ast::ExprCall) -> Ty {
        if self.is_predicate_call(call) {
            return Ty::CaptureFlag;
        }
        let has_dim = call.arguments.args.len() > 1
            || call.arguments.keywords.iter().any(|keyword| {
                keyword
                    .arg
                    .as_ref()
                    .is_some_and(|arg| arg.id.as_str() == "dim")
            });
        if let Some(qualified) = self.qualified_name(&call.func) {
            if let Some(ty) = self
                .types
                .facts
                .returns
                .and_then(|known| known.get(&*qualified))
            {
                let preserving = self
                    .types
                    .facts
                    .host_preserving
                    .is_some_and(|known| known.contains(&*qualified));
                return self.host_if_preserving(preserving, call, *ty);
            }
            if self
                .types
                .facts
                .module_classes
                .is_some_and(|classes| classes.contains(&*qualified))
            {
                return Ty::Module;
            }
            // A legacy constructor (`torch.Tensor([0, 18])`, `torch.LongTensor(n)`) builds on
            // the host: the `torch.cuda.*Tensor` types are the device ones.
            if (&*qualified == "torch.Tensor"
                || super::host_memory::is_legacy_host_type(Some(&qualified), &call.func))
                && !call.arguments.is_empty()
            {
                return Ty::PageableTensor;
            }
            // einops rearranges and reduces on its input's device.
            if let Some(function) = qualified.strip_prefix("einops.") {
                if matches!(function, "rearrange" | "reduce" | "repeat") {
                    return call
                        .arguments
                        .args
                        .first()
                        .map(|tensor| self.ty(tensor))
                        .filter(|ty| ty.is_tensor())
                        .unwrap_or_default();
                }
            }
            let ty = tensor_api::torch_function_result(&qualified, has_dim)
                .map_or(Ty::Unknown, Ty::from);
            if ty == Ty::Tensor && self.on_host_device(call) {
                if let Some(host) = self.host_function_ty(&qualified, call) {
                    return host;
                }
            }
            // `torch.max(lens_cpu, dim=1)`: the values and indices of a host tensor.
            if ty == Ty::TensorSeq
                && self.on_host_device(call)
                && self.host_function_ty(&qualified, call).is_some()
            {
                return Ty::HostTensorSeq;
            }
            return ty;
        }
        match &*call.func {
            Expr::Name(name) => match name.id.as_str() {
                "int" | "float" | "bool" | "str" | "len" | "repr" | "list" | "tuple" | "dict"
                | "set" | "range" | "sum" | "abs" | "round" | "isinstance" | "hasattr"
                | "getattr" | "id" | "hash" | "sorted" | "enumerate" | "zip" | "slice" => {
                    // `sum`/`abs`/`getattr` of a tensor return tensors; be careful.
                    match name.id.as_str() {
                        "sum" | "abs" | "getattr" => Ty::Unknown,
                        // `range` objects index like lists.
                        "list" | "sorted" | "range" => Ty::HostList,
                        "bool"
                            if call
                                .arguments
                                .args
                                .first()
                                .is_some_and(|arg| self.ty(arg) == Ty::CaptureFlag) =>
                        {
                            Ty::CaptureFlag
                        }
                        _ => Ty::Host,
                    }
                }
                // An instance of this module's `nn.Module` subclass.
                other if self.classes.get(other).is_some_and(|class| class.module) => Ty::Module,
                other => match self.lookup(other) {
                    Some(Binding::Value(Ty::Module)) => Ty::Tensor,
                    Some(Binding::Value(Ty::Host)) | None => {
                        let ty = self.local_return(other).unwrap_or_default();
                        self.host_in_host_out(other, call, ty)
                    }
                    _ => Ty::Unknown,
                },
            },
            Expr::Attribute(attribute) => {
                if self.attribute_ty(attribute) == Ty::Module {
                    // `self.proj(x)` with `self.proj = nn.Linear(...)`.
                    return Ty::Tensor;
                }
                if let Some(super::CallReturn::Value(ty)) = self.call_return(call) {
                    return *ty;
                }
                let method = attribute.attr.id.as_str();
                if let Some(class) = self.instance_class(&attribute.value) {
                    let qualname = format!("{class}.{method}");
                    let ty = self.local_return(&qualname).unwrap_or_default();
                    return self.host_in_host_out(&qualname, call, ty);
                }
                // Whatever has it (a tensor, a NumPy array), `tolist()` makes a Python list.
                if method == "tolist" && call.arguments.is_empty() {
                    return Ty::HostList;
                }
                let receiver = self.ty(&attribute.value);
                if let Some(ty) = self.transfer_ty(call, method, receiver, &attribute.value) {
                    return ty;
                }
                match receiver {
                    Ty::Array => Ty::Array,
                    // A value of what a tokenizer or processor returned (`inputs.get("ids")`).
                    Ty::HostTensorSeq if matches!(method, "get" | "pop") => Ty::CpuTensor,
                    ty if ty.is_host_tensor() => match tensor_api::tensor_method_result(
                        method,
                        has_dim_for_method(call),
                        call.arguments.args.len(),
                    ) {
                        // `x.new_empty(n, pin_memory=...)`: a factory of the receiver's kind.
                        Some(Returns::Tensor) if method.starts_with("new_") => {
                            host_memory::factory_memory(call)
                        }
                        Some(Returns::Tensor) => host_memory::method_memory(ty, method),
                        // `lens_cpu.split(sizes)`: views of host memory.
                        Some(Returns::TensorSeq) => Ty::HostTensorSeq,
                        other => other.map_or(Ty::Unknown, Ty::from),
                    },
                    Ty::Tensor => tensor_api::tensor_method_result(
                        method,
                        has_dim_for_method(call),
                        call.arguments.args.len(),
                    )
                    .map_or(Ty::Unknown, Ty::from),
                    Ty::Unknown if tensor_api::is_tensor_only_method(method) => Ty::Tensor,
                    // In a module that never imports NumPy, `.any()`, `.sum()`, `.nonzero()` and
                    // the rest of the tensor API belong to tensors.
                    Ty::Unknown
                        if !self.imports_numpy
                            && !tensor_api::is_shared_method(method, call.arguments.len())
                            && tensor_api::tensor_method_result(method, false, 0)
                                == Some(Returns::Tensor)
                            && self.qualified_name(&attribute.value).is_none() =>
                    {
                        Ty::Tensor
                    }
                    _ => Ty::Unknown,
                }
            }
            other => match self.ty(other) {
                Ty::Module => Ty::Tensor,
                _ => Ty::Unknown,
            },
        }
    }
}

impl<'a> SemanticModel<'a> {
    /// What a method call returns when the project resolved it to host data (see
    /// [`super::CallReturn`]).
    pub(super) fn call_return(&self, call: &ast::ExprCall) -> Option<&'a super::CallReturn> {
        self.types
            .facts
            .call_returns?
            .get(&ruff_text_size::Ranged::start(call).to_u32())
    }

    /// What an unknown function or method told to build its result on the CPU returns
    /// (`grammar.allocate_vocab_mask(n, device="cpu")`): a host tensor, pinned when it was asked to
    /// be, and otherwise of unknown pinning (the function may pin it itself, as xgrammar's
    /// bitmask allocation does). Constructors (capitalised names) build objects, and loaders
    /// (`load_file(path, device="cpu")`) state dicts, not tensors. One told to return tensors
    /// (`return_tensors="pt"`) returns host tensors by name.
    fn built_on_host(&self, call: &ast::ExprCall) -> Option<Ty> {
        let name = match &*call.func {
            Expr::Name(name) => name.id.as_str(),
            Expr::Attribute(attribute) => attribute.attr.id.as_str(),
            _ => return None,
        };
        if name.starts_with(|c: char| c.is_ascii_uppercase())
            || name.starts_with("load")
            || matches!(name, "to" | "cpu")
        {
            return None;
        }
        // A tokenizer or processor asked for PyTorch tensors (`processor(images=...,
        // return_tensors="pt")`, `apply_chat_template(..., return_tensors="pt")`) returns a
        // mapping of new host tensors: Hugging Face builds them from Python lists and NumPy
        // arrays, on the CPU.
        if keyword(call, "return_tensors").is_some_and(|value| {
            matches!(value, Expr::StringLiteral(s) if matches!(s.value.to_str(), "pt" | "np"))
        }) {
            return Some(Ty::HostTensorSeq);
        }
        if !keyword(call, "device").is_some_and(|device| self.is_host_device(device)) {
            return None;
        }
        let pinned = super::syntax::keyword_true(call, "pin_memory");
        Some(if pinned {
            Ty::PinnedTensor
        } else {
            Ty::CpuTensor
        })
    }

    /// Whether a call's device is the host: `device="cpu"` or none at all (a `**kwargs` splat may
    /// hold one).
    fn on_host_device(&self, call: &ast::ExprCall) -> bool {
        match keyword(call, "device") {
            Some(device) => self.is_host_device(device),
            None => !call
                .arguments
                .keywords
                .iter()
                .any(|keyword| keyword.arg.is_none()),
        }
    }

    /// Whether a device expression names the host: `"cpu"`, `torch.device("cpu")`, the device
    /// of a host tensor (`device=seq_lens_cpu.device`), or a local bound to one of those.
    pub(crate) fn is_host_device(&self, device: &Expr) -> bool {
        match device {
            Expr::Name(name) => self
                .lookup_scope(name.id.as_str())
                .is_some_and(|scope| scope.host_devices.contains(name.id.as_str())),
            Expr::Attribute(attribute) => {
                attribute.attr.as_str() == "device" && self.ty(&attribute.value).is_host_tensor()
            }
            other => is_cpu_device(other),
        }
    }
}

/// `t.max(0)` / `t.max(dim=0)` return tuples; `t.max()` and `t.max(other)` do not (the latter is
/// the element-wise maximum, a tensor). A positional integer literal counts as a dimension.
fn has_dim_for_method(call: &ast::ExprCall) -> bool {
    call.arguments.keywords.iter().any(|keyword| {
        keyword
            .arg
            .as_ref()
            .is_some_and(|arg| arg.id.as_str() == "dim")
    }) || matches!(
        call.arguments.args.first(),
        Some(Expr::NumberLiteral(_) | Expr::UnaryOp(_))
    )
}
