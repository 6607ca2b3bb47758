//! Guards: conditions under which code cannot be running inside a captured region.
//!
//! `safe_when(test, negated)` answers: if `test` evaluates to `!negated`, is the code that runs
//! then outside capture? It understands `not`, `and`, `or` (De Morgan included), capture flags
//! (`torch.cuda.is_current_stream_capturing()` and configured equivalents,
//! `torch.compiler.is_compiling()`, helpers that return them, names bound to them: see
//! `semantic::predicates`), `x.is_cuda` (a CPU tensor never syncs a device), a module's
//! `self.training` (inference, captured or not, runs in eval mode: SpecAugment masking and
//! dropout seeds under `if self.training:` never run there), debug switches (a flag or
//! environment variable that says `debug`), platform tests for devices without CUDA graphs
//! (`current_platform.is_xpu()`, `_is_npu`) and the configured debug guards.

use crate::semantic::{SemanticModel, Ty};
use crate::settings::Settings;
use crate::util::{last_segment, NO_CUDA_GRAPH_DEVICES};
use ruff_python_ast::comparable::ComparableExpr;
use ruff_python_ast::{self as ast, Expr};

/// A memoised initialisation, which runs once (per key), in the warm-up that precedes any
/// capture: `if key not in CACHE: CACHE[key] = ...` and `if t is None: t = ...; CACHE[key] = t`
/// with `CACHE` a module global, `t = self.t` then `if t is None: t = ...; self.t = t`, and
/// `if self.t is None: self.t = ...` where the class never
/// sets `self.t` back to `None` outside `__init__`. A local or parameter filled in without
/// being stored (`if out is None: out = torch.empty(...)`), a per-step cache that is reset, a
/// cache on some other object (a batch) and one on a dataclass's own instance (a record, made
/// again as data flows) are made again and stay checked. Also `if not hasattr(self, "t"):`
/// whose body sets `self.t` (an assignment, `register_buffer("t", ...)` or `setattr`).
pub fn is_lazy_init(
    model: &SemanticModel,
    if_stmt: &ast::StmtIf,
    previous: Option<&ast::Stmt>,
) -> bool {
    if is_lazy_attribute(model, if_stmt) {
        return true;
    }
    let Expr::Compare(compare) = &*if_stmt.test else {
        return false;
    };
    let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
        return false;
    };
    let missing = match (op, right) {
        (ast::CmpOp::Is, Expr::NoneLiteral(_)) => {
            let lasting = match &*compare.left {
                Expr::Name(name) => {
                    stored_in_global(model, &if_stmt.body, name.id.as_str())
                        || cached_on_self(model, if_stmt, previous, name.id.as_str())
                }
                Expr::Attribute(attribute) => match &*attribute.value {
                    Expr::Name(receiver) => model
                        .is_lasting_self_attribute(receiver.id.as_str(), attribute.attr.as_str()),
                    _ => false,
                },
                _ => false,
            };
            if !lasting {
                return false;
            }
            ComparableExpr::from(&*compare.left)
        }
        (ast::CmpOp::NotIn, Expr::Name(cache)) if model.is_module_global(cache.id.as_str()) => {
            return assigned_targets(&if_stmt.body).any(|target| {
                matches!(target, Expr::Subscript(subscript)
                    if ComparableExpr::from(&*subscript.value) == ComparableExpr::from(right)
                        && ComparableExpr::from(&*subscript.slice)
                            == ComparableExpr::from(&*compare.left))
            });
        }
        _ => return false,
    };
    assigned_targets(&if_stmt.body).any(|target| ComparableExpr::from(target) == missing)
}

