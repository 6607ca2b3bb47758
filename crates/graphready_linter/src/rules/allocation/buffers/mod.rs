//! The buffer dataflow behind GR404: buffers from `torch.empty` and friends, followed statement
//! by statement through one function — written whole, written in part (a slice, a masked kernel
//! given a row bound), handed to consumers with or without a row bound, viewed, returned — to
//! find the ones written in part and then used whole.

use crate::checker::Checker;
use crate::rules::method_call;
use uses::Uses;

mod uses;
use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::{Ranged, TextRange};

/// A buffer written in part and then used whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Leak<'a> {
    pub name: &'a str,
    pub factory: Factory<'a>,
    pub allocation: TextRange,
    /// Used whole by being returned: a scale buffer whose caller's consumers read every row.
    pub returned: bool,
}

/// Where a tracked buffer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Factory<'a> {
    /// `torch.empty`, `torch.empty_like`, `torch.empty_strided`, `.new_empty()`.
    Torch(&'static str),
    /// A project function that returns such a buffer unwritten (`create_output_scale(...)`).
    Helper(&'a str),
}

impl std::fmt::Display for Factory<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Factory::Torch(name) => f.write_str(name),
            Factory::Helper(name) => write!(f, "{name}(), which returns an uninitialised buffer"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
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
    factory: Factory<'a>,
    state: State,
    /// A scale-factor buffer (named like one, and fp32 or a dtype that may be fp32): layout
    /// transforms and UE8M0 checks read every row, so returning it is using it whole.
    scale: bool,
}

/// What a statement does with a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
    /// A slice of it is written (`buf[:n] = ...`).
    PartialWrite,
    /// Part of one row or expert is written (`buf[e, :n] = ...`): in a loop over experts, a
    /// per-expert fill that leaves each expert's tail unwritten.
    RowPartialWrite,
    /// All of it is written (`buf[:] = `, `buf.zero_()`, `buf.copy_(...)`).
    FullWrite,
    /// Handed to a kernel with a per-expert row count (`masked_m`, `expert_num_tokens`): a
    /// partial write, or a consumer bounded like one.
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

/// The factory of a fresh, uninitialised allocation: a `torch.empty`-like call, or a call of a
/// function known to return one (this module's, learned callees first, or another module's).
fn factory_of<'a>(checker: &Checker<'a>, value: &'a Expr) -> Option<Factory<'a>> {
    let Expr::Call(call) = value else {
        return None;
    };
    let name = match &*call.func {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return None,
    };
    let qualified = crate::rules::callee(checker, call);
    if matches!(name, "empty" | "empty_like" | "empty_strided" | "new_empty") {
        return match qualified.as_deref() {
            Some("torch.empty") => Some(Factory::Torch("torch.empty")),
            Some("torch.empty_like") => Some(Factory::Torch("torch.empty_like")),
            Some("torch.empty_strided") => Some(Factory::Torch("torch.empty_strided")),
            Some(_) => None,
            None => matches!(method_call(call), Some(("new_empty", _)))
                .then_some(Factory::Torch(".new_empty()")),
        };
    }
    let helper = match (qualified.as_deref(), &*call.func) {
        (Some(qualified), _) => checker.model.returns_uninitialized_buffer(qualified),
        (None, Expr::Name(_)) => checker.model.is_learned_uninitialized_buffer(name),
        (None, Expr::Attribute(attribute)) => {
            match (
                &*attribute.value,
                checker.model.self_name(),
                class_of(checker),
            ) {
                (Expr::Name(receiver), Some(self_name), Some(class))
                    if receiver.id.as_str() == self_name =>
                {
                    checker
                        .model
                        .is_learned_uninitialized_buffer(&format!("{class}.{name}"))
                }
                _ => false,
            }
        }
        _ => false,
    };
    helper.then_some(Factory::Helper(name))
}

/// The class of the method being visited: `Class` of `Class.method`.
fn class_of<'c>(checker: &'c Checker) -> Option<&'c str> {
    checker.model.self_name()?;
    checker.function()?.rsplit_once('.').map(|(class, _)| class)
}

