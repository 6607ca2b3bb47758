use super::super::{LIKE_FACTORIES, NEW_METHODS, SIZED_FACTORIES};
use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, is_device_target, maybe_device_tensor, method_call};
use crate::semantic::{is_cpu_device, keyword, Ty};
use crate::violation::{Calls, Check, Violation};
use graphready_diagnostics::Severity;
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for device allocations made on every step:
    /// `torch.empty/zeros/ones/full/arange(..., device=...)`, `torch.*_like(x)`,
    /// `x.new_empty/new_zeros/new_ones/new_full(...)` and `x.clone()`.
    ///
    /// ## Why is this bad?
    /// Inside a graph each allocation comes from the graph's private memory pool and stays
    /// reserved for the graph's lifetime, once per captured bucket; outside a graph it is a trip
    /// through the caching allocator every step. Neither is wrong, but a step that writes into
    /// buffers allocated once is smaller, faster and easier to keep graph-safe: typical fixes turn
    /// a `torch.zeros` scale buffer into a preallocated one, `torch.full` into `fill_`, an
    /// `empty` output into an `out=` buffer and a `.clone()` of the state into a copy into a
    /// preallocated buffer.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     scales = torch.zeros(x.shape[0], self.groups, device=x.device)
    ///     quantize(x, scales)
    ///     return scales
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     scales = self.scale_buf[: x.shape[0]]  # allocated once in __init__
    ///     scales.zero_()
    ///     quantize(x, scales)
    ///     return scales
    /// ```
    pub struct PerStepAllocation {
        call: String,
    }
}

impl Violation for PerStepAllocation {
    const CODE: &'static str = "GR401";
    const NAME: &'static str = "per-step-allocation";
    const SEVERITY: Severity = Severity::Info;
    const OPT_IN: bool = true;
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&[
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
        "empty_like",
        "zeros_like",
        "ones_like",
        "full_like",
        "new_empty",
        "new_zeros",
        "new_ones",
        "new_full",
        "clone",
    ]);

    fn message(&self) -> String {
        format!("`{}` allocates device memory on every step", self.call)
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Preallocate the buffer once (in `__init__` or before capture) and write into it in \
             place"
                .to_string(),
        )
    }
}

impl Check for PerStepAllocation {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        per_step_allocation(checker, call);
    }
}

/// GR401
fn per_step_allocation(checker: &mut Checker, call: &ast::ExprCall) {
    // `self.buf = torch.empty(...)`: a buffer kept across steps (GR403 judges its growth).
    if checker.rule_state.assigned_to_self(call.range()) {
        return;
    }
    let on_device = |call: &ast::ExprCall| match keyword(call, "device") {
        Some(device) => !is_cpu_device(device),
        None => true,
    };
    let shown = if let Some(qualified) = crate::rules::callee(checker, call) {
        let Some(name) = qualified.strip_prefix("torch.") else {
            return;
        };
        if SIZED_FACTORIES.contains(&name) && has_zero_dimension(call) {
            // `torch.empty(0, ...)`, `torch.empty((1, 3, 0, h, w))`: nothing is allocated.
            return;
        }
        if SIZED_FACTORIES.contains(&name) {
            // Without `device=` the factory allocates host memory.
            let Some(device) = keyword(call, "device") else {
                return;
            };
            if !is_device_target(checker, device) {
                return;
            }
        } else if LIKE_FACTORIES.contains(&name) {
            let Some(source) = argument(call, 0, "input") else {
                return;
            };
            if !maybe_device_tensor(checker, source) || !on_device(call) {
                return;
            }
        } else {
            return;
        }
        format!("torch.{name}")
    } else {
        let Some((method, receiver)) = method_call(call) else {
            return;
        };
        let allocates = if NEW_METHODS.contains(&method) {
            maybe_device_tensor(checker, receiver) && on_device(call)
        } else {
            method == "clone" && checker.ty(receiver) == Ty::Tensor
        };
        if !allocates {
            return;
        }
        format!(".{method}()")
    };
    checker.report(PerStepAllocation { call: shown }, call.range());
}

/// Whether a factory's literal size has a zero dimension.
fn has_zero_dimension(call: &ast::ExprCall) -> bool {
    let is_zero = |expr: &ast::Expr| {
        matches!(expr, ast::Expr::NumberLiteral(n)
            if matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(0)))
    };
    match call.arguments.args.first() {
        Some(ast::Expr::Tuple(tuple)) => tuple.elts.iter().any(is_zero),
        Some(ast::Expr::List(list)) => list.elts.iter().any(is_zero),
        Some(first) => call.arguments.args.len() == 1 && is_zero(first),
        None => false,
    }
}
