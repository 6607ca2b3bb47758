use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::method_call;
use crate::violation::{Check, Violation};
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
    /// Writes inside a loop, two or more partial writes, and writes through a tensor index are
    /// taken to cover the whole buffer. A call that receives the buffer without a row bound is
    /// taken to write all of it. A masked kernel's output that is returned is not reported: the
    /// caller holds the same bound.
    pub struct UninitializedPartialWrite {
        buffer: String,
        factory: &'static str,
    }
}

impl Violation for UninitializedPartialWrite {
    const CODE: &'static str = "GR404";
    const NAME: &'static str = "uninitialized-partial-write";

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

impl Check for UninitializedPartialWrite {
    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        self::statement(checker, stmt);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Allocated, nothing written yet.
    Fresh,
    /// Written only in part, through a slice or an element.
    Partial,
    /// Written only in part by a kernel bounded by a row count.
    Masked,
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
    /// Handed to a masked kernel with a row bound: a partial write, or a consumer bounded
    /// like one.
    Bounded,
    /// Handed to a call told which rows to read (a row count, group sizes or offsets).
    BoundedRead,
    /// Handed to a call without a row bound.
    Unbounded,
    /// Returned.
    Returned,
    /// Any other use (aliased, viewed, stored).
    Other,
    /// Written through an index graphready cannot size (a tensor of indices).
    UnknownWrite,
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

/// Methods that return a view of the same memory.
const VIEWS: &[&str] = &[
    "view",
    "reshape",
    "transpose",
    "permute",
    "t",
    "unsqueeze",
    "squeeze",
    "flatten",
    "unflatten",
    "view_as",
    "contiguous",
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
    let name = match &*call.func {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return None,
    };
    if !matches!(name, "empty" | "empty_like" | "empty_strided" | "new_empty") {
        return None;
    }
    match crate::rules::callee(checker, call).as_deref() {
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

/// Arguments that bound what a consumer reads: a row count (`masked_m`, `num_tokens`) or the
/// per-group sizes and offsets of a grouped kernel.
fn names_read_bound(expr: &Expr) -> bool {
    const BOUNDS: &[&str] = &[
        "masked_m",
        "num_tokens",
        "problem_sizes",
        "expert_offsets",
        "seg_indptr",
        "m_indices",
        "expected_m",
        "num_valid",
    ];
    let name = match expr {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        Expr::Subscript(subscript) => return names_read_bound(&subscript.value),
        _ => return false,
    };
    BOUNDS.iter().any(|bound| name.contains(bound))
}

/// A consumer told which rows to read: it receives a row bound other than the buffer itself.
fn is_bounded_consumer(call: &ast::ExprCall, buffer: &str) -> bool {
    let bound = |expr: &Expr| {
        names_read_bound(expr) && !matches!(expr, Expr::Name(name) if name.id.as_str() == buffer)
    };
    call.arguments.args.iter().any(bound)
        || call.arguments.keywords.iter().any(|keyword| {
            keyword.arg.as_ref().is_some_and(|arg| {
                BOUNDS_KEYWORDS
                    .iter()
                    .any(|word| arg.id.as_str().contains(word))
            }) || bound(&keyword.value)
        })
}

const BOUNDS_KEYWORDS: &[&str] = &["masked_m", "num_tokens", "problem_sizes", "expected_m"];

/// Calls that take a tensor without reading its values.
fn reads_nothing(call: &ast::ExprCall) -> bool {
    let name = match &*call.func {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    ["dispose", "free", "release", "record_stream"]
        .iter()
        .any(|word| name.contains(word))
        || matches!(
            name,
            "len"
                | "isinstance"
                | "id"
                | "type"
                | "getattr"
                | "hasattr"
                | "empty_like"
                | "zeros_like"
                | "ones_like"
                | "full_like"
                | "rand_like"
                | "randn_like"
        )
}

/// A user kernel that writes or reads only the rows below a bound: a masked kernel given a
/// `masked_m` row count (the buffer itself may be that count, so it does not count).
fn is_bounded_kernel(checker: &Checker, call: &ast::ExprCall, buffer: &str) -> bool {
    if crate::rules::callee(checker, call).is_some_and(|qualified| qualified.starts_with("torch."))
    {
        return false;
    }
    let callee_masked = match &*call.func {
        Expr::Name(name) => name.id.as_str().contains("masked"),
        Expr::Attribute(attribute) => attribute.attr.id.as_str().contains("masked"),
        _ => false,
    };
    let bound = |expr: &Expr| {
        names_row_bound(expr) && !matches!(expr, Expr::Name(name) if name.id.as_str() == buffer)
    };
    callee_masked
        && (call.arguments.args.iter().any(bound)
            || call.arguments.keywords.iter().any(|keyword| {
                keyword
                    .arg
                    .as_ref()
                    .is_some_and(|arg| arg.id.as_str().contains("masked_m"))
                    || bound(&keyword.value)
            }))
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

    /// A call argument: the buffer itself, or a tuple/list holding it. `call` is `None` for a
    /// returned value.
    fn argument(&mut self, arg: &Expr, call: Option<&ast::ExprCall>) {
        let elements: &[Expr] = match arg {
            Expr::Tuple(tuple) => &tuple.elts,
            Expr::List(list) => &list.elts,
            other => std::slice::from_ref(other),
        };
        for element in elements {
            match self.tracked(element) {
                Some(name) => {
                    let event = match call {
                        Some(call) if reads_nothing(call) => continue,
                        Some(call) if is_bounded_kernel(self.checker, call, name) => Event::Bounded,
                        Some(call) if is_bounded_consumer(call, name) => Event::BoundedRead,
                        _ => Event::Unbounded,
                    };
                    self.events.push((name, event));
                }
                // `kernel(x, buf[:m])`: the kernel writes (or reads) that slice.
                None if call.is_some() && matches!(element, Expr::Subscript(_)) => {
                    self.target(element);
                }
                None => self.visit_expr(element),
            }
        }
    }

    /// An assignment target: a write through an index, or nothing tracked.
    fn target(&mut self, target: &Expr) {
        match target {
            Expr::Tuple(tuple) => tuple.elts.iter().for_each(|elt| self.target(elt)),
            Expr::List(list) => list.elts.iter().for_each(|elt| self.target(elt)),
            Expr::Starred(starred) => self.target(&starred.value),
            Expr::Subscript(subscript) => match self.tracked(&subscript.value) {
                Some(name) => {
                    self.visit_expr(&subscript.slice);
                    self.events.push((name, write_event(&subscript.slice)));
                }
                None => self.visit_expr(target),
            },
            Expr::Name(_) => {}
            other => self.visit_expr(other),
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
                    // `buf[:1].fill_(0)`: a write through the slice.
                    Expr::Attribute(attribute)
                        if FULL_WRITES.contains(&attribute.attr.id.as_str()) =>
                    {
                        self.target(&attribute.value);
                    }
                    func => self.visit_expr(func),
                }
                for arg in &call.arguments.args {
                    self.argument(arg, Some(call));
                }
                for keyword in &call.arguments.keywords {
                    let is_out = keyword
                        .arg
                        .as_ref()
                        .is_some_and(|arg| arg.id.as_str() == "out");
                    if is_out {
                        // `torch.cumsum(x, 0, out=buf[1:])`: a write through the slice;
                        // `out=buf`: all of it.
                        match self.tracked(&keyword.value) {
                            Some(name) => self.events.push((name, Event::FullWrite)),
                            None => self.target(&keyword.value),
                        }
                    } else {
                        self.argument(&keyword.value, Some(call));
                    }
                }
            }
            // A slice kept or used elsewhere: a view graphready does not follow.
            Expr::Subscript(subscript) if self.tracked(&subscript.value).is_some() => {
                let name = self.tracked(&subscript.value).unwrap_or_default();
                self.visit_expr(&subscript.slice);
                self.events.push((name, Event::Other));
            }
            // Writes inside a comprehension run in a loop: their extent is unknown.
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                let first = self.events.len();
                visitor::walk_expr(self, expr);
                for event in &mut self.events[first..] {
                    event.1 = Event::UnknownWrite;
                }
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

/// What writing through `buf[index]` does: all of it, the leading rows (`buf[:n]`, the active
/// rows, leaving the padding unwritten), or a part graphready cannot size. Writing the tail
/// (`buf[n:].zero_()`) is padding being cleared while something else writes the head; a single
/// element or a tensor of indices may be one of many writes.
fn write_event(index: &Expr) -> Event {
    if is_whole(index) {
        Event::FullWrite
    } else if is_head(index) {
        Event::PartialWrite
    } else {
        Event::UnknownWrite
    }
}

/// `[:n]`, `[0:n]`, or a tuple of those and whole slices (`[:, :n]`).
fn is_head(index: &Expr) -> bool {
    match index {
        Expr::Slice(slice) => {
            slice.upper.is_some()
                && slice.step.is_none()
                && slice.lower.as_deref().is_none_or(|lower| {
                    matches!(lower, Expr::NumberLiteral(n)
                        if matches!(&n.value, ast::Number::Int(i) if i.as_u8() == Some(0)))
                })
        }
        Expr::Tuple(tuple) => {
            tuple.elts.iter().all(|elt| is_whole(elt) || is_head(elt))
                && tuple.elts.iter().any(is_head)
        }
        _ => false,
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
fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
    // Nothing tracked: only a new allocation matters.
    if checker.rule_state.allocation.buffers.is_empty() {
        let Stmt::Assign(assign) = stmt else {
            return;
        };
        if !matches!(&*assign.value, Expr::Call(_)) || factory_of(checker, &assign.value).is_none()
        {
            return;
        }
    }
    let names: Vec<&'a str> = checker
        .rule_state
        .allocation
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
    // `scale = scale.transpose(-1, -2)`: the new name is a view of the same buffer.
    let mut view_of: Option<&'a str> = None;
    match stmt {
        Stmt::Assign(assign) => {
            match view_source(&assign.value).and_then(|source| uses.tracked(source)) {
                Some(source) if assign.targets.len() == 1 => view_of = Some(source),
                _ => uses.visit_expr(&assign.value),
            }
            for target in &assign.targets {
                uses.target(target);
                if let Expr::Name(name) = target {
                    rebound.push(name.id.as_str());
                }
            }
        }
        Stmt::AugAssign(assign) => {
            uses.visit_expr(&assign.value);
            uses.target(&assign.target);
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
            uses.argument(value, None);
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
            .allocation
            .buffers
            .iter_mut()
            .rev()
            .find(|buffer| buffer.name == name)
        else {
            continue;
        };
        buffer.state = match (buffer.state, event) {
            // Loops may cover the whole buffer, or consume it before the write; stay silent.
            _ if in_loop => State::Settled,
            (State::Settled, _) => State::Settled,
            (State::Fresh, Event::PartialWrite) => State::Partial,
            (State::Fresh, Event::Bounded) => State::Masked,
            // A consumer bounded by the same row count reads only written rows.
            (State::Masked | State::Partial, Event::Bounded | Event::BoundedRead) => buffer.state,
            (State::Partial | State::Masked, Event::Unbounded)
            | (State::Partial, Event::Returned) => {
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
    let view = view_of.and_then(|source| {
        checker
            .rule_state
            .allocation
            .buffers
            .iter()
            .rev()
            .find(|buffer| buffer.name == source)
            .map(|buffer| (buffer.allocation, buffer.factory, buffer.state))
    });
    let buffers = &mut checker.rule_state.allocation.buffers;
    buffers.retain(|buffer| !rebound.contains(&buffer.name));
    let (Stmt::Assign(assign), [name]) = (stmt, rebound.as_slice()) else {
        return;
    };
    if assign.targets.len() != 1 {
        return;
    }
    if let Some((allocation, factory, state)) = view {
        checker.rule_state.allocation.buffers.push(Buffer {
            name,
            allocation,
            factory,
            state,
        });
    } else if let Some(factory) = factory_of(checker, &assign.value) {
        let allocation = assign.value.range();
        checker.rule_state.allocation.buffers.push(Buffer {
            name,
            allocation,
            factory,
            state: State::Fresh,
        });
    }
}

/// The buffer a chain of view methods starts from: `buf.transpose(-1, -2).contiguous()`.
fn view_source(value: &Expr) -> Option<&Expr> {
    let Expr::Call(call) = value else {
        return None;
    };
    match method_call(call) {
        Some((method, receiver)) if VIEWS.contains(&method) => match receiver {
            Expr::Name(_) => Some(receiver),
            other => view_source(other),
        },
        _ => None,
    }
}
