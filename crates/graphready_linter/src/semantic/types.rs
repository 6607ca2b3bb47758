//! Type inference: a light, flow-ordered answer to one question — "is this expression a
//! tensor, and where does it live?" — with three honest answers: yes, no, or unknown. Rules
//! report only on "yes"; "unknown" keeps graphready silent.

use super::cache::NodeCache;
use super::model::{Binding, SemanticModel};
use super::syntax::{host_named, is_cpu_device, is_cpu_move, keyword};
use super::tensor_api::{self, Returns};
use ruff_python_ast::{self as ast, Expr, Parameters};
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// What the inference knows about a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ty {
    #[default]
    Unknown,
    /// A tensor that may live on the GPU: reading its value on the host syncs.
    Tensor,
    /// A tensor known to live in host memory (`.cpu()`, factories without `device=`).
    CpuTensor,
    /// A NumPy array or scalar: host memory, never a sync.
    Array,
    /// A tuple or list whose elements are tensors.
    TensorSeq,
    /// Certainly not a tensor: numbers, strings, containers, `None`, NumPy values, shapes.
    Host,
    /// An `nn.Module` instance: calling it returns a tensor.
    Module,
    Stream,
    Event,
}

impl Ty {
    /// A tensor or a sequence of tensors: what makes a function's return worth knowing across
    /// modules.
    pub fn is_tensor_like(self) -> bool {
        matches!(self, Ty::Tensor | Ty::TensorSeq)
    }
}

impl From<Returns> for Ty {
    fn from(returns: Returns) -> Self {
        match returns {
            Returns::Tensor => Ty::Tensor,
            Returns::TensorSeq => Ty::TensorSeq,
            Returns::Host => Ty::Host,
            Returns::Array => Ty::Array,
            Returns::Module => Ty::Module,
            Returns::Stream => Ty::Stream,
            Returns::Event => Ty::Event,
        }
    }
}

/// What the project analysis knows about other modules before this module's walk: the return
/// types of their functions by qualified name, and which parameters of this module's functions
/// receive device tensors at their call sites. (This module's own returns are learned during
/// the walk, callees first.)
#[derive(Debug, Default, Clone, Copy)]
pub struct ProjectFacts<'a> {
    pub returns: Option<&'a FxHashMap<String, Ty>>,
    /// Function qualified name inside the module → parameters that receive device tensors.
    pub tensor_params: Option<&'a FxHashMap<String, Vec<String>>>,
}

/// What the inference remembers besides the bindings: return types, and memoised answers.
pub(crate) struct TypeState<'a> {
    facts: ProjectFacts<'a>,
    /// Return types of this module's functions visited so far (callees are visited first).
    learned_returns: FxHashMap<String, Ty>,
    /// Types per expression node, valid until the next binding changes: every rule asks about
    /// the same receivers and callees.
    cache: RefCell<NodeCache<Ty>>,
}

impl<'a> TypeState<'a> {
    pub(super) fn new(facts: ProjectFacts<'a>) -> Self {
        TypeState {
            facts,
            learned_returns: FxHashMap::default(),
            cache: RefCell::new(NodeCache::new()),
        }
    }
}

impl<'a> SemanticModel<'a> {
    fn local_return(&self, qualname: &str) -> Option<Ty> {
        self.types.learned_returns.get(qualname).copied()
    }

    /// Records what a function of this module returns, for its callers visited later.
    pub fn learn_return(&mut self, qualname: &str, ty: Ty) {
        self.invalidate();
        self.types.learned_returns.insert(qualname.to_string(), ty);
    }

