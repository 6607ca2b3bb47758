use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::method_call;
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for `Tensor.item()` on a tensor that may live on the GPU.
    ///
    /// ## Why is this bad?
    /// `.item()` copies one value to the host and waits for every kernel queued before it: a
    /// device→host synchronisation. Inside a CUDA graph capture it raises
    /// `cudaErrorStreamCaptureUnsupported` (or invalidates the capture, reported only at
    /// `capture_end`); outside capture it stalls the pipeline every step, once per call site and
    /// layer: one `x.abs().max().item()` in a residual block of a 61-layer model is 122 syncs per
    /// decode step.
    ///
    /// ## Example
    /// ```python
    /// scale = x.abs().max().item()
    /// y = x / scale
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scale = x.abs().amax()  # stays on the device
    /// y = x / scale
    /// ```
    ///
    /// ## Known problems
    /// A receiver whose type graphready cannot infer is assumed to be a tensor, because NumPy
    /// values are recognised and other `.item()` methods are rare in PyTorch code.
    pub struct ItemCall {}
}

impl Violation for ItemCall {
    const CODE: &'static str = "GR101";
    const NAME: &'static str = "item-call";
    const CALLS: Calls = Calls::named(&["item"]);

    fn message(&self) -> String {
        "`.item()` copies a device value to the host and synchronises the stream".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Keep the value on the device (a 0-d tensor) and use it in tensor operations"
                .to_string(),
        )
    }
}

impl Check for ItemCall {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        item_call(checker, call);
    }
}

/// GR101
fn item_call(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(("item", receiver)) = method_call(call) else {
        return;
    };
    if !call.arguments.is_empty() || checker.model.qualified_name(receiver).is_some() {
        return;
    }
    if !matches!(checker.ty(receiver), Ty::Tensor | Ty::Unknown) {
        return;
    }
    checker.report(ItemCall {}, call.range());
}
