use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, assigned_name, device_tensor, method_call};
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for splits whose sizes are read from the device:
    /// `torch.split(x, counts.tolist())`, `x.split(sizes)` with `sizes = counts.tolist()`, and
    /// `split_with_sizes` alike.
    ///
    /// ## Why is this bad?
    /// `.tolist()` synchronises, and the pieces' shapes then follow the data, so a captured graph
    /// could not replay them even if the read were allowed. Per-expert token counts are the usual
    /// source (MoE dispatch). Outside the graph, eager code runs any shape: the read is the
    /// stall there, and GR102 reports it.
    ///
    /// ## Example
    /// ```python
    /// def dispatch(sorted_tokens: torch.Tensor, tokens_per_expert: torch.Tensor):
    ///     return torch.split(sorted_tokens, tokens_per_expert.tolist())
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def dispatch(sorted_tokens: torch.Tensor, num_experts: int, capacity: int, hidden: int):
    ///     # fixed-size slots per expert, padded, with the counts kept on the device as a mask
    ///     # or as offsets for a grouped kernel
    ///     return sorted_tokens.view(num_experts, capacity, hidden)
    /// ```
    pub struct SplitByDeviceSizes {}
}

impl Violation for SplitByDeviceSizes {
    const CODE: &'static str = "GR205";
    const NAME: &'static str = "split-by-device-sizes";
    const CALLS: Calls = Calls::named(&["split", "split_with_sizes"]);
    const CAPTURED_ONLY: bool = true;

    fn message(&self) -> String {
        "split sizes read from a device tensor give data-dependent shapes".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Split into fixed-size pieces (padded slots) and keep the counts on the device"
                .to_string(),
        )
    }
}

impl Check for SplitByDeviceSizes {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        split(checker, call);
    }

    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        track_device_lists(checker, stmt);
    }
}

/// `<device tensor>.tolist()`
fn is_device_tolist(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    matches!(method_call(call), Some(("tolist", receiver))
        if call.arguments.is_empty() && device_tensor(checker, receiver))
}

/// Remembers names bound to `<device tensor>.tolist()` where a capture may be running (a list
/// read under a not-capturing guard, or in a block whose author allowed the sync, is a host
/// list by design).
fn track_device_lists<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    let Some((name, value)) = assigned_name(stmt) else {
        return;
    };
    if checker.in_captured_code() && is_device_tolist(checker, value) {
        checker.rule_state.dynamic_shape.device_lists.insert(name);
    } else if !checker.rule_state.dynamic_shape.device_lists.is_empty() {
        checker.rule_state.dynamic_shape.device_lists.remove(name);
    }
}

/// GR205
fn split(checker: &mut Checker, call: &ast::ExprCall) {
    let sizes = match crate::rules::callee(checker, call).as_deref() {
        Some("torch.split" | "torch.split_with_sizes") => {
            argument(call, 1, "split_size_or_sections").or_else(|| argument(call, 1, "split_sizes"))
        }
        Some(_) => return,
        None => match method_call(call) {
            Some(("split" | "split_with_sizes", receiver)) if device_tensor(checker, receiver) => {
                argument(call, 0, "split_size").or_else(|| argument(call, 0, "split_sizes"))
            }
            _ => return,
        },
    };
    let Some(sizes) = sizes else {
        return;
    };
    let from_device = match sizes {
        Expr::Name(name) => checker
            .rule_state
            .dynamic_shape
            .device_lists
            .contains(name.id.as_str()),
        other => is_device_tolist(checker, other),
    };
    if from_device {
        checker.report(SplitByDeviceSizes {}, call.range());
    }
}
