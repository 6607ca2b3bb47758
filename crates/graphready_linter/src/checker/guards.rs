//! Guards: conditions under which code cannot be running inside a captured region.
//!
//! `safe_when(test, negated)` answers: if `test` evaluates to `!negated`, is the code that runs
//! then outside capture? It understands `not`, `and`, `or` (De Morgan included), capture flags
//! (`torch.cuda.is_current_stream_capturing()` and configured equivalents,
//! `torch.compiler.is_compiling()`, helpers that return them, names bound to them: see
//! `semantic::predicates`), `x.is_cuda` (a CPU tensor never syncs a device), a module's
//! `self.training` (inference, captured or not, runs in eval mode: SpecAugment masking and
//! dropout seeds under `if self.training:` never run there), debug switches (a flag or
//! environment variable that says `debug`), training labels (`if labels is not None:`: the
//! loss, which inference never asks for), platform tests for devices without CUDA graphs
//! (`current_platform.is_xpu()`, `_is_npu`), the device fallback for a missing host mirror
//! (`if seq_lens_cpu is None:`) and the configured debug guards.

use crate::semantic::{SemanticModel, Ty};
use crate::settings::Settings;
use crate::util::{last_segment, NO_CUDA_GRAPH_DEVICES};
use ruff_python_ast::comparable::ComparableExpr;
use ruff_python_ast::{self as ast, Expr};

mod lazy;

pub use lazy::{is_converging, is_lazy_early_return, is_lazy_init};

/// A warning or an error being reported: `logger.warning(...)`, `logger.error(...)`,
/// `logger.exception(...)`, `logger.critical(...)`, `logger.warning_once(...)` or
/// `warnings.warn(...)`. Its arguments are formatted when something unusual happened (a metadata
/// mismatch before a fallback, a tracing switch), not in the step every call makes, so what they
/// read on the host is not reported. Debug and info logging stays checked: their arguments are
/// evaluated on every call, whatever the level.
pub fn reports_anomaly(model: &SemanticModel, call: &ast::ExprCall) -> bool {
    let Expr::Attribute(attribute) = &*call.func else {
        return false;
    };
    let method = attribute.attr.as_str();
    if method == "warn" && model.qualified_name(&call.func).as_deref() == Some("warnings.warn") {
        return true;
    }
    matches!(
        method,
        "warning" | "warn" | "error" | "exception" | "critical" | "fatal" | "warning_once"
    ) && is_logger(model, &attribute.value)
}

