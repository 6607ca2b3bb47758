//! GR4xx: allocations in the step and memory that is read before anything wrote it.

pub mod rules;

use crate::checker::Checker;
use ruff_python_ast::{Expr, Stmt};

/// Dispatches one expression to the allocation rules.
pub fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
    if let Expr::Call(call) = expr {
        rules::per_step_allocation::per_step_allocation(checker, call);
        rules::host_allocation_moved_to_device::host_allocation_moved_to_device(checker, call);
    }
}

/// Dispatches one statement to the allocation rules.
pub fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    if let Stmt::If(if_stmt) = stmt {
        rules::grow_on_demand_buffer::grow_on_demand_buffer(checker, if_stmt);
    }
    rules::uninitialized_partial_write::statement(checker, stmt);
}

/// `torch.<factory>` functions that allocate a fresh tensor from a size.
pub const SIZED_FACTORIES: &[&str] = &[
    "empty",
    "zeros",
    "ones",
    "full",
    "arange",
    "empty_strided",
    "rand",
    "randn",
    "randint",
    "eye",
    "linspace",
];

/// `torch.<factory>_like` functions.
pub const LIKE_FACTORIES: &[&str] = &["empty_like", "zeros_like", "ones_like", "full_like"];

/// Tensor methods that allocate a fresh tensor.
pub const NEW_METHODS: &[&str] = &["new_empty", "new_zeros", "new_ones", "new_full"];
