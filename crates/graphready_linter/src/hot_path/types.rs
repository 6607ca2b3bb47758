//! The typed project model on the index side: classes named by annotations and constructors,
//! the types of attributes and method results across modules, the class hierarchy, and the
//! methods a call on a typed receiver may run (its class's, and every override in its
//! subclasses: class hierarchy analysis).

use super::index::{ClassId, Definition, NodeId, ProjectIndex, MAX_DEPTH};
use crate::summary::{PathRoot, PathStep, Ref, TypePath, TypeRef};
use rustc_hash::FxHashSet;

/// How deep the returns of a method called on a module of unknown class are followed.
const ANY_MODULE_DEPTH: u8 = 4;

/// How many overrides one call may fan out to; beyond it the call is followed to the first ones
/// and the fan-out is reported by `--show-scope`.
pub const MAX_FANOUT: usize = 256;

/// What the index knows of a value's type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeVal {
    pub classes: Vec<ClassId>,
    /// A container of instances of `classes`.
    pub elements: bool,
    /// Some `torch.nn.Module` whose class is not known (a loaded model): a method call may run
    /// that method of any module class of the project.
    pub any_module: bool,
    /// The classes themselves (`type[X]`), not instances.
    pub class_object: bool,
}

impl TypeVal {
    fn is_empty(&self) -> bool {
        self.classes.is_empty() && !self.any_module
    }

    fn push(&mut self, class: ClassId) {
        if !self.classes.contains(&class) {
            self.classes.push(class);
        }
    }

    fn merge(&mut self, other: TypeVal) {
        for class in other.classes {
            self.push(class);
        }
        self.elements |= other.elements;
        self.any_module |= other.any_module;
        self.class_object |= other.class_object;
    }
}

/// `nn.Module`'s methods that return the module itself (`model.to(device)`, `model.eval()`).
const MODULE_SELF_RETURNING: &[&str] = &[
    "to",
    "cuda",
    "cpu",
    "eval",
    "train",
    "half",
    "float",
    "double",
    "bfloat16",
    "requires_grad_",
];

fn is_torch_module(qualified: &str) -> bool {
    matches!(
        qualified,
        "torch.nn.Module" | "torch.nn.modules.module.Module"
    )
}

