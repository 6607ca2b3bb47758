//! The rules, one family per module and one rule per file.

pub mod allocation;
pub mod capture_illegal;
pub mod dynamic_shape;
pub mod host_data;
pub mod op_tags;
pub mod sync;

use crate::checker::Checker;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};
use rustc_hash::FxHashSet;

/// What the rules remember about the function being visited. The checker starts a fresh one for
/// every function and restores the enclosing function's afterwards.
#[derive(Debug, Default)]
pub struct FunctionState<'a> {
    /// Bodies of the loops seen so far: a write inside one may cover a whole buffer.
    pub loops: Vec<TextRange>,
    /// GR404: buffers allocated without initialisation, and what happened to them.
    pub buffers: Vec<allocation::rules::uninitialized_partial_write::Buffer<'a>>,
    /// GR205: names bound to `<device tensor>.tolist()`.
    pub device_lists: FxHashSet<&'a str>,
    /// GR303: names holding host copies of device values (`.item()`, `.tolist()`, `int(t)`).
    pub device_reads: FxHashSet<&'a str>,
    /// GR506: names holding host clock readings.
    pub clock_names: FxHashSet<&'a str>,
    /// Values assigned to `self.<attribute>`: caches and lazily built state, computed once.
    pub self_assigned: Vec<TextRange>,
    /// GR304: `self.<attribute> += ...` in captured code, waiting for a read of the attribute.
    pub counters: Vec<(&'a str, TextRange)>,
    /// `self.<attribute>` reads in this function.
    pub self_reads: FxHashSet<&'a str>,
    /// Logging calls, and tests of blocks that only log: reads there are not data.
    pub logging: Vec<TextRange>,
    /// Bodies of `with gpu_sync_allowed():` blocks: syncs the author declared deliberate.
    pub sync_allowed: Vec<TextRange>,
    /// The callee's qualified name of the call being dispatched, resolved once for all rules.
    callee: Option<(TextRange, Option<std::rc::Rc<str>>)>,
}

impl FunctionState<'_> {
    /// Whether a node lies inside a loop body of this function.
    pub fn in_loop(&self, range: TextRange) -> bool {
        self.loops.iter().any(|body| body.contains_range(range))
    }

    /// Whether a node lies in a block whose author allowed synchronisation
    /// (`with gpu_sync_allowed():`, vLLM's marker for deliberate, eager-only syncs).
    pub fn in_sync_allowed(&self, range: TextRange) -> bool {
        self.sync_allowed
            .iter()
            .any(|body| body.contains_range(range))
    }

    /// Whether a node is (part of) a value assigned to an attribute of `self`.
    pub fn assigned_to_self(&self, range: TextRange) -> bool {
        self.self_assigned
            .iter()
            .any(|value| value.contains_range(range))
    }
}

/// Every expression, after its children: each family's expression rules.
pub fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
    sync::expression(checker, expr);
    if let Expr::Call(call) = expr {
        // Most calls are of nothing the call rules look at: skip them all at once.
        if !call_may_matter(checker, call) {
            return;
        }
        let qualified = checker.model.qualified_name(&call.func);
        checker.rule_state.callee = Some((call.func.range(), qualified));
    }
    dynamic_shape::expression(checker, expr);
    host_data::expression(checker, expr);
    allocation::expression(checker, expr);
    capture_illegal::expression(checker, expr);
}

/// Every statement, before its children and before its bindings take effect.
pub fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    if let Stmt::For(ast::StmtFor { body, .. }) | Stmt::While(ast::StmtWhile { body, .. }) = stmt {
        if let (Some(first), Some(last)) = (body.first(), body.last()) {
            let range = TextRange::new(first.start(), last.end());
            checker.rule_state.loops.push(range);
        }
    }
    if let Some(value) = self_assignment_value(checker, stmt) {
        checker.rule_state.self_assigned.push(value);
    }
    if let Stmt::With(with) = stmt {
        if with
            .items
            .iter()
            .any(|item| allows_sync(&item.context_expr))
        {
            if let (Some(first), Some(last)) = (with.body.first(), with.body.last()) {
                let body = TextRange::new(first.start(), last.end());
                checker.rule_state.sync_allowed.push(body);
            }
        }
    }
    dynamic_shape::statement(checker, stmt);
    host_data::statement(checker, stmt);
    allocation::statement(checker, stmt);
    capture_illegal::statement(checker, stmt);
}

/// After a function's body was visited, with the function's bindings still in scope: rules that
/// judge a whole function (state they gathered from [`statement`] and [`expression`]).
pub fn function_exit(checker: &mut Checker, _function: &ast::StmtFunctionDef) {
    host_data::rules::host_state_mutated_in_step::counters_read(checker);
}