/// A guard that converges: its body brings the tested attribute of `self` to where the test no
/// longer holds, so after the first calls (the warm-up) it stops running.
/// - Grow-only: `if n > self.max_size: self.max_size = n; ...` (any of `<`, `<=`, `>`, `>=`,
///   `self.<x>` or an element of it on either side, or an `or` of such tests of one bound; the
///   body setting `self.<x>`, and no other method setting it outside `__init__`): the body runs
///   only for a size never seen before.
/// - Self-healing: `if self.bands.dtype != torch.float32: self.reset_bands()` (or `.device`),
///   the body setting `self.<x>` again, directly, through `register_buffer`, or through a method
///   of the class that sets it.
///
/// On a class that lasts (not a record, not reset to `None` every step).
pub fn is_converging<'s>(model: &SemanticModel, if_stmt: &'s ast::StmtIf) -> bool {
    let Some(self_name) = model.self_name() else {
        return false;
    };
    let self_attribute = |expr: &'s Expr| attribute_of(expr, self_name);
    // A bound: `self.max_size`, or one of its elements (`self.max_size[0]`).
    let bound = |expr: &'s Expr| match expr {
        Expr::Subscript(subscript) => self_attribute(&subscript.value),
        other => self_attribute(other),
    };
    let placement = |expr: &'s Expr| match expr {
        Expr::Attribute(attribute) if matches!(attribute.attr.as_str(), "dtype" | "device") => {
            self_attribute(&attribute.value)
        }
        _ => None,
    };
    // The attribute a comparison tests, and whether it is a bound (`<`, `>`, ...) rather than a
    // placement (`!=` of `.dtype` or `.device`).
    let tested = |compare: &'s ast::ExprCompare| -> Option<(bool, &'s str)> {
        let ([op], [right]) = (&*compare.ops, &*compare.comparators) else {
            return None;
        };
        let left = &*compare.left;
        match op {
            ast::CmpOp::Lt | ast::CmpOp::LtE | ast::CmpOp::Gt | ast::CmpOp::GtE => {
                bound(left).or_else(|| bound(right)).map(|a| (true, a))
            }
            ast::CmpOp::NotEq => placement(left)
                .or_else(|| placement(right))
                .map(|a| (false, a)),
            _ => None,
        }
    };
    let found = match &*if_stmt.test {
        Expr::Compare(compare) => tested(compare),
        // `if h > self.max_size[0] or w > self.max_size[1]:`, every operand the same bound.
        Expr::BoolOp(bool_op) if matches!(bool_op.op, ast::BoolOp::Or) => {
            let mut operands = bool_op.values.iter().map(|value| match value {
                Expr::Compare(compare) => tested(compare).filter(|&(grows, _)| grows),
                _ => None,
            });
            let first = operands.next().flatten();
            first.filter(|found| operands.all(|other| other == Some(*found)))
        }
        _ => None,
    };
    let Some((grows, attribute)) = found else {
        return false;
    };
    if !model.is_lasting_self_attribute(self_name, attribute) {
        return false;
    }
    if grows {
        // Grow-only: nothing else sets the bound (dynamic RoPE's reset to the original length
        // lowers it again, and the growth then runs again).
        let here = assigned_targets(&if_stmt.body)
            .filter(|target| self_attribute(target) == Some(attribute))
            .count();
        if model.self_setter_count(attribute) > here {
            return false;
        }
    }
    if_stmt.body.iter().any(|stmt| match stmt {
        ast::Stmt::Assign(assign) => assign
            .targets
            .iter()
            .any(|target| self_attribute(target) == Some(attribute)),
        ast::Stmt::AugAssign(assign) => self_attribute(&assign.target) == Some(attribute),
        ast::Stmt::Expr(ast::StmtExpr { value, .. }) => match &**value {
            Expr::Call(call) => match self_attribute(&call.func) {
                Some("register_buffer") => matches!(call.arguments.args.first(),
                    Some(Expr::StringLiteral(key)) if key.value.to_str() == attribute),
                Some(method) => model.self_method_sets(method, attribute),
                None => false,
            },
            _ => false,
        },
        _ => false,
    })
}