impl ProjectIndex<'_> {
    /// The class a reference names, if it names one in the project.
    pub(super) fn class_of(&self, module: usize, reference: &Ref) -> Option<ClassId> {
        match self.lookup(module, reference)? {
            Definition::Class(m, c) => Some((m, c)),
            Definition::Function(_) => None,
        }
    }

    pub(super) fn type_of_ref(&self, module: usize, ty: &TypeRef) -> TypeVal {
        let mut value = TypeVal {
            elements: ty.elements,
            class_object: ty.class_object,
            ..TypeVal::default()
        };
        for reference in &ty.classes {
            if let Ref::Qualified(q) = reference {
                if is_torch_module(q) {
                    value.any_module = true;
                    continue;
                }
            }
            if let Some(class) = self.class_of(module, reference) {
                value.push(class);
            }
        }
        value
    }

    /// The type of an expression's path, written in `module`.
    pub fn eval_path(&self, module: usize, path: &TypePath) -> TypeVal {
        self.eval_path_depth(module, path, MAX_DEPTH)
    }

    fn eval_path_depth(&self, module: usize, path: &TypePath, depth: u8) -> TypeVal {
        let mut value = match &path.root {
            PathRoot::Type(ty) => self.type_of_ref(module, ty),
            PathRoot::SelfOf(class) => {
                let mut value = TypeVal::default();
                if let Some(class) = self.class_named(module, class) {
                    value.push(class);
                }
                value
            }
            PathRoot::Called(reference) => match self.lookup(module, reference) {
                Some(Definition::Class(m, c)) => {
                    let mut value = TypeVal::default();
                    value.push((m, c));
                    value
                }
                Some(Definition::Function(node)) => self.return_type(node, depth),
                None => match reference {
                    Ref::Qualified(q) if is_torch_module(q) => TypeVal {
                        any_module: true,
                        ..TypeVal::default()
                    },
                    _ => TypeVal::default(),
                },
            },
        };
        for step in &path.steps {
            if value.is_empty() || depth == 0 {
                return TypeVal::default();
            }
            value = match step {
                // An instance of a container class (`for processor in self:` in a `list`
                // subclass): what the project puts into such containers.
                PathStep::Item
                    if !value.elements
                        && value
                            .classes
                            .iter()
                            .any(|class| self.container_elements.contains_key(class)) =>
                {
                    let mut next = TypeVal::default();
                    for class in &value.classes {
                        for &element in self.container_elements.get(class).into_iter().flatten() {
                            next.push(element);
                        }
                    }
                    next
                }
                PathStep::Item => TypeVal {
                    elements: false,
                    ..value
                },
                PathStep::Construct if value.class_object => TypeVal {
                    class_object: false,
                    ..value
                },
                PathStep::Construct => TypeVal::default(),
                PathStep::Elements => TypeVal {
                    elements: true,
                    ..value
                },
                // A dict's `.values()` and a container's copy hold the same elements.
                PathStep::Call(method)
                    if value.elements && matches!(method.as_str(), "values" | "copy") =>
                {
                    value
                }
                PathStep::Attr(name) => {
                    let mut next = TypeVal::default();
                    for &class in &value.classes {
                        next.merge(self.field_type(class, name, depth - 1));
                    }
                    next
                }
                PathStep::Call(method) => {
                    let mut next = TypeVal::default();
                    for &class in &value.classes {
                        let Some(node) = self.method_in_class(class, method) else {
                            // `resampler.to(device=...)`: `nn.Module`'s own methods that return
                            // the module.
                            if MODULE_SELF_RETURNING.contains(&method.as_str())
                                && self.is_module_class(class.0, &self.class_summary(class).name)
                            {
                                next.push(class);
                            }
                            continue;
                        };
                        // A method that names no class it returns (`-> nn.Module: raise
                        // NotImplementedError`): what its overrides return, when they say.
                        let returned = self.return_type(node, depth - 1);
                        if returned.classes.is_empty() {
                            let overrides = self.override_returns(class, method, depth - 1);
                            next.merge(if overrides.is_empty() {
                                returned
                            } else {
                                overrides
                            });
                        } else {
                            next.merge(returned);
                        }
                    }
                    // A module of unknown class (`model.get_state_cls()` on an `nn.Module`): what
                    // the method returns in every module class that defines it, as
                    // `resolve_method` runs them.
                    if value.any_module && !value.class_object && method != "forward" {
                        next.merge(self.any_module_returns(method));
                    }
                    next
                }
            };
        }
        value
    }

    /// What a function returns: what its annotation names, else what its returned values are.
    pub(super) fn return_type(&self, node: NodeId, depth: u8) -> TypeVal {
        let function = self.function(node);
        let mut fallback = TypeVal::default();
        if let Some(ty) = &function.return_annotation {
            let annotated = self.type_of_ref(node.module, ty);
            // An annotation that names no project class (`tuple[Any, Any] | None`) leaves the
            // answer to the returns; one that names only `nn.Module` too, when they know more
            // (`def init_resampler(...) -> nn.Module: ... return Resampler(...)`).
            if !annotated.classes.is_empty() || function.return_paths.is_empty() {
                return annotated;
            }
            fallback = annotated;
        }
        let mut value = TypeVal::default();
        if depth > 0 {
            for path in &function.return_paths {
                value.merge(self.eval_path_depth(node.module, path, depth - 1));
            }
        }
        if value.is_empty() {
            fallback
        } else {
            value
        }
    }

    /// What `method` returns in every module class that defines it, computed once per name and
    /// always the same way, whichever thread asks first: at a fixed depth, and seeing no other
    /// module of unknown class on the way (that would make the answer depend on the order).
    fn any_module_returns(&self, method: &str) -> TypeVal {
        thread_local! {
            static COMPUTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        if COMPUTING.with(std::cell::Cell::get) {
            return TypeVal::default();
        }
        if let Some(known) = self
            .any_module_memo
            .lock()
            .ok()
            .and_then(|memo| memo.get(method).cloned())
        {
            return known;
        }
        COMPUTING.with(|computing| computing.set(true));
        let mut overrides = Vec::new();
        self.dispatch_any_module(method, &mut overrides);
        let mut value = TypeVal::default();
        for node in overrides {
            value.merge(self.return_type(node, ANY_MODULE_DEPTH));
        }
        COMPUTING.with(|computing| computing.set(false));
        if let Ok(mut memo) = self.any_module_memo.lock() {
            memo.insert(method.to_string(), value.clone());
        }
        value
    }

    /// What the overrides of `method` below `class` return, for a method whose own definition
    /// says nothing (`def get_builder_cls(): raise NotImplementedError`, overridden by every
    /// backend with its builder class).
    fn override_returns(&self, class: ClassId, method: &str, depth: u8) -> TypeVal {
        let mut value = TypeVal::default();
        if depth == 0 {
            return value;
        }
        let mut overrides = Vec::new();
        self.dispatch_depth(class, method, &mut overrides, 0);
        for node in overrides {
            value.merge(self.return_type(node, depth - 1));
        }
        value
    }

    /// The one class hierarchy that defines `method`: the class that defines it and of which
    /// every other class defining it is a subclass. A call of it on a receiver whose type is not
    /// known can only run that hierarchy's methods (when the project defines it in several
    /// unrelated classes, nothing is guessed).
    fn unique_hierarchy(&self, method: &str) -> Option<ClassId> {
        if method.starts_with("__") {
            return None;
        }
        if let Some(known) = self.hierarchy_memo.lock().ok()?.get(method) {
            return *known;
        }
        let definers = self.definers_of(method);
        let root = (!definers.is_empty() && definers.len() <= MAX_FANOUT)
            .then(|| {
                definers.iter().copied().find(|candidate| {
                    let below: FxHashSet<ClassId> =
                        self.subclasses_of(*candidate).iter().copied().collect();
                    definers
                        .iter()
                        .all(|other| other == candidate || below.contains(other))
                })
            })
            .flatten();
        if let Ok(mut memo) = self.hierarchy_memo.lock() {
            memo.insert(method.to_string(), root);
        }
        root
    }

    /// The classes `instance.name` holds an instance of, for an instance of `class`.
    pub(super) fn field_classes(&self, class: ClassId, name: &str) -> Vec<ClassId> {
        let value = self.field_type(class, name, MAX_DEPTH);
        if value.elements || value.class_object {
            return Vec::new();
        }
        value.classes
    }

    /// The type of `instance.name` for an instance of `class`: its own fields and the
    /// instances its attributes hold, then its bases'.
    fn field_type(&self, class: ClassId, name: &str, depth: u8) -> TypeVal {
        let mut value = TypeVal::default();
        let mut seen = FxHashSet::default();
        let mut pending = vec![class];
        while let Some(current) = pending.pop() {
            if !seen.insert(current) || seen.len() > 32 {
                continue;
            }
            let summary = self.class_summary(current);
            for (field, path) in &summary.fields {
                if field == name && depth > 0 {
                    value.merge(self.eval_path_depth(current.0, path, depth - 1));
                }
            }
            if let Some(refs) = summary.attributes.get(name) {
                for reference in refs {
                    if let Some(held) = self.class_of(current.0, reference) {
                        value.push(held);
                    }
                }
            }
            if !value.is_empty() {
                break;
            }
            pending.extend(self.bases_of(current));
        }
        value
    }

    /// The methods an attribute of a class (or of its bases) is bound to:
    /// `self.<attribute> = self.<method>`.
    fn bound_methods(&self, class: ClassId, attribute: &str) -> Vec<&str> {
        let mut out = Vec::new();
        for current in self.lineage(class, 32) {
            for (field, path) in &self.class_summary(current).fields {
                if field != attribute {
                    continue;
                }
                if let (PathRoot::SelfOf(_), [PathStep::Attr(method)]) =
                    (&path.root, path.steps.as_slice())
                {
                    if self.method_in_class(class, method).is_some()
                        && !out.contains(&method.as_str())
                    {
                        out.push(method.as_str());
                    }
                }
            }
        }
        out
    }

    /// A class and its bases through the project, depth first, each once (at most `limit`).
    pub(super) fn lineage(&self, class: ClassId, limit: usize) -> Vec<ClassId> {
        let mut seen = FxHashSet::default();
        let mut out = Vec::new();
        let mut pending = vec![class];
        while let Some(current) = pending.pop() {
            if !seen.insert(current) || seen.len() > limit {
                continue;
            }
            out.push(current);
            pending.extend(self.bases_of(current));
        }
        out
    }

    /// The classes a parameter of a method is an instance of, by the annotation of the same
    /// parameter in the nearest base-class method of that name that annotates it (an override
    /// that leaves `batch` bare where the base says `batch: InputBatch`).
    pub(super) fn inherited_param_type(&self, node: NodeId, param: &str) -> Option<Vec<ClassId>> {
        let function = self.function(node);
        let class = self.method_class(node)?;
        let method = function.qualname.rsplit('.').next()?;
        let lineage = self.lineage(class, 16);
        lineage.into_iter().skip(1).find_map(|base| {
            let name = &self.class_summary(base).name;
            let overridden = self.own_method(base.0, name, method)?;
            let declared = self.function(NodeId {
                module: base.0,
                function: overridden,
            });
            let annotation = declared
                .params
                .iter()
                .find(|p| p.name == param)?
                .annotation
                .as_ref()?;
            if annotation.elements || annotation.class_object {
                return None;
            }
            let classes = self.type_of_ref(base.0, annotation).classes;
            (!classes.is_empty()).then_some(classes)
        })
    }

    /// What calling `instance.<attribute>(...)` runs when the attribute holds a module rather
    /// than naming a method (`self.encoder.adaptor(x)`): the held instances' `forward`, else
    /// `__call__`.
    pub(super) fn held_module_calls(&self, class: ClassId, attribute: &str, out: &mut Vec<NodeId>) {
        let held = self.field_type(class, attribute, MAX_DEPTH);
        self.invoke(&held, out);
    }

    /// A method of a class or of its bases (no overrides).
    pub(super) fn method_in_class(&self, class: ClassId, method: &str) -> Option<NodeId> {
        let name = &self.class_summary(class).name;
        self.method_of(class.0, name, method)
    }

    /// The functions a call of `method` on an instance of exactly `class` may run: the method
    /// it has or inherits, and the bound methods its attribute of that name holds
    /// (`self.update = self.update_sliding_window`), also where the class defines a placeholder
    /// of that name: the instance attribute shadows it.
    pub(super) fn instance_method(&self, class: ClassId, method: &str, out: &mut Vec<NodeId>) {
        if let Some(node) = self.method_in_class(class, method) {
            out.push(node);
        }
        for bound in self.bound_methods(class, method) {
            if bound != method {
                if let Some(node) = self.method_in_class(class, bound) {
                    out.push(node);
                }
            }
        }
    }

    /// The functions a call of `method` on an instance of `class` may run: the method the class
    /// has or inherits, and every override in its subclasses.
    pub fn dispatch(&self, class: ClassId, method: &str, out: &mut Vec<NodeId>) {
        self.dispatch_depth(class, method, out, 4);
    }

    fn dispatch_depth(&self, class: ClassId, method: &str, out: &mut Vec<NodeId>, depth: u8) {
        if let Some(node) = self.method_in_class(class, method) {
            if self.inherited_by_an_instance(class, method, node) {
                out.push(node);
            }
        }
        // Bound methods held by the attribute, with their overrides (see `instance_method`).
        if depth > 0 {
            for bound in self.bound_methods(class, method) {
                if bound != method {
                    self.dispatch_depth(class, bound, out, depth - 1);
                }
            }
        }
        for &sub in self.subclasses_of(class) {
            if out.len() >= MAX_FANOUT {
                break;
            }
            let name = &self.class_summary(sub).name;
            if let Some(function) = self.own_method(sub.0, name, method) {
                out.push(NodeId {
                    module: sub.0,
                    function,
                });
            }
        }
    }

    /// Whether the method `node` that `class` has or inherits runs on some instance: the class
    /// can have instances on a CUDA engine, or a subclass that can inherits the method (an
    /// abstract base's method every CUDA subclass overrides runs only through `super()`). A
    /// class without subclasses keeps its method: nothing else would run.
    fn inherited_by_an_instance(&self, class: ClassId, method: &str, node: NodeId) -> bool {
        if !self.class_summary(class).no_instance {
            return true;
        }
        let subclasses = self.subclasses_of(class);
        subclasses.is_empty()
            || subclasses.iter().any(|&sub| {
                !self.class_summary(sub).no_instance
                    && self.method_in_class(sub, method) == Some(node)
            })
    }

    /// Every project module class that defines `method` itself (a call on a module of unknown
    /// class).
    fn dispatch_any_module(&self, method: &str, out: &mut Vec<NodeId>) {
        for &(module, class) in self.definers_of(method) {
            if out.len() >= MAX_FANOUT {
                return;
            }
            let name = &self.class_summary((module, class)).name;
            if let Some(function) = self.own_method(module, name, method) {
                if self.is_module_class(module, name) {
                    out.push(NodeId { module, function });
                }
            }
        }
    }

    /// The functions `receiver.method(...)` may run.
    pub(super) fn resolve_method(
        &self,
        module: usize,
        receiver: &TypePath,
        method: &str,
    ) -> Vec<NodeId> {
        let value = self.eval_path(module, receiver);
        let mut out = Vec::new();
        if value.elements {
            return out;
        }
        if value.is_empty() {
            // The receiver's type is not known: only a method defined in one hierarchy is
            // followed.
            if let Some(root) = self.unique_hierarchy(method) {
                self.dispatch(root, method, &mut out);
            }
            return out;
        }
        for &class in &value.classes {
            let before = out.len();
            self.dispatch(class, method, &mut out);
            if out.len() == before {
                self.held_module_calls(class, method, &mut out);
            }
        }
        if value.any_module && method != "forward" {
            self.dispatch_any_module(method, &mut out);
        }
        out
    }
}
