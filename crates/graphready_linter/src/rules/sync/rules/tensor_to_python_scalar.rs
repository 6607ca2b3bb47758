use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::builtin_call;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for `int(t)`, `float(t)` and `complex(t)` of a device tensor.
    ///
    /// ## Why is this bad?
    /// Converting a tensor to a Python number is `.item()` in disguise: the value is copied to the
    /// host and the stream synchronised. Inside a CUDA graph capture this fails; outside it, the
    /// step stalls, and the host number is frozen into whatever it feeds.
    ///
    /// ## Example
    /// ```python
    /// def take(x: torch.Tensor, num_tokens: torch.Tensor):
    ///     n = int(num_tokens)
    ///     return x[:n]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def take(x: torch.Tensor, num_tokens: torch.Tensor):
    ///     # keep the bound on the device and mask instead of slicing
    ///     valid = torch.arange(x.size(0), device=x.device) < num_tokens
    ///     return x * valid[:, None]
    /// ```
    pub struct TensorToPythonScalar {
        builtin: String,
    }
}

impl Violation for TensorToPythonScalar {
    const CODE: &'static str = "GR105";
    const NAME: &'static str = "tensor-to-python-scalar";
    const CALLS: Calls = Calls::named(&["int", "float", "complex"]);

    fn message(&self) -> String {
        format!(
            "`{}()` of a device tensor copies its value to the host and synchronises the stream",
            self.builtin
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some("Keep the value on the device as a 0-d tensor".to_string())
    }
}

impl Check for TensorToPythonScalar {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        tensor_to_python_scalar(checker, call);
    }
}

/// GR105
fn tensor_to_python_scalar(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(builtin @ ("int" | "float" | "complex")) = builtin_call(checker, call) else {
        return;
    };
    let [argument] = &*call.arguments.args else {
        return;
    };
    if checker.is_tensor(argument) {
        checker.report(
            TensorToPythonScalar {
                builtin: builtin.to_string(),
            },
            call.range(),
        );
    }
}
