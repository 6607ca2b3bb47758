//! The semantic model of one module: imports resolved to qualified names, scopes and bindings,
//! class attributes, and a light, flow-ordered tensor inference.
//!
//! The inference answers one question — "is this expression a tensor?" — with three honest
//! answers: yes, no, or unknown. Rules report only on "yes"; "unknown" keeps graphready silent.

use crate::tensor_api::{self, Returns};
use ruff_python_ast::{self as ast, Expr, Parameters, Stmt};
use rustc_hash::{FxHashMap, FxHashSet};
use std::cell::RefCell;
use std::rc::Rc;

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

#[derive(Debug, Clone)]
enum Binding {
    /// An imported module or member, by qualified name.
    Import(String),
    Value(Ty),
}

#[derive(Debug, Default)]
struct Scope<'a> {
    is_class: bool,
    bindings: FxHashMap<&'a str, Binding>,
    /// Names bound here to a maybe-device boolean tensor (a mask), see
    /// [`SemanticModel::is_bool_tensor`].
    bool_tensors: FxHashSet<&'a str>,
    /// The parameters of the function this scope belongs to.
    parameters: FxHashSet<&'a str>,
}

/// What is known about a class defined in this module.
#[derive(Debug, Default)]
pub struct ClassInfo<'a> {
    pub bases: Vec<&'a Expr>,
    pub attributes: FxHashMap<&'a str, Ty>,
}

/// Return types known before the walk: other modules' functions by qualified name. (This
/// module's own are learned during the walk, callees first.)
#[derive(Debug, Default, Clone, Copy)]
pub struct KnownReturns<'a> {
    pub external: Option<&'a FxHashMap<String, Ty>>,
}

/// The semantic model, updated as the checker walks the module in source order.
pub struct SemanticModel<'a> {
    returns: KnownReturns<'a>,
    /// Return types of this module's functions visited so far (callees are visited first).
    learned_returns: FxHashMap<String, Ty>,
    scopes: Vec<Scope<'a>>,
    /// Emptied scopes, kept for reuse.
    spare_scopes: Vec<Scope<'a>>,
    /// Memoised answers per expression node, valid until the next binding changes: every rule
    /// asks about the same receivers and callees.
    /// Every name any import bound: a name outside this set never roots a qualified name, which
    /// answers most `qualified_name` questions with one lookup.
    import_names: FxHashSet<&'a str>,
    /// Whether the module imports NumPy anywhere (array methods are then ambiguous).
    imports_numpy: bool,
    /// Qualified names per expression node. A node is asked about many times at one program
    /// point (once per rule), and an import is almost never shadowed between those questions.
    qualified_cache: RefCell<NodeCache<Option<Rc<str>>>>,
    ty_cache: RefCell<NodeCache<Ty>>,
    /// Bumped whenever a binding changes; memoised answers of older generations are stale.
    generation: u32,
    /// The dotted name of this module's package, for relative imports (`None`: unknown).
    package: Option<String>,
    classes: FxHashMap<&'a str, ClassInfo<'a>>,
    /// The class whose method is being visited, and that method's `self` parameter name.
    method_context: Vec<(Option<&'a str>, Option<&'a str>)>,
}

impl<'a> SemanticModel<'a> {
    pub fn new(module: Option<&str>, is_package: bool, returns: KnownReturns<'a>) -> Self {
        let package = module.map(|module| {
            if is_package {
                module.to_string()
            } else {
                module
                    .rsplit_once('.')
                    .map_or("", |(parent, _)| parent)
                    .to_string()
            }
        });
        SemanticModel {
            returns,
            learned_returns: FxHashMap::default(),
            scopes: vec![Scope::default()],
            spare_scopes: Vec::new(),
            import_names: FxHashSet::default(),
            imports_numpy: false,
            qualified_cache: RefCell::new(NodeCache::new()),
            ty_cache: RefCell::new(NodeCache::new()),
            generation: 0,
            package,
            classes: FxHashMap::default(),
            method_context: Vec::new(),
        }
    }

