use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, builtin_call, device_tensor, maybe_device_tensor, method_call};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

declare_violation! {
    /// ## What it does
    /// Checks for host scalars written into device tensors.
    ///
    /// - One element written with a Python value (`buf[0] = 0`, `buf[i] = token_id`,
    ///   `offsets[g] = count * padded_rows`), in any code.
    /// - In code that runs captured, a fill whose host value changes from call to call
    ///   (`buf.fill_(step)`, `torch.full(shape, step, device=...)`, or an element write of one):
    ///   a value read from the device (`.item()`, `.tolist()`, `int(t)`), or a parameter named
    ///   like a step, token, position or seed.
    ///
    /// ## Why is this bad?
    /// Writing one element copies the value from a pageable host scalar: PyTorch makes a host
    /// tensor of it and copies that into the element. Inside a CUDA graph capture the copy
    /// fails ("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU
    /// tensor is pinned"); outside it the blocking copy waits for the stream, on every call,
    /// even when the value is the same every time.
    ///
    /// A fill (`fill_`, `torch.full`, a scalar written through a slice) is a kernel whose value
    /// is a kernel argument, frozen when the graph is captured: every replay writes the
    /// capture-time value again. That is harmless for constants and per-bucket sizes, and
    /// silently wrong for a value that changes per call. The graph-safe forms: write per-step
    /// values into a pinned host buffer and `copy_` it into the device buffer, or compute them
    /// with device arithmetic (`expert_offsets = group_ids * padded_rows`).
    ///
    /// ## Example
    /// ```python
    /// def decode_step(buf: torch.Tensor, cu_seqlens: torch.Tensor, token_id: int):
    ///     buf[0] = token_id
    ///     cu_seqlens[0] = 0
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def decode_step(buf: torch.Tensor, pinned: torch.Tensor, cu_seqlens: torch.Tensor):
    ///     # pinned[0] = token_id was written on the host, before replay
    ///     buf.copy_(pinned, non_blocking=True)
    ///     cu_seqlens[:1].fill_(0)  # a fill kernel with a constant value
    /// ```
    ///
    /// ## Known problems
    /// Whether an index selects one element depends on the tensor's rank, which graphready does
    /// not know: an index made only of integers is taken to select one element.
    pub struct HostScalarWrittenToDevice {
        form: &'static str,
        baked: bool,
    }
}

impl Violation for HostScalarWrittenToDevice {
    const CODE: &'static str = "GR303";
    const NAME: &'static str = "host-scalar-written-to-device";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&["fill_", "full"]);

    fn message(&self) -> String {
        if self.baked {
            format!(
                "{} bakes a per-call host value into the graph; replay reuses the captured value",
                self.form
            )
        } else {
            format!(
                "{} copies a host value to the device and waits for the copy",
                self.form
            )
        }
    }

    fn fix_title(&self) -> Option<String> {
        Some(if self.baked {
            "Copy the value from a pinned host buffer (`buf.copy_(pinned, non_blocking=True)`) \
             or compute it on the device"
                .to_string()
        } else {
            "Fill through a slice (`buf[:1].fill_(0)`), or copy per-step values from a pinned \
             host buffer (`buf.copy_(pinned, non_blocking=True)`)"
                .to_string()
        })
    }

    /// An element write is a copy, which stalls outside capture too.
    fn captured_only(&self) -> bool {
        self.baked
    }
}

