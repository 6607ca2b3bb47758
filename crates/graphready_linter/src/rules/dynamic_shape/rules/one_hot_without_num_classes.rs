use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, device_tensor};
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for `torch.nn.functional.one_hot` without `num_classes=` (or with `-1`).
    ///
    /// ## Why is this bad?
    /// Without a class count, `one_hot` uses `input.max() + 1`, read on the host: the stream
    /// synchronises, capture fails, and the output's width follows the data.
    ///
    /// ## Example
    /// ```python
    /// def route(topk_ids: torch.Tensor):
    ///     return F.one_hot(topk_ids)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def route(topk_ids: torch.Tensor, num_experts: int):
    ///     return F.one_hot(topk_ids, num_classes=num_experts)
    /// ```
    pub struct OneHotWithoutNumClasses {}
}

impl Violation for OneHotWithoutNumClasses {
    const CODE: &'static str = "GR204";
    const NAME: &'static str = "one-hot-without-num-classes";
    const CALLS: Calls = Calls::named(&["one_hot"]);

    fn message(&self) -> String {
        "`one_hot` without `num_classes=` reads the largest class on the host".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some("Pass `num_classes=` with the host-known number of classes".to_string())
    }
}

impl Check for OneHotWithoutNumClasses {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        one_hot(checker, call);
    }
}

/// GR204
fn one_hot(checker: &mut Checker, call: &ast::ExprCall) {
    if crate::rules::callee(checker, call).as_deref() != Some("torch.nn.functional.one_hot") {
        return;
    }
    let Some(input) = argument(call, 0, "tensor").or_else(|| argument(call, 0, "input")) else {
        return;
    };
    if !device_tensor(checker, input) {
        return;
    }
    let unknown_classes = match argument(call, 1, "num_classes") {
        None => true,
        Some(Expr::UnaryOp(unary)) => matches!(
            &*unary.operand,
            Expr::NumberLiteral(n) if matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(1))
        ),
        Some(_) => false,
    };
    if unknown_classes {
        checker.report(OneHotWithoutNumClasses {}, call.range());
    }
}