/// Whether an expression is a logger: the `logging` module, or a name or attribute that says so
/// (`logger`, `self._logger`, `log`).
pub fn is_logger(model: &SemanticModel, receiver: &Expr) -> bool {
    if let Some(qualified) = model.qualified_name(receiver) {
        return &*qualified == "logging";
    }
    let name = match receiver {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    let lower = name.to_ascii_lowercase();
    lower == "log" || lower.ends_with("logger") || lower == "_log"
}

/// Whether the code under `test` is off under the defaults (see
/// [`SemanticModel::off_by_default`]), a configured debug guard included.
pub fn off_by_default(model: &SemanticModel, settings: &Settings, test: &Expr) -> bool {
    model.off_by_default(test, &|term| {
        settings
            .debug_guards
            .iter()
            .any(|guard| guard.matches(term))
    })
}

pub fn safe_when(model: &SemanticModel, settings: &Settings, test: &Expr, negated: bool) -> bool {
    if !negated
        && settings
            .debug_guards
            .iter()
            .any(|guard| guard.matches(test))
    {
        return true;
    }
    match test {
        Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Not,
            operand,
            ..
        }) => safe_when(model, settings, operand, !negated),
        // `not (_is_cuda or _is_hip)`: true on no GPU whose graphs the engine captures.
        Expr::BoolOp(ast::ExprBoolOp {
            op: ast::BoolOp::Or,
            values,
            ..
        }) if negated && graph_gpus(values, model.platforms()) => true,
        Expr::BoolOp(ast::ExprBoolOp { op, values, .. }) => {
            // `a and b` true: both hold, so either being safe is enough. `not (a and b)`: one of
            // them is false, so each negation must be safe. `or` is the mirror image.
            let conjunctive = matches!(op, ast::BoolOp::And) != negated;
            if conjunctive {
                values
                    .iter()
                    .any(|v| safe_when(model, settings, v, negated))
            } else {
                values
                    .iter()
                    .all(|v| safe_when(model, settings, v, negated))
            }
        }
        // `if self.debug_mode:`, `if envs.SGLANG_DEBUG_MEMORY_POOL.get():`: checks a user turns
        // on to debug, off in serving.
        test if !negated && crate::util::is_debug_switch(test) => true,
        // `if envs.SGLANG_TRACE_LOGITS_E2E_SYNC.get():`, `if envs.VLLM_X:` with the flag declared
        // off by default: code for those who turn it on, off the serving path as shipped.
        test if !negated && model.is_off_flag(test) => true,
        // `if current_platform.is_xpu():`, `if _is_npu:`: code for a device without CUDA graphs.
        test if !negated && crate::util::is_other_platform(test, model.platforms()) => true,
        // `if not current_platform.is_cuda_alike():` likewise.
        test if negated && graph_gpus(std::slice::from_ref(test), model.platforms()) => true,
        // `if not torch.cuda.is_available():`: no accelerator, no graph. Code after `if
        // torch.cuda.is_available() and is_capturing(): raise ...` runs when either is false.
        Expr::Call(call)
            if negated
                && call.arguments.is_empty()
                && model.is(&call.func, "torch.cuda.is_available") =>
        {
            true
        }
        // `if not is_pin_memory_available(device): return t.to("cpu")`: a fallback for hosts
        // that cannot pin memory (confidential computing, WSL); a GPU server pins.
        Expr::Call(call)
            if negated
                && crate::util::last_segment(&call.func).is_some_and(|name| {
                    name.trim_start_matches('_') == "is_pin_memory_available"
                }) =>
        {
            true
        }
        // `any_visual` set to `False` where the code captures: `if any_visual:` runs outside.
        Expr::Name(name) if !negated && model.is_false_while_capturing(name.id.as_str()) => true,
        Expr::Attribute(attribute) if attribute.attr.id.as_str() == "is_cuda" => negated,
        Expr::Attribute(attribute)
            if attribute.attr.id.as_str() == "training"
                && matches!(&*attribute.value, Expr::Name(name)
                    if model.self_name() == Some(name.id.as_str())) =>
        {
            !negated
        }
        // `if labels is not None:`: the training loss, which inference never asks for.
        Expr::Compare(_) if training_labels(model, test, negated) => true,
        // `if cg is None:` with `cg = buffers if capturing else None`.
        Expr::Compare(_) if model.tests_capture_only_none(test, negated) => true,
        // `x.device.type == "cuda"` (or `device.type in {"cpu", "cuda"}`) is false only for
        // host tensors and devices without CUDA graphs; `!=` and `not in` are true only there.
        Expr::Compare(compare)
            if compare.ops.len() == 1
                && is_device_type(&compare.left)
                && names_cuda(&compare.comparators[0])
                && match compare.ops[0] {
                    ast::CmpOp::Eq | ast::CmpOp::In => negated,
                    ast::CmpOp::NotEq | ast::CmpOp::NotIn => !negated,
                    _ => false,
                } =>
        {
            true
        }
        // `x.device.type == "cpu"` (host data), or a device without CUDA graphs (`"mps"`,
        // `"xpu"`, ...).
        Expr::Compare(compare) if !negated => {
            compare.ops.len() == 1
                && matches!(compare.ops[0], ast::CmpOp::Eq)
                && is_device_type(&compare.left)
                && matches!(&compare.comparators[0], Expr::StringLiteral(s)
                    if matches!(s.value.to_str(), "cpu" | "meta")
                        || NO_CUDA_GRAPH_DEVICES.contains(&s.value.to_str()))
        }
        // `if isinstance(sizes, torch.Tensor):` where `sizes` holds a host value that is no
        // tensor (a list every reached call passes): the body never runs.
        Expr::Call(_) if !negated => never_a_tensor(model, test),
        // A capture flag is false only outside capture: `if not is_tracing(x):`, `if not flag:`.
        // A name that is false while capturing (see `Checker::visit_if`).
        Expr::Name(name) if !negated => model.is_false_while_capturing(name.id.as_str()),
        _ => negated && model.ty(test) == Ty::CaptureFlag,
    }
}

/// Whether `test`, evaluated to `!negated`, says that the function was given training labels:
/// `labels is not None` (or `labels is None` negated) of a parameter named `labels` or
/// `*_labels`. Hugging Face models take the targets of the training loss this way, and compute
/// the loss only when given them; generation and serving never pass them.
fn training_labels(model: &SemanticModel, test: &Expr, negated: bool) -> bool {
    let Some((name, is_none)) = crate::semantic::none_comparison(test) else {
        return false;
    };
    is_none == negated
        && (name == "labels" || name.ends_with("_labels"))
        && model.is_parameter(name)
}

