//! GR2xx: operations whose output shape depends on data, which capture cannot record.

pub mod rules;

use crate::checker::Checker;
use ruff_python_ast::{Expr, ExprContext, Stmt};
use ruff_text_size::Ranged;

/// Dispatches one expression to the dynamic-shape rules.
pub fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
    if checker.rule_state.in_sync_allowed(expr.range()) {
        return;
    }
    match expr {
        Expr::Call(call) => {
            rules::dynamic_output_shape_op::dynamic_output_shape_op(checker, call);
            rules::boolean_mask_indexing::index_put(checker, call);
            rules::repeat_interleave_without_output_size::repeat_interleave(checker, call);
            rules::one_hot_without_num_classes::one_hot(checker, call);
            rules::split_by_device_sizes::split(checker, call);
        }
        Expr::Subscript(subscript) if matches!(subscript.ctx, ExprContext::Load) => {
            rules::boolean_mask_indexing::mask_load(checker, subscript);
        }
        _ => {}
    }
}

/// Dispatches one statement to the dynamic-shape rules.
pub fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    if checker.rule_state.in_sync_allowed(stmt.range()) {
        return;
    }
    match stmt {
        Stmt::Assign(assign) => {
            for target in &assign.targets {
                rules::boolean_mask_indexing::mask_store(checker, target, Some(&assign.value));
            }
        }
        Stmt::AugAssign(assign) => {
            rules::boolean_mask_indexing::mask_store(checker, &assign.target, None);
        }
        _ => {}
    }
    rules::split_by_device_sizes::track_device_lists(checker, stmt);
}
