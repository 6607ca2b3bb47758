use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{method_call, moves_to_device};
use crate::semantic::{is_cpu_device, keyword};
use crate::violation::{Calls, Check, Violation};
use graphready_diagnostics::Severity;
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for a tensor allocated on the host and then moved to
    /// the device: `torch.arange(n).to(x.device)`, `torch.zeros(shape).cuda()`.
    ///
    /// ## Why is this bad?
    /// The factory has no `device=`, so it fills host memory and `.to()` copies it over: a
    /// host→device copy from pageable memory, which a CUDA graph cannot record (capture fails),
    /// plus a host allocation and a copy every step outside a graph.
    ///
    /// ## Example
    /// ```python
    /// positions = torch.arange(seq_len).to(hidden.device)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// positions = torch.arange(seq_len, device=hidden.device)
    /// ```
    pub struct HostAllocationMovedToDevice {
        factory: String,
    }
}

impl Violation for HostAllocationMovedToDevice {
    const CODE: &'static str = "GR402";
    const NAME: &'static str = "host-allocation-moved-to-device";
    const SEVERITY: Severity = Severity::Warning;
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&["to", "cuda"]);

    fn message(&self) -> String {
        format!(
            "`torch.{}` allocates on the host and the result is copied to the device",
            self.factory
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(format!(
            "Allocate on the device directly: `torch.{}(..., device=...)`",
            self.factory
        ))
    }
}

impl Check for HostAllocationMovedToDevice {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        host_allocation_moved_to_device(checker, call);
    }
}

/// GR402
fn host_allocation_moved_to_device(checker: &mut Checker, call: &ast::ExprCall) {
    if checker.rule_state.assigned_to_self(call.range()) {
        return;
    }
    if !moves_to_device(checker, call) {
        return;
    }
    let Some((_, Expr::Call(factory))) = method_call(call) else {
        return;
    };
    let Some(qualified) = checker.model.qualified_name(&factory.func) else {
        return;
    };
    let Some(name) = qualified.strip_prefix("torch.") else {
        return;
    };
    if !super::super::SIZED_FACTORIES.contains(&name) {
        return;
    }
    if keyword(factory, "device").is_some_and(|device| !is_cpu_device(device)) {
        return;
    }
    checker.report(
        HostAllocationMovedToDevice {
            factory: name.to_string(),
        },
        call.range(),
    );
}