/// Whether `test` is `isinstance(name, torch.Tensor)` (or `torch.nn.Parameter`) of a name that
/// holds a host value which is no tensor: a number, a list, an array.
fn never_a_tensor(model: &SemanticModel, test: &Expr) -> bool {
    let Expr::Call(call) = test else {
        return false;
    };
    let (Expr::Name(function), [subject @ Expr::Name(_), class], []) = (
        &*call.func,
        &*call.arguments.args,
        &*call.arguments.keywords,
    ) else {
        return false;
    };
    function.id.as_str() == "isinstance"
        && model.is_tensor_class(class)
        && matches!(
            model.ty(subject),
            Ty::Host | Ty::HostList | Ty::HostLists | Ty::Array
        )
}

/// Whether the code that runs when `test` evaluates to `!negated` never runs while capturing
/// (or compiling): `else` of `if is_capturing():`, the body of `if not flag:`. What it binds is
/// not what captured code after the statement sees (`if capturing: skip = False else: skip =
/// lens.max() == 0`, then `if not skip:`).
pub fn outside_capture(model: &SemanticModel, test: &Expr, negated: bool) -> bool {
    capture_free(model, test, negated, false)
}

/// Whether a value assigned to a name is false whenever the code runs captured, as a test would
/// say (see [`outside_capture`]), where an `or` may also test another platform: `use_naive =
/// _is_xpu or (cg is None and small)` is false on a GPU whose graphs the engine captures.
pub fn false_while_capturing(model: &SemanticModel, value: &Expr) -> bool {
    capture_free(model, value, false, true)
}

/// [`outside_capture`], with `platforms` letting a test of another platform stand for false in
/// an `or`.
fn capture_free(model: &SemanticModel, test: &Expr, negated: bool, platforms: bool) -> bool {
    match test {
        Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Not,
            operand,
            ..
        }) => capture_free(model, operand, !negated, platforms),
        Expr::BoolOp(ast::ExprBoolOp { op, values, .. }) => {
            let conjunctive = matches!(op, ast::BoolOp::And) != negated;
            if conjunctive {
                values
                    .iter()
                    .any(|v| capture_free(model, v, negated, platforms))
            } else {
                values.iter().all(|v| {
                    capture_free(model, v, negated, platforms)
                        || (platforms
                            && !negated
                            && crate::util::is_other_platform(v, model.platforms()))
                })
            }
        }
        // A name that is false while capturing (see `Checker::visit_if`).
        Expr::Name(name) if !negated => model.is_false_while_capturing(name.id.as_str()),
        // `if cg is None:` with `cg = buffers if capturing else None`.
        Expr::Compare(_) => model.tests_capture_only_none(test, negated),
        _ => negated && model.ty(test) == Ty::CaptureFlag,
    }
}

/// Whether the code that runs when `test` evaluates to `!negated` is the device fallback for a
/// missing host mirror, which the serving path fills: `if seq_lens_cpu is None:` (or the
/// `else` of `if cu_seqlens_host is not None`), where `code` does not make the mirror itself.
/// A body that fills it (`self._seq_lens_cpu = self.seq_lens.to("cpu")`) is the copy every
/// reader waits for, not a fallback.
pub fn mirror_fallback(test: &Expr, negated: bool, code: &[ast::Stmt]) -> bool {
    let Expr::Compare(compare) = test else {
        return false;
    };
    let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
        return false;
    };
    let missing = match op {
        ast::CmpOp::Is => !negated,
        ast::CmpOp::IsNot => negated,
        _ => false,
    };
    missing
        && right.is_none_literal_expr()
        && crate::semantic::expr_host_named(&compare.left)
        && !assigns(code, &compare.left)
}

/// Whether a block assigns `place` (a name or an attribute path), outside nested definitions.
fn assigns(code: &[ast::Stmt], place: &Expr) -> bool {
    code.iter().any(|stmt| match stmt {
        ast::Stmt::Assign(assign) => assign.targets.iter().any(|t| same_place(t, place)),
        ast::Stmt::AnnAssign(assign) => same_place(&assign.target, place),
        ast::Stmt::AugAssign(assign) => same_place(&assign.target, place),
        ast::Stmt::If(s) => {
            assigns(&s.body, place) || s.elif_else_clauses.iter().any(|c| assigns(&c.body, place))
        }
        ast::Stmt::For(s) => assigns(&s.body, place) || assigns(&s.orelse, place),
        ast::Stmt::While(s) => assigns(&s.body, place) || assigns(&s.orelse, place),
        ast::Stmt::With(s) => assigns(&s.body, place),
        ast::Stmt::Try(s) => assigns(&s.body, place) || assigns(&s.orelse, place),
        _ => false,
    })
}

/// Whether an assignment target is `place`, or unpacks into it (`a, self.x = ...`).
fn same_place(target: &Expr, place: &Expr) -> bool {
    match target {
        Expr::Tuple(tuple) => tuple.elts.iter().any(|e| same_place(e, place)),
        _ => ComparableExpr::from(target) == ComparableExpr::from(place),
    }
}

