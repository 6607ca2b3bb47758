//! GR3xx: host data inside the step, which capture bakes in or cannot record.

pub mod rules;

use crate::checker::Checker;
use ruff_python_ast::{Expr, Stmt};

/// Dispatches one expression to the host-data rules.
pub fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
    match expr {
        Expr::Call(call) => {
            rules::host_data_to_device::host_data_to_device(checker, call);
            rules::host_scalar_written_to_device::fill_call(checker, call);
        }
        Expr::Subscript(subscript) => {
            rules::host_index_on_device_tensor::host_index(checker, subscript);
        }
        Expr::Attribute(attribute) => {
            rules::host_state_mutated_in_step::self_read(checker, attribute);
        }
        _ => {}
    }
}

/// Dispatches one statement to the host-data rules.
pub fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    rules::host_scalar_written_to_device::track_device_reads(checker, stmt);
    match stmt {
        Stmt::Assign(assign) => {
            for target in &assign.targets {
                rules::host_scalar_written_to_device::subscript_store(
                    checker,
                    target,
                    &assign.value,
                );
            }
        }
        Stmt::AugAssign(assign) => {
            rules::host_scalar_written_to_device::subscript_store(
                checker,
                &assign.target,
                &assign.value,
            );
            rules::host_state_mutated_in_step::augmented(checker, assign);
        }
        Stmt::If(if_stmt) => rules::host_state_mutated_in_step::lazy_flag(checker, if_stmt),
        _ => {}
    }
    rules::host_state_mutated_in_step::track_logging(checker, stmt);
}