/// Whether any rule of families 2 to 5 can report on this call: its callee's last name is one
/// they know, it passes `pin_memory=` or `generator=`, or it may receive a host clock reading.
fn call_may_matter(checker: &Checker, call: &ast::ExprCall) -> bool {
    let name = match &*call.func {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => "",
    };
    let known = matches!(
        name,
        // GR201-GR205
        "nonzero" | "argwhere" | "where" | "masked_select" | "unique" | "unique_consecutive"
            | "bincount" | "index_put" | "index_put_" | "repeat_interleave" | "one_hot"
            | "split" | "split_with_sizes"
            // GR301-GR303, GR402
            | "tensor" | "as_tensor" | "asarray" | "cuda" | "to" | "fill_" | "full"
            // GR401
            | "empty" | "zeros" | "ones" | "arange" | "empty_strided" | "rand" | "randn"
            | "randint" | "eye" | "linspace" | "empty_like" | "zeros_like" | "ones_like"
            | "full_like" | "new_empty" | "new_zeros" | "new_ones" | "new_full" | "clone"
            // GR501-GR503, GR507, GR508
            | "empty_cache" | "set_device" | "ipc_collect" | "pin_memory" | "manual_seed"
            | "seed" | "get_rng_state" | "set_rng_state" | "manual_seed_all" | "seed_all"
            | "get_rng_state_all" | "set_rng_state_all" | "barrier" | "monitored_barrier"
            | "all_gather_object" | "broadcast_object_list" | "gather_object"
            | "scatter_object_list" | "send_object_list" | "recv_object_list" | "elapsed_time"
    );
    known
        || call.arguments.keywords.iter().any(|keyword| {
            keyword
                .arg
                .as_ref()
                .is_some_and(|arg| matches!(arg.id.as_str(), "pin_memory" | "generator"))
        })
        || (!checker.rule_state.clock_names.is_empty()
            || call.arguments.args.iter().any(may_read_clock)
            || call
                .arguments
                .keywords
                .iter()
                .any(|keyword| may_read_clock(&keyword.value)))
}

/// A cheap over-approximation of GR506's clock readings: a call of a clock-named function, or
/// arithmetic on one.
pub fn may_read_clock(expr: &Expr) -> bool {
    match expr {
        Expr::Call(call) => {
            matches!(&*call.func, Expr::Attribute(a) if matches!(a.attr.id.as_str(),
                "time" | "perf_counter" | "monotonic" | "time_ns" | "perf_counter_ns"
                    | "monotonic_ns"))
                || matches!(&*call.func, Expr::Name(n) if matches!(n.id.as_str(),
                    "time" | "perf_counter" | "monotonic" | "time_ns" | "perf_counter_ns"
                        | "monotonic_ns"))
                || matches!(&*call.func, Expr::Name(_))
                    && call.arguments.args.first().is_some_and(may_read_clock)
        }
        Expr::BinOp(binop) => may_read_clock(&binop.left) || may_read_clock(&binop.right),
        Expr::UnaryOp(unary) => may_read_clock(&unary.operand),
        _ => false,
    }
}

/// The qualified name of a call's callee (`torch.nonzero`), resolved once per call for every rule.
pub fn callee(checker: &Checker, call: &ast::ExprCall) -> Option<std::rc::Rc<str>> {
    match &checker.rule_state.callee {
        Some((range, qualified)) if *range == call.func.range() => qualified.clone(),
        _ => checker.model.qualified_name(&call.func),
    }
}

/// `gpu_sync_allowed()` and similarly named context managers that declare a deliberate sync.
fn allows_sync(context: &Expr) -> bool {
    let Expr::Call(call) = context else {
        return false;
    };
    let name = match &*call.func {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    name.contains("sync_allowed") || name.contains("allow_sync")
}

/// The value of `self.<attribute> = value`.
fn self_assignment_value(checker: &Checker, stmt: &Stmt) -> Option<TextRange> {
    let self_name = checker.model.self_name()?;
    let (targets, value) = match stmt {
        Stmt::Assign(assign) => (assign.targets.as_slice(), &*assign.value),
        Stmt::AnnAssign(ast::StmtAnnAssign {
            target,
            value: Some(value),
            ..
        }) => (std::slice::from_ref(&**target), &**value),
        _ => return None,
    };
    targets
        .iter()
        .any(|target| {
            matches!(target, Expr::Attribute(attribute)
                if matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name))
        })
        .then(|| value.range())
}