impl Check for HostScalarWrittenToDevice {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        fill_call(checker, call);
    }

    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        track_device_reads(checker, stmt);
        track_ranks(checker, stmt);
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    subscript_store(checker, target, &assign.value, false);
                }
            }
            Stmt::AugAssign(assign) => {
                subscript_store(checker, &assign.target, &assign.value, true);
            }
            _ => {}
        }
    }

    /// A constructor the run skips still says the ranks of the buffers it stores.
    fn skipped_function<'a>(
        checker: &mut Checker<'a>,
        function: &'a ast::StmtFunctionDef,
        qualname: &str,
    ) {
        let Some((class, _)) = qualname.rsplit_once('.') else {
            return;
        };
        let Some(self_name) = function
            .parameters
            .iter_non_variadic_params()
            .next()
            .map(|p| p.parameter.name.id.as_str())
        else {
            return;
        };
        skipped_ranks(checker, &function.body, class, self_name);
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
fn subscript_store(checker: &mut Checker, target: &Expr, value: &Expr, augmented: bool) {
    let Expr::Subscript(subscript) = target else {
        return;
    };
    if !device_tensor(checker, &subscript.value) || checker.ty(value) == Ty::Tensor {
        return;
    }
    let range = TextRange::new(target.start(), value.end());
    // `buf[i] += 1` reads the element and writes a device result: no host copy.
    if !augmented
        && selects_element(checker, &subscript.value, &subscript.slice)
        && is_host_scalar(checker, value)
    {
        checker.report(
            HostScalarWrittenToDevice {
                form: "writing a host scalar into one element of a device tensor",
                baked: false,
            },
            range,
        );
    } else if varies_per_call(checker, value) {
        checker.report(
            HostScalarWrittenToDevice {
                form: "writing a host scalar into a device tensor",
                baked: true,
            },
            range,
        );
    }
}

/// An index made only of integers (host ints, literals and arithmetic on them: no slice, no
/// `None` or `...`, no index sequence or tensor), one per dimension where the tensor's rank is
/// known: fewer select a row, which a scalar fills without a copy.
fn selects_element(checker: &Checker, tensor: &Expr, index: &Expr) -> bool {
    let count = match index {
        Expr::Tuple(tuple) if !tuple.elts.is_empty() => {
            if !tuple.elts.iter().all(|elt| is_int(checker, elt)) {
                return false;
            }
            tuple.elts.len()
        }
        Expr::Tuple(_) => return false,
        other => {
            if !is_int(checker, other) {
                return false;
            }
            1
        }
    };
    rank_of_tensor(checker, tensor).is_none_or(|rank| rank <= count)
}

/// The rank of a tensor this function or its class allocated, when known.
fn rank_of_tensor(checker: &Checker, tensor: &Expr) -> Option<usize> {
    match tensor {
        Expr::Name(name) => checker
            .rule_state
            .host_data
            .ranks
            .get(name.id.as_str())
            .copied(),
        Expr::Attribute(_) => checker
            .module_facts
            .attribute_ranks
            .get(&self_attribute_key(checker, tensor)?)
            .copied()
            .flatten(),
        _ => None,
    }
}

/// `Class.attribute` for `self.attribute` in a method of `Class`.
fn self_attribute_key(checker: &Checker, expr: &Expr) -> Option<String> {
    let Expr::Attribute(attribute) = expr else {
        return None;
    };
    let self_name = checker.model.self_name()?;
    if !matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name) {
        return None;
    }
    let (class, _) = checker.function()?.rsplit_once('.')?;
    Some(format!("{class}.{}", attribute.attr.id))
}

/// Remembers the ranks of allocations stored in names and on `self`.
fn track_ranks<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    let Stmt::Assign(ast::StmtAssign { targets, value, .. }) = stmt else {
        return;
    };
    let [target] = targets.as_slice() else {
        return;
    };
    let rank = allocation_rank(checker, value);
    match target {
        Expr::Name(name) => {
            let ranks = &mut checker.rule_state.host_data.ranks;
            match rank {
                Some(rank) => {
                    ranks.insert(name.id.as_str(), rank);
                }
                None => {
                    ranks.remove(name.id.as_str());
                }
            }
        }
        Expr::Attribute(_) => {
            if let (Some(key), Some(rank)) = (self_attribute_key(checker, target), rank) {
                record_attribute_rank(checker, key, rank);
            }
        }
        _ => {}
    }
}

/// `Class.attribute` allocated with `rank` dimensions; `None` once two allocations disagree.
fn record_attribute_rank(checker: &mut Checker, key: String, rank: usize) {
    checker
        .module_facts
        .attribute_ranks
        .entry(key)
        .and_modify(|known| {
            if *known != Some(rank) {
                *known = None;
            }
        })
        .or_insert(Some(rank));
}

/// [`track_ranks`] for the `self.attribute = allocation` statements of a method the run skips,
/// read from its syntax (nested functions and classes aside).
fn skipped_ranks(checker: &mut Checker, body: &[Stmt], class: &str, self_name: &str) {
    for stmt in body {
        match stmt {
            Stmt::Assign(ast::StmtAssign { targets, value, .. }) => {
                let [Expr::Attribute(attribute)] = targets.as_slice() else {
                    continue;
                };
                if !matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name) {
                    continue;
                }
                if let Some(rank) = allocation_rank(checker, value) {
                    record_attribute_rank(checker, format!("{class}.{}", attribute.attr.id), rank);
                }
            }
            Stmt::If(ast::StmtIf {
                body,
                elif_else_clauses,
                ..
            }) => {
                skipped_ranks(checker, body, class, self_name);
                for clause in elif_else_clauses {
                    skipped_ranks(checker, &clause.body, class, self_name);
                }
            }
            Stmt::For(ast::StmtFor { body, orelse, .. })
            | Stmt::While(ast::StmtWhile { body, orelse, .. }) => {
                skipped_ranks(checker, body, class, self_name);
                skipped_ranks(checker, orelse, class, self_name);
            }
            Stmt::With(ast::StmtWith { body, .. }) => {
                skipped_ranks(checker, body, class, self_name);
            }
            Stmt::Try(ast::StmtTry {
                body,
                handlers,
                orelse,
                finalbody,
                ..
            }) => {
                skipped_ranks(checker, body, class, self_name);
                for handler in handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    skipped_ranks(checker, &handler.body, class, self_name);
                }
                skipped_ranks(checker, orelse, class, self_name);
                skipped_ranks(checker, finalbody, class, self_name);
            }
            _ => {}
        }
    }
}

