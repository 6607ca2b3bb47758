//! Type inference: a light, flow-ordered answer to one question — "is this expression a
//! tensor, and where does it live?" — with three honest answers: yes, no, or unknown. Rules
//! report only on "yes"; "unknown" keeps graphready silent.

use super::cache::NodeCache;
use super::facts::{AttributeType, ProjectFacts, PropertyRead};
use super::host_memory;
use super::model::{Binding, SemanticModel};
use super::syntax::host_named;
use super::tensor_api::Returns;
use ruff_python_ast::{self as ast, Expr};
use rustc_hash::FxHashMap;
use std::cell::RefCell;

/// What the inference knows about a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ty {
    #[default]
    Unknown,
    /// A tensor that may live on the GPU: reading its value on the host syncs.
    Tensor,
    /// A tensor known to live in host memory whose pinning is unknown (a parameter named like a
    /// host mirror, `seq_lens_cpu`).
    CpuTensor,
    /// A host tensor in pinned memory (`pin_memory=True`, `.pin_memory()`, views of those).
    PinnedTensor,
    /// A host tensor in pageable memory: `torch.tensor(...)`, `.cpu()`, host factories without
    /// `pin_memory=`, and every new tensor a host operation makes (see [`super::host_memory`]).
    PageableTensor,
    /// A NumPy array or scalar: host memory, never a sync.
    Array,
    /// A tuple or list whose elements are tensors.
    TensorSeq,
    /// A list whose elements are tensors in host memory (`[cpu_t[i].sum() for i in ...]`):
    /// stacking or concatenating them makes a host tensor.
    HostTensorSeq,
    /// A Python list of host values (`[0, 2, 5]`, `list(...)`, `sorted(...)`, a `list[int]`
    /// parameter): used as an index into a device tensor, PyTorch uploads it.
    HostList,
    /// A Python list of host lists (`[[1, 2], [3]]`, a `list[list[int]]` return): each element
    /// is a [`Ty::HostList`].
    HostLists,
    /// Certainly not a tensor: numbers, strings, containers, `None`, NumPy values, shapes.
    Host,
    /// A host bool that is true whenever the code runs inside a CUDA graph capture or a
    /// `torch.compile` trace (see [`super::predicates`]): `if not flag:` guards eager-only code.
    CaptureFlag,
    /// A host bool that is true only when the batch has prefill work (see [`super::prefill`]):
    /// `if flag:` guards code that runs outside a decode graph.
    PrefillFlag,
    /// An `nn.Module` instance: calling it returns a tensor.
    Module,
    /// A device naming the host (`"cpu"`), as the hot path gives a parameter every per-step
    /// call passes one (see `crate::hot_path`): bound as [`Ty::Host`] among the scope's host
    /// devices, never the type of an expression.
    HostDevice,
    Stream,
    Event,
}

impl Ty {
    /// A tensor or a sequence of tensors: what makes a function's return worth knowing across
    /// modules.
    pub fn is_tensor_like(self) -> bool {
        matches!(self, Ty::Tensor | Ty::TensorSeq)
    }

    /// A tensor in host memory, pinned or not.
    pub fn is_host_tensor(self) -> bool {
        matches!(self, Ty::CpuTensor | Ty::PinnedTensor | Ty::PageableTensor)
    }

    /// A tensor known to be made in host memory, pinned or pageable (not a mirror guessed from
    /// a name, [`Ty::CpuTensor`]).
    pub fn is_made_on_host(self) -> bool {
        matches!(self, Ty::PinnedTensor | Ty::PageableTensor)
    }

    /// A tensor, wherever it lives.
    pub fn is_tensor(self) -> bool {
        self == Ty::Tensor || self.is_host_tensor()
    }

    /// Host memory or a host value: reading it never synchronises with the device.
    pub fn is_host(self) -> bool {
        self.is_host_tensor()
            || matches!(
                self,
                Ty::Array
                    | Ty::Host
                    | Ty::HostDevice
                    | Ty::HostTensorSeq
                    | Ty::HostList
                    | Ty::HostLists
                    | Ty::CaptureFlag
                    | Ty::PrefillFlag
            )
    }

