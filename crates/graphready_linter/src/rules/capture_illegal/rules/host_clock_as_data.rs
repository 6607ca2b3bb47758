use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{assigned_name, builtin_call, method_call};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for host clock readings (`time.time()`,
    /// `time.perf_counter()`, `time.monotonic()` and their `_ns` forms) used as tensor data:
    /// passed to a `torch` function or a tensor method, or combined with a tensor.
    ///
    /// ## Why is this bad?
    /// The reading becomes a constant of the captured graph. Every replay uses the time seen at
    /// capture, so timestamps, time-based seeds and decays silently stop changing. Timing the
    /// step on the host for logging is not reported.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     t = time.time()
    ///     return x * torch.exp(-self.decay * (t - self.start))
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # outside the graph, before replay
    /// self.now_pinned[0] = time.time()
    /// # inside the step
    /// now = self.now.copy_(self.now_pinned, non_blocking=True)
    /// ```
    pub struct HostClockAsData {}
}

impl Violation for HostClockAsData {
    const CODE: &'static str = "GR506";
    const NAME: &'static str = "host-clock-as-data";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::Any;

    fn message(&self) -> String {
        "a host clock reading is used as tensor data; replay reuses the captured time".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Copy the time into a device buffer from a pinned buffer before each replay"
                .to_string(),
        )
    }
}

impl Check for HostClockAsData {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        // Cheap syntactic test first: most calls receive no clock reading.
        if checker.rule_state.capture_illegal.clock_names.is_empty()
            && !call.arguments.args.iter().any(may_read_clock)
            && !call
                .arguments
                .keywords
                .iter()
                .any(|keyword| may_read_clock(&keyword.value))
        {
            return;
        }
        self::call(checker, call);
    }

    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        if let Expr::BinOp(binop) = expr {
            if !checker.rule_state.capture_illegal.clock_names.is_empty()
                || may_read_clock(&binop.left)
                || may_read_clock(&binop.right)
            {
                self::binop(checker, binop);
            }
        }
    }

    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        track_clock_names(checker, stmt);
    }
}

/// The host clocks, by qualified name (also read by GR107, for the waits that time GPU work).
pub(crate) const CLOCKS: &[&str] = &[
    "time.time",
    "time.perf_counter",
    "time.monotonic",
    "time.time_ns",
    "time.perf_counter_ns",
    "time.monotonic_ns",
];

fn is_clock(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::Call(call) => {
            if crate::rules::callee(checker, call)
                .is_some_and(|qualified| CLOCKS.contains(&&*qualified))
            {
                return true;
            }
            matches!(builtin_call(checker, call), Some("int" | "float" | "round"))
                && call
                    .arguments
                    .args
                    .first()
                    .is_some_and(|arg| is_clock(checker, arg))
        }
        Expr::Name(name) => checker
            .rule_state
            .capture_illegal
            .clock_names
            .contains(name.id.as_str()),
        Expr::BinOp(binop) => is_clock(checker, &binop.left) || is_clock(checker, &binop.right),
        Expr::UnaryOp(unary) => is_clock(checker, &unary.operand),
        _ => false,
    }
}

/// Remembers names bound to clock readings.
fn track_clock_names<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    let Some((name, value)) = assigned_name(stmt) else {
        return;
    };
    let names = &checker.rule_state.capture_illegal.clock_names;
    // Cheap syntactic test first: most assignments read no clock.
    if (names.is_empty() && !may_read_clock(value)) || !is_clock(checker, value) {
        if !names.is_empty() {
            checker.rule_state.capture_illegal.clock_names.remove(name);
        }
        return;
    }
    checker.rule_state.capture_illegal.clock_names.insert(name);
}

/// `torch.tensor(time.time(), ...)`, `x.fill_(t)`.
fn call(checker: &mut Checker, call: &ast::ExprCall) {
    let tensor_call = match crate::rules::callee(checker, call) {
        Some(qualified) => qualified.starts_with("torch.") && !qualified.starts_with("torch.cuda."),
        None => {
            matches!(method_call(call), Some((_, receiver)) if checker.ty(receiver) == Ty::Tensor)
        }
    };
    if !tensor_call {
        return;
    }
    let clock = call
        .arguments
        .args
        .iter()
        .chain(call.arguments.keywords.iter().map(|keyword| &keyword.value))
        .find(|arg| is_clock(checker, arg))
        .map(Ranged::range);
    if let Some(range) = clock {
        checker.report(HostClockAsData {}, range);
    }
}

/// `x * (now - start)` with `now` a clock reading.
fn binop(checker: &mut Checker, binop: &ast::ExprBinOp) {
    let (left, right) = (&*binop.left, &*binop.right);
    let clock = if checker.ty(left) == Ty::Tensor && is_clock(checker, right) {
        right
    } else if checker.ty(right) == Ty::Tensor && is_clock(checker, left) {
        left
    } else {
        return;
    };
    checker.report(HostClockAsData {}, clock.range());
}

/// A cheap over-approximation of a clock reading: a call of a clock-named function, or
/// arithmetic on one.
fn may_read_clock(expr: &Expr) -> bool {
    match expr {
        Expr::Call(call) => {
            let clock_named = |name: &str| {
                CLOCKS
                    .iter()
                    .any(|clock| clock.rsplit('.').next() == Some(name))
            };
            match &*call.func {
                Expr::Attribute(attribute) => clock_named(attribute.attr.id.as_str()),
                Expr::Name(name) => {
                    clock_named(name.id.as_str())
                        || call.arguments.args.first().is_some_and(may_read_clock)
                }
                _ => false,
            }
        }
        Expr::BinOp(binop) => may_read_clock(&binop.left) || may_read_clock(&binop.right),
        Expr::UnaryOp(unary) => may_read_clock(&unary.operand),
        _ => false,
    }
}