/// A memoised initialisation written as an early return: `if self.t is not None: return ...`
/// (or `if hasattr(self, "t"): return ...`, or the cache read into a local just before: `t =
/// self.t` then `if t is not None: return t`) followed by code that sets `self.t`, on a class
/// that lasts. The code after it runs once, in the warm-up.
pub fn is_lazy_early_return(
    model: &SemanticModel,
    if_stmt: &ast::StmtIf,
    previous: Option<&ast::Stmt>,
    rest: &[ast::Stmt],
) -> bool {
    if !if_stmt.elif_else_clauses.is_empty()
        || !matches!(if_stmt.body.last(), Some(ast::Stmt::Return(_)))
    {
        return false;
    }
    let (receiver, name) = match &*if_stmt.test {
        Expr::Compare(compare)
            if matches!(&*compare.ops, [ast::CmpOp::IsNot])
                && matches!(&compare.comparators[0], Expr::NoneLiteral(_)) =>
        {
            let tested = match &*compare.left {
                // The local the statement just before read the cache into.
                Expr::Name(local) => match read_just_before(previous, local.id.as_str()) {
                    Some(value) => value,
                    None => return false,
                },
                other => other,
            };
            match tested {
                Expr::Attribute(attribute) => match &*attribute.value {
                    Expr::Name(receiver) => (receiver.id.as_str(), attribute.attr.as_str()),
                    _ => return false,
                },
                _ => return false,
            }
        }
        Expr::Call(call) => match (&*call.func, &*call.arguments.args) {
            (Expr::Name(function), [Expr::Name(receiver), Expr::StringLiteral(name)])
                if function.id.as_str() == "hasattr" =>
            {
                (receiver.id.as_str(), name.value.to_str())
            }
            _ => return false,
        },
        _ => return false,
    };
    if model.self_name() != Some(receiver) || !model.is_lasting_self_attribute(receiver, name) {
        return false;
    }
    sets_attribute(rest, receiver, name)
}

/// A debug switch: a name or attribute that says `debug` or `diagnostic` (`DEBUG`,
/// `self.debug_mode`, `envs.SGLANG_DEBUG_MEMORY_POOL`), its `.get()`, a call without arguments
/// of a function whose name says it (`diagnostics_enabled()`), or an environment variable read
/// whose key says it (`get_bool_env_var("SGLANG_DEBUG_MEMORY_POOL")`, `os.getenv("MY_DEBUG")`).
fn is_debug_switch(test: &Expr) -> bool {
    fn says_debug(name: &str) -> bool {
        let says = |word: &[u8]| {
            name.as_bytes()
                .windows(word.len())
                .any(|window| window.eq_ignore_ascii_case(word))
        };
        says(b"debug") || says(b"diagnostic")
    }
    match test {
        Expr::Name(name) => says_debug(name.id.as_str()),
        Expr::Attribute(attribute) => says_debug(attribute.attr.as_str()),
        Expr::Call(call) => match (&*call.func, call.arguments.args.first()) {
            (Expr::Attribute(attribute), None)
                if matches!(attribute.attr.as_str(), "get" | "value") =>
            {
                is_debug_switch(&attribute.value)
            }
            (func @ (Expr::Name(_) | Expr::Attribute(_)), None)
                if call.arguments.keywords.is_empty() =>
            {
                last_segment(func).is_some_and(says_debug)
            }
            (func, Some(Expr::StringLiteral(key))) => {
                let reads_env = last_segment(func).is_some_and(|name| {
                    name.to_ascii_lowercase().contains("env")
                        || (name == "get"
                            && matches!(func, Expr::Attribute(a)
                                if last_segment(&a.value) == Some("environ")))
                });
                reads_env && says_debug(key.value.to_str())
            }
            _ => false,
        },
        _ => false,
    }
}

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

/// A platform test for a device other than a CUDA (or ROCm) GPU: `current_platform.is_xpu()`,
/// `is_npu()`, a module flag `_is_cpu`, `platform.is_tpu`. Code under it never runs where CUDA
/// graphs are captured (a CPU tensor's `x.is_cpu` says the same of the data).
fn is_other_platform(test: &Expr) -> bool {
    let callee = match test {
        Expr::Call(call) if call.arguments.is_empty() => &*call.func,
        other => other,
    };
    let name = match callee {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.as_str(),
        _ => return false,
    };
    name.trim_start_matches('_')
        .strip_prefix("is_")
        .is_some_and(|device| {
            matches!(device, "cpu" | "neuron") || NO_CUDA_GRAPH_DEVICES.contains(&device)
        })
}

