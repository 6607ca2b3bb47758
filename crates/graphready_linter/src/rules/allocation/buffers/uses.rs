//! What one statement does with the tracked buffers: the events, in evaluation order.

use super::Event;
use crate::checker::Checker;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr};

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

/// Per-expert row counts a masked kernel writes up to (the rows past them stay unwritten). The
/// first two bound the rows of the data a masked kernel writes; the others bound the scales a
/// quantisation kernel writes (a fused MoE kernel given `num_tokens_post_padded` still writes
/// every routed row of its output).
const ROW_COUNTS: &[&str] = &[
    "masked_m",
    "expert_num_tokens",
    "tokens_per_expert",
    "num_tokens_per_expert",
    "num_tokens_post_padded",
    "num_recv_tokens_per_expert",
];

/// The row counts that bound a write into a scale buffer, or into a data buffer.
pub(super) fn row_counts(scale: bool) -> &'static [&'static str] {
    if scale {
        ROW_COUNTS
    } else {
        &ROW_COUNTS[..2]
    }
}

/// An argument that names a per-expert row count: `masked_m`, `self.masked_m`,
/// `expert_num_tokens`, `num_tokens_post_padded`.
pub(super) fn names_row_bound(expr: &Expr, counts: &[&str]) -> bool {
    let name = match expr {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    counts.iter().any(|count| name.contains(count))
}

/// Arguments that bound what a consumer reads: a row count (`masked_m`, `num_tokens`) or the
/// per-group sizes and offsets of a grouped kernel.
pub(super) fn names_read_bound(expr: &Expr) -> bool {
    const BOUNDS: &[&str] = &[
        "masked_m",
        "tokens_per_expert",
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

const BOUNDS_KEYWORDS: &[&str] = &[
    "masked_m",
    "num_tokens",
    "tokens_per_expert",
    "problem_sizes",
    "expected_m",
];

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

/// A user kernel that writes or reads only the rows below a per-expert count: given a
/// `masked_m`, `expert_num_tokens` or similar argument (the buffer itself may be that count, so
/// it does not count). A fresh buffer handed to one is written, not read.
fn is_bounded_kernel(checker: &Checker, call: &ast::ExprCall, buffer: &str, scale: bool) -> bool {
    if crate::rules::callee(checker, call).is_some_and(|qualified| qualified.starts_with("torch."))
    {
        return false;
    }
    let counts = row_counts(scale);
    let is_buffer = |expr: &Expr| matches!(expr, Expr::Name(name) if name.id.as_str() == buffer);
    let bound = |expr: &Expr| names_row_bound(expr, counts) && !is_buffer(expr);
    let named_bound = |arg: &str| counts.iter().any(|count| arg.contains(count));
    call.arguments.args.iter().any(bound)
        || call.arguments.keywords.iter().any(|keyword| {
            bound(&keyword.value)
                || (!is_buffer(&keyword.value)
                    && keyword
                        .arg
                        .as_ref()
                        .is_some_and(|arg| named_bound(arg.id.as_str())))
        })
}

/// Collects, in evaluation order, what an expression does with the tracked buffers.
pub(super) struct Uses<'c, 'a, 'n> {
    pub(super) checker: &'c Checker<'a>,
    pub(super) names: &'n [&'a str],
    /// The tracked names that are scale-factor buffers.
    pub(super) scales: &'n [&'a str],
    pub(super) events: Vec<(&'a str, Event)>,
}

impl<'a> Uses<'_, 'a, '_> {
    pub(super) fn tracked(&self, expr: &Expr) -> Option<&'a str> {
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
    pub(super) fn argument(&mut self, arg: &Expr, call: Option<&ast::ExprCall>) {
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
                        Some(call)
                            if is_bounded_kernel(
                                self.checker,
                                call,
                                name,
                                self.scales.contains(&name),
                            ) =>
                        {
                            Event::Bounded
                        }
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
    pub(super) fn target(&mut self, target: &Expr) {
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
pub(super) fn write_event(index: &Expr) -> Event {
    if is_whole(index) {
        Event::FullWrite
    } else if is_head(index) {
        Event::PartialWrite
    } else if is_row_head(index) {
        Event::RowPartialWrite
    } else {
        Event::UnknownWrite
    }
}

/// `[e, :n]`, `[e, :n, :]`: the leading rows of one expert (or row) selected by an index.
fn is_row_head(index: &Expr) -> bool {
    let Expr::Tuple(tuple) = index else {
        return false;
    };
    let Some((first, rest)) = tuple.elts.split_first() else {
        return false;
    };
    !matches!(
        first,
        Expr::Slice(_) | Expr::EllipsisLiteral(_) | Expr::NoneLiteral(_)
    ) && rest.iter().all(|elt| is_whole(elt) || is_head(elt))
        && rest.iter().any(is_head)
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