/// Whether a returned value is a fresh allocation nothing wrote: the allocation itself, a view or
/// a slice of one (a padded buffer handed out as its real rows), or a tracked buffer still fresh.
pub(crate) fn returns_fresh(checker: &Checker, value: &Expr) -> bool {
    match value {
        Expr::Call(call) => match method_call(call) {
            Some((method, receiver)) if VIEWS.contains(&method) => returns_fresh(checker, receiver),
            _ => factory_of(checker, value).is_some(),
        },
        Expr::Subscript(subscript) => returns_fresh(checker, &subscript.value),
        Expr::Name(name) => checker
            .rule_state
            .allocation
            .buffers
            .iter()
            .rev()
            .find(|buffer| buffer.name == name.id.as_str())
            .is_some_and(|buffer| buffer.state == State::Fresh),
        _ => false,
    }
}

/// Whether a buffer is a scale-factor buffer: named like one (`*scale*`, `*_sf`, `sf_*`) and of a
/// dtype that is or may be fp32 (none given, `torch.float32`, a conditional with fp32 in one
/// branch, or one graphready cannot read).
fn is_scale_buffer(checker: &Checker, name: &str, value: &Expr) -> bool {
    let lower = name.to_ascii_lowercase();
    let named = lower.contains("scale")
        || lower == "sf"
        || lower.ends_with("_sf")
        || lower.starts_with("sf_")
        || lower.contains("_sf_");
    if !named {
        return false;
    }
    let Expr::Call(call) = value else {
        return true;
    };
    crate::semantic::keyword(call, "dtype").is_none_or(|dtype| may_be_fp32(checker, dtype))
}

fn may_be_fp32(checker: &Checker, dtype: &Expr) -> bool {
    match dtype {
        Expr::If(if_expr) => {
            may_be_fp32(checker, &if_expr.body) || may_be_fp32(checker, &if_expr.orelse)
        }
        _ => match checker.model.qualified_name(dtype).as_deref() {
            Some("torch.float32" | "torch.float") => true,
            Some(other) => !other.starts_with("torch."),
            None => true,
        },
    }
}

/// What an event does to a buffer: its next state, and whether the event uses a buffer written
/// only in part as a whole.
fn transition(state: State, event: Event, in_loop: bool, scale: bool) -> (State, bool) {
    match (state, event) {
        (State::Settled, _) => (State::Settled, false),
        // A scale buffer filled per expert in a loop, each expert only up to its row count.
        (State::Fresh | State::Partial, Event::RowPartialWrite) if in_loop && scale => {
            (State::Partial, false)
        }
        // A masked kernel launched per expert.
        (State::Fresh, Event::Bounded) if in_loop && scale => (State::Masked, false),
        // Loops may cover the whole buffer, or consume it before the write; stay silent.
        _ if in_loop => (State::Settled, false),
        (State::Fresh, Event::PartialWrite) => (State::Partial, false),
        (State::Fresh, Event::Bounded) => (State::Masked, false),
        // A consumer bounded by the same row count reads only written rows.
        (State::Masked | State::Partial, Event::Bounded | Event::BoundedRead) => (state, false),
        (State::Partial | State::Masked, Event::Unbounded) | (State::Partial, Event::Returned) => {
            (State::Settled, true)
        }
        // The caller holds the same bound for data; a scale buffer's consumers read every row.
        (State::Masked, Event::Returned) => (State::Settled, scale),
        _ => (State::Settled, false),
    }
}