    /// Forgets memoised answers: a binding changed.
    fn invalidate(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    pub fn push_scope(&mut self, is_class: bool) {
        self.invalidate();
        // A scope left earlier lends its tables: no allocation, no growing, per function.
        let mut scope = self.spare_scopes.pop().unwrap_or_default();
        scope.is_class = is_class;
        self.scopes.push(scope);
    }

    pub fn pop_scope(&mut self) {
        self.invalidate();
        if self.scopes.len() > 1 {
            if let Some(mut scope) = self.scopes.pop() {
                scope.bindings.clear();
                scope.bool_tensors.clear();
                scope.parameters.clear();
                self.spare_scopes.push(scope);
            }
        }
    }

    pub fn enter_function(&mut self, class: Option<&'a str>, self_name: Option<&'a str>) {
        self.method_context.push((class, self_name));
        self.push_scope(false);
    }

    pub fn exit_function(&mut self) {
        self.method_context.pop();
        self.pop_scope();
    }

    fn current(&mut self) -> &mut Scope<'a> {
        self.scopes
            .last_mut()
            .expect("the module scope is never popped")
    }

    /// Module-level names bound by imports, with their qualified names.
    pub fn module_imports(&self) -> impl Iterator<Item = (&str, &str)> {
        self.scopes[0]
            .bindings
            .iter()
            .filter_map(|(name, binding)| match binding {
                Binding::Import(qualified) => Some((*name, qualified.as_str())),
                Binding::Value(_) => None,
            })
    }

    fn local_return(&self, qualname: &str) -> Option<Ty> {
        self.learned_returns.get(qualname).copied()
    }

    /// Records what a function of this module returns, for its callers visited later.
    pub fn learn_return(&mut self, qualname: &str, ty: Ty) {
        self.invalidate();
        self.learned_returns.insert(qualname.to_string(), ty);
    }

    pub fn bind(&mut self, name: &'a str, ty: Ty) {
        self.invalidate();
        let scope = self.current();
        scope.bindings.insert(name, Binding::Value(ty));
        if !scope.bool_tensors.is_empty() {
            scope.bool_tensors.remove(name);
        }
        if !scope.parameters.is_empty() {
            scope.parameters.remove(name);
        }
    }

