use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, device_tensor, method_call};
use crate::semantic::keyword;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for `repeat_interleave` with a tensor of repeats on the device and no
    /// `output_size=`.
    ///
    /// ## Why is this bad?
    /// The output has `repeats.sum()` elements, which PyTorch reads on the host to allocate it: the
    /// stream synchronises and capture fails. With `output_size=` the size is known up front and
    /// no read happens. Integer repeats are fine.
    ///
    /// ## Example
    /// ```python
    /// def expand(hidden: torch.Tensor, tokens_per_seq: torch.Tensor):
    ///     return torch.repeat_interleave(hidden, tokens_per_seq, dim=0)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def expand(hidden: torch.Tensor, tokens_per_seq: torch.Tensor, max_tokens: int):
    ///     return torch.repeat_interleave(hidden, tokens_per_seq, dim=0, output_size=max_tokens)
    /// ```
    pub struct RepeatInterleaveWithoutOutputSize {}
}

impl Violation for RepeatInterleaveWithoutOutputSize {
    const CODE: &'static str = "GR203";
    const NAME: &'static str = "repeat-interleave-without-output-size";
    const CALLS: Calls = Calls::named(&["repeat_interleave"]);

    fn message(&self) -> String {
        "`repeat_interleave` with device repeats and no `output_size=` reads the total on the host"
            .to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some("Pass `output_size=` (a host-known upper bound or the exact total)".to_string())
    }
}

impl Check for RepeatInterleaveWithoutOutputSize {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        repeat_interleave(checker, call);
    }
}

/// GR203
fn repeat_interleave(checker: &mut Checker, call: &ast::ExprCall) {
    if keyword(call, "output_size").is_some() {
        return;
    }
    let repeats = match crate::rules::callee(checker, call).as_deref() {
        Some("torch.repeat_interleave") => {
            if call.arguments.args.len() == 1 && keyword(call, "repeats").is_none() {
                // `torch.repeat_interleave(repeats)`: the repeats are the input.
                call.arguments.args.first()
            } else if argument(call, 0, "input").is_some_and(|input| device_tensor(checker, input))
            {
                argument(call, 1, "repeats")
            } else {
                // The input lives on the host (or is unknown): so do the repeats.
                return;
            }
        }
        Some(_) => return,
        None => match method_call(call) {
            Some(("repeat_interleave", receiver)) if device_tensor(checker, receiver) => {
                argument(call, 0, "repeats")
            }
            _ => return,
        },
    };
    if repeats.is_some_and(|repeats| device_tensor(checker, repeats)) {
        checker.report(RepeatInterleaveWithoutOutputSize {}, call.range());
    }
}