/// Follows the function's buffers through one statement: what it writes, hands on or returns,
/// and the names it rebinds. Returns the buffers found written in part and then used whole.
pub(crate) fn follow<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) -> Vec<Leak<'a>> {
    // Nothing tracked: only a new allocation matters.
    if checker.rule_state.allocation.buffers.is_empty() {
        let Stmt::Assign(assign) = stmt else {
            return Vec::new();
        };
        if !matches!(&*assign.value, Expr::Call(_)) || factory_of(checker, &assign.value).is_none()
        {
            return Vec::new();
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
    let scales: Vec<&'a str> = checker
        .rule_state
        .allocation
        .buffers
        .iter()
        .filter(|buffer| buffer.state != State::Settled && buffer.scale)
        .map(|buffer| buffer.name)
        .collect();
    let mut uses = Uses {
        checker,
        names: &names,
        scales: &scales,
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
    let mut found = Vec::new();
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
        let (state, leaks) = transition(buffer.state, event, in_loop, buffer.scale);
        if leaks {
            found.push(Leak {
                name: buffer.name,
                factory: buffer.factory,
                allocation: buffer.allocation,
                returned: event == Event::Returned,
            });
        }
        buffer.state = state;
    }
    if rebound.is_empty() {
        return found;
    }
    let view = view_of.and_then(|source| {
        checker
            .rule_state
            .allocation
            .buffers
            .iter()
            .rev()
            .find(|buffer| buffer.name == source)
            .map(|buffer| {
                (
                    buffer.allocation,
                    buffer.factory,
                    buffer.state,
                    buffer.scale,
                )
            })
    });
    let buffers = &mut checker.rule_state.allocation.buffers;
    buffers.retain(|buffer| !rebound.contains(&buffer.name));
    let (Stmt::Assign(assign), [name]) = (stmt, rebound.as_slice()) else {
        return found;
    };
    if assign.targets.len() != 1 {
        return found;
    }
    if let Some((allocation, factory, state, scale)) = view {
        checker.rule_state.allocation.buffers.push(Buffer {
            name,
            allocation,
            factory,
            state,
            scale,
        });
    } else if let Some(factory) = factory_of(checker, &assign.value) {
        let allocation = assign.value.range();
        let scale = is_scale_buffer(checker, name, &assign.value);
        checker.rule_state.allocation.buffers.push(Buffer {
            name,
            allocation,
            factory,
            state: State::Fresh,
            scale,
        });
    }
    found
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

#[cfg(test)]
mod tests {
    use super::uses::{names_read_bound, names_row_bound, row_counts, write_event};
    use super::*;

    fn index(source: &str) -> Expr {
        let parsed = ruff_python_parser::parse_expression(source).expect("an expression");
        match *parsed.into_syntax().body {
            Expr::Subscript(subscript) => *subscript.slice,
            other => panic!("not a subscript: {other:?}"),
        }
    }

    #[test]
    fn writes_through_an_index_are_sized() {
        assert_eq!(write_event(&index("b[:]")), Event::FullWrite);
        assert_eq!(write_event(&index("b[...]")), Event::FullWrite);
        assert_eq!(write_event(&index("b[:, :]")), Event::FullWrite);
        assert_eq!(write_event(&index("b[:n]")), Event::PartialWrite);
        assert_eq!(write_event(&index("b[0:n]")), Event::PartialWrite);
        assert_eq!(write_event(&index("b[:, :n]")), Event::PartialWrite);
        // The tail (padding being cleared), one element, a tensor of indices: unknown extent.
        assert_eq!(write_event(&index("b[n:]")), Event::UnknownWrite);
        assert_eq!(write_event(&index("b[0]")), Event::UnknownWrite);
        assert_eq!(write_event(&index("b[idx]")), Event::UnknownWrite);
        assert_eq!(write_event(&index("b[::2]")), Event::UnknownWrite);
    }

    #[test]
    fn a_partial_write_used_whole_leaks() {
        let (state, leaks) = transition(State::Fresh, Event::PartialWrite, false, false);
        assert_eq!((state, leaks), (State::Partial, false));
        assert_eq!(
            transition(state, Event::Unbounded, false, false),
            (State::Settled, true)
        );
        assert_eq!(
            transition(state, Event::Returned, false, false),
            (State::Settled, true)
        );
        // A consumer bounded like the write reads only written rows.
        assert_eq!(
            transition(state, Event::BoundedRead, false, false),
            (State::Partial, false)
        );
    }

    #[test]
    fn a_masked_write_leaks_to_an_unbounded_consumer_but_not_when_returned() {
        let (state, _) = transition(State::Fresh, Event::Bounded, false, false);
        assert_eq!(state, State::Masked);
        assert_eq!(
            transition(state, Event::Unbounded, false, false),
            (State::Settled, true)
        );
        // The caller holds the same bound.
        assert_eq!(
            transition(state, Event::Returned, false, false),
            (State::Settled, false)
        );
        assert_eq!(
            transition(state, Event::Bounded, false, false),
            (State::Masked, false)
        );
    }

    #[test]
    fn a_scale_buffer_written_in_part_and_returned_leaks() {
        let (state, _) = transition(State::Fresh, Event::Bounded, false, true);
        assert_eq!(
            transition(state, Event::Returned, false, true),
            (State::Settled, true)
        );
        // Filled per expert in a loop, each expert up to its count.
        let (state, _) = transition(State::Fresh, Event::RowPartialWrite, true, true);
        assert_eq!(state, State::Partial);
        assert_eq!(
            transition(state, Event::Returned, false, true),
            (State::Settled, true)
        );
        // A data buffer filled the same way stays silent.
        assert_eq!(
            transition(State::Fresh, Event::RowPartialWrite, true, false),
            (State::Settled, false)
        );
        assert_eq!(write_event(&index("b[e, :n]")), Event::RowPartialWrite);
        assert_eq!(write_event(&index("b[e, :n, :]")), Event::RowPartialWrite);
        assert_eq!(write_event(&index("b[e, n:]")), Event::UnknownWrite);
    }

    #[test]
    fn whole_writes_loops_and_unknown_uses_settle_silently() {
        for event in [Event::FullWrite, Event::Other, Event::UnknownWrite] {
            assert_eq!(
                transition(State::Fresh, event, false, false),
                (State::Settled, false)
            );
        }
        assert_eq!(
            transition(State::Partial, Event::Unbounded, true, false),
            (State::Settled, false)
        );
        assert_eq!(
            transition(State::Settled, Event::Unbounded, false, false),
            (State::Settled, false)
        );
    }

    #[test]
    fn row_bounds_are_recognised_by_name() {
        let parse = |s: &str| {
            *ruff_python_parser::parse_expression(s)
                .unwrap()
                .into_syntax()
                .body
        };
        assert!(names_read_bound(&parse("masked_m")));
        assert!(names_read_bound(&parse("self.expert_offsets")));
        assert!(names_read_bound(&parse("num_tokens[0]")));
        assert!(!names_read_bound(&parse("hidden_states")));
        let (data, scale) = (row_counts(false), row_counts(true));
        assert!(names_row_bound(&parse("masked_m"), data));
        assert!(names_row_bound(&parse("expert_num_tokens"), data));
        assert!(!names_row_bound(
            &parse("self.num_tokens_post_padded"),
            data
        ));
        assert!(names_row_bound(
            &parse("self.num_tokens_post_padded"),
            scale
        ));
        assert!(!names_row_bound(&parse("num_tokens"), scale));
    }

    #[test]
    fn views_lead_back_to_their_buffer() {
        let parse = |s: &str| {
            *ruff_python_parser::parse_expression(s)
                .unwrap()
                .into_syntax()
                .body
        };
        let value = parse("scale.transpose(-1, -2).contiguous()");
        assert!(matches!(view_source(&value), Some(Expr::Name(n)) if n.id.as_str() == "scale"));
        assert!(view_source(&parse("scale.float()")).is_none());
    }
}
