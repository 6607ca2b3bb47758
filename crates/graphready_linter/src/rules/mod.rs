//! The rules, one family per module and one rule per file.

pub mod allocation;
pub mod capture_illegal;
#[cfg(test)]
mod cross_module_tests;
pub mod dynamic_shape;
pub mod host_data;
pub mod op_tags;
pub mod sync;

use crate::checker::Checker;
use crate::registry;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

/// What the rules remember about the function being visited. The checker starts a fresh one for
/// every function and restores the enclosing function's afterwards. Facts every family reads
/// live here; each family keeps its own state in its module.
#[derive(Debug, Default)]
pub struct FunctionState<'a> {
    /// Bodies of the loops seen so far: a write inside one may cover a whole buffer.
    pub loops: Vec<TextRange>,
    /// Values assigned to `self.<attribute>`: caches and lazily built state, computed once.
    pub self_assigned: Vec<TextRange>,
    /// The callee's qualified name of the call being dispatched, resolved once for all rules.
    callee: Option<(TextRange, Option<std::rc::Rc<str>>)>,
    /// What the function's returns are, for learning the helpers that return a capture flag.
    returns: Returns,
    pub sync: sync::State<'a>,
    pub dynamic_shape: dynamic_shape::State<'a>,
    pub host_data: host_data::State<'a>,
    pub allocation: allocation::State<'a>,
    pub capture_illegal: capture_illegal::State<'a>,
}

/// What the rules learn about a module's functions while walking it (callees are visited before
/// their callers), for the calls of those functions.
#[derive(Debug, Default)]
pub struct ModuleFacts {
    /// GR303: ranks of tensors stored on `self` (`Class.attribute`), from the allocations that
    /// store them; `None` where two allocations disagree.
    pub attribute_ranks: rustc_hash::FxHashMap<String, Option<usize>>,
}

/// What a function's `return` statements give, as far as capture flags go.
#[derive(Debug, Default, Clone, Copy)]
struct Returns {
    /// A return of a capture flag was seen.
    flag: bool,
    /// A return of something else than a flag or `False` / `None` was seen.
    other: bool,
}

impl FunctionState<'_> {
    /// Whether a node lies inside a loop body of this function.
    pub fn in_loop(&self, range: TextRange) -> bool {
        self.loops.iter().any(|body| body.contains_range(range))
    }

    /// Whether a node is (part of) a value assigned to an attribute of `self`.
    pub fn assigned_to_self(&self, range: TextRange) -> bool {
        self.self_assigned
            .iter()
            .any(|value| value.contains_range(range))
    }
}

/// Every expression, after its children: calls go to the rules that judge them (see
/// [`crate::violation::Calls`]), everything else to every rule's expression hook.
pub fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
    let Expr::Call(call) = expr else {
        registry::expression_hooks(checker, expr);
        return;
    };
    let rules = registry::rules_for_call(call);
    if rules.is_empty() {
        return;
    }
    let qualified = checker.model.qualified_name(&call.func);
    checker.rule_state.callee = Some((call.func.range(), qualified));
    for rule in rules.iter() {
        rule.check_call(checker, call);
    }
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
    if let Stmt::Return(ret) = stmt {
        record_return(checker, ret.value.as_deref());
    }
    registry::statement_hooks(checker, stmt);
}

/// A test whose truth value Python takes: `if`, `elif`, `while`, `assert`, comprehension
/// conditions and conditional expressions.
pub fn truth_test<'a>(checker: &mut Checker<'a>, test: &'a Expr) {
    registry::truth_test_hooks(checker, test);
}

/// A function whose body the run does not visit (see [`crate::violation::Check::skipped_function`]).
pub fn skipped_function<'a>(
    checker: &mut Checker<'a>,
    function: &'a ast::StmtFunctionDef,
    qualname: &str,
) {
    registry::skipped_function_hooks(checker, function, qualname);
}

/// After a function's body was visited, with the function's bindings still in scope.
pub fn function_exit(checker: &mut Checker) {
    let returns = checker.rule_state.returns;
    if returns.flag && !returns.other {
        if let Some(function) = checker.function().map(str::to_string) {
            checker.model.learn_predicate(&function);
        }
    }
    registry::function_exit_hooks(checker);
}

/// A `return`: a helper whose returns are all capture flags (an `except` branch may return
/// `False`: nothing is captured when the check itself fails) guards like the flag it returns.
fn record_return(checker: &mut Checker, value: Option<&Expr>) {
    let returns = &mut checker.rule_state.returns;
    match value {
        None | Some(Expr::NoneLiteral(_)) => {}
        Some(Expr::BooleanLiteral(literal)) if !literal.value => {}
        Some(value) if checker.model.ty(value) == crate::semantic::Ty::CaptureFlag => {
            returns.flag = true;
        }
        Some(_) => returns.other = true,
    }
}

/// The qualified name of a call's callee (`torch.nonzero`), resolved once per call for every rule.
pub fn callee(checker: &Checker, call: &ast::ExprCall) -> Option<std::rc::Rc<str>> {
    match &checker.rule_state.callee {
        Some((range, qualified)) if *range == call.func.range() => qualified.clone(),
        _ => checker.model.qualified_name(&call.func),
    }
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
        // `x.device`, unless `x` is known or named to live on the host (`host_buf.device`).
        Expr::Attribute(attribute) if attribute.attr.id.as_str() == "device" => {
            !(host_named(&attribute.value) || checker.ty(&attribute.value).is_host_tensor())
        }
        Expr::Name(_) | Expr::Attribute(_) => {
            // A module's constant, or a device naming the host (`device = "cpu"`, a parameter
            // every per-step call passes `"cpu"`).
            if checker.model.qualified_name(expr).is_some() || checker.model.is_host_device(expr) {
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

/// Whether the value of a `device=` keyword names a device other than the host: what
/// [`is_device_target`] accepts, and any variable not named for the host (`device=dev`,
/// `device=self.target`): code passes a device explicitly to put the tensor there.
pub fn is_device_keyword(checker: &Checker, expr: &Expr) -> bool {
    if is_device_target(checker, expr) {
        return true;
    }
    let name = match expr {
        Expr::Name(name) => name.id.as_str(),
        // `x.device` is judged by what `x` is.
        Expr::Attribute(attribute) if attribute.attr.id.as_str() != "device" => {
            attribute.attr.id.as_str()
        }
        _ => return false,
    };
    checker.model.qualified_name(expr).is_none()
        && !checker.model.is_host_device(expr)
        && !checker.ty(expr).is_host_tensor()
        && !name.to_ascii_lowercase().contains("cpu")
        && !host_named(expr)
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
                    .is_some_and(|device| is_device_keyword(checker, device))
        }
        _ => false,
    }
}

/// Whether a call passes `non_blocking=True`.
pub fn non_blocking(call: &ast::ExprCall) -> bool {
    crate::semantic::keyword_true(call, "non_blocking")
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
/// [`crate::semantic::expr_host_named`]).
pub fn host_named(expr: &Expr) -> bool {
    crate::semantic::expr_host_named(expr)
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
