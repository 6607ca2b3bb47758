use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, builtin_call, maybe_device_tensor, method_call};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for host scalars that change from call to call
    /// written into device tensors: `buf[0] = token_id`, `offsets[g] = count * padded_rows` with
    /// `count` read from the device, `buf.fill_(step)` and `torch.full(shape, step, ...)`.
    ///
    /// A value changes from call to call when it was read from the device (`.item()`,
    /// `.tolist()`, `int(t)`), or is a parameter named like a step, token, position or seed.
    /// Values from shapes and other host-known integers stay the same within one captured bucket
    /// and are not reported.
    ///
    /// ## Why is this bad?
    /// The write becomes a fill kernel whose value is a kernel argument, frozen when the graph is
    /// captured. Every replay writes the capture-time value again: no error, silently wrong
    /// results. The graph-safe forms: write the per-step values into a pinned host buffer and
    /// `copy_` it into the device buffer, or compute them with device arithmetic
    /// (`expert_offsets = group_ids * padded_rows`).
    ///
    /// ## Example
    /// ```python
    /// def decode_step(self, token_id: int):
    ///     self.token_buf[0] = token_id
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # outside the graph, before replay: self.token_pinned[0] = token_id
    /// def decode_step(self):
    ///     self.token_buf.copy_(self.token_pinned, non_blocking=True)
    /// ```
    pub struct HostScalarWrittenToDevice {
        form: &'static str,
    }
}

impl Violation for HostScalarWrittenToDevice {
    const CODE: &'static str = "GR303";
    const NAME: &'static str = "host-scalar-written-to-device";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&["fill_", "full"]);

    fn message(&self) -> String {
        format!(
            "{} bakes a per-call host value into the graph; replay reuses the captured value",
            self.form
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Copy the value from a pinned host buffer (`buf.copy_(pinned, non_blocking=True)`) \
             or compute it on the device"
                .to_string(),
        )
    }
}

impl Check for HostScalarWrittenToDevice {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        fill_call(checker, call);
    }

    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        track_device_reads(checker, stmt);
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    subscript_store(checker, target, &assign.value);
                }
            }
            Stmt::AugAssign(assign) => subscript_store(checker, &assign.target, &assign.value),
            _ => {}
        }
    }
}

/// Whether a parameter's name says it changes every call: the step, the next or current token
/// or position, a seed. Configuration constants (`pad_token_id`, `decoder_start_token_id`) and
/// sizes do not.
fn step_named(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let per_call = [
        "step",
        "timestep",
        "token",
        "token_id",
        "tid",
        "pos",
        "position",
        "seed",
        "iteration",
    ];
    per_call.contains(&lower.as_str())
        || ["next_", "cur_", "current_", "new_"]
            .iter()
            .any(|prefix| lower.starts_with(prefix) && !lower.contains("num"))
        || lower.ends_with("_step")
}

/// Whether a host expression's value changes from call to call.
fn varies_per_call(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::Name(name) => {
            let id = name.id.as_str();
            checker.rule_state.host_data.device_reads.contains(id)
                || (checker.model.is_parameter(id)
                    && checker.ty(expr) == Ty::Host
                    && step_named(id))
        }
        Expr::Call(call) => {
            if let Some(("item" | "tolist", receiver)) = method_call(call) {
                return call.arguments.is_empty() && maybe_device_tensor(checker, receiver);
            }
            matches!(&*call.func, Expr::Name(n) if matches!(n.id.as_str(), "int" | "float"))
                && builtin_call(checker, call).is_some()
                && call
                    .arguments
                    .args
                    .first()
                    .is_some_and(|arg| checker.ty(arg) == Ty::Tensor)
        }
        Expr::Subscript(subscript) => varies_per_call(checker, &subscript.value),
        Expr::BinOp(binop) => {
            varies_per_call(checker, &binop.left) || varies_per_call(checker, &binop.right)
        }
        Expr::UnaryOp(unary) => varies_per_call(checker, &unary.operand),
        _ => false,
    }
}

/// Remembers names holding host copies of device values, through assignments, `+=` and loops.
fn track_device_reads<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    if let Stmt::For(ast::StmtFor { body, .. }) | Stmt::While(ast::StmtWhile { body, .. }) = stmt {
        // A running total bumped later in the body varies from its first use in the next
        // iteration: `offsets[g] = running * rows; running += counts[g]`.
        for stmt in body {
            if let Stmt::AugAssign(ast::StmtAugAssign { target, value, .. }) = stmt {
                if let Expr::Name(name) = &**target {
                    if varies_per_call(checker, value) {
                        checker
                            .rule_state
                            .host_data
                            .device_reads
                            .insert(name.id.as_str());
                    }
                }
            }
        }
    }
    let (target, varies) = match stmt {
        Stmt::Assign(ast::StmtAssign { targets, value, .. }) => match targets.as_slice() {
            [Expr::Name(name)] => (name, varies_per_call(checker, value)),
            _ => return,
        },
        Stmt::AugAssign(ast::StmtAugAssign { target, value, .. }) => match &**target {
            Expr::Name(name) => {
                let id = name.id.as_str();
                let varies = checker.rule_state.host_data.device_reads.contains(id)
                    || varies_per_call(checker, value);
                (name, varies)
            }
            _ => return,
        },
        Stmt::For(ast::StmtFor { target, iter, .. }) => match &**target {
            Expr::Name(name) => (name, varies_per_call(checker, iter)),
            _ => return,
        },
        _ => return,
    };
    let reads = &mut checker.rule_state.host_data.device_reads;
    if varies {
        reads.insert(target.id.as_str());
    } else if !reads.is_empty() {
        reads.remove(target.id.as_str());
    }
}

/// `device_tensor[i] = value` and `device_tensor[i] += value`.
fn subscript_store(checker: &mut Checker, target: &Expr, value: &Expr) {
    let Expr::Subscript(subscript) = target else {
        return;
    };
    if checker.ty(&subscript.value) != Ty::Tensor || checker.ty(value) == Ty::Tensor {
        return;
    }
    if varies_per_call(checker, value) {
        checker.report(
            HostScalarWrittenToDevice {
                form: "writing a host scalar into a device tensor",
            },
            TextRange::new(target.start(), value.end()),
        );
    }
}

/// `buf.fill_(value)` and `torch.full(shape, value, ...)`.
fn fill_call(checker: &mut Checker, call: &ast::ExprCall) {
    let (form, value) = if crate::rules::callee(checker, call).as_deref() == Some("torch.full") {
        let on_device = crate::semantic::keyword(call, "device")
            .is_some_and(|device| crate::rules::is_device_target(checker, device));
        if !on_device {
            return;
        }
        (
            "`torch.full` with a host fill value",
            argument(call, 1, "fill_value"),
        )
    } else {
        match method_call(call) {
            Some(("fill_", receiver)) if checker.ty(receiver) == Ty::Tensor => {
                ("`fill_` with a host value", argument(call, 0, "value"))
            }
            _ => return,
        }
    };
    let Some(value) = value else {
        return;
    };
    if checker.ty(value) != Ty::Tensor && varies_per_call(checker, value) {
        checker.report(HostScalarWrittenToDevice { form }, call.range());
    }
}
