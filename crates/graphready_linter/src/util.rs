//! Small syntactic helpers shared by the checker, the guards and the summary builder.

use ruff_python_ast::Expr;

/// The last name of a callee or decorator: `no_graph` in `@x.no_graph` and `@no_graph()`.
pub(crate) fn last_segment(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(name) => Some(name.id.as_str()),
        Expr::Attribute(attribute) => Some(attribute.attr.id.as_str()),
        Expr::Call(call) => last_segment(&call.func),
        _ => None,
    }
}
