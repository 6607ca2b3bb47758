use crate::checker::Checker;
use crate::declare_violation;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for `torch.distributed.barrier()` and the object
    /// collectives: `all_gather_object`, `broadcast_object_list`, `gather_object`,
    /// `scatter_object_list`, `send_object_list` and `recv_object_list`.
    ///
    /// ## Why is this bad?
    /// These pickle Python objects and move their sizes and bytes through host memory, waiting
    /// on the device (and, with gloo, on other processes) from the host. None of that can be
    /// recorded in a CUDA graph: capture fails, or replay skips the exchange and keeps the
    /// objects seen at capture time.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     dist.barrier()
    ///     return self.layer(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     return self.layer(x)  # tensor collectives (all_reduce on NCCL) can be captured
    /// # exchange Python objects outside the captured step
    /// ```
    pub struct HostCollectiveInStep {
        call: String,
    }
}

impl Violation for HostCollectiveInStep {
    const CODE: &'static str = "GR507";
    const NAME: &'static str = "host-collective-in-step";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(HOST_COLLECTIVES);

    fn message(&self) -> String {
        format!(
            "`{}` synchronises through the host and cannot be captured",
            self.call
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Move it out of the captured step; inside it use tensor collectives on NCCL"
                .to_string(),
        )
    }
}

impl Check for HostCollectiveInStep {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        host_collective_in_step(checker, call);
    }
}

/// `torch.distributed` calls that synchronise through the host (object collectives, barriers).
const HOST_COLLECTIVES: &[&str] = &[
    "barrier",
    "monitored_barrier",
    "all_gather_object",
    "broadcast_object_list",
    "gather_object",
    "scatter_object_list",
    "send_object_list",
    "recv_object_list",
];

/// GR507
fn host_collective_in_step(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(qualified) = crate::rules::callee(checker, call) else {
        return;
    };
    let Some(name) = qualified.strip_prefix("torch.distributed.") else {
        return;
    };
    if HOST_COLLECTIVES.contains(&name) {
        checker.report(
            HostCollectiveInStep {
                call: format!("torch.distributed.{name}"),
            },
            call.range(),
        );
    }
}