    /// The scopes visible from here, innermost first: class bodies are not visible from the
    /// functions nested in them.
    fn visible_scopes(&self) -> impl Iterator<Item = &Scope<'a>> {
        let innermost = self.scopes.len() - 1;
        self.scopes
            .iter()
            .enumerate()
            .rev()
            .filter(move |(index, scope)| *index == innermost || !scope.is_class)
            .map(|(_, scope)| scope)
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.visible_scopes()
            .find_map(|scope| scope.bindings.get(name))
    }

    /// The innermost scope visible from here that binds `name`.
    fn lookup_scope(&self, name: &str) -> Option<&Scope<'a>> {
        self.visible_scopes()
            .find(|scope| scope.bindings.contains_key(name))
    }

    /// Records `import ...` / `from ... import ...`.
    pub fn bind_import(&mut self, stmt: &'a Stmt) {
        self.invalidate();
        let numpy = match stmt {
            Stmt::Import(import) => import
                .names
                .iter()
                .any(|alias| alias.name.id.as_str().split('.').next() == Some("numpy")),
            Stmt::ImportFrom(import) => import
                .module
                .as_ref()
                .is_some_and(|m| m.id.as_str().split('.').next() == Some("numpy")),
            _ => false,
        };
        self.imports_numpy |= numpy;
        match stmt {
            Stmt::Import(ast::StmtImport { names, .. }) => {
                for alias in names {
                    let qualified = alias.name.id.as_str();
                    match &alias.asname {
                        Some(asname) => {
                            let binding = Binding::Import(qualified.to_string());
                            self.import_names.insert(asname.id.as_str());
                            self.current().bindings.insert(asname.id.as_str(), binding);
                        }
                        None => {
                            // `import torch.cuda` binds `torch`.
                            let head = qualified.split('.').next().unwrap_or(qualified);
                            let binding = Binding::Import(head.to_string());
                            let name = &alias.name.id.as_str()[..head.len()];
                            self.import_names.insert(name);
                            self.current().bindings.insert(name, binding);
                        }
                    }
                }
            }
            Stmt::ImportFrom(ast::StmtImportFrom {
                module,
                names,
                level,
                ..
            }) => {
                let base = self.resolve_module(module.as_ref().map(|m| m.id.as_str()), *level);
                for alias in names {
                    if alias.name.id.as_str() == "*" {
                        continue;
                    }
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name).id.as_str();
                    let qualified = match &base {
                        Some(base) if !base.is_empty() => format!("{base}.{}", alias.name.id),
                        _ => alias.name.id.to_string(),
                    };
                    self.current()
                        .bindings
                        .insert(bound, Binding::Import(qualified));
                    self.import_names.insert(bound);
                }
            }
            _ => {}
        }
    }

    /// The absolute module of `from <dots><module> import`, or a dotted best effort when the
    /// package is unknown.
    fn resolve_module(&self, module: Option<&str>, level: u32) -> Option<String> {
        if level == 0 {
            return module.map(str::to_string);
        }
        let package = self.package.as_deref()?;
        let mut parts: Vec<&str> = if package.is_empty() {
            Vec::new()
        } else {
            package.split('.').collect()
        };
        for _ in 1..level {
            parts.pop()?;
        }
        if let Some(module) = module {
            parts.push(module);
        }
        Some(parts.join("."))
    }

    /// The qualified name an expression refers to through imports: `T.cuda.synchronize` with
    /// `import torch as T` is `torch.cuda.synchronize`. `None` for anything not rooted in an import.
    pub fn qualified_name(&self, expr: &Expr) -> Option<Rc<str>> {
        if !matches!(expr, Expr::Name(_) | Expr::Attribute(_)) {
            return None;
        }
        let key = std::ptr::from_ref(expr) as usize;
        // Answers hold until a binding changes: a node can be asked about before a later import
        // binds its root (a class scan reads method bodies ahead of their local imports).
        if let Some(known) = self.qualified_cache.borrow().get(key, self.generation) {
            return known.clone();
        }
        let mut root = expr;
        while let Expr::Attribute(attribute) = root {
            root = &attribute.value;
        }
        let answer = match root {
            Expr::Name(name) if self.import_names.contains(name.id.as_str()) => {
                self.compute_qualified_name(expr).map(Rc::from)
            }
            _ => None,
        };
        self.qualified_cache
            .borrow_mut()
            .insert(key, self.generation, answer.clone());
        answer
    }

    fn compute_qualified_name(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Name(name) => match self.lookup(name.id.as_str())? {
                Binding::Import(qualified) => Some(qualified.clone()),
                Binding::Value(_) => None,
            },
            Expr::Attribute(attribute) => {
                let base = self.qualified_name(&attribute.value)?;
                let mut qualified = String::with_capacity(base.len() + 1 + attribute.attr.len());
                qualified.push_str(&base);
                qualified.push('.');
                qualified.push_str(attribute.attr.id.as_str());
                Some(qualified)
            }
            _ => None,
        }
    }

    /// Whether `expr` names a qualified name exactly.
    pub fn is(&self, expr: &Expr, qualified: &str) -> bool {
        self.qualified_name(expr).as_deref() == Some(qualified)
    }

    pub fn define_class(&mut self, name: &'a str, info: ClassInfo<'a>) {
        self.invalidate();
        self.classes.insert(name, info);
    }

    fn class_attribute(&self, class: &str, attribute: &str, depth: u8) -> Option<Ty> {
        let info = self.classes.get(class)?;
        if let Some(ty) = info.attributes.get(attribute) {
            return Some(*ty);
        }
        if depth == 0 {
            return None;
        }
        info.bases.iter().find_map(|base| match base {
            Expr::Name(name) => self.class_attribute(name.id.as_str(), attribute, depth - 1),
            _ => None,
        })
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

    fn self_class(&self) -> Option<(&'a str, &'a str)> {
        match self.method_context.last() {
            Some((Some(class), Some(self_name))) => Some((class, self_name)),
            _ => None,
        }
    }

    /// Whether the expression is a tensor, as far as the model knows.
    pub fn is_tensor(&self, expr: &Expr) -> bool {
        self.ty(expr) == Ty::Tensor
    }

    /// Whether `name` is a parameter of the innermost function, not rebound since.
    pub fn is_parameter(&self, name: &str) -> bool {
        self.scopes
            .last()
            .is_some_and(|scope| scope.parameters.contains(name))
            && matches!(self.lookup(name), Some(Binding::Value(_)))
    }

    /// Whether `name` is bound in the innermost scope (a local of the function being visited).
    pub fn is_local(&self, name: &str) -> bool {
        self.scopes
            .last()
            .is_some_and(|scope| scope.bindings.contains_key(name))
    }

    /// The `self` parameter's name when a method of a class is being visited.
    pub fn self_name(&self) -> Option<&'a str> {
        self.self_class().map(|(_, self_name)| self_name)
    }

    /// The type of `self.<attribute>` in the method being visited, as the class's assignments
    /// say (`Ty::Unknown` when the class does not say).
    pub fn self_attribute_ty(&self, attribute: &str) -> Ty {
        self.self_class()
            .and_then(|(class, _)| self.class_attribute(class, attribute, 4))
            .unwrap_or_default()
    }

    /// Whether the expression is a boolean tensor that may live on the device (a mask):
    /// comparisons of device tensors, `.bool()`, `.to(torch.bool)`, `torch.isnan` and friends,
    /// logical operations, `~` / `&` / `|` of masks, and factories with `dtype=torch.bool`.
    /// Anything less certain is not a mask.
    pub fn is_bool_tensor(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Name(name) => self
                .lookup_scope(name.id.as_str())
                .is_some_and(|scope| scope.bool_tensors.contains(name.id.as_str())),
            Expr::Compare(compare) => {
                compare.ops.iter().all(|op| {
                    matches!(
                        op,
                        ast::CmpOp::Lt
                            | ast::CmpOp::LtE
                            | ast::CmpOp::Gt
                            | ast::CmpOp::GtE
                            | ast::CmpOp::Eq
                            | ast::CmpOp::NotEq
                    )
                }) && self.ty(expr) == Ty::Tensor
            }
            Expr::UnaryOp(unary) => {
                matches!(unary.op, ast::UnaryOp::Invert) && self.is_bool_tensor(&unary.operand)
            }
            Expr::BinOp(binop) => {
                matches!(
                    binop.op,
                    ast::Operator::BitAnd | ast::Operator::BitOr | ast::Operator::BitXor
                ) && self.is_bool_tensor(&binop.left)
                    && self.is_bool_tensor(&binop.right)
            }
            Expr::Subscript(subscript) => self.is_bool_tensor(&subscript.value),
            Expr::Named(named) => self.is_bool_tensor(&named.value),
            Expr::Call(call) => self.is_bool_call(call) && self.ty(expr) == Ty::Tensor,
            _ => false,
        }
    }

    fn is_bool_call(&self, call: &ast::ExprCall) -> bool {
        const BOOL_OPS: &[&str] = &[
            "isnan",
            "isinf",
            "isfinite",
            "isneginf",
            "isposinf",
            "isreal",
            "isin",
            "isclose",
            "signbit",
            "logical_and",
            "logical_or",
            "logical_not",
            "logical_xor",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "greater",
            "less",
            "greater_equal",
            "less_equal",
            "not_equal",
        ];
        let is_bool_dtype = |expr: &Expr| self.is(expr, "torch.bool");
        let dtype_is_bool = keyword(call, "dtype").is_some_and(is_bool_dtype);
        if let Some(qualified) = self.qualified_name(&call.func) {
            let Some(name) = qualified.strip_prefix("torch.") else {
                return false;
            };
            return BOOL_OPS.contains(&name) || dtype_is_bool;
        }
        let Expr::Attribute(attribute) = &*call.func else {
            return false;
        };
        match attribute.attr.id.as_str() {
            "bool" => call.arguments.is_empty(),
            "to" => call.arguments.args.iter().any(is_bool_dtype) || dtype_is_bool,
            "new_zeros" | "new_ones" | "new_empty" | "new_full" => dtype_is_bool,
            method => BOOL_OPS.contains(&method),
        }
    }

    /// The inferred type of an expression.
    pub fn ty(&self, expr: &Expr) -> Ty {
        let key = std::ptr::from_ref(expr) as usize;
        if let Some(known) = self.ty_cache.borrow().get(key, self.generation) {
            return *known;
        }
        let ty = self.compute_ty(expr);
        self.ty_cache.borrow_mut().insert(key, self.generation, ty);
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
                .returns
                .external
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

/// Whether a name says its value lives on the host (`positions_np`, `seq_lens_cpu`,
/// `cpu_tokens`, `host_buf`): engines name their NumPy and pinned mirrors this way.
pub fn host_named(name: &str) -> bool {
    // Without allocating: this runs for every name the inference looks at.
    fn has(haystack: &[u8], needle: &[u8]) -> bool {
        haystack
            .windows(needle.len())
            .any(|window| window.eq_ignore_ascii_case(needle))
    }
    fn starts(haystack: &[u8], prefix: &[u8]) -> bool {
        haystack.len() >= prefix.len() && haystack[..prefix.len()].eq_ignore_ascii_case(prefix)
    }
    fn ends(haystack: &[u8], suffix: &[u8]) -> bool {
        haystack.len() >= suffix.len()
            && haystack[haystack.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
    }
    let name = name.as_bytes();
    // Every marker holds a `p` (`np`, `numpy`, `cpu`) or an `h` (`host`): a name with neither
    // is answered without the substring searches.
    if !name.iter().any(|b| matches!(b | 0x20, b'p' | b'h')) {
        return false;
    }
    ends(name, b"_np")
        || starts(name, b"np_")
        || has(name, b"numpy")
        || ends(name, b"_cpu")
        || starts(name, b"cpu_")
        || has(name, b"_cpu_")
        || ends(name, b"_host")
        || starts(name, b"host_")
        || has(name, b"_host_")
}

/// A keyword argument by name.
pub fn keyword<'e>(call: &'e ast::ExprCall, name: &str) -> Option<&'e Expr> {
    call.arguments
        .keywords
        .iter()
        .find(|keyword| {
            keyword
                .arg
                .as_ref()
                .is_some_and(|arg| arg.id.as_str() == name)
        })
        .map(|keyword| &keyword.value)
}

