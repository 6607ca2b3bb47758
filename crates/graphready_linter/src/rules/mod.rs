//! The rules, one family per module and one rule per file.

pub mod sync;

use ruff_python_ast::{self as ast, Expr};

/// `receiver.method(...)`: the method name and the receiver, when the callee is an attribute.
pub fn method_call(call: &ast::ExprCall) -> Option<(&str, &Expr)> {
    match &*call.func {
        Expr::Attribute(attribute) => Some((attribute.attr.id.as_str(), &attribute.value)),
        _ => None,
    }
}

/// A call of a builtin by bare name (`print(...)`, `int(...)`), not shadowed by an import.
pub fn builtin_call<'e>(checker: &crate::checker::Checker, call: &'e ast::ExprCall) -> Option<&'e str> {
    match &*call.func {
        Expr::Name(name) if checker.model.qualified_name(&call.func).is_none() => {
            Some(name.id.as_str())
        }
        _ => None,
    }
}

/// Whether a value's name says it lives on the host (`positions_np`, `cpu_tokens`,
/// `x_numpy`): engines name their NumPy and pinned mirrors this way.
pub fn host_named(expr: &Expr) -> bool {
    let name = match expr {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        Expr::Subscript(subscript) => return host_named(&subscript.value),
        _ => return false,
    };
    let lower = name.to_ascii_lowercase();
    lower.ends_with("_np")
        || lower.starts_with("np_")
        || lower.contains("numpy")
        || lower.ends_with("_cpu")
        || lower.starts_with("cpu_")
        || lower.contains("_cpu_")
        || lower.ends_with("_host")
        || lower.starts_with("host_")
}