    /// What a value is when it may be either: `a if c else b`, the returns of one function.
    /// Host tensors of different pinning are host tensors of unknown pinning.
    pub fn join(self, other: Ty) -> Ty {
        match (self, other) {
            (a, b) if a == b => a,
            (a, b) if a.is_host_tensor() && b.is_host_tensor() => Ty::CpuTensor,
            // A tensor that may live on the device either way.
            (Ty::Tensor, b) | (b, Ty::Tensor) if b.is_host_tensor() => Ty::Tensor,
            (a, b) if a.is_host_value() && b.is_host_value() => Ty::Host,
            // A host tensor here, a list there (`grid_thw: Tensor | list[list[int]]`): host
            // memory either way, a tensor where the code uses it as one.
            (a, b)
                if a.is_host_tensor() && b.is_host_value()
                    || a.is_host_value() && b.is_host_tensor() =>
            {
                Ty::CpuTensor
            }
            _ => Ty::Unknown,
        }
    }

    /// A host value that is not a tensor or an array: a number, a list, a list of lists.
    fn is_host_value(self) -> bool {
        matches!(self, Ty::Host | Ty::HostList | Ty::HostLists)
    }

    /// The type of the elements a `for` loop or a comprehension draws from a value of this type.
    pub fn element(self) -> Ty {
        match self {
            Ty::TensorSeq | Ty::Tensor => Ty::Tensor,
            Ty::HostTensorSeq => Ty::CpuTensor,
            // The rows of a host tensor are views of its memory.
            ty if ty.is_host_tensor() => ty,
            Ty::Array => Ty::Array,
            Ty::HostList => Ty::Host,
            Ty::HostLists => Ty::HostList,
            // `for layer in self.layers:` over an `nn.ModuleList`.
            Ty::Module => Ty::Module,
            _ => Ty::Unknown,
        }
    }
}

impl From<Returns> for Ty {
    fn from(returns: Returns) -> Self {
        match returns {
            Returns::Tensor => Ty::Tensor,
            Returns::TensorSeq => Ty::TensorSeq,
            Returns::Host => Ty::Host,
            Returns::HostList => Ty::HostList,
            Returns::Array => Ty::Array,
            Returns::Module => Ty::Module,
            Returns::Stream => Ty::Stream,
            Returns::Event => Ty::Event,
        }
    }
}

/// What the inference remembers besides the bindings: return types, and memoised answers.
pub(crate) struct TypeState<'a> {
    pub(super) facts: ProjectFacts<'a>,
    /// Return types of this module's functions visited so far (callees are visited first).
    learned_returns: FxHashMap<String, Ty>,
    /// This module's functions whose every return is a tuple of the same length: the type of
    /// each position.
    learned_tuple_returns: FxHashMap<String, Vec<Ty>>,
    /// The configured capture predicates, by last name.
    pub(super) capture_predicates: &'a [String],
    /// The GPUs the analysis targets (see [`crate::settings::Platforms`]).
    pub(super) platforms: crate::settings::Platforms,
    /// This module's functions whose every return is a capture flag.
    pub(super) learned_predicates: rustc_hash::FxHashSet<String>,
    /// This module's functions whose every return is an unwritten allocation.
    learned_uninitialized: rustc_hash::FxHashSet<String>,
    /// This module's functions that keep host data on the host (see
    /// [`super::host_functions`]).
    pub(super) host_preserving: rustc_hash::FxHashSet<String>,
    /// Types per expression node, valid until the next binding changes: every rule asks about
    /// the same receivers and callees.
    cache: RefCell<NodeCache<Ty>>,
}

impl<'a> TypeState<'a> {
    pub(super) fn new(facts: ProjectFacts<'a>) -> Self {
        TypeState {
            facts,
            learned_returns: FxHashMap::default(),
            learned_tuple_returns: FxHashMap::default(),
            capture_predicates: &[],
            platforms: crate::settings::Platforms::default(),
            learned_predicates: rustc_hash::FxHashSet::default(),
            learned_uninitialized: rustc_hash::FxHashSet::default(),
            host_preserving: rustc_hash::FxHashSet::default(),
            cache: RefCell::new(NodeCache::new()),
        }
    }
}

impl<'a> SemanticModel<'a> {
    /// Whether another module's function (by qualified name) returns an uninitialised buffer.
    pub fn returns_uninitialized_buffer(&self, qualified: &str) -> bool {
        self.types
            .facts
            .uninitialized_buffers
            .is_some_and(|known| known.contains(qualified))
    }

