use crate::checker::Checker;
use crate::declare_violation;
use crate::registry::Rule;
use crate::rules::method_call;
use crate::violation::Violation;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

declare_violation! {
    /// ## What it does
    /// Checks for a buffer from `torch.empty`, `torch.empty_like` or `x.new_empty` that is
    /// written only in part and then used whole: written through a slice (`buf[:n] = ...`) or
    /// handed to a masked kernel together with a row bound (`masked_m`), and afterwards
    /// returned or passed to a call that does not receive the same bound.
    ///
    /// ## Why is this bad?
    /// `torch.empty` memory holds whatever was there before. The rows nobody wrote are garbage,
    /// and a consumer that reads the whole buffer reads them. Seed 004: an fp32 UE8M0 scale
    /// buffer allocated with `torch.empty` was written by a masked kernel only below
    /// `masked_m`; DeepGEMM's layout transform validates every row, hit a non-power-of-two in the
    /// padding, and the device assert poisoned the CUDA context (error 719) during decode graph
    /// capture. Whether it happens depends on what the allocator hands out, so it comes and goes.
    ///
    /// ## Example
    /// ```python
    /// scale = torch.empty((E, N, G), device=dev, dtype=torch.float32)
    /// silu_and_mul_masked_post_quant(gateup, out, scale, group_size, masked_m)
    /// return out, scale
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// scale = torch.zeros((E, N, G), device=dev, dtype=torch.float32)  # padding is a valid 0.0
    /// silu_and_mul_masked_post_quant(gateup, out, scale, group_size, masked_m)
    /// return out, scale
    /// ```
    ///
    /// ## Known problems
    /// Writes inside a loop, and two or more partial writes, are taken to cover the whole buffer.
    /// A call that receives the buffer without a row bound is taken to write all of it.
    pub struct UninitializedPartialWrite {
        buffer: String,
        factory: &'static str,
    }
}

impl Violation for UninitializedPartialWrite {
    const RULE: Rule = Rule::UninitializedPartialWrite;

    fn message(&self) -> String {
        format!(
            "`{}` from `{}` is written only in part and then used whole: the rest is \
             uninitialised memory",
            self.buffer, self.factory
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Allocate with `torch.zeros` (or `zeros_like` / `new_zeros`), or bound the consumer \
             by the same row count"
                .to_string(),
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Allocated, nothing written yet.
    Fresh,
    /// Written only in part.
    Partial,
    /// Written whole, used in a way graphready cannot follow, or already reported.
    Settled,
}

/// A buffer allocated without initialisation in the function being visited.
#[derive(Debug)]
pub struct Buffer<'a> {
    name: &'a str,
    allocation: TextRange,
    factory: &'static str,
    state: State,
}

/// What a statement does with a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    /// A slice or index of it is written.
    PartialWrite,
    /// All of it is written (`buf[:] = `, `buf.zero_()`, `buf.copy_(...)`).
    FullWrite,
    /// Handed to a kernel with a row bound: a partial write, or a consumer bounded like one.
    Bounded,
    /// Handed to a call without a row bound.
    Unbounded,
    /// Returned.
    Returned,
    /// Any other use (aliased, viewed, stored).
    Other,
}

const FULL_WRITES: &[&str] = &[
    "zero_",
    "fill_",
    "copy_",
    "normal_",
    "uniform_",
    "random_",
    "bernoulli_",
    "exponential_",
];

/// Methods that read metadata only.
const METADATA: &[&str] = &[
    "size",
    "numel",
    "dim",
    "stride",
    "data_ptr",
    "element_size",
    "nelement",
    "storage_offset",
    "is_contiguous",
    "get_device",
];

