use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{host_named, method_call};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for `Tensor.tolist()` on a tensor that may live on the GPU.
    ///
    /// ## Why is this bad?
    /// `.tolist()` copies the whole tensor to the host and waits for the stream: a device→host
    /// synchronisation, illegal inside a CUDA graph capture and a per-step stall outside it. The
    /// resulting Python list then usually drives host control flow or shapes, which a replayed
    /// graph cannot follow.
    ///
    /// ## Example
    /// ```python
    /// for n in counts.tolist():
    ///     out.append(x[:n])
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # fixed-shape device work: mask rows at or past each count
    /// mask = torch.arange(x.size(0), device=x.device)[None, :] < counts[:, None]
    /// ```
    ///
    /// ## Known problems
    /// Receivers named like host mirrors (`*_np`, `*_cpu`) and values already moved with
    /// `.cpu()` are not reported: their sync, if any, happened earlier.
    pub struct TolistCall {}
}

impl Violation for TolistCall {
    const CODE: &'static str = "GR102";
    const NAME: &'static str = "tolist-call";
    const CALLS: Calls = Calls::named(&["tolist"]);

    fn message(&self) -> String {
        "`.tolist()` copies a device tensor to the host and synchronises the stream".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Keep the data on the device and replace the host loop with fixed-shape tensor work"
                .to_string(),
        )
    }
}

impl Check for TolistCall {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        tolist_call(checker, call);
    }
}

/// GR102
fn tolist_call(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(("tolist", receiver)) = method_call(call) else {
        return;
    };
    if !call.arguments.is_empty() || checker.model.qualified_name(receiver).is_some() {
        return;
    }
    match checker.ty(receiver) {
        Ty::Tensor => {}
        Ty::Unknown if !host_named(receiver) => {}
        _ => return,
    }
    checker.report(TolistCall {}, call.range());
}