    /// Records that every return of a function of this module (`helper`, `Class.method`) is a
    /// buffer from `torch.empty` and friends that nothing wrote (GR404 learns it).
    pub fn learn_uninitialized_buffer(&mut self, qualname: &str) {
        self.types
            .learned_uninitialized
            .insert(qualname.to_string());
    }

    /// Whether a function of this module returns an uninitialised buffer on every path.
    pub fn is_learned_uninitialized_buffer(&self, qualname: &str) -> bool {
        self.types.learned_uninitialized.contains(qualname)
    }

    /// Whether the module imports NumPy anywhere (array methods are then ambiguous).
    pub fn imports_numpy(&self) -> bool {
        self.imports_numpy
    }

    pub(super) fn local_return(&self, qualname: &str) -> Option<Ty> {
        self.types.learned_returns.get(qualname).copied()
    }

    /// Records what phase 1 found a function of this module returns, for a check that skips the
    /// function's body.
    pub fn learn_skipped_return(&mut self, qualname: &str) {
        let known = self
            .types
            .facts
            .own_returns
            .and_then(|own| own.get(qualname));
        if let Some(ty) = known.copied() {
            self.learn_return(qualname, ty);
        }
        if self
            .types
            .facts
            .own_host_preserving
            .is_some_and(|own| own.contains(qualname))
        {
            self.learn_host_preserving(qualname);
        }
    }

    /// Records the type of each position of the tuples a function of this module returns on
    /// every path, for callers that unpack them (`embeds, mask = self._gather(...)`).
    pub fn learn_tuple_return(&mut self, qualname: &str, elements: Vec<Ty>) {
        self.invalidate();
        self.types
            .learned_tuple_returns
            .insert(qualname.to_string(), elements);
    }

    /// The positions' types of the tuple a call of this module's function returns.
    pub(super) fn local_tuple_return(&self, call: &ast::ExprCall) -> Option<Vec<Ty>> {
        let qualname = match &*call.func {
            // A function of this module (its `def` binds a host value) or of an enclosing one.
            Expr::Name(name)
                if matches!(
                    self.lookup(name.id.as_str()),
                    None | Some(Binding::Value(Ty::Host))
                ) =>
            {
                name.id.as_str().to_string()
            }
            Expr::Attribute(attribute) => {
                let class = self.instance_class(&attribute.value)?;
                format!("{class}.{}", attribute.attr.id)
            }
            _ => return None,
        };
        self.types
            .learned_tuple_returns
            .get(&qualname)
            .map(|elements| {
                elements
                    .iter()
                    .map(|&ty| self.host_in_host_out(&qualname, call, ty))
                    .collect()
            })
    }