/// `if not hasattr(self, "t"): self.register_buffer("t", make())` on a class that lasts, or
/// `if not hasattr(layer, "_t"): ...; layer._t = ...` on an object the function is handed: a
/// private attribute attached from outside marks a cache on an object that lasts (a layer),
/// where a public one may be a field of a record made again every step.
fn is_lazy_attribute(model: &SemanticModel, if_stmt: &ast::StmtIf) -> bool {
    let Expr::UnaryOp(ast::ExprUnaryOp {
        op: ast::UnaryOp::Not,
        operand,
        ..
    }) = &*if_stmt.test
    else {
        return false;
    };
    let Expr::Call(call) = &**operand else {
        return false;
    };
    let (Expr::Name(function), [Expr::Name(receiver), Expr::StringLiteral(name)]) =
        (&*call.func, &*call.arguments.args)
    else {
        return false;
    };
    let name = name.value.to_str();
    let lasting = model.is_lasting_self_attribute(receiver.id.as_str(), name)
        || (name.starts_with('_')
            && model.self_name() != Some(receiver.id.as_str())
            && model.is_parameter(receiver.id.as_str()));
    if function.id.as_str() != "hasattr" || !lasting {
        return false;
    }
    let sets = |stmt: &ast::Stmt| match stmt {
        ast::Stmt::Assign(assign) => assign.targets.iter().any(|target| {
            matches!(target, Expr::Attribute(attribute)
                if attribute.attr.as_str() == name
                    && matches!(&*attribute.value, Expr::Name(r) if r.id == receiver.id))
        }),
        ast::Stmt::Expr(ast::StmtExpr { value, .. }) => match &**value {
            Expr::Call(call) => {
                let by_method = matches!(&*call.func, Expr::Attribute(attribute)
                    if attribute.attr.as_str() == "register_buffer"
                        && matches!(&*attribute.value, Expr::Name(r) if r.id == receiver.id));
                let by_setattr = matches!(&*call.func, Expr::Name(f) if f.id.as_str() == "setattr");
                let key = if by_setattr {
                    call.arguments.args.get(1)
                } else {
                    call.arguments.args.first()
                };
                (by_method || by_setattr)
                    && matches!(key, Some(Expr::StringLiteral(key)) if key.value.to_str() == name)
            }
            _ => false,
        },
        _ => false,
    };
    if_stmt.body.iter().any(sets)
}

/// `t = self.t` just before `if t is None:`, whose body stores into `self.t` again, on a class
/// that lasts: the cache read into a local and filled in once.
fn cached_on_self(
    model: &SemanticModel,
    if_stmt: &ast::StmtIf,
    previous: Option<&ast::Stmt>,
    local: &str,
) -> bool {
    let Some(Expr::Attribute(attribute)) = read_just_before(previous, local) else {
        return false;
    };
    let Expr::Name(receiver) = &*attribute.value else {
        return false;
    };
    let (receiver, name) = (receiver.id.as_str(), attribute.attr.as_str());
    model.self_name() == Some(receiver)
        && model.is_lasting_self_attribute(receiver, name)
        && sets_attribute(&if_stmt.body, receiver, name)
}

/// Whether a block stores a local into a module-global container: `CACHE[key] = t`.
fn stored_in_global(model: &SemanticModel, body: &[ast::Stmt], local: &str) -> bool {
    body.iter().any(|stmt| match stmt {
        ast::Stmt::Assign(assign) => {
            matches!(&*assign.value, Expr::Name(value) if value.id.as_str() == local)
                && assign.targets.iter().any(|target| {
                    matches!(target, Expr::Subscript(subscript)
                        if matches!(&*subscript.value, Expr::Name(cache)
                            if model.is_module_global(cache.id.as_str())))
                })
        }
        _ => false,
    })
}