    /// The type of a parameter's annotation.
    pub fn annotation_ty(&self, annotation: &Expr) -> Ty {
        match annotation {
            Expr::StringLiteral(literal) => {
                let text = literal.value.to_str();
                match text {
                    "torch.Tensor" | "Tensor" | "torch.nn.Parameter" | "nn.Parameter" => Ty::Tensor,
                    _ => Ty::Unknown,
                }
            }
            Expr::Subscript(subscript) => {
                let container = self.qualified_name(&subscript.value);
                let container = container.as_deref().unwrap_or("");
                let holds_tensors = match &*subscript.slice {
                    Expr::Tuple(tuple) => tuple
                        .elts
                        .iter()
                        .any(|element| self.annotation_ty(element) == Ty::Tensor),
                    element => self.annotation_ty(element) == Ty::Tensor,
                };
                let sequence = matches!(
                    container,
                    "typing.List" | "typing.Tuple" | "typing.Sequence" | "list" | "tuple"
                ) || matches!(&*subscript.value, Expr::Name(n) if matches!(n.id.as_str(), "list" | "tuple"));
                if sequence && holds_tensors {
                    Ty::TensorSeq
                } else {
                    Ty::Unknown
                }
            }
            Expr::Name(name) if matches!(name.id.as_str(), "int" | "float" | "bool" | "str") => {
                Ty::Host
            }
            _ => match self.qualified_name(annotation).as_deref() {
                Some("torch.Tensor" | "torch.nn.Parameter" | "torch.nn.parameter.Parameter") => {
                    Ty::Tensor
                }
                Some("torch.cuda.Stream" | "torch.Stream") => Ty::Stream,
                Some("torch.cuda.Event" | "torch.Event") => Ty::Event,
                Some(numpy) if numpy.starts_with("numpy.") => Ty::Array,
                _ => Ty::Unknown,
            },
        }
    }

