use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, is_device_keyword, method_call, moves_to_device, non_blocking};
use crate::semantic::tensor_api::is_host_factory;
use crate::semantic::{keyword, Ty};
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for device tensors made from host data: `torch.tensor(values, device=...)` (of a
    /// list or a single Python number), `torch.as_tensor(array, device=...)`,
    /// `torch.from_numpy(a).cuda()`, and `.cuda()` / `.to(device)` of a tensor known to live in
    /// host memory.
    ///
    /// ## Why is this bad?
    /// Each of these is a blocking host→device copy. Inside a CUDA graph capture it fails:
    /// "Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU tensor
    /// is pinned". Outside capture, in code that runs every step (input preparation, sampling),
    /// the blocking copy waits for the stream to drain: a stall per call. Serving engines keep
    /// per-step inputs (next tokens, positions) in preallocated pinned buffers and copy them into
    /// static device buffers with `copy_(..., non_blocking=True)`.
    ///
    /// ## Example
    /// ```python
    /// def prepare(position_list):
    ///     return torch.tensor(position_list, device="cuda")
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def prepare(position_list, positions_pinned, positions):
    ///     # host side: fill the pinned staging buffer, then one asynchronous upload
    ///     n = len(position_list)
    ///     positions_pinned[:n].copy_(torch.as_tensor(position_list))
    ///     positions[:n].copy_(positions_pinned[:n], non_blocking=True)
    ///     return positions[:n]
    /// ```
    ///
    /// An empty literal (`torch.tensor([], device=device)`) copies nothing and is not reported.
    ///
    /// ## Known problems
    /// `.to(device, non_blocking=True)` is not reported here: from pinned memory it is
    /// asynchronous, and from memory known to be pageable GR110 reports it. A value stored on
    /// `self` (a cache built on first use) is not reported either.
    pub struct HostDataToDevice {
        call: String,
    }
}

impl Violation for HostDataToDevice {
    const CODE: &'static str = "GR301";
    const NAME: &'static str = "host-data-to-device";
    const CALLS: Calls = Calls::named(&["tensor", "as_tensor", "asarray", "cuda", "to"]);

    fn message(&self) -> String {
        format!(
            "`{}` copies host data to the device and waits for the copy",
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

/// `obj.cpu().cuda()` of an object of unknown type: modules move with `.cpu()` and `.cuda()` too.
fn is_round_trip_of_unknown(checker: &Checker, receiver: &Expr) -> bool {
    let Expr::Call(call) = receiver else {
        return false;
    };
    matches!(method_call(call), Some(("cpu" | "to", inner)) if checker.ty(inner) == Ty::Unknown)
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
        if !is_device_keyword(checker, device) {
            return;
        }
        let Some(data) = argument(call, 0, "data").or_else(|| argument(call, 0, "obj")) else {
            return;
        };
        // `torch.tensor([], device=device)`: nothing to copy.
        if matches!(data, Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) if elts.is_empty())
        {
            return;
        }
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
    if !checker.ty(receiver).is_host_tensor()
        || is_allocating_factory(checker, receiver)
        || is_round_trip_of_unknown(checker, receiver)
    {
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
