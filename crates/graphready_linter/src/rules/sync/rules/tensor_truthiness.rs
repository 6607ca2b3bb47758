use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::builtin_call;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for the truth value of a device tensor being taken on the host: `if t:`,
    /// `elif`, `while`, `assert`, `not t`, `t and ...`, `t or ...`, `a if t else b`,
    /// comprehension conditions and `bool(t)` — including the common `(x >= 0).all()` and
    /// `mask.any()` — and a device value stored, inside a loop, in a flag that was a Python
    /// `bool` (`finished = False` ... `finished = (lengths >= max_len).all()`), which the loop
    /// then tests on the host.
    ///
    /// ## Why is this bad?
    /// Python needs a host `bool` to pick a branch, so the tensor is copied to the host and the
    /// stream drained. Inside a CUDA graph capture this fails (DeepGEMM issue #414:
    /// `pack_ue8m0_to_int`'s `assert (x_int >= 0).all()` broke SGLang's decode graph); outside
    /// it, every step stalls.
    /// A captured graph also cannot follow a data-dependent branch: it replays the branch taken
    /// during capture.
    ///
    /// ## Example
    /// ```python
    /// assert (scale >= 0).all(), "negative scale"
    /// if mask.any():
    ///     x = x.masked_fill(mask, 0.0)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// if not torch.cuda.is_current_stream_capturing():
    ///     assert (scale >= 0).all(), "negative scale"  # validation stays eager-only
    /// x = x.masked_fill(mask, 0.0)  # branch-free: a no-op where mask is False
    /// ```
    ///
    /// `torch.where(cond, a, b)` replaces a value-dependent branch. A check that must also run
    /// during capture can write a status word on the device (a count of bad values, say) that
    /// the host reads after replay. Do not reach for `torch._assert_async` inside captured code:
    /// a failing device assert poisons the CUDA context (error 719), and every later CUDA call in
    /// the process fails with it (DeepGEMM issue #414 weighs exactly this).
    pub struct TensorTruthiness {
        context: &'static str,
        flag: Option<String>,
    }
}

impl Violation for TensorTruthiness {
    const CODE: &'static str = "GR104";
    const NAME: &'static str = "tensor-truthiness";
    const CALLS: Calls = Calls::named(&["bool"]);

    fn message(&self) -> String {
        match &self.flag {
            Some(flag) => format!(
                "`{flag}` was a host `bool` and now holds a device tensor that the loop tests on \
                 the host, which synchronises the stream"
            ),
            None => format!(
                "{} reads a device tensor's truth value on the host, which synchronises the stream",
                self.context
            ),
        }
    }

    fn fix_title(&self) -> Option<String> {
        Some(match self.flag {
            Some(_) => "Keep the flag on the device and read it one step later from a pinned \
                        host copy (`flag_cpu.copy_(flag, non_blocking=True)`)"
                .to_string(),
            None => "Use `torch.where`/`masked_fill` instead of branching, and run validation \
                     eagerly under `if not torch.cuda.is_current_stream_capturing():` (or record \
                     a device status word that the host reads after replay)"
                .to_string(),
        })
    }
}

impl Check for TensorTruthiness {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        bool_call(checker, call);
    }

    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        match expr {
            Expr::BoolOp(bool_op) => self::bool_op(checker, bool_op),
            Expr::UnaryOp(unary) => not_op(checker, unary),
            Expr::If(if_expr) => test_position(checker, &if_expr.test),
            _ => {}
        }
    }

    fn truth_test<'a>(checker: &mut Checker<'a>, test: &'a Expr) {
        test_position(checker, test);
    }

    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        host_flag(checker, stmt);
    }
}

