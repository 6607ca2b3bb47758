//! GR5xx: calls that are illegal or unsafe while a CUDA graph is being captured.

pub mod rules;

use crate::checker::Checker;
use ruff_python_ast::{Expr, Stmt};

/// Dispatches one expression to the capture-illegal rules.
pub fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
    match expr {
        Expr::Call(call) => {
            rules::cuda_runtime_call_in_step::cuda_runtime_call_in_step(checker, call);
            rules::pin_memory_in_step::pin_memory_in_step(checker, call);
            rules::rng_state_in_step::rng_state_in_step(checker, call);
            rules::unregistered_generator_in_step::unregistered_generator_in_step(checker, call);
            rules::host_clock_as_data::call(checker, call);
            rules::host_collective_in_step::host_collective_in_step(checker, call);
            rules::event_elapsed_time_in_step::event_elapsed_time_in_step(checker, call);
        }
        Expr::BinOp(binop)
            if !checker.rule_state.clock_names.is_empty()
                || crate::rules::may_read_clock(&binop.left)
                || crate::rules::may_read_clock(&binop.right) =>
        {
            rules::host_clock_as_data::binop(checker, binop);
        }
        _ => {}
    }
}

/// Dispatches one statement to the capture-illegal rules.
pub fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    rules::cudnn_benchmark_change::cudnn_benchmark_change(checker, stmt);
    rules::host_clock_as_data::track_clock_names(checker, stmt);
}
