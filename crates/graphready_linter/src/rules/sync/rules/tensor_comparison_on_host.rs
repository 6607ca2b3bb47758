use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{device_tensor, method_call};
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for comparisons that return a Python `bool` computed from tensor values:
    /// `torch.equal`, `torch.allclose`, `torch.is_nonzero`, `Tensor.equal`, `Tensor.allclose`,
    /// and membership tests on a device tensor (`token in ids`, which calls
    /// `Tensor.__contains__`).
    ///
    /// ## Why is this bad?
    /// The answer is a host `bool`, so the device values are read on the host and the stream is
    /// synchronised — illegal inside a CUDA graph capture, and a stall every step outside it.
    ///
    /// ## Example
    /// ```python
    /// if torch.equal(positions, cached_positions):
    ///     return cached
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// same = (positions == cached_positions).all()  # a device bool
    /// out = torch.where(same, cached, fresh)
    /// ```
    ///
    /// ## Known problems
    /// Calls whose every tensor argument is known to live on the host are not reported.
    pub struct TensorComparisonOnHost {
        call: String,
    }
}

impl Violation for TensorComparisonOnHost {
    const CODE: &'static str = "GR106";
    const NAME: &'static str = "tensor-comparison-on-host";
    const CALLS: Calls = Calls::Any;

    fn message(&self) -> String {
        format!(
            "`{}` returns a host `bool` from device values and synchronises the stream",
            self.call
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some("Compare on the device (`(a == b).all()`, `torch.isclose`) and use the result with `torch.where`".to_string())
    }
}

impl Check for TensorComparisonOnHost {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        tensor_comparison_on_host(checker, call);
    }

    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        if let Expr::Compare(compare) = expr {
            membership(checker, compare);
        }
    }
}

/// `x in t` / `x not in t` with `t` a device tensor.
fn membership(checker: &mut Checker, compare: &ast::ExprCompare) {
    for (op, container) in compare.ops.iter().zip(compare.comparators.iter()) {
        if matches!(op, ast::CmpOp::In | ast::CmpOp::NotIn) && device_tensor(checker, container) {
            checker.report(
                TensorComparisonOnHost {
                    call: "in".to_string(),
                },
                compare.range(),
            );
            return;
        }
    }
}

/// GR106
fn tensor_comparison_on_host(checker: &mut Checker, call: &ast::ExprCall) {
    if let Some(qualified) = checker.model.qualified_name(&call.func) {
        let name = match &*qualified {
            "torch.equal" => "torch.equal",
            "torch.allclose" => "torch.allclose",
            "torch.is_nonzero" => "torch.is_nonzero",
            _ => return,
        };
        let all_host = call
            .arguments
            .args
            .iter()
            .all(|argument| checker.ty(argument).is_host());
        if !all_host {
            checker.report(
                TensorComparisonOnHost {
                    call: name.to_string(),
                },
                call.range(),
            );
        }
        return;
    }
    let Some((method @ ("equal" | "allclose"), receiver)) = method_call(call) else {
        return;
    };
    if checker.is_tensor(receiver) {
        checker.report(
            TensorComparisonOnHost {
                call: format!("Tensor.{method}"),
            },
            call.range(),
        );
    }
}