/// Whether a device expression names the host: `"cpu"`, `"cpu:0"`, `torch.device("cpu")`.
pub fn is_cpu_device(expr: &Expr) -> bool {
    match expr {
        Expr::StringLiteral(literal) => {
            let text = literal.value.to_str();
            text == "cpu" || text.starts_with("cpu:")
        }
        Expr::Call(call) => {
            matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "device")
                && call.arguments.args.first().is_some_and(is_cpu_device)
        }
        _ => false,
    }
}

/// `.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`.
pub fn is_cpu_move(call: &ast::ExprCall) -> bool {
    call.arguments.args.first().is_some_and(is_cpu_device)
        || keyword(call, "device").is_some_and(is_cpu_device)
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

/// A direct-mapped memo keyed by AST node address: a lookup is one index and a compare, an
/// insertion never allocates, and a collision merely forgets an older answer.
struct NodeCache<T> {
    slots: Vec<Option<(usize, u32, T)>>,
}

impl<T> NodeCache<T> {
    const SLOTS: usize = 256;

    fn new() -> Self {
        NodeCache {
            slots: std::iter::repeat_with(|| None).take(Self::SLOTS).collect(),
        }
    }

    fn slot(key: usize) -> usize {
        // Nodes are at least 8-byte aligned and a few dozen bytes apart.
        ((key >> 3).wrapping_mul(0x9E37_79B9) >> 7) & (Self::SLOTS - 1)
    }

    fn get(&self, key: usize, generation: u32) -> Option<&T> {
        match &self.slots[Self::slot(key)] {
            Some((k, g, value)) if *k == key && *g == generation => Some(value),
            _ => None,
        }
    }

    fn insert(&mut self, key: usize, generation: u32, value: T) {
        self.slots[Self::slot(key)] = Some((key, generation, value));
    }
}

#[cfg(test)]
mod tests {
    use super::host_named;

    #[test]
    fn host_mirror_names() {
        for name in [
            "positions_np",
            "np_positions",
            "__np",
            "np_",
            "seq_lens_cpu",
            "cpu_tokens",
            "a_cpu_b",
            "_cpu",
            "host_buf",
            "buf_host",
            "a_HOST_b",
            "to_numpy_array",
            "NumPy",
            "a__np",
        ] {
            assert!(host_named(name), "{name}");
        }
        for name in [
            "np",
            "cpu",
            "host",
            "x_np_y",
            "xcpu_y",
            "x_cpux",
            "hidden_states",
            "input_ids",
            "hostname",
            "cpus",
            "npu_buf",
            "",
        ] {
            assert!(!host_named(name), "{name}");
        }
    }
}
