use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::method_call;
use crate::semantic::keyword_true;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast as ast;
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for pinned host memory allocated in the step:
    /// `.pin_memory()` and factories called with `pin_memory=True`.
    ///
    /// ## Why is this bad?
    /// Pinning allocates page-locked memory with `cudaHostAlloc`, which synchronises and is not
    /// allowed while a stream is capturing. Pinned buffers are meant to be allocated once and
    /// reused: serving engines stage per-step tokens and positions in pinned buffers made at
    /// init.
    ///
    /// ## Example
    /// ```python
    /// def step(self, tokens):
    ///     staging = torch.empty(n, dtype=torch.int64, pin_memory=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def __init__(self, max_tokens):
    ///     self.staging = torch.empty(max_tokens, dtype=torch.int64, pin_memory=True)
    /// ```
    pub struct PinMemoryInStep {}
}

impl Violation for PinMemoryInStep {
    const CODE: &'static str = "GR502";
    const NAME: &'static str = "pin-memory-in-step";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::Named {
        names: &["pin_memory"],
        keywords: &["pin_memory"],
    };

    fn message(&self) -> String {
        "pinned host memory is allocated inside the step".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some("Allocate the pinned buffer once, before capture, and reuse it".to_string())
    }
}

impl Check for PinMemoryInStep {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        pin_memory_in_step(checker, call);
    }
}

/// GR502
fn pin_memory_in_step(checker: &mut Checker, call: &ast::ExprCall) {
    let pinned_keyword = keyword_true(call, "pin_memory");
    let pins = if pinned_keyword {
        crate::rules::callee(checker, call).is_some_and(|qualified| qualified.starts_with("torch."))
            || matches!(method_call(call), Some((method, _)) if method.starts_with("new_"))
    } else {
        matches!(method_call(call), Some(("pin_memory", receiver))
            if call.arguments.is_empty() && checker.model.qualified_name(receiver).is_none())
    };
    if pins {
        checker.report(PinMemoryInStep {}, call.range());
    }
}
