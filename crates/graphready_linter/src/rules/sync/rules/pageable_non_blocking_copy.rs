use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, maybe_device_tensor, method_call, moves_to_device, non_blocking};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for copies to the device that ask for `non_blocking=True` from host memory that is
    /// not pinned: `.to(device, non_blocking=True)`, `.cuda(non_blocking=True)` and
    /// `device_buf.copy_(host, non_blocking=True)` of a host tensor made by `torch.tensor(...)`,
    /// `torch.as_tensor` of a list, `torch.from_numpy` of a new array, `.cpu()`, arithmetic on
    /// host tensors, or a host factory called without `pin_memory=True` (also when the tensor was
    /// stored on `self` in another method).
    ///
    /// ## Why is this bad?
    /// Only a copy from pinned (page-locked) memory is asynchronous. From pageable memory, CUDA
    /// stages the data through a pinned buffer and may wait for the stream first ("If pageable
    /// memory must first be staged to pinned memory, the driver may synchronize with the stream",
    /// CUDA Runtime API, API synchronization behavior), so `non_blocking=True` promises an
    /// overlap that does not happen: a stall on every step in per-step host code. Inside a CUDA
    /// graph capture PyTorch refuses the copy: "Cannot copy between CPU and CUDA tensors during
    /// CUDA graph capture unless the CPU tensor is pinned".
    ///
    /// ## Example
    /// ```python
    /// def upload(self, token_ids):
    ///     ids = torch.tensor(token_ids, dtype=torch.int64)
    ///     return ids.to("cuda", non_blocking=True)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def upload(self, token_ids):
    ///     # self.ids_cpu = torch.zeros(max_tokens, dtype=torch.int64, pin_memory=True), at init
    ///     n = len(token_ids)
    ///     self.ids_cpu[:n] = torch.as_tensor(token_ids, dtype=torch.int64)
    ///     return self.ids_cpu[:n].to("cuda", non_blocking=True)
    /// ```
    ///
    /// ## Known problems
    /// Only memory graphready knows to be pageable is reported: a host tensor whose origin it
    /// cannot see (a parameter, a view of a NumPy mirror) may be pinned and is not. A blocking copy
    /// from host memory is GR301's.
    pub struct PageableNonBlockingCopy {
        call: &'static str,
    }
}

impl Violation for PageableNonBlockingCopy {
    const CODE: &'static str = "GR110";
    const NAME: &'static str = "pageable-non-blocking-copy";
    const CALLS: Calls = Calls::named(&["to", "cuda", "copy_"]);

    fn message(&self) -> String {
        format!(
            "`{}` copies from pageable host memory: the copy is synchronous despite \
             `non_blocking=True`, and capture rejects it",
            self.call
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Stage the data in a host buffer allocated once with `pin_memory=True`, then copy \
             from it with `non_blocking=True`"
                .to_string(),
        )
    }
}

impl Check for PageableNonBlockingCopy {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        pageable_non_blocking_copy(checker, call);
    }
}

/// GR110
fn pageable_non_blocking_copy(checker: &mut Checker, call: &ast::ExprCall) {
    if !non_blocking(call) {
        return;
    }
    let Some((method, receiver)) = method_call(call) else {
        return;
    };
    let (shown, source): (&'static str, &Expr) = match method {
        "copy_" => {
            let Some(source) = argument(call, 0, "src") else {
                return;
            };
            if !maybe_device_tensor(checker, receiver) {
                return;
            }
            ("copy_(..., non_blocking=True)", source)
        }
        "cuda" => (".cuda(non_blocking=True)", receiver),
        "to" if moves_to_device(checker, call) => (".to(device, non_blocking=True)", receiver),
        _ => return,
    };
    if checker.ty(source) == Ty::PageableTensor && !is_empty_allocation(source) {
        checker.report(PageableNonBlockingCopy { call: shown }, call.range());
    }
}

/// `torch.zeros(0, ...)`: an allocation with no elements, whose copy copies nothing.
fn is_empty_allocation(source: &Expr) -> bool {
    let Expr::Call(call) = source else {
        return false;
    };
    let zero = |expr: &Expr| {
        matches!(expr, Expr::NumberLiteral(n)
            if matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(0)))
    };
    match call.arguments.args.first() {
        Some(Expr::Tuple(tuple)) => tuple.elts.iter().any(zero),
        Some(first) => zero(first),
        None => false,
    }
}
