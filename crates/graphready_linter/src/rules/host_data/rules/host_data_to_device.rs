use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, is_device_target, method_call, moves_to_device, non_blocking};
use crate::semantic::tensor_api::is_host_factory;
use crate::semantic::{keyword, Ty};
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for device tensors made from host data:
    /// `torch.tensor(values, device=...)`, `torch.as_tensor(array, device=...)`,
    /// `torch.from_numpy(a).cuda()`, and `.cuda()` / `.to(device)` of a tensor known to live in
    /// host memory.
    ///
    /// ## Why is this bad?
    /// Each of these is a host→device copy from pageable memory, which a CUDA graph cannot
    /// record: capture fails. Where it is recorded (pinned memory), the graph bakes in the host
    /// address and the values seen at capture time, so replay silently reuses stale inputs.
    /// Serving engines keep per-step inputs (next tokens, positions) in preallocated pinned
    /// buffers and copy them into static device buffers with `copy_(..., non_blocking=True)`.
    ///
    /// ## Example
    /// ```python
    /// positions = torch.tensor(position_list, device="cuda")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # before replay, outside the graph: fill the pinned buffer on the host
    /// self.positions_pinned[:n].copy_(torch.as_tensor(position_list))
    /// # inside the step: an async copy from pinned memory into a static device buffer
    /// self.positions.copy_(self.positions_pinned, non_blocking=True)
    /// ```
    ///
    /// ## Known problems
    /// `.to(device, non_blocking=True)` is taken to copy from pinned memory and is not reported,
    /// and neither is a value stored on `self` (a cache built on first use).
    pub struct HostDataToDevice {
        call: String,
    }
}

impl Violation for HostDataToDevice {
    const CODE: &'static str = "GR301";
    const NAME: &'static str = "host-data-to-device";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&["tensor", "as_tensor", "asarray", "cuda", "to"]);

    fn message(&self) -> String {
        format!(
            "`{}` copies host data to the device inside the step",
            self.call
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Copy into a preallocated device buffer from a pinned host buffer: \
             `buf.copy_(pinned, non_blocking=True)`"
                .to_string(),
        )
    }
}

impl Check for HostDataToDevice {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        host_data_to_device(checker, call);
    }
}

/// Allocating factories whose host-then-copy form GR402 reports.
fn is_allocating_factory(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    crate::rules::callee(checker, call).is_some_and(|qualified| {
        is_host_factory(&qualified)
            && !matches!(
                &*qualified,
                "torch.tensor" | "torch.as_tensor" | "torch.from_numpy" | "torch.frombuffer"
            )
    })
}

/// GR301
fn host_data_to_device(checker: &mut Checker, call: &ast::ExprCall) {
    // `self.freqs = torch.tensor(...).to(device)`: a cache built once, not per step.
    if checker.rule_state.assigned_to_self(call.range()) {
        return;
    }
    if let Some(qualified) = crate::rules::callee(checker, call) {
        let (name, must_be_host) = match &*qualified {
            "torch.tensor" => ("torch.tensor", false),
            "torch.as_tensor" => ("torch.as_tensor", true),
            "torch.asarray" => ("torch.asarray", true),
            _ => return,
        };
        let Some(device) = keyword(call, "device") else {
            return;
        };
        if !is_device_target(checker, device) {
            return;
        }
        let Some(data) = argument(call, 0, "data").or_else(|| argument(call, 0, "obj")) else {
            return;
        };
        let host = match checker.ty(data) {
            Ty::Tensor => false,
            Ty::Unknown => !must_be_host,
            _ => true,
        };
        if host {
            checker.report(
                HostDataToDevice {
                    call: format!("{name}(..., device=...)"),
                },
                call.range(),
            );
        }
        return;
    }
    if !moves_to_device(checker, call) || non_blocking(call) {
        return;
    }
    let Some((method, receiver)) = method_call(call) else {
        return;
    };
    if checker.ty(receiver) != Ty::CpuTensor || is_allocating_factory(checker, receiver) {
        return;
    }
    let shown = if method == "cuda" {
        ".cuda()"
    } else {
        ".to(device)"
    };
    checker.report(
        HostDataToDevice {
            call: shown.to_string(),
        },
        call.range(),
    );
}