fn factory_of(checker: &Checker, value: &Expr) -> Option<&'static str> {
    let Expr::Call(call) = value else {
        return None;
    };
    match checker.model.qualified_name(&call.func).as_deref() {
        Some("torch.empty") => Some("torch.empty"),
        Some("torch.empty_like") => Some("torch.empty_like"),
        Some("torch.empty_strided") => Some("torch.empty_strided"),
        Some(_) => None,
        None => matches!(method_call(call), Some(("new_empty", _))).then_some(".new_empty()"),
    }
}

/// An argument that names a row bound: `masked_m`, `self.masked_m`, `masked_m=...`.
fn names_row_bound(expr: &Expr) -> bool {
    match expr {
        Expr::Name(name) => name.id.as_str().contains("masked_m"),
        Expr::Attribute(attribute) => attribute.attr.id.as_str().contains("masked_m"),
        _ => false,
    }
}

/// A user kernel that writes or reads only the rows below a bound.
fn is_bounded_kernel(checker: &Checker, call: &ast::ExprCall) -> bool {
    if checker
        .model
        .qualified_name(&call.func)
        .is_some_and(|qualified| qualified.starts_with("torch."))
    {
        return false;
    }
    let callee_masked = match &*call.func {
        Expr::Name(name) => name.id.as_str().contains("masked"),
        Expr::Attribute(attribute) => attribute.attr.id.as_str().contains("masked"),
        _ => false,
    };
    callee_masked
        || call.arguments.args.iter().any(names_row_bound)
        || call.arguments.keywords.iter().any(|keyword| {
            keyword
                .arg
                .as_ref()
                .is_some_and(|arg| arg.id.as_str().contains("masked_m"))
                || names_row_bound(&keyword.value)
        })
}

/// Collects, in evaluation order, what an expression does with the tracked buffers.
struct Uses<'c, 'a, 'n> {
    checker: &'c Checker<'a>,
    names: &'n [&'a str],
    events: Vec<(&'a str, Event)>,
}

impl<'a> Uses<'_, 'a, '_> {
    fn tracked(&self, expr: &Expr) -> Option<&'a str> {
        match expr {
            Expr::Name(name) => self
                .names
                .iter()
                .copied()
                .find(|tracked| *tracked == name.id.as_str()),
            _ => None,
        }
    }

    /// A call argument: the buffer itself, or a tuple/list holding it.
    fn argument(&mut self, arg: &Expr, bounded: bool) {
        let elements: &[Expr] = match arg {
            Expr::Tuple(tuple) => &tuple.elts,
            Expr::List(list) => &list.elts,
            other => std::slice::from_ref(other),
        };
        for element in elements {
            match self.tracked(element) {
                Some(name) => {
                    let event = if bounded {
                        Event::Bounded
                    } else {
                        Event::Unbounded
                    };
                    self.events.push((name, event));
                }
                None => self.visit_expr(element),
            }
        }
    }
}

impl<'e> Visitor<'e> for Uses<'_, '_, '_> {
    fn visit_expr(&mut self, expr: &'e Expr) {
        match expr {
            Expr::Call(call) => {
                match &*call.func {
                    Expr::Attribute(attribute) if self.tracked(&attribute.value).is_some() => {
                        let name = self.tracked(&attribute.value).unwrap_or_default();
                        let method = attribute.attr.id.as_str();
                        if FULL_WRITES.contains(&method) {
                            self.events.push((name, Event::FullWrite));
                        } else if !METADATA.contains(&method) {
                            self.events.push((name, Event::Other));
                        }
                    }
                    func => self.visit_expr(func),
                }
                let bounded = is_bounded_kernel(self.checker, call);
                for arg in &call.arguments.args {
                    self.argument(arg, bounded);
                }
                for keyword in &call.arguments.keywords {
                    self.argument(&keyword.value, bounded);
                }
            }
            // A read through a slice is bounded by the slice.
            Expr::Subscript(subscript) if self.tracked(&subscript.value).is_some() => {
                self.visit_expr(&subscript.slice);
            }
            Expr::Attribute(attribute) if self.tracked(&attribute.value).is_some() => {
                // `buf.shape`, `buf.dtype`: metadata.
            }
            Expr::Name(_) => {
                if let Some(name) = self.tracked(expr) {
                    self.events.push((name, Event::Other));
                }
            }
            _ => visitor::walk_expr(self, expr),
        }
    }
}

