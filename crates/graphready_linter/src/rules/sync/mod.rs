//! GR1xx: device→host synchronisations.

pub mod rules;

use crate::checker::Checker;
use ruff_python_ast::Expr;

/// Dispatches one expression to the sync rules.
pub fn expression(checker: &mut Checker, expr: &Expr) {
    match expr {
        Expr::Call(call) => {
            rules::item_call::item_call(checker, call);
            rules::tolist_call::tolist_call(checker, call);
            rules::host_transfer::host_transfer(checker, call);
            rules::tensor_to_python_scalar::tensor_to_python_scalar(checker, call);
            rules::tensor_comparison_on_host::tensor_comparison_on_host(checker, call);
            rules::explicit_synchronize::explicit_synchronize(checker, call);
            rules::tensor_formatting::formatting_call(checker, call);
            rules::device_scalar_as_size::size_arguments(checker, call);
            rules::tensor_truthiness::bool_call(checker, call);
        }
        Expr::BoolOp(bool_op) => rules::tensor_truthiness::bool_op(checker, bool_op),
        Expr::UnaryOp(unary) => rules::tensor_truthiness::not_op(checker, unary),
        Expr::If(if_expr) => truth_test(checker, &if_expr.test),
        Expr::FString(fstring) => rules::tensor_formatting::fstring(checker, fstring),
        Expr::BinOp(binop) => rules::tensor_formatting::percent_format(checker, binop),
        Expr::Subscript(subscript) => {
            rules::device_scalar_as_size::slice_bounds(checker, subscript)
        }
        _ => {}
    }
}

/// A test whose truth value Python evaluates: `if`, `elif`, `while`, `assert`, comprehension
/// conditions and conditional expressions.
pub fn truth_test(checker: &mut Checker, test: &Expr) {
    rules::tensor_truthiness::test_position(checker, test);
}
