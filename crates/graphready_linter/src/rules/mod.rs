//! The rules, one family per module and one rule per file.

pub mod sync;

use crate::checker::Checker;
use ruff_python_ast::{self as ast, Expr, Stmt};

/// Every expression, after its children: each family's expression rules.
pub fn expression(checker: &mut Checker, expr: &Expr) {
    sync::expression(checker, expr);
}

/// Every statement, before its children and before its bindings take effect.
pub fn statement(_checker: &mut Checker, _stmt: &Stmt) {}

/// After a function's body was visited, with the function's bindings still in scope: rules that
/// judge a whole function (state they gathered from [`statement`] and [`expression`]).
pub fn function_exit(_checker: &mut Checker, _function: &ast::StmtFunctionDef) {}

/// `receiver.method(...)`: the method name and the receiver, when the callee is an attribute.
pub fn method_call(call: &ast::ExprCall) -> Option<(&str, &Expr)> {
    match &*call.func {
        Expr::Attribute(attribute) => Some((attribute.attr.id.as_str(), &attribute.value)),
        _ => None,
    }
}

/// A call of a builtin by bare name (`print(...)`, `int(...)`), not shadowed by an import.
pub fn builtin_call<'e>(
    checker: &crate::checker::Checker,
    call: &'e ast::ExprCall,
) -> Option<&'e str> {
    match &*call.func {
        Expr::Name(name) if checker.model.qualified_name(&call.func).is_none() => {
            Some(name.id.as_str())
        }
        _ => None,
    }
}

/// Whether an expression's name says it lives on the host (see
/// [`crate::checker::semantic::host_named`]).
pub fn host_named(expr: &Expr) -> bool {
    match expr {
        Expr::Name(name) => crate::checker::semantic::host_named(name.id.as_str()),
        Expr::Attribute(attribute) => {
            crate::checker::semantic::host_named(attribute.attr.id.as_str())
        }
        Expr::Subscript(subscript) => host_named(&subscript.value),
        _ => false,
    }
}
