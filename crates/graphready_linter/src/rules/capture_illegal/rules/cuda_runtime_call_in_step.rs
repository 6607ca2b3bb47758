use crate::checker::Checker;
use crate::declare_violation;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for CUDA runtime calls that a capture cannot contain:
    /// `torch.cuda.empty_cache()`, `torch.cuda.set_device()` and `torch.cuda.ipc_collect()`.
    ///
    /// ## Why is this bad?
    /// `empty_cache` releases cached blocks with `cudaFree`, which synchronises the device and is
    /// illegal while a stream is capturing (it would also free memory the graph's pool is
    /// using). `set_device` switches the current device in the middle of a capture that is bound
    /// to one device. The capture is invalidated, and PyTorch reports it only at `capture_end`.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     torch.cuda.empty_cache()
    ///     return self.layer(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     return self.layer(x)
    /// # release memory between requests, outside the captured step
    /// ```
    pub struct CudaRuntimeCallInStep {
        call: &'static str,
    }
}

impl Violation for CudaRuntimeCallInStep {
    const CODE: &'static str = "GR501";
    const NAME: &'static str = "cuda-runtime-call-in-step";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&["empty_cache", "set_device", "ipc_collect"]);

    fn message(&self) -> String {
        format!("`{}` cannot run while a CUDA graph is captured", self.call)
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Move the call out of the captured step (before capture or between replays)"
                .to_string(),
        )
    }
}

impl Check for CudaRuntimeCallInStep {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        cuda_runtime_call_in_step(checker, call);
    }
}

/// GR501
fn cuda_runtime_call_in_step(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(qualified) = crate::rules::callee(checker, call) else {
        return;
    };
    let shown = match &*qualified {
        "torch.cuda.empty_cache" | "torch.cuda.memory.empty_cache" => "torch.cuda.empty_cache()",
        "torch.cuda.set_device" => "torch.cuda.set_device()",
        "torch.cuda.ipc_collect" => "torch.cuda.ipc_collect()",
        _ => return,
    };
    checker.report(CudaRuntimeCallInStep { call: shown }, call.range());
}