    /// The positions' types of the tuple a call of another module's function returns.
    pub(super) fn external_tuple_return(&self, call: &ast::ExprCall) -> Option<&'a [Ty]> {
        let qualified = self.qualified_name(&call.func)?;
        self.types
            .facts
            .tuple_returns?
            .get(&*qualified)
            .map(|elements| &**elements)
    }

    /// Records what a function of this module returns, for its callers visited later.
    pub fn learn_return(&mut self, qualname: &str, ty: Ty) {
        self.invalidate();
        self.types.learned_returns.insert(qualname.to_string(), ty);
    }

    /// The property that reading `receiver.attribute` runs in the function `qualname`, when the
    /// property waits for the device and `receiver` is still the parameter.
    pub fn property_read(
        &self,
        qualname: &str,
        receiver: &str,
        attribute: &str,
    ) -> Option<&'a PropertyRead> {
        self.types
            .facts
            .property_reads?
            .get(qualname)?
            .iter()
            .find(|read| read.receiver == receiver && read.attribute == attribute)
            .filter(|_| self.is_parameter(receiver))
    }

    /// The host-data fields of a function's class-typed parameters (see
    /// [`ProjectFacts::attribute_types`]).
    pub fn attribute_types(&self, qualname: &str) -> &'a [AttributeType] {
        self.types
            .facts
            .attribute_types
            .and_then(|types| types.get(qualname))
            .map_or(&[], Vec::as_slice)
    }

    /// Parameters of a function of this module whose type its reached call sites decide.
    pub fn param_types(&self, qualname: &str) -> &'a [(String, Ty)] {
        self.types
            .facts
            .param_types
            .and_then(|params| params.get(qualname))
            .map_or(&[], Vec::as_slice)
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
        if let Some(known) = self.types.cache.borrow().get(key, self.generation.get()) {
            return *known;
        }
        let ty = self.compute_ty(expr);
        self.types
            .cache
            .borrow_mut()
            .insert(key, self.generation.get(), ty);
        ty
    }

    fn compute_ty(&self, expr: &Expr) -> Ty {
        if self.reads_host_field(expr) || self.reads_record_dictionary(expr) {
            return Ty::CpuTensor;
        }
        match expr {
            Expr::Name(name) if self.is_host_field(name.id.as_str()) => {
                // An annotated parameter says `torch.Tensor`; a value moved to the device says
                // more than the field's name.
                match self.lookup(name.id.as_str()) {
                    Some(Binding::Value(Ty::Unknown)) | None => Ty::CpuTensor,
                    Some(Binding::Value(Ty::Tensor)) if self.is_parameter(name.id.as_str()) => {
                        Ty::CpuTensor
                    }
                    Some(Binding::Value(ty)) => *ty,
                    Some(Binding::Import(_)) => Ty::Unknown,
                }
            }
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
                if matches!(binop.op, ast::Operator::BitOr)
                    && (left == Ty::CaptureFlag || right == Ty::CaptureFlag)
                {
                    return Ty::CaptureFlag;
                }
                // `[0] * n` repeats the list, whatever `n` is (a device count syncs, GR109).
                if matches!(binop.op, ast::Operator::Mult) {
                    if is_sequence(&binop.left, left) {
                        return left;
                    }
                    if is_sequence(&binop.right, right) {
                        return right;
                    }
                }
                combine(left, right)
            }
            Expr::BoolOp(bool_op) => self.bool_op_ty(bool_op),
            Expr::UnaryOp(unary) => match unary.op {
                ast::UnaryOp::Not => Ty::Host,
                // `-x_cpu` and `~mask_cpu` are new host tensors.
                _ => match self.ty(&unary.operand) {
                    ty if ty.is_host_tensor() => host_memory::new_host_tensor(ty),
                    ty => ty,
                },
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
            // `x.shape[0]`: an integer.
            Expr::Subscript(subscript) if matches!(&*subscript.value, Expr::Attribute(a) if a.attr.id.as_str() == "shape") => {
                Ty::Host
            }
            Expr::Subscript(subscript) => match self.ty(&subscript.value) {
                Ty::Tensor | Ty::TensorSeq => Ty::Tensor,
                // An element (or a slice) of a list of host tensors.
                Ty::HostTensorSeq => Ty::CpuTensor,
                ty if ty.is_host_tensor() => {
                    host_memory::subscript_memory(ty, &subscript.slice, |index| self.ty(index))
                }
                Ty::Array => Ty::Array,
                // `self.layers[i]` of an `nn.ModuleList`.
                Ty::Module => Ty::Module,
                // `kwargs["seq_lens_cpu"]`: an item keyed like a host mirror, as an attribute
                // named so is.
                _ if matches!(&*subscript.slice, Expr::StringLiteral(key)
                    if host_named(key.value.to_str())) =>
                {
                    Ty::CpuTensor
                }
                _ => Ty::Unknown,
            },
            Expr::Named(named) => self.ty(&named.value),
            Expr::If(if_expr) => match (&*if_expr.body, &*if_expr.orelse) {
                // `x if cond else None` is used as `x`: the `None` case fails on use.
                (value, Expr::NoneLiteral(_)) | (Expr::NoneLiteral(_), value) => self.ty(value),
                // `g.cpu() if g.is_cuda else g`: `g` is kept only when it is on the host.
                (body, orelse) if kept_on_host(&if_expr.test, false, orelse) => {
                    self.ty(body).join(Ty::CpuTensor)
                }
                (body, orelse) if kept_on_host(&if_expr.test, true, body) => {
                    Ty::CpuTensor.join(self.ty(orelse))
                }
                (body, orelse) => self.ty(body).join(self.ty(orelse)),
            },
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
            | Expr::Dict(_)
            | Expr::DictComp(_)
            | Expr::Set(_)
            | Expr::SetComp(_)
            | Expr::Lambda(_)
            | Expr::Generator(_) => Ty::Host,
            // An empty list may be filled with anything.
            // A list of slices (`[slice(None)] * ndim`) indexes like a tuple, and one of `None`
            // placeholders is filled later with anything: no index data.
            Expr::List(list) if list.elts.iter().any(is_placeholder) => Ty::Host,
            Expr::List(list) => {
                if !list.elts.is_empty() && list.elts.iter().all(|elt| self.ty(elt) == Ty::Host) {
                    Ty::HostList
                } else if !list.elts.is_empty()
                    && list.elts.iter().all(|elt| self.ty(elt) == Ty::HostList)
                {
                    Ty::HostLists
                } else {
                    Ty::Host
                }
            }
            Expr::ListComp(comprehension) => self.list_comprehension_ty(comprehension),
            _ => Ty::Unknown,
        }
    }
}