fn is_whole(index: &Expr) -> bool {
    match index {
        Expr::EllipsisLiteral(_) => true,
        Expr::Slice(slice) => {
            slice.lower.is_none() && slice.upper.is_none() && slice.step.is_none()
        }
        Expr::Tuple(tuple) => tuple.elts.iter().all(is_whole),
        _ => false,
    }
}

/// GR404: follows the buffers statement by statement.
pub fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    let names: Vec<&'a str> = checker
        .rule_state
        .buffers
        .iter()
        .filter(|buffer| buffer.state != State::Settled)
        .map(|buffer| buffer.name)
        .collect();
    let mut uses = Uses {
        checker,
        names: &names,
        events: Vec::new(),
    };
    let mut rebound: Vec<&'a str> = Vec::new();
    let mut returned = false;
    match stmt {
        Stmt::Assign(assign) => {
            uses.visit_expr(&assign.value);
            for target in &assign.targets {
                match target {
                    Expr::Subscript(subscript) => match uses.tracked(&subscript.value) {
                        Some(name) => {
                            let event = if is_whole(&subscript.slice) {
                                Event::FullWrite
                            } else {
                                Event::PartialWrite
                            };
                            uses.visit_expr(&subscript.slice);
                            uses.events.push((name, event));
                        }
                        None => uses.visit_expr(target),
                    },
                    Expr::Name(name) => rebound.push(name.id.as_str()),
                    other => uses.visit_expr(other),
                }
            }
        }
        Stmt::AugAssign(assign) => {
            uses.visit_expr(&assign.value);
            uses.visit_expr(&assign.target);
        }
        Stmt::AnnAssign(assign) => {
            if let Some(value) = &assign.value {
                uses.visit_expr(value);
            }
            if let Expr::Name(name) = &*assign.target {
                rebound.push(name.id.as_str());
            }
        }
        Stmt::Expr(expr) => uses.visit_expr(&expr.value),
        Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        }) => {
            returned = true;
            uses.argument(value, false);
        }
        _ => {}
    }
    let events = uses.events;
    let in_loop = checker.rule_state.in_loop(stmt.range());
    let mut reports = Vec::new();
    for (name, event) in events {
        let event = match event {
            Event::Unbounded if returned => Event::Returned,
            other => other,
        };
        let Some(buffer) = checker
            .rule_state
            .buffers
            .iter_mut()
            .rev()
            .find(|buffer| buffer.name == name)
        else {
            continue;
        };
        buffer.state = match (buffer.state, event) {
            (State::Settled, _) => State::Settled,
            (State::Fresh, Event::PartialWrite | Event::Bounded) if !in_loop => State::Partial,
            (State::Partial, Event::Bounded) => State::Partial,
            (State::Partial, Event::Unbounded | Event::Returned) => {
                reports.push((buffer.name, buffer.factory, buffer.allocation));
                State::Settled
            }
            _ => State::Settled,
        };
    }
    for (name, factory, range) in reports {
        checker.report(
            UninitializedPartialWrite {
                buffer: name.to_string(),
                factory,
            },
            range,
        );
    }
    if rebound.is_empty() {
        return;
    }
    let buffers = &mut checker.rule_state.buffers;
    buffers.retain(|buffer| !rebound.contains(&buffer.name));
    if let (Stmt::Assign(assign), [name]) = (stmt, rebound.as_slice()) {
        if assign.targets.len() == 1 {
            if let Some(factory) = factory_of(checker, &assign.value) {
                let allocation = assign.value.range();
                checker.rule_state.buffers.push(Buffer {
                    name,
                    allocation,
                    factory,
                    state: State::Fresh,
                });
            }
        }
    }
}
