//! The typed project model on the index side: classes named by annotations and constructors,
//! the types of attributes and method results across modules, the class hierarchy, and the
//! methods a call on a typed receiver may run (its class's, and every override in its
//! subclasses: class hierarchy analysis).

use super::index::{ClassId, Definition, NodeId, ProjectIndex, MAX_DEPTH};
use crate::summary::{PathRoot, PathStep, Ref, TypePath, TypeRef};
use rustc_hash::FxHashSet;

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
    }
}

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

    fn type_of_ref(&self, module: usize, ty: &TypeRef) -> TypeVal {
        let mut value = TypeVal {
            elements: ty.elements,
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
                Some(Definition::Function(node)) => self.return_type(node),
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
                PathStep::Item => TypeVal {
                    elements: false,
                    ..value
                },
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
                        if let Some(node) = self.method_in_class(class, method) {
                            next.merge(self.return_type(node));
                        }
                    }
                    next
                }
            };
        }
        value
    }

    /// What a function's return annotation names.
    fn return_type(&self, node: NodeId) -> TypeVal {
        match &self.function(node).return_annotation {
            Some(ty) => self.type_of_ref(node.module, ty),
            None => TypeVal::default(),
        }
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

    /// A method of a class or of its bases (no overrides).
    fn method_in_class(&self, class: ClassId, method: &str) -> Option<NodeId> {
        let name = &self.class_summary(class).name;
        self.method_of(class.0, name, method)
    }

    /// The functions a call of `method` on an instance of `class` may run: the method the class
    /// has or inherits, and every override in its subclasses.
    pub fn dispatch(&self, class: ClassId, method: &str, out: &mut Vec<NodeId>) {
        if let Some(node) = self.method_in_class(class, method) {
            out.push(node);
        }
        for sub in self.subclasses_of(class) {
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

    /// Every project module class that defines `method` itself (a call on a module of unknown
    /// class).
    fn dispatch_any_module(&self, method: &str, out: &mut Vec<NodeId>) {
        for (module, summary) in self.modules().iter().enumerate() {
            for class in &summary.classes {
                if out.len() >= MAX_FANOUT {
                    return;
                }
                if let Some(function) = self.own_method(module, &class.name, method) {
                    if self.is_module_class(module, &class.name) {
                        out.push(NodeId { module, function });
                    }
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
        for &class in &value.classes {
            self.dispatch(class, method, &mut out);
        }
        if value.any_module && method != "forward" {
            self.dispatch_any_module(method, &mut out);
        }
        out
    }

    /// The functions calling `receiver(...)` may run: `forward`, else `__call__`.
    pub(super) fn resolve_invoke(&self, module: usize, receiver: &TypePath) -> Vec<NodeId> {
        let value = self.eval_path(module, receiver);
        let mut out = Vec::new();
        if value.elements {
            return out;
        }
        for &class in &value.classes {
            let before = out.len();
            self.dispatch(class, "forward", &mut out);
            if out.len() == before {
                self.dispatch(class, "__call__", &mut out);
            }
        }
        out
    }
}
