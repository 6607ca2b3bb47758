//! Callables held in locals: methods looked up by name (`getattr(self, "name")`,
//! `getattr(type(self), MODES[mode])` through a module-level dict of method names) and the
//! project's functions a local may hold.

use super::{is_external, SummaryBuilder};
use crate::semantic::SemanticModel;
use crate::summary::Ref;
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