/// The single name an assignment binds (`x = ...`), if that is what it is.
pub fn assigned_name(stmt: &Stmt) -> Option<(&str, &Expr)> {
    match stmt {
        Stmt::Assign(assign) => match assign.targets.as_slice() {
            [Expr::Name(name)] => Some((name.id.as_str(), &assign.value)),
            _ => None,
        },
        Stmt::AnnAssign(ast::StmtAnnAssign {
            target,
            value: Some(value),
            ..
        }) => match &**target {
            Expr::Name(name) => Some((name.id.as_str(), value)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether an expression names a device other than the host, as the target of `.to(...)`:
/// `"cuda"`, `"cuda:0"`, `x.device`, `device`, `self.device`, `torch.device("cuda")`, or a
/// tensor (whose device is taken). A dtype is not a device.
pub fn is_device_target(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::StringLiteral(literal) => literal.value.to_str().starts_with("cuda"),
        Expr::Attribute(attribute) if attribute.attr.id.as_str() == "device" => true,
        Expr::Name(_) | Expr::Attribute(_) => {
            if checker.model.qualified_name(expr).is_some() {
                return false;
            }
            let name = match expr {
                Expr::Name(name) => name.id.as_str(),
                Expr::Attribute(attribute) => attribute.attr.id.as_str(),
                _ => "",
            };
            (name.contains("device") && !name.contains("cpu")) || checker.is_tensor(expr)
        }
        Expr::Call(call) => {
            let qualified = checker.model.qualified_name(&call.func);
            match qualified.as_deref() {
                Some("torch.device") => call.arguments.args.first().is_some_and(|arg| {
                    matches!(arg, Expr::StringLiteral(s) if s.value.to_str().starts_with("cuda"))
                }),
                Some("torch.cuda.current_device") => true,
                _ => false,
            }
        }
        _ => false,
    }
}

/// The device a `.to(...)` / `.cuda()` call moves to, when it moves to the device.
pub fn moves_to_device(checker: &Checker, call: &ast::ExprCall) -> bool {
    match method_call(call) {
        Some(("cuda", _)) => true,
        Some(("to", _)) => {
            call.arguments
                .args
                .first()
                .is_some_and(|arg| is_device_target(checker, arg))
                || crate::semantic::keyword(call, "device")
                    .is_some_and(|device| is_device_target(checker, device))
        }
        _ => false,
    }
}

/// Whether a call passes `non_blocking=True`.
pub fn non_blocking(call: &ast::ExprCall) -> bool {
    crate::semantic::keyword(call, "non_blocking")
        .is_some_and(|value| matches!(value, Expr::BooleanLiteral(b) if b.value))
}

/// `receiver.method(...)`: the method name and the receiver, when the callee is an attribute.
pub fn method_call(call: &ast::ExprCall) -> Option<(&str, &Expr)> {
    match &*call.func {
        Expr::Attribute(attribute) => Some((attribute.attr.id.as_str(), &attribute.value)),
        _ => None,
    }
}

/// A call of a builtin by bare name (`print(...)`, `int(...)`), not shadowed by an import.
pub fn builtin_call<'e>(
    checker: &crate::checker::Checker,
    call: &'e ast::ExprCall,
) -> Option<&'e str> {
    match &*call.func {
        Expr::Name(name) if checker.model.qualified_name(&call.func).is_none() => {
            Some(name.id.as_str())
        }
        _ => None,
    }
}

/// Whether an expression's name says it lives on the host (see
/// [`crate::semantic::host_named`]).
pub fn host_named(expr: &Expr) -> bool {
    match expr {
        Expr::Name(name) => crate::semantic::host_named(name.id.as_str()),
        Expr::Attribute(attribute) => crate::semantic::host_named(attribute.attr.id.as_str()),
        Expr::Subscript(subscript) => host_named(&subscript.value),
        _ => false,
    }
}

/// Whether an expression may be a device tensor: known to be one, or of unknown type without a
/// host-mirror name and not a module attribute. For tensor-only method names, where an unknown
/// receiver is almost always a tensor.
pub fn maybe_device_tensor(checker: &Checker, expr: &Expr) -> bool {
    match checker.ty(expr) {
        crate::semantic::Ty::Tensor => true,
        crate::semantic::Ty::Unknown => {
            !host_named(expr) && checker.model.qualified_name(expr).is_none()
        }
        _ => false,
    }
}

/// The call's first positional argument, or the keyword argument `name`.
pub fn argument<'e>(call: &'e ast::ExprCall, position: usize, name: &str) -> Option<&'e Expr> {
    call.arguments
        .args
        .get(position)
        .or_else(|| crate::semantic::keyword(call, name))
}

/// Whether an expression is known to be a tensor that may live on the device, and is not named
/// like a host mirror (`grid_thw_cpu: torch.Tensor` is still a host tensor).
pub fn device_tensor(checker: &Checker, expr: &Expr) -> bool {
    checker.ty(expr) == crate::semantic::Ty::Tensor && !host_named(expr)
}