impl SemanticModel<'_> {
    /// `[f(x) for x in xs]`: a list of tensors when `f(x)` is one, a list of host values when it
    /// is one or when it is the loop variable over host values (`[i for i in range(n)]`).
    fn list_comprehension_ty(&self, comprehension: &ast::ExprListComp) -> Ty {
        let generator = comprehension.generators.first();
        let record = generator
            .and_then(|generator| self.record_comprehension_element(&comprehension.elt, generator));
        let element = match (&*comprehension.elt, generator) {
            _ if let Some(record) = record => record,
            (Expr::Name(name), Some(generator)) if matches!(&generator.target, Expr::Name(target) if target.id == name.id) => {
                self.ty(&generator.iter).element()
            }
            (elt, _) => self.ty(elt),
        };
        match element {
            Ty::Tensor => Ty::TensorSeq,
            ty if ty.is_host_tensor() => Ty::HostTensorSeq,
            Ty::Host => Ty::HostList,
            Ty::HostList => Ty::HostLists,
            _ => Ty::Host,
        }
    }
}

/// Whether `kept` is the tensor that `test`, evaluated to `holds`, says is not on the device:
/// `g` in `... if g.is_cuda else g` (`holds` false) or in `g if not g.is_cuda else ...`.
fn kept_on_host(test: &Expr, holds: bool, kept: &Expr) -> bool {
    match test {
        Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Not,
            operand,
            ..
        }) => kept_on_host(operand, !holds, kept),
        Expr::Attribute(attribute) if !holds && attribute.attr.id.as_str() == "is_cuda" => {
            matches!((&*attribute.value, kept), (Expr::Name(tested), Expr::Name(kept))
                if tested.id == kept.id)
        }
        _ => false,
    }
}

/// An element that makes a list no index data: `None` (a placeholder) or `slice(...)`.
fn is_placeholder(expr: &Expr) -> bool {
    matches!(expr, Expr::NoneLiteral(_))
        || matches!(expr, Expr::Call(call) if matches!(&*call.func, Expr::Name(name) if name.id.as_str() == "slice"))
}

/// Whether an operand of `*` is a Python sequence, which `*` repeats.
pub fn is_sequence(expr: &Expr, ty: Ty) -> bool {
    matches!(
        expr,
        Expr::List(_) | Expr::ListComp(_) | Expr::Tuple(_) | Expr::StringLiteral(_)
    ) || matches!(ty, Ty::HostList | Ty::HostLists)
}

/// The type of a binary operation's result.
///
/// A host tensor combined with anything but a device tensor stays on the host (PyTorch refuses to
/// mix a multi-element host tensor with a device one), in a new, pageable tensor.
fn combine(left: Ty, right: Ty) -> Ty {
    match (left, right) {
        (Ty::Tensor, _) | (_, Ty::Tensor) => Ty::Tensor,
        (Ty::PinnedTensor | Ty::PageableTensor, _) | (_, Ty::PinnedTensor | Ty::PageableTensor) => {
            Ty::PageableTensor
        }
        (Ty::CpuTensor, _) | (_, Ty::CpuTensor) => Ty::CpuTensor,
        (Ty::Array, _) | (_, Ty::Array) => Ty::Array,
        (Ty::HostList, Ty::HostList) => Ty::HostList,
        (Ty::HostLists, Ty::HostLists) => Ty::HostLists,
        (a, b) if a.is_host_value() && b.is_host_value() => Ty::Host,
        _ => Ty::Unknown,
    }
}