/// Whether a device type compared with names CUDA: `"cuda"`, or a literal collection holding it
/// (`{"cpu", "cuda"}`).
fn names_cuda(expr: &Expr) -> bool {
    let cuda = |e: &Expr| matches!(e, Expr::StringLiteral(s) if s.value.to_str() == "cuda");
    match expr {
        Expr::Set(ast::ExprSet { elts, .. })
        | Expr::Tuple(ast::ExprTuple { elts, .. })
        | Expr::List(ast::ExprList { elts, .. }) => elts.iter().any(cuda),
        other => cuda(other),
    }
}

/// Whether an expression reads a device's type: `x.device.type`, or `device.type` of a name
/// that says it holds a device (`device`, `target_device`).
fn is_device_type(expr: &Expr) -> bool {
    matches!(expr, Expr::Attribute(a) if a.attr.id.as_str() == "type"
    && match &*a.value {
        Expr::Attribute(d) => d.attr.id.as_str() == "device",
        Expr::Name(name) => name.id.as_str().ends_with("device"),
        _ => false,
    })
}

/// Whether an operand of `and`/`or` makes the operands after it safe: `a and b` evaluates `b`
/// only when `a` is true, `a or b` only when `a` is false.
pub fn guards_rest(
    model: &SemanticModel,
    settings: &Settings,
    op: ast::BoolOp,
    operand: &Expr,
) -> bool {
    safe_when(model, settings, operand, matches!(op, ast::BoolOp::Or))
}

/// Whether a `with` item opens code that never runs captured: an eager break
/// (`with force_no_graph():`) or a block whose author declared its syncs deliberate and
/// eager-only (vLLM's `with gpu_sync_allowed():`, and similarly named context managers), also
/// chosen by a condition (`with nullcontext() if on_host else gpu_sync_allowed():`: where the
/// other branch applies, the author says there is nothing to allow).
pub fn opens_eager_block(item: &ast::WithItem) -> bool {
    is_eager_context(&item.context_expr)
}

fn is_eager_context(expr: &Expr) -> bool {
    match expr {
        Expr::Call(call) => last_segment(&call.func).is_some_and(|n| {
            matches!(n, "force_no_graph" | "no_graph")
                || n.contains("sync_allowed")
                || n.contains("allow_sync")
        }),
        Expr::If(if_expr) => is_eager_context(&if_expr.body) || is_eager_context(&if_expr.orelse),
        _ => false,
    }
}

/// Whether a function is a device kernel written in Python (`@triton.jit`, `@triton.autotune`,
/// CUTLASS's `@cute.jit`, `@numba.cuda.jit`): its body runs on the GPU, where no value is read
/// back to the host, so host-side hazards do not apply.
pub fn is_device_kernel(model: &SemanticModel, function: &ast::StmtFunctionDef) -> bool {
    function.decorator_list.iter().any(|decorator| {
        let callee = match &decorator.expression {
            Expr::Call(call) => &*call.func,
            other => other,
        };
        model.qualified_name(callee).is_some_and(|qualified| {
            ["triton.", "cutlass.", "numba.cuda."]
                .iter()
                .any(|prefix| qualified.starts_with(prefix))
        })
    })
}

/// Whether platform tests cover every kind of GPU the analysis targets, NVIDIA's (`is_cuda`)
/// and, when ROCm is a target, AMD's (`is_hip`, `is_rocm`), or one test names both
/// (`is_cuda_alike()`): when all of them are false, the code runs on another device.
fn graph_gpus(tests: &[Expr], platforms: crate::settings::Platforms) -> bool {
    let (mut cuda, mut rocm) = (false, false);
    for test in tests {
        match crate::util::platform_tested(test) {
            Some("cuda") => cuda = true,
            Some("hip" | "rocm") => rocm = true,
            Some("cuda_alike" | "cuda_or_hip") => (cuda, rocm) = (true, true),
            _ => {}
        }
    }
    cuda && (rocm || !platforms.rocm)
}

/// Whether a test holds only on a device without CUDA graphs: a platform test
/// (`current_platform.is_xpu()`, `_is_npu`), alone or in a conjunction
/// (`current_platform.is_xpu() and backend == "batched"`).
pub(super) fn on_other_platform(test: &Expr, platforms: crate::settings::Platforms) -> bool {
    match test {
        Expr::BoolOp(bool_op) if matches!(bool_op.op, ast::BoolOp::And) => bool_op
            .values
            .iter()
            .any(|value| on_other_platform(value, platforms)),
        test => crate::util::is_other_platform(test, platforms),
    }
}
