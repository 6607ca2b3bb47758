use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{host_named, method_call, non_blocking};
use crate::semantic::{is_cpu_move, is_legacy_host_type, Ty};
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for copies of a device tensor to host memory: `.cpu()`, `.to("cpu")`,
    /// `.to(device="cpu")`, `.to(torch.device("cpu"))` and `.type(torch.BoolTensor)` (the legacy
    /// `torch.*Tensor` types other than `torch.cuda.*` are host types).
    ///
    /// Also reads of the project's properties that wait for the device: `batch.seq_lens_cpu`,
    /// where `batch` is a parameter annotated with a class (or `self`) whose `seq_lens_cpu`
    /// property copies a device tensor to the host (a lazily made copy counts when the class is
    /// a dataclass, whose instances are made again as data flows). The read looks like a field;
    /// it is a sync on every step (vLLM's `CommonAttentionMetadata.seq_lens_cpu`,
    /// <https://github.com/vllm-project/vllm/issues/39537>).
    ///
    /// ## Why is this bad?
    /// A device→host copy into pageable memory waits for the stream to drain. Inside a CUDA graph
    /// capture the copy cannot be recorded and the capture fails; outside it, every step stalls
    /// until the GPU catches up.
    ///
    /// ## Example
    /// ```python
    /// lengths = seq_lens.cpu()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # keep seq_lens on the device; if the host really needs it, copy it once outside the step
    /// # into a pinned buffer with non_blocking=True and read it after an event
    /// ```
    ///
    /// ## Known problems
    /// `.numpy()` is never reported: it raises on a device tensor, so its receiver is already on
    /// the host. Receivers named like host mirrors (`*_np`, `*_cpu`) are not reported either,
    /// nor `.to("cpu", non_blocking=True)`: PyTorch copies into pinned memory it allocates,
    /// without waiting (reading the result before the copy's event is a bug this rule does not
    /// judge). Property reads are found only through parameters and `self`, on the class the
    /// annotation names or a base it inherits the property from (not a subclass's override),
    /// and only under the default scope's reach and `--scope all`'s second pass;
    /// `@cached_property` is not followed.
    pub struct HostTransfer {
        call: String,
        property: Option<(String, &'static str)>,
    }
}

impl Violation for HostTransfer {
    const CODE: &'static str = "GR103";
    const NAME: &'static str = "host-transfer";
    const CALLS: Calls = Calls::named(&["cpu", "to", "type"]);

    fn message(&self) -> String {
        match &self.property {
            Some((property, code)) => format!(
                "reading `{}` runs the property `{property}`, which waits for the device \
                 ({code} in its body)",
                self.call
            ),
            None => format!(
                "`{}` copies a device tensor to host memory and synchronises the stream",
                self.call
            ),
        }
    }

    fn fix_title(&self) -> Option<String> {
        Some("Keep the tensor on the device, or move the copy out of the captured step".to_string())
    }
}

impl Check for HostTransfer {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        host_transfer(checker, call);
    }

    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        property_read(checker, expr);
    }
}

/// GR103: `batch.seq_lens_cpu`, a property that waits for the device.
fn property_read(checker: &mut Checker, expr: &Expr) {
    let Expr::Attribute(attribute) = expr else {
        return;
    };
    let Expr::Name(receiver) = &*attribute.value else {
        return;
    };
    if !attribute.ctx.is_load() {
        return;
    }
    let Some(function) = checker.function() else {
        return;
    };
    let Some(read) =
        checker
            .model
            .property_read(function, receiver.id.as_str(), attribute.attr.as_str())
    else {
        return;
    };
    let violation = HostTransfer {
        call: format!("{}.{}", receiver.id, attribute.attr),
        property: Some((read.property.clone(), read.code)),
    };
    checker.report(violation, attribute.range());
}

/// GR103
fn host_transfer(checker: &mut Checker, call: &ast::ExprCall) {
    let Some((method, receiver)) = method_call(call) else {
        return;
    };
    let shown = match method {
        // `.numpy()` works only on host tensors (a device tensor raises): the sync, if any, was
        // the `.cpu()` before it.
        "cpu" if call.arguments.args.is_empty() => ".cpu()".to_string(),
        // `non_blocking=True` copies into pinned memory PyTorch allocates, without waiting.
        "to" if is_cpu_move(call) && !non_blocking(call) => ".to(\"cpu\")".to_string(),
        // `torch.BoolTensor` and the other legacy types name host memory.
        "type" if call.arguments.args.len() == 1 => {
            let target = &call.arguments.args[0];
            let qualified = checker.model.qualified_name(target);
            if !is_legacy_host_type(qualified.as_deref(), target) {
                return;
            }
            format!(
                ".type({})",
                qualified.as_deref().unwrap_or("'torch.*Tensor'")
            )
        }
        _ => return,
    };
    if checker.model.qualified_name(receiver).is_some() {
        return;
    }
    match checker.ty(receiver) {
        Ty::Tensor => {}
        Ty::Unknown if !host_named(receiver) => {}
        _ => return,
    }
    checker.report(
        HostTransfer {
            call: shown,
            property: None,
        },
        call.range(),
    );
}
