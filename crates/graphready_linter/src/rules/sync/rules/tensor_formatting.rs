use crate::checker::guards::is_logger;
use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{builtin_call, method_call};
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr, InterpolatedStringElement};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for device tensors turned into text: `print(t)`, `str(t)`, `repr(t)`, f-strings,
    /// `%` and `str.format` formatting, and logging calls with a tensor argument.
    ///
    /// ## Why is this bad?
    /// Formatting a tensor reads its values on the host, which copies them and synchronises the
    /// stream: illegal inside a CUDA graph capture, and a stall in every step outside it. A
    /// logging call does this whenever its level is enabled, so turning on debug logging breaks
    /// capture.
    ///
    /// Warnings and errors (`logger.warning(...)`, `logger.error(...)`, `warnings.warn(...)`) are
    /// not reported, nor anything their arguments read: they are formatted when something unusual
    /// happened, not in the step every call makes.
    ///
    /// ## Example
    /// ```python
    /// def route(logits: torch.Tensor):
    ///     logger.debug("router logits: %s", logits)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def route(logits: torch.Tensor):
    ///     logger.debug("router logits: shape=%s dtype=%s", logits.shape, logits.dtype)
    /// ```
    pub struct TensorFormatting {
        how: &'static str,
    }
}

impl Violation for TensorFormatting {
    const CODE: &'static str = "GR108";
    const NAME: &'static str = "tensor-formatting";
    const CALLS: Calls = Calls::Any;

    fn message(&self) -> String {
        format!(
            "{} formats a device tensor, which copies its values to the host and synchronises the stream",
            self.how
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Log host metadata (`.shape`, `.dtype`) instead, or format outside the captured step"
                .to_string(),
        )
    }
}

impl Check for TensorFormatting {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        formatting_call(checker, call);
    }

    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        match expr {
            Expr::FString(fstring) => self::fstring(checker, fstring),
            Expr::BinOp(binop) => percent_format(checker, binop),
            _ => {}
        }
    }
}

/// Logger methods that format their arguments when their level is enabled.
pub(crate) const LOG_METHODS: &[&str] = &[
    "debug",
    "info",
    "warning",
    "warn",
    "error",
    "exception",
    "critical",
    "log",
    "info_once",
    "warning_once",
    "debug_once",
];

/// `print(t)`, `str(t)`, `repr(t)`, `"...".format(t)`, `logger.info(..., t)`.
fn formatting_call(checker: &mut Checker, call: &ast::ExprCall) {
    let how = match builtin_call(checker, call) {
        Some("print") => "`print()`",
        Some("str") => "`str()`",
        Some("repr") => "`repr()`",
        Some(_) => return,
        None => match method_call(call) {
            Some(("format", Expr::StringLiteral(_))) => "`str.format()`",
            Some((method, receiver))
                if LOG_METHODS.contains(&method) && is_logger(&checker.model, receiver) =>
            {
                "a logging call"
            }
            _ => return,
        },
    };
    let arguments = call
        .arguments
        .args
        .iter()
        .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value));
    let tensors: Vec<_> = arguments
        .filter(|argument| checker.is_tensor(argument))
        .map(Ranged::range)
        .collect();
    for range in tensors {
        checker.report(TensorFormatting { how }, range);
    }
}

/// `f"{t}"`.
fn fstring(checker: &mut Checker, fstring: &ast::ExprFString) {
    let tensors: Vec<_> = fstring
        .value
        .elements()
        .filter_map(|element| match element {
            InterpolatedStringElement::Interpolation(interpolation) => {
                Some(&*interpolation.expression)
            }
            InterpolatedStringElement::Literal(_) => None,
        })
        .filter(|expr| checker.is_tensor(expr))
        .map(Ranged::range)
        .collect();
    for range in tensors {
        checker.report(TensorFormatting { how: "an f-string" }, range);
    }
}

/// `"%s" % t` and `"%s %s" % (a, t)`.
fn percent_format(checker: &mut Checker, binop: &ast::ExprBinOp) {
    if !matches!(binop.op, ast::Operator::Mod) || !matches!(&*binop.left, Expr::StringLiteral(_)) {
        return;
    }
    let values: Vec<&Expr> = match &*binop.right {
        Expr::Tuple(tuple) => tuple.elts.iter().collect(),
        other => vec![other],
    };
    let tensors: Vec<_> = values
        .into_iter()
        .filter(|expr| checker.is_tensor(expr))
        .map(Ranged::range)
        .collect();
    for range in tensors {
        checker.report(
            TensorFormatting {
                how: "`%` formatting",
            },
            range,
        );
    }
}
