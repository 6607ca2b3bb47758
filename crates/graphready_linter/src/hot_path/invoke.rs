//! What calling a value runs: a module's `forward` (else `__call__`), for values whose type
//! the index computes, and for fields that a call filled.

use super::index::{NodeId, ProjectIndex};
use super::types::TypeVal;
use crate::summary::{PathRoot, PathStep, TypePath};

/// Above this many subclasses, a module only subclasses hold is left unknown (see
/// `ProjectIndex::subclass_held_forwards`): a base of everything says nothing of one instance.
const MAX_FIELD_SUBCLASSES: usize = 16;
impl ProjectIndex<'_> {
    /// What calling a value runs: each instance's `forward`, else `__call__` (calling a class
    /// object constructs an instance, and a container is not called: nothing runs).
    pub(super) fn invoke(&self, value: &TypeVal, out: &mut Vec<NodeId>) {
        if value.elements || value.class_object {
            return;
        }
        for &class in &value.classes {
            let before = out.len();
            self.dispatch(class, "forward", out);
            if out.len() == before {
                self.dispatch(class, "__call__", out);
            }
        }
    }

    /// Calling `self.<field>(...)` in `class`, where the field (of the class or a base) holds
    /// what a call returned (`self.vit = self._init_backbone(...)`): the modules it holds run
    /// (see [`Self::resolve_invoke_known`]), and the functions a method returned
    /// (`self._forward_entry = self._select_forward()`, which returns a custom operator). A
    /// field given a value as it is (`self.model = model`) is left alone: a runner calling the
    /// model it was handed runs the outermost model, which stays an entry of its own.
    fn invoke_computed_field(&self, module: usize, class: &str, field: &str) -> Vec<NodeId> {
        let computed = self.class_named(module, class).and_then(|start| {
            self.find_up(start, |current| {
                self.class_summary(current)
                    .fields
                    .iter()
                    .find(|(name, _)| name == field)
                    .map(|(_, path)| path.clone())
            })
        });
        let Some(computed) = computed.filter(|path| !path.steps.is_empty()) else {
            return Vec::new();
        };
        let path = TypePath {
            root: PathRoot::SelfOf(class.to_string()),
            steps: vec![PathStep::Attr(field.to_string())],
        };
        let mut out = self.resolve_invoke_known(module, &path);
        if let Some((PathStep::Call(method), receiver)) = computed.steps.split_last() {
            let receiver = TypePath {
                root: computed.root.clone(),
                steps: receiver.to_vec(),
            };
            for node in self.resolve_method(module, &receiver, method) {
                for function in self.functions_returned(node) {
                    if !out.contains(&function) {
                        out.push(function);
                    }
                }
            }
        }
        out
    }

    /// `self.<field>(...)` where the class has no such method: a field that a call filled (see
    /// [`Self::invoke_computed_field`]), or a module the subclasses hold under that name (see
    /// [`Self::subclass_held_forwards`]).
    pub(super) fn invoke_self_field(&self, module: usize, class: &str, field: &str) -> Vec<NodeId> {
        let computed = self.invoke_computed_field(module, class, field);
        if !computed.is_empty() {
            return computed;
        }
        self.subclass_held_forwards(module, class, field)
    }

    /// `self.visual(...)` in a class that holds no `visual` itself, nor inherits one: the
    /// modules its subclasses hold under that name, called (a mixin's method running the tower
    /// each model using the mixin sets). Not for classes with very many subclasses.
    fn subclass_held_forwards(&self, module: usize, class: &str, field: &str) -> Vec<NodeId> {
        let mut out = Vec::new();
        let Some(start) = self.class_named(module, class) else {
            return out;
        };
        let inherited = self
            .find_up(start, |current| {
                self.class_summary(current)
                    .attributes
                    .get(field)
                    .map(|_| ())
            })
            .is_some();
        let subclasses = self.subclasses_of(start);
        if inherited || subclasses.len() > MAX_FIELD_SUBCLASSES {
            return out;
        }
        for &sub in subclasses {
            for reference in self
                .class_summary(sub)
                .attributes
                .get(field)
                .into_iter()
                .flatten()
            {
                if let Some(held) = self.class_of(sub.0, reference) {
                    let before = out.len();
                    self.instance_method(held, "forward", &mut out);
                    if out.len() == before {
                        self.instance_method(held, "__call__", &mut out);
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The modules a value holds, called: the `forward` of each project class its type names
    /// that has one of its own or inherited, and the overrides below. Not a module of unknown
    /// class, nor a base class whose every subclass would be a candidate (`text_encoder:
    /// PreTrainedModel`), nor other callables (an image processor's `__call__`).
    pub(super) fn resolve_invoke_known(&self, module: usize, receiver: &TypePath) -> Vec<NodeId> {
        let mut value = self.eval_path(module, receiver);
        value.any_module = false;
        value
            .classes
            .retain(|&class| self.method_in_class(class, "forward").is_some());
        let mut out = Vec::new();
        if !value.classes.is_empty() {
            self.invoke(&value, &mut out);
        }
        out
    }

    /// The functions calling `receiver(...)` may run: `forward`, else `__call__`.
    pub(super) fn resolve_invoke(&self, module: usize, receiver: &TypePath) -> Vec<NodeId> {
        let value = self.eval_path(module, receiver);
        let mut out = Vec::new();
        self.invoke(&value, &mut out);
        out
    }
}