/// What the statement just before read into `local` (`t = self.t`), when it did only that.
fn read_just_before<'p>(previous: Option<&'p ast::Stmt>, local: &str) -> Option<&'p Expr> {
    match previous {
        Some(ast::Stmt::Assign(assign))
            if matches!(assign.targets.as_slice(),
                [Expr::Name(target)] if target.id.as_str() == local) =>
        {
            Some(&*assign.value)
        }
        _ => None,
    }
}

/// The attribute `receiver.<attribute>` names, when the expression is one.
fn attribute_of<'e>(expr: &'e Expr, receiver: &str) -> Option<&'e str> {
    let Expr::Attribute(attribute) = expr else {
        return None;
    };
    matches!(&*attribute.value, Expr::Name(r) if r.id.as_str() == receiver)
        .then(|| attribute.attr.as_str())
}

/// Whether an assignment directly in a block sets `receiver.<name>`.
fn sets_attribute(body: &[ast::Stmt], receiver: &str, name: &str) -> bool {
    assigned_targets(body).any(|target| attribute_of(target, receiver) == Some(name))
}

/// The targets of the assignments directly in a block.
fn assigned_targets(body: &[ast::Stmt]) -> impl Iterator<Item = &Expr> {
    body.iter().flat_map(|stmt| match stmt {
        ast::Stmt::Assign(assign) => assign.targets.iter().collect::<Vec<_>>(),
        ast::Stmt::AnnAssign(assign) => vec![&*assign.target],
        _ => Vec::new(),
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
        test if !negated && is_debug_switch(test) => true,
        // `if envs.SGLANG_TRACE_LOGITS_E2E_SYNC.get():`, `if envs.VLLM_X:` with the flag declared
        // off by default: code for those who turn it on, off the serving path as shipped.
        test if !negated && model.is_off_flag(test) => true,
        // `if current_platform.is_xpu():`, `if _is_npu:`: code for a device without CUDA graphs.
        test if !negated && is_other_platform(test) => true,
        Expr::Attribute(attribute) if attribute.attr.id.as_str() == "is_cuda" => negated,
        Expr::Attribute(attribute)
            if attribute.attr.id.as_str() == "training"
                && matches!(&*attribute.value, Expr::Name(name)
                    if model.self_name() == Some(name.id.as_str())) =>
        {
            !negated
        }
        Expr::Compare(compare) if negated => {
            // `x.device.type == "cuda"` is false only for host tensors.
            compare.ops.len() == 1
                && matches!(compare.ops[0], ast::CmpOp::Eq)
                && is_device_type(&compare.left)
                && matches!(&compare.comparators[0], Expr::StringLiteral(s) if s.value.to_str() == "cuda")
        }
        // `x.device.type == "cpu"` (host data), or a device without CUDA graphs (`"mps"`,
        // `"xpu"`, ...).
        Expr::Compare(compare) => {
            compare.ops.len() == 1
                && matches!(compare.ops[0], ast::CmpOp::Eq)
                && is_device_type(&compare.left)
                && matches!(&compare.comparators[0], Expr::StringLiteral(s)
                    if matches!(s.value.to_str(), "cpu" | "meta")
                        || NO_CUDA_GRAPH_DEVICES.contains(&s.value.to_str()))
        }
        // A capture flag is false only outside capture: `if not is_tracing(x):`, `if not flag:`.
        _ => negated && model.ty(test) == Ty::CaptureFlag,
    }
}

fn is_device_type(expr: &Expr) -> bool {
    matches!(expr, Expr::Attribute(a) if a.attr.id.as_str() == "type"
        && matches!(&*a.value, Expr::Attribute(d) if d.attr.id.as_str() == "device"))
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
/// eager-only (vLLM's `with gpu_sync_allowed():`, and similarly named context managers).
pub fn opens_eager_block(item: &ast::WithItem) -> bool {
    matches!(&item.context_expr, Expr::Call(call)
    if last_segment(&call.func).is_some_and(|n| {
        matches!(n, "force_no_graph" | "no_graph")
            || n.contains("sync_allowed")
            || n.contains("allow_sync")
    }))
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
