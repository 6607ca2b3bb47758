//! Custom operators a module registers: engines run a layer through one so that
//! `torch.compile` treats it as opaque (`direct_register_custom_op(op_name="moe_forward",
//! op_func=_moe_forward, ...)`, `@torch.library.custom_op("vllm::name", ...)` on a function).
//! A call of `torch.ops.<namespace>.<name>(...)` runs the function registered under the name.

use super::SummaryBuilder;
use crate::semantic::SemanticModel;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};

impl<'a> SummaryBuilder<'a> {
    /// Records the custom operators the module registers, by operator name.
    pub(super) fn record_custom_ops(&mut self, module: &'a ast::ModModule, model: &SemanticModel) {
        if memchr::memmem::find(self.source.as_bytes(), b"custom_op").is_none() {
            return;
        }
        let mut finder = Registrations::default();
        finder.visit_body(&module.body);
        for (name, function) in finder.found {
            if let Some(reference) = self.reference(model, function) {
                self.summary.custom_ops.push((name.to_string(), reference));
            }
        }
        // `@torch.library.custom_op("vllm::name", ...)` on a module-level function.
        for stmt in &module.body {
            let Stmt::FunctionDef(function) = stmt else {
                continue;
            };
            let name = function.decorator_list.iter().find_map(|decorator| {
                let Expr::Call(call) = &decorator.expression else {
                    return None;
                };
                (crate::util::last_segment(&call.func) == Some("custom_op"))
                    .then(|| operator_name(call.arguments.args.first()?))?
            });
            if let Some(name) = name {
                let reference = crate::summary::Ref::Local(function.name.id.to_string());
                self.summary.custom_ops.push((name.to_string(), reference));
            }
        }
    }
}

/// The operator a name literal registers: `"moe_forward"`, `"vllm::moe_forward"`.
fn operator_name(expr: &Expr) -> Option<&str> {
    let Expr::StringLiteral(literal) = expr else {
        return None;
    };
    let name = literal.value.to_str();
    let name = name.rsplit_once("::").map_or(name, |(_, name)| name);
    (!name.is_empty()).then_some(name)
}

/// Calls of a `*register_custom_op` function: the operator's name and the function.
#[derive(Default)]
struct Registrations<'a> {
    found: Vec<(&'a str, &'a Expr)>,
}

impl<'a> Visitor<'a> for Registrations<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Call(call) = expr {
            if crate::util::last_segment(&call.func)
                .is_some_and(|name| name.ends_with("register_custom_op"))
            {
                let argument = |keyword: &str, position: usize| {
                    call.arguments
                        .find_keyword(keyword)
                        .map(|keyword| &keyword.value)
                        .or_else(|| call.arguments.args.get(position))
                };
                if let (Some(name), Some(function)) = (
                    argument("op_name", 0).and_then(operator_name),
                    argument("op_func", 1),
                ) {
                    self.found.push((name, function));
                }
            }
        }
        visitor::walk_expr(self, expr);
    }
}