/// The rank of a new tensor: `torch.zeros(n, m)`, `torch.empty((a, b, c))`, `x.new_zeros(n)`,
/// `torch.arange(...)`, `torch.tensor([[...]])`, when its sizes say.
fn allocation_rank(checker: &Checker, value: &Expr) -> Option<usize> {
    let Expr::Call(call) = value else {
        return None;
    };
    let name = match crate::rules::callee(checker, call) {
        Some(qualified) => qualified.strip_prefix("torch.")?.to_string(),
        None => match method_call(call) {
            Some((method @ ("new_zeros" | "new_ones" | "new_empty" | "new_full"), _)) => {
                method.to_string()
            }
            _ => return None,
        },
    };
    match name.as_str() {
        "arange" | "linspace" | "randperm" => Some(1),
        "tensor" => call.arguments.args.first().and_then(nesting),
        "empty" | "zeros" | "ones" | "rand" | "randn" | "new_zeros" | "new_ones" | "new_empty" => {
            sizes_rank(checker, &call.arguments.args)
        }
        "full" | "new_full" => sizes_rank(checker, call.arguments.args.get(..1)?),
        _ => None,
    }
}

/// The rank given by size arguments: one tuple or list of sizes, or one integer per dimension.
fn sizes_rank(checker: &Checker, sizes: &[Expr]) -> Option<usize> {
    match sizes {
        [Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })] => {
            (!elts.iter().any(|elt| matches!(elt, Expr::Starred(_)))).then_some(elts.len())
        }
        [] => None,
        // One size: an integer, unless it is a name, which may hold a shape.
        [size] => (is_int(checker, size) && !matches!(size, Expr::Name(_))).then_some(1),
        // Several: one integer each.
        sizes => {
            (!sizes.iter().any(|size| matches!(size, Expr::Starred(_)))).then_some(sizes.len())
        }
    }
}

/// The nesting depth of a list literal: `[[1, 2]]` is 2.
fn nesting(data: &Expr) -> Option<usize> {
    match data {
        Expr::List(ast::ExprList { elts, .. }) | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
            Some(1 + elts.first().map_or(Some(0), nesting)?)
        }
        Expr::NumberLiteral(_) | Expr::BooleanLiteral(_) => Some(0),
        Expr::UnaryOp(_) | Expr::BinOp(_) | Expr::Name(_) | Expr::Attribute(_) => Some(0),
        _ => None,
    }
}

fn is_int(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::NumberLiteral(number) => matches!(number.value, ast::Number::Int(_)),
        Expr::UnaryOp(unary) => is_int(checker, &unary.operand),
        Expr::BinOp(binop) => is_int(checker, &binop.left) && is_int(checker, &binop.right),
        Expr::Name(name) => match checker.ty(expr) {
            Ty::Host => true,
            Ty::Unknown => int_named(name.id.as_str()),
            _ => false,
        },
        Expr::Attribute(_) | Expr::Call(_) | Expr::Subscript(_) => checker.ty(expr) == Ty::Host,
        _ => false,
    }
}

/// A name that holds one integer: `i`, `idx`, `slot`, `token_id`, `req_index`, `last_pos`
/// (plurals such as `token_ids` hold sequences).
fn int_named(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let last = lower.rsplit('_').next().unwrap_or(&lower);
    matches!(lower.as_str(), "i" | "j" | "k" | "n")
        || matches!(
            last,
            "id" | "idx" | "index" | "pos" | "slot" | "offset" | "row" | "col"
        )
}

/// A Python number or bool: literals, `float("-inf")`, `math.inf`, `torch.finfo(dtype).min`,
/// host values and arithmetic on them.
fn is_host_scalar(checker: &Checker, expr: &Expr) -> bool {
    match expr {
        Expr::NumberLiteral(_) | Expr::BooleanLiteral(_) => true,
        Expr::UnaryOp(unary) => is_host_scalar(checker, &unary.operand),
        Expr::BinOp(binop) => {
            is_host_scalar(checker, &binop.left) && is_host_scalar(checker, &binop.right)
        }
        Expr::Call(call)
            if builtin_call(checker, call)
                .is_some_and(|name| matches!(name, "float" | "int" | "bool")) =>
        {
            call.arguments
                .args
                .iter()
                .all(|arg| checker.ty(arg) != Ty::Tensor)
        }
        Expr::Attribute(attribute)
            if matches!(attribute.attr.id.as_str(), "min" | "max" | "eps" | "tiny") =>
        {
            matches!(&*attribute.value, Expr::Call(call)
                if matches!(crate::rules::callee(checker, call).as_deref(), Some("torch.finfo" | "torch.iinfo")))
        }
        _ => {
            checker.ty(expr) == Ty::Host
                || checker
                    .model
                    .qualified_name(expr)
                    .is_some_and(|qualified| qualified.starts_with("math."))
        }
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
        checker.report(
            HostScalarWrittenToDevice { form, baked: true },
            call.range(),
        );
    }
}
