//! What assignments and loops bind: instances, type paths, methods looked up by name and the
//! project's functions a local may hold.

use super::arg_types::DictEntry;
use super::SummaryBuilder;
use crate::semantic::SemanticModel;
use crate::summary::{CallTarget, PathRoot, PathStep, TypePath};
use ruff_python_ast::{self as ast, Expr, Stmt};
use rustc_hash::FxHashMap;

impl<'a> SummaryBuilder<'a> {
    /// `name = (a, b)` makes `name` a tuple local with its elements' types; any other binding
    /// of a name (or of a name among tuple targets) ends that.
    fn tuple_local(&mut self, model: &SemanticModel, target: &'a Expr, value: &Expr) {
        let Some(scope) = self.tuple_locals.last_mut() else {
            return;
        };
        match (target, value) {
            (Expr::Name(name), Expr::Tuple(tuple))
                if tuple.elts.iter().all(|elt| !elt.is_starred_expr()) =>
            {
                let types = tuple.elts.iter().map(|elt| model.ty(elt)).collect();
                scope.insert(name.id.as_str(), types);
            }
            (Expr::Name(name), _) => {
                scope.remove(name.id.as_str());
            }
            (
                Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }),
                _,
            ) => {
                for elt in elts {
                    if let Expr::Name(name) = elt {
                        scope.remove(name.id.as_str());
                    }
                }
            }
            _ => {}
        }
    }

    /// `x = MLP(...)` binds `x` to an instance, for `x(...)` and `x.method(...)` later.
    pub(crate) fn assignment(&mut self, model: &SemanticModel, target: &'a Expr, value: &Expr) {
        // Also in a returns-only visit: what a tuple local holds is what `return name` returns.
        self.tuple_local(model, target, value);
        if self.returns_only {
            return;
        }
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
                    // No longer the dict literal it may have held (nor the tuple: see
                    // `tuple_local`).
                    if let Some(scope) = self.dict_locals.last_mut() {
                        scope.remove(name.id.as_str());
                    }
                }
            }
            self.bind_held_in_tuple(model, target, value, 0);
            return;
        }
        // `options["grid"] = ...` changes what a dict local spreads: no longer known.
        if let (Expr::Subscript(subscript), Some(scope)) = (target, self.dict_locals.last_mut()) {
            if let Expr::Name(name) = &*subscript.value {
                scope.remove(name.id.as_str());
            }
        }
        let Expr::Name(name) = target else {
            return;
        };
        if let Some(scope) = self.dict_locals.last_mut() {
            match dict_entries(model, value) {
                Some(entries) => scope.insert(name.id.as_str(), entries),
                None => scope.remove(name.id.as_str()),
            };
        }
        let held = self.held_targets(model, value);
        self.bind_held(name.id.as_str(), held);
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

    /// The functions a name may hold after an assignment: a local's (every binding adds: a
    /// later call may run any of them), and a module global's, at module level or under a
    /// `global` declaration.
    fn bind_held(&mut self, name: &'a str, held: Vec<CallTarget>) {
        if held.is_empty() {
            return;
        }
        let global = self.building.is_empty()
            || self
                .globals
                .last()
                .is_some_and(|declared| declared.contains(name));
        if global {
            let slot = self
                .summary
                .global_functions
                .entry(name.to_string())
                .or_default();
            for target in &held {
                if slot.len() < 16 && !slot.contains(target) {
                    slot.push(target.clone());
                }
            }
        }
        if let Some(scope) = self.function_aliases.last_mut() {
            let slot = scope.entry(name).or_default();
            for target in held {
                if !slot.contains(&target) {
                    slot.push(target);
                }
            }
        }
    }

    /// `(a, (b, c)) = value`: names paired with the elements of a tuple value of the same
    /// length; from any other value (a call), each name holds what is at its position in what
    /// the value returns (`c` calls `Returned { path: [1, 1] }`).
    fn bind_held_in_tuple(
        &mut self,
        model: &SemanticModel,
        target: &'a Expr,
        value: &Expr,
        depth: u8,
    ) {
        if depth > 4 {
            return;
        }
        let (Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })) =
            target
        else {
            if let Expr::Name(name) = target {
                let held = self.held_targets(model, value);
                self.bind_held(name.id.as_str(), held);
            }
            return;
        };
        match value {
            Expr::Tuple(ast::ExprTuple { elts: values, .. })
            | Expr::List(ast::ExprList { elts: values, .. })
                if values.len() == elts.len() =>
            {
                for (elt, value) in elts.iter().zip(values) {
                    self.bind_held_in_tuple(model, elt, value, depth + 1);
                }
            }
            _ => {
                let base = self.held_targets(model, value);
                if base.is_empty() {
                    return;
                }
                self.bind_projected(target, &base, &mut Vec::new());
            }
        }
    }

    /// Binds each name of an unpacking target to the elements of `base` at its position.
    fn bind_projected(&mut self, target: &'a Expr, base: &[CallTarget], path: &mut Vec<u8>) {
        match target {
            Expr::Name(name) => {
                let held = base
                    .iter()
                    .filter_map(|target| target.element(path))
                    .collect();
                self.bind_held(name.id.as_str(), held);
            }
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })
                if path.len() < 4 =>
            {
                // A starred element makes the positions after it unknown.
                for (i, elt) in elts.iter().enumerate().take(usize::from(u8::MAX)) {
                    if matches!(elt, Expr::Starred(_)) {
                        break;
                    }
                    path.push(u8::try_from(i).unwrap_or(u8::MAX));
                    self.bind_projected(elt, base, path);
                    path.pop();
                }
            }
            _ => {}
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
        if self.returns_only {
            return;
        }
        self.assignment(model, target, value);
        if let (Expr::Name(name), Some(ty)) = (target, self.annotation_type(model, annotation)) {
            self.bind_local(name.id.as_str(), Some(TypePath::of_type(ty)));
        }
    }

    /// `for layer in self.layers:` binds `layer` to the members' classes; so do `for i, layer
    /// in enumerate(self.layers):` and `for layer, norm in zip(self.layers, self.norms):`.
    pub(crate) fn loop_target(&mut self, model: &SemanticModel, target: &'a Expr, iter: &Expr) {
        if self.returns_only {
            return;
        }
        if let (Expr::Tuple(tuple), Expr::Call(call)) = (target, iter) {
            let builtin = match &*call.func {
                Expr::Name(name) => name.id.as_str(),
                _ => "",
            };
            let args = &call.arguments.args;
            match (builtin, tuple.elts.as_slice(), &**args) {
                ("enumerate", [index, element], [sequence]) => {
                    self.forget_binding(index);
                    self.loop_target(model, element, sequence);
                }
                ("zip", elements, sequences)
                    if elements.len() == sequences.len()
                        && !sequences.iter().any(Expr::is_starred_expr) =>
                {
                    for (element, sequence) in elements.iter().zip(sequences) {
                        self.loop_target(model, element, sequence);
                    }
                }
                _ => {}
            }
            return;
        }
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

impl<'a> SummaryBuilder<'a> {
    /// A loop variable bound to something the walk does not type (`i` in `enumerate`): no
    /// longer what an earlier binding made it.
    fn forget_binding(&mut self, target: &'a Expr) {
        let Expr::Name(name) = target else {
            return;
        };
        self.bind_local(name.id.as_str(), None);
        if let Some(scope) = self.instances.last_mut() {
            scope.remove(name.id.as_str());
        }
    }
}

/// The entries of a dict literal whose keys are all strings (`{"grid": grid, "mode": 1}`), with
/// their types; `None` for anything else.
fn dict_entries(model: &SemanticModel, value: &Expr) -> Option<Vec<DictEntry>> {
    let Expr::Dict(dict) = value else {
        return None;
    };
    dict.items
        .iter()
        .map(|item| match &item.key {
            Some(Expr::StringLiteral(key)) => {
                Some((key.value.to_str().into(), model.ty(&item.value)))
            }
            _ => None,
        })
        .collect()
}

/// Module-level imports as bound name → qualified name, for re-exports through `__init__.py`.
pub(super) fn collect_imports(
    stmt: &Stmt,
    imports: &mut FxHashMap<String, String>,
    model: &SemanticModel,
) {
    match stmt {
        Stmt::Import(import) => {
            for alias in &import.names {
                if let Some(asname) = &alias.asname {
                    imports.insert(asname.id.to_string(), alias.name.id.to_string());
                }
            }
        }
        Stmt::ImportFrom(_) => {
            for (name, qualified) in model.module_imports() {
                imports.insert(name.to_string(), qualified.to_string());
            }
        }
        _ => {}
    }
}
