use crate::checker::Checker;
use crate::declare_violation;
use crate::violation::{Check, Violation};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for assignments to `torch.backends.cudnn.benchmark`.
    ///
    /// ## Why is this bad?
    /// With benchmarking on, cuDNN times several algorithms the first time it sees a shape:
    /// extra allocations and synchronising timing runs, which fail inside a capture, and a choice
    /// that can differ between the capture and the eager warm-up. Switching it in the step also
    /// changes a process-wide setting on every call.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     torch.backends.cudnn.benchmark = True
    ///     return self.conv(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// torch.backends.cudnn.benchmark = True  # once at start-up, then warm up every bucket
    ///
    /// def forward(self, x):
    ///     return self.conv(x)
    /// ```
    pub struct CudnnBenchmarkChange {}
}

impl Violation for CudnnBenchmarkChange {
    const CODE: &'static str = "GR505";
    const NAME: &'static str = "cudnn-benchmark-change";
    const CAPTURED_ONLY: bool = true;

    fn message(&self) -> String {
        "`torch.backends.cudnn.benchmark` is changed inside the step".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some("Set it once at start-up and warm up every shape before capture".to_string())
    }
}

impl Check for CudnnBenchmarkChange {
    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        cudnn_benchmark_change(checker, stmt);
    }
}

/// GR505
fn cudnn_benchmark_change(checker: &mut Checker, stmt: &Stmt) {
    let targets = match stmt {
        Stmt::Assign(assign) => assign.targets.as_slice(),
        Stmt::AnnAssign(assign) => std::slice::from_ref(&*assign.target),
        _ => return,
    };
    for target in targets {
        let benchmark = matches!(target, Expr::Attribute(a) if a.attr.id.as_str() == "benchmark");
        if benchmark && checker.model.is(target, "torch.backends.cudnn.benchmark") {
            checker.report(CudnnBenchmarkChange {}, stmt.range());
        }
    }
}
