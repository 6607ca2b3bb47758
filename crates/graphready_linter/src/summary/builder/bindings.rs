//! What assignments and loops bind: instances, type paths, methods looked up by name and the
//! project's functions a local may hold.

use super::SummaryBuilder;
use crate::semantic::SemanticModel;
use crate::summary::{PathRoot, PathStep, TypePath};
use ruff_python_ast::{self as ast, Expr};

impl<'a> SummaryBuilder<'a> {
    /// `x = MLP(...)` binds `x` to an instance, for `x(...)` and `x.method(...)` later.
    pub(crate) fn assignment(&mut self, model: &SemanticModel, target: &'a Expr, value: &Expr) {
        // `metadata, layer, cache = context(name)`: each name holds an element of the result
        // (the index knows the result's element classes, not their positions).
        if let Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) =
            target
        {
            let element = matches!(value, Expr::Call(_))
                .then(|| self.type_path(model, value))
                .flatten()
                .map(|path| path.then(PathStep::Item));
            for elt in elts {
                if let Expr::Name(name) = elt {
                    self.bind_local(name.id.as_str(), element.clone());
                    if let Some(scope) = self.instances.last_mut() {
                        scope.remove(name.id.as_str());
                    }
                }
            }
            return;
        }
        let Expr::Name(name) = target else {
            return;
        };
        let functions = self.functions_held(model, value);
        if !functions.is_empty() {
            if let Some(scope) = self.function_aliases.last_mut() {
                let held = scope.entry(name.id.as_str()).or_default();
                for function in functions {
                    if !held.contains(&function) {
                        held.push(function);
                    }
                }
            }
        }
        let aliases = self.self_methods_named(value);
        if let Some(scope) = self.method_aliases.last_mut() {
            match aliases {
                Some(methods) => {
                    scope.insert(name.id.as_str(), methods);
                }
                None => {
                    scope.remove(name.id.as_str());
                }
            }
        }
        let path = self.type_path(model, value);
        self.bind_local(name.id.as_str(), path);
        let refs = match value {
            Expr::Call(call) => self.reference(model, &call.func).into_iter().collect(),
            other => self.instances_of(other),
        };
        if let Some(scope) = self.instances.last_mut() {
            if refs.is_empty() {
                scope.remove(name.id.as_str());
            } else {
                scope.insert(name.id.as_str(), refs);
            }
        }
    }

    /// `x: T = value`: what the value holds, and the annotation's classes where it names any
    /// (as for a parameter).
    pub(crate) fn annotated_assignment(
        &mut self,
        model: &SemanticModel,
        target: &'a Expr,
        annotation: &Expr,
        value: &Expr,
    ) {
        self.assignment(model, target, value);
        if let (Expr::Name(name), Some(ty)) = (target, self.annotation_type(model, annotation)) {
            self.bind_local(name.id.as_str(), Some(TypePath::of_type(ty)));
        }
    }

    /// `for layer in self.layers:` binds `layer` to the members' classes.
    pub(crate) fn loop_target(&mut self, model: &SemanticModel, target: &'a Expr, iter: &Expr) {
        let Expr::Name(name) = target else {
            return;
        };
        // `for processor in self:` in a method of a container class: its elements.
        let over_self = match (iter, self.self_context()) {
            (Expr::Name(iter), Some((class, self_name))) if iter.id.as_str() == self_name => {
                Some(TypePath {
                    root: PathRoot::SelfOf(class.to_string()),
                    steps: Vec::new(),
                })
            }
            _ => None,
        };
        let path = over_self
            .or_else(|| self.type_path(model, iter))
            .map(|path| path.then(PathStep::Item));
        self.bind_local(name.id.as_str(), path);
        let refs = self.instances_of(iter);
        if let Some(scope) = self.instances.last_mut() {
            if !refs.is_empty() {
                scope.insert(name.id.as_str(), refs);
            }
        }
    }
}