/// `flag = False` ... `flag = (x == eos).all()` inside a loop: the flag was a host bool, and the
/// loop's test takes the device value's truth on the next iteration.
fn host_flag<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    let Some((name, value)) = crate::rules::assigned_name(stmt) else {
        return;
    };
    if matches!(value, Expr::BooleanLiteral(_)) {
        checker.rule_state.sync.host_flags.insert(name);
        return;
    }
    if !checker.rule_state.sync.host_flags.contains(name) {
        return;
    }
    checker.rule_state.sync.host_flags.remove(name);
    if !checker.rule_state.in_loop(stmt.range()) || !is_device_truth(checker, value) {
        return;
    }
    checker.report(
        TensorTruthiness {
            context: "a host flag",
            flag: Some(name.to_string()),
        },
        value.range(),
    );
}

/// A device tensor that stands for a truth value: a comparison, a mask, `.all()` / `.any()`.
fn is_device_truth(checker: &Checker, value: &Expr) -> bool {
    if !checker.is_tensor(value) {
        return false;
    }
    match value {
        Expr::Compare(_) => true,
        Expr::Call(call) => {
            checker.model.is_bool_tensor(value)
                || matches!(crate::rules::method_call(call), Some(("all" | "any", _)))
        }
        _ => checker.model.is_bool_tensor(value),
    }
}

fn report(checker: &mut Checker, expr: &Expr, context: &'static str) {
    if checker.is_tensor(expr) {
        checker.report(
            TensorTruthiness {
                context,
                flag: None,
            },
            expr.range(),
        );
    }
}

/// The test of `if`/`while`/`assert`/conditional expression/comprehension condition.
///
/// `and`/`or`/`not` are handled where they stand (see [`bool_op`] and [`not_op`]), except for the
/// last operand of a boolean operation, whose truth value only a test position takes.
fn test_position(checker: &mut Checker, test: &Expr) {
    match test {
        Expr::BoolOp(bool_op) => {
            let Some((last, earlier)) = bool_op.values.split_last() else {
                return;
            };
            if !earlier
                .iter()
                .any(|operand| guards_rest(checker, bool_op.op, operand))
            {
                test_position(checker, last);
            }
        }
        Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Not,
            ..
        }) => {}
        Expr::Named(named) => test_position(checker, &named.value),
        _ => report(checker, test, "a condition"),
    }
}

/// `a and b` / `a or b`: every operand but the last is truth-tested.
fn bool_op(checker: &mut Checker, bool_op: &ast::ExprBoolOp) {
    let context = match bool_op.op {
        ast::BoolOp::And => "`and`",
        ast::BoolOp::Or => "`or`",
    };
    let Some((_, operands)) = bool_op.values.split_last() else {
        return;
    };
    for operand in operands {
        match operand {
            Expr::BoolOp(_) | Expr::UnaryOp(_) => test_position(checker, operand),
            _ => report(checker, operand, context),
        }
        // Operands after a guard (`not torch.compiler.is_compiling() and ...`) are guarded.
        if guards_rest(checker, bool_op.op, operand) {
            break;
        }
    }
}

fn guards_rest(checker: &Checker, op: ast::BoolOp, operand: &Expr) -> bool {
    crate::checker::guards::guards_rest(&checker.model, checker.settings, op, operand)
}

/// `not t`.
fn not_op(checker: &mut Checker, unary: &ast::ExprUnaryOp) {
    if !matches!(unary.op, ast::UnaryOp::Not) {
        return;
    }
    match &*unary.operand {
        Expr::BoolOp(_) | Expr::UnaryOp(_) => test_position(checker, &unary.operand),
        operand => report(checker, operand, "`not`"),
    }
}

/// `bool(t)`.
fn bool_call(checker: &mut Checker, call: &ast::ExprCall) {
    if builtin_call(checker, call) != Some("bool") || call.arguments.args.len() != 1 {
        return;
    }
    let argument = &call.arguments.args[0];
    if checker.is_tensor(argument) {
        checker.report(
            TensorTruthiness {
                context: "`bool()`",
                flag: None,
            },
            call.range(),
        );
    }
}
