//! Callables held in locals: methods looked up by name (`getattr(self, "name")`,
//! `getattr(type(self), MODES[mode])` through a module-level dict of method names) and the
//! project's functions a local may hold; module-level tables of classes a factory indexes.

use super::{is_external, SummaryBuilder};
use crate::semantic::SemanticModel;
use crate::summary::{CallTarget, Ref, TypeRef};
use ruff_python_ast::{self as ast, Expr};

impl<'a> SummaryBuilder<'a> {
    /// The project's functions (or classes: the index keeps only functions) a value may be:
    /// a reference itself (`fn = helper`), or the result of a call given references as
    /// arguments, which may hand one back (`registry.get_interface(name,
    /// eager_attention_forward)`, `functools.partial(helper, x)`, `torch.compile(step)`).
    pub(super) fn functions_held(&self, model: &SemanticModel, value: &Expr) -> Vec<Ref> {
        let reference = |expr: &Expr| match expr {
            Expr::Name(_) | Expr::Attribute(_) => self
                .reference(model, expr)
                .filter(|r| !matches!(r, Ref::Qualified(q) if is_external(q))),
            _ => None,
        };
        match value {
            Expr::Call(call) => call
                .arguments
                .args
                .iter()
                .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value))
                .filter_map(reference)
                .collect(),
            other => reference(other).into_iter().collect(),
        }
    }

    /// What calling a value may run, as call targets: the project's functions it may be (see
    /// [`Self::functions_held`]), what a local or a module global holds, and what a call of the
    /// project returns (`fn = make_fn()`). A tuple's elements are kept with their positions
    /// (`path`), for returns and unpacking.
    pub(super) fn held_targets(&self, model: &SemanticModel, value: &Expr) -> Vec<CallTarget> {
        // A tuple's elements all sit at positions inside it, never at the value itself.
        if matches!(value, Expr::Tuple(_) | Expr::List(_)) {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.held_at(model, value, &mut Vec::new(), &mut out);
        out.into_iter()
            .filter(|(path, _)| path.is_empty())
            .map(|(_, target)| target)
            .collect()
    }

    /// Like [`Self::held_targets`], with tuple and list elements at their positions.
    pub(super) fn held_at(
        &self,
        model: &SemanticModel,
        value: &Expr,
        path: &mut Vec<u8>,
        out: &mut Vec<(Box<[u8]>, CallTarget)>,
    ) {
        let mut push = |target: CallTarget| {
            let entry = (path.clone().into_boxed_slice(), target);
            if out.len() < 32 && !out.contains(&entry) {
                out.push(entry);
            }
        };
        match value {
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                if path.len() >= 4 {
                    return;
                }
                for (i, elt) in elts.iter().enumerate().take(usize::from(u8::MAX)) {
                    path.push(u8::try_from(i).unwrap_or(u8::MAX));
                    self.held_at(model, elt, path, out);
                    path.pop();
                }
                return;
            }
            Expr::If(ast::ExprIf { body, orelse, .. }) => {
                self.held_at(model, body, path, out);
                self.held_at(model, orelse, path, out);
                return;
            }
            Expr::Name(name) => {
                let held = self
                    .function_aliases
                    .last()
                    .and_then(|scope| scope.get(name.id.as_str()));
                if let Some(held) = held {
                    for target in held {
                        push(target.clone());
                    }
                    return;
                }
                // A module global known to hold functions.
                if self.summary.global_functions.contains_key(name.id.as_str())
                    && model.is_module_global(name.id.as_str())
                {
                    push(CallTarget::Function(Ref::Local(name.id.to_string())));
                    return;
                }
            }
            Expr::Call(call) => {
                if let Some(callee) = self.reference(model, &call.func) {
                    if !matches!(&callee, Ref::Qualified(q) if is_external(q)) {
                        push(CallTarget::Returned {
                            function: callee,
                            path: Box::default(),
                        });
                    }
                }
            }
            _ => {}
        }
        for function in self.functions_held(model, value) {
            push(CallTarget::Function(function));
        }
    }

    /// `MODES = {Mode.SAMPLE: "_sample", ...}` at module level: the names it holds.
    pub(super) fn string_table(&mut self, assign: &'a ast::StmtAssign) {
        let ([Expr::Name(name)], Expr::Dict(dict)) = (assign.targets.as_slice(), &*assign.value)
        else {
            return;
        };
        let names: Vec<String> = dict
            .items
            .iter()
            .filter_map(|item| match &item.value {
                Expr::StringLiteral(s) => Some(s.value.to_str().to_string()),
                _ => None,
            })
            .filter(|value| is_identifier(value))
            .collect();
        if !names.is_empty() {
            self.string_tables.insert(name.id.as_str(), names);
        }
    }

    /// A module-level dict whose values all name classes by CamelCase name (`ATTENTION =
    /// {"eager": EagerAttention, "sdpa": SdpaAttention}`): the index decides which are classes.
    pub(super) fn class_table(&mut self, target: &'a Expr, value: &'a Expr) {
        let (Expr::Name(name), Expr::Dict(dict)) = (target, value) else {
            return;
        };
        let values: Vec<&'a Expr> = dict.items.iter().map(|item| &item.value).collect();
        if !values.is_empty() && values.iter().all(|value| names_a_class(value)) {
            self.class_tables.insert(name.id.as_str(), values);
        }
    }

    /// The classes a module-level table named `name` holds, as class objects in a container.
    pub(super) fn class_table_type(&self, model: &SemanticModel, name: &str) -> Option<TypeRef> {
        let values = self.class_tables.get(name)?;
        let classes: Vec<Ref> = values
            .iter()
            .filter_map(|value| self.reference(model, value))
            .collect();
        (!classes.is_empty()).then_some(TypeRef {
            classes,
            elements: true,
            class_object: true,
        })
    }

    /// The methods of `self` a lookup by name may return: `getattr(self, "name")`,
    /// `getattr(type(self), MODES[mode])` with `MODES` a module-level dict of method names
    /// (also `self.__class__` and `cls`).
    pub(crate) fn self_methods_named(&self, expr: &Expr) -> Option<Vec<String>> {
        let Expr::Call(call) = expr else {
            return None;
        };
        if !matches!(&*call.func, Expr::Name(name) if name.id.as_str() == "getattr") {
            return None;
        }
        let [receiver, key, ..] = &*call.arguments.args else {
            return None;
        };
        let (_, self_name) = self.self_context()?;
        let is_self =
            |expr: &Expr| matches!(expr, Expr::Name(name) if name.id.as_str() == self_name);
        let on_self = match receiver {
            Expr::Name(name) => name.id.as_str() == self_name || name.id.as_str() == "cls",
            Expr::Call(inner) => {
                matches!(&*inner.func, Expr::Name(name) if name.id.as_str() == "type")
                    && inner.arguments.args.first().is_some_and(is_self)
            }
            Expr::Attribute(attribute) => {
                attribute.attr.id.as_str() == "__class__" && is_self(&attribute.value)
            }
            _ => false,
        };
        if !on_self {
            return None;
        }
        match key {
            Expr::StringLiteral(s) => Some(vec![s.value.to_str().to_string()]),
            Expr::Subscript(subscript) => match &*subscript.value {
                Expr::Name(table) => self.string_tables.get(table.id.as_str()).cloned(),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Whether a string could name a method (`"_sample"`, not `"org/repo"`).
fn is_identifier(value: &str) -> bool {
    let mut chars = value.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether an expression names a class by the convention for class names: a name or an
/// attribute whose last part starts with a capital and has a lower-case letter
/// (`SdpaAttention`, `layers.Fp8Mlp`; not `MAX_SIZE`).
pub(super) fn names_a_class(expr: &Expr) -> bool {
    let name = match expr {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.chars().any(|c| c.is_ascii_lowercase())
}