    /// Parameters of a function of this module that receive device tensors at its call sites.
    pub fn tensor_params(&self, qualname: &str) -> &'a [String] {
        self.types
            .facts
            .tensor_params
            .and_then(|params| params.get(qualname))
            .map_or(&[], Vec::as_slice)
    }

    /// Binds a function's parameters from their annotations.
    pub fn bind_parameters(&mut self, parameters: &'a Parameters) {
        for parameter in parameters.iter_non_variadic_params() {
            let ty = parameter
                .parameter
                .annotation()
                .map_or(Ty::Unknown, |annotation| self.annotation_ty(annotation));
            self.bind(parameter.parameter.name.id.as_str(), ty);
        }
        if let Some(vararg) = &parameters.vararg {
            self.bind(vararg.name.id.as_str(), Ty::Unknown);
        }
        if let Some(kwarg) = &parameters.kwarg {
            self.bind(kwarg.name.id.as_str(), Ty::Host);
        }
        // After `bind`, which forgets a rebound parameter.
        let names = parameters
            .iter_non_variadic_params()
            .map(|parameter| parameter.parameter.name.id.as_str());
        self.current().parameters.extend(names);
    }

    /// Binds the names of an assignment target to the type of the assigned value.
    pub fn bind_target(&mut self, target: &'a Expr, ty: Ty) {
        match target {
            Expr::Name(name) => self.bind(name.id.as_str(), ty),
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let element = if ty == Ty::TensorSeq {
                    Ty::Tensor
                } else {
                    Ty::Unknown
                };
                for elt in elts {
                    self.bind_target(elt, element);
                }
            }
            Expr::Starred(starred) => self.bind_target(&starred.value, Ty::Unknown),
            _ => {}
        }
    }

    /// Binds tuple targets element-wise when the value is a literal tuple of the same length.
    pub fn bind_assignment(&mut self, target: &'a Expr, value: &Expr) {
        if let (Expr::Tuple(targets), Expr::Tuple(values)) = (target, value) {
            if targets.elts.len() == values.elts.len() {
                for (target, value) in targets.elts.iter().zip(&values.elts) {
                    let ty = self.ty(value);
                    self.bind_target(target, ty);
                }
                return;
            }
        }
        let ty = self.ty(value);
        self.bind_target(target, ty);
        if let Expr::Name(name) = target {
            if ty == Ty::Tensor && self.is_bool_tensor(value) {
                self.current().bool_tensors.insert(name.id.as_str());
            }
        }
    }

    /// Whether the expression is a tensor, as far as the model knows.
    pub fn is_tensor(&self, expr: &Expr) -> bool {
        self.ty(expr) == Ty::Tensor
    }

    /// The type of `self.<attribute>` in the method being visited, as the class's assignments
    /// say (`Ty::Unknown` when the class does not say).
    pub fn self_attribute_ty(&self, attribute: &str) -> Ty {
        self.self_class()
            .and_then(|(class, _)| self.class_attribute(class, attribute, 4))
            .unwrap_or_default()
    }

    /// The inferred type of an expression.
    pub fn ty(&self, expr: &Expr) -> Ty {
        let key = std::ptr::from_ref(expr) as usize;
        if let Some(known) = self.types.cache.borrow().get(key, self.generation) {
            return *known;
        }
        let ty = self.compute_ty(expr);
        self.types
            .cache
            .borrow_mut()
            .insert(key, self.generation, ty);
        ty
    }

    fn compute_ty(&self, expr: &Expr) -> Ty {
        match expr {
            Expr::Name(name) => match self.lookup(name.id.as_str()) {
                Some(Binding::Value(Ty::Unknown)) | None if host_named(name.id.as_str()) => {
                    Ty::CpuTensor
                }
                Some(Binding::Value(ty)) => *ty,
                Some(Binding::Import(_)) | None => Ty::Unknown,
            },
            Expr::Attribute(attribute) => self.attribute_ty(attribute),
            Expr::Call(call) => self.call_ty(call),
            Expr::BinOp(binop) => {
                let (left, right) = (self.ty(&binop.left), self.ty(&binop.right));
                combine(left, right)
            }
            Expr::UnaryOp(unary) => match unary.op {
                ast::UnaryOp::Not => Ty::Host,
                _ => self.ty(&unary.operand),
            },
            Expr::Compare(compare) => {
                if compare.ops.iter().any(|op| {
                    matches!(
                        op,
                        ast::CmpOp::Is | ast::CmpOp::IsNot | ast::CmpOp::In | ast::CmpOp::NotIn
                    )
                }) {
                    return Ty::Host;
                }
                compare
                    .comparators
                    .iter()
                    .fold(self.ty(&compare.left), |ty, operand| {
                        combine(ty, self.ty(operand))
                    })
            }
            Expr::Subscript(subscript) => match self.ty(&subscript.value) {
                Ty::Tensor | Ty::TensorSeq => Ty::Tensor,
                Ty::CpuTensor => Ty::CpuTensor,
                Ty::Array => Ty::Array,
                // `self.layers[i]` of an `nn.ModuleList`.
                Ty::Module => Ty::Module,
                _ => Ty::Unknown,
            },
            Expr::Named(named) => self.ty(&named.value),
            Expr::If(if_expr) => {
                let (body, orelse) = (self.ty(&if_expr.body), self.ty(&if_expr.orelse));
                if body == orelse {
                    body
                } else {
                    Ty::Unknown
                }
            }
            Expr::Tuple(tuple) if !tuple.elts.is_empty() => {
                if tuple.elts.iter().all(|elt| self.ty(elt) == Ty::Tensor) {
                    Ty::TensorSeq
                } else {
                    Ty::Host
                }
            }
            Expr::NumberLiteral(_)
            | Expr::StringLiteral(_)
            | Expr::BytesLiteral(_)
            | Expr::BooleanLiteral(_)
            | Expr::NoneLiteral(_)
            | Expr::EllipsisLiteral(_)
            | Expr::FString(_)
            | Expr::Tuple(_)
            | Expr::List(_)
            | Expr::ListComp(_)
            | Expr::Dict(_)
            | Expr::DictComp(_)
            | Expr::Set(_)
            | Expr::SetComp(_)
            | Expr::Lambda(_)
            | Expr::Generator(_) => Ty::Host,
            _ => Ty::Unknown,
        }
    }

    fn attribute_ty(&self, attribute: &ast::ExprAttribute) -> Ty {
        let attr = attribute.attr.id.as_str();
        if let Expr::Name(receiver) = &*attribute.value {
            if let Some((class, self_name)) = self.self_class() {
                if receiver.id.as_str() == self_name {
                    return match self.class_attribute(class, attr, 4).unwrap_or_default() {
                        Ty::Unknown if host_named(attr) => Ty::CpuTensor,
                        ty => ty,
                    };
                }
            }
        }
        match self.ty(&attribute.value) {
            Ty::Tensor => tensor_api::tensor_attribute(attr).map_or(Ty::Unknown, Ty::from),
            Ty::CpuTensor => match tensor_api::tensor_attribute(attr) {
                Some(Returns::Tensor) => Ty::CpuTensor,
                other => other.map_or(Ty::Unknown, Ty::from),
            },
            Ty::Array => Ty::Array,
            Ty::Unknown if host_named(attr) => Ty::CpuTensor,
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

    fn call_ty(&self, call: &ast::ExprCall) -> Ty {
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
                return *ty;
            }
            let ty = tensor_api::torch_function_result(&qualified, has_dim)
                .map_or(Ty::Unknown, Ty::from);
            if ty == Ty::Tensor
                && tensor_api::is_host_factory(&qualified)
                && keyword(call, "device").is_none_or(is_cpu_device)
            {
                return Ty::CpuTensor;
            }
            // Functions of a host tensor stay on the host (`torch.sin(cpu_t)`). Not classes:
            // `nn.Parameter(torch.ones(1))` moves with its module.
            let function = qualified
                .strip_prefix("torch.")
                .is_some_and(|name| !name.contains('.') && name.starts_with(char::is_lowercase));
            if ty == Ty::Tensor
                && function
                && keyword(call, "device").is_none_or(is_cpu_device)
                && call
                    .arguments
                    .args
                    .first()
                    .is_some_and(|arg| self.ty(arg) == Ty::CpuTensor)
            {
                return Ty::CpuTensor;
            }
            return ty;
        }
        match &*call.func {
            Expr::Name(name) => match name.id.as_str() {
                "int" | "float" | "bool" | "str" | "len" | "repr" | "list" | "tuple" | "dict"
                | "set" | "range" | "sum" | "abs" | "round" | "isinstance" | "hasattr"
                | "getattr" | "id" | "hash" | "sorted" | "enumerate" | "zip" => {
                    // `sum`/`abs`/`getattr` of a tensor return tensors; be careful.
                    match name.id.as_str() {
                        "sum" | "abs" | "getattr" => Ty::Unknown,
                        _ => Ty::Host,
                    }
                }
                other => match self.lookup(other) {
                    Some(Binding::Value(Ty::Module)) => Ty::Tensor,
                    Some(Binding::Value(Ty::Host)) | None => {
                        self.local_return(other).unwrap_or_default()
                    }
                    _ => Ty::Unknown,
                },
            },
            Expr::Attribute(attribute) => {
                if self.attribute_ty(attribute) == Ty::Module {
                    // `self.proj(x)` with `self.proj = nn.Linear(...)`.
                    return Ty::Tensor;
                }
                let method = attribute.attr.id.as_str();
                if let (Expr::Name(receiver), Some((class, self_name))) =
                    (&*attribute.value, self.self_class())
                {
                    if receiver.id.as_str() == self_name {
                        let qualname = format!("{class}.{method}");
                        return self.local_return(&qualname).unwrap_or_default();
                    }
                }
                let receiver = self.ty(&attribute.value);
                match method {
                    "numpy" if call.arguments.is_empty() => return Ty::Array,
                    "cpu" | "pin_memory"
                        if matches!(receiver, Ty::Tensor | Ty::CpuTensor | Ty::Unknown) =>
                    {
                        return Ty::CpuTensor
                    }
                    "to" if matches!(receiver, Ty::Tensor | Ty::CpuTensor) || is_cpu_move(call) => {
                        return if is_cpu_move(call) {
                            Ty::CpuTensor
                        } else {
                            Ty::Tensor
                        };
                    }
                    "cuda" if receiver != Ty::Module => return Ty::Tensor,
                    _ => {}
                }
                match receiver {
                    Ty::Array => Ty::Array,
                    Ty::CpuTensor => match tensor_api::tensor_method_result(
                        method,
                        has_dim_for_method(call),
                        call.arguments.args.len(),
                    ) {
                        Some(Returns::Tensor) => Ty::CpuTensor,
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

/// The type of a binary operation's result.
///
/// A host tensor combined with anything but a device tensor stays on the host: PyTorch refuses to
/// mix a multi-element host tensor with a device one.
fn combine(left: Ty, right: Ty) -> Ty {
    match (left, right) {
        (Ty::Tensor, _) | (_, Ty::Tensor) => Ty::Tensor,
        (Ty::CpuTensor, _) | (_, Ty::CpuTensor) => Ty::CpuTensor,
        (Ty::Array, _) | (_, Ty::Array) => Ty::Array,
        (Ty::Host, Ty::Host) => Ty::Host,
        _ => Ty::Unknown,
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
