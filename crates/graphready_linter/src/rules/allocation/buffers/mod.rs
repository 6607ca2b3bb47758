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
    pub factory: &'static str,
    pub allocation: TextRange,
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
    factory: &'static str,
    state: State,
}

/// What a statement does with a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Event {
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

/// What an event does to a buffer: its next state, and whether the event uses a buffer written
/// only in part as a whole.
fn transition(state: State, event: Event, in_loop: bool) -> (State, bool) {
    match (state, event) {
        // Loops may cover the whole buffer, or consume it before the write; stay silent.
        _ if in_loop => (State::Settled, false),
        (State::Settled, _) => (State::Settled, false),
        (State::Fresh, Event::PartialWrite) => (State::Partial, false),
        (State::Fresh, Event::Bounded) => (State::Masked, false),
        // A consumer bounded by the same row count reads only written rows.
        (State::Masked | State::Partial, Event::Bounded | Event::BoundedRead) => (state, false),
        (State::Partial | State::Masked, Event::Unbounded) | (State::Partial, Event::Returned) => {
            (State::Settled, true)
        }
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
        let (state, leaks) = transition(buffer.state, event, in_loop);
        if leaks {
            found.push(Leak {
                name: buffer.name,
                factory: buffer.factory,
                allocation: buffer.allocation,
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
            .map(|buffer| (buffer.allocation, buffer.factory, buffer.state))
    });
    let buffers = &mut checker.rule_state.allocation.buffers;
    buffers.retain(|buffer| !rebound.contains(&buffer.name));
    let (Stmt::Assign(assign), [name]) = (stmt, rebound.as_slice()) else {
        return found;
    };
    if assign.targets.len() != 1 {
        return found;
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
    use super::uses::{names_read_bound, names_row_bound, write_event};
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
        let (state, leaks) = transition(State::Fresh, Event::PartialWrite, false);
        assert_eq!((state, leaks), (State::Partial, false));
        assert_eq!(
            transition(state, Event::Unbounded, false),
            (State::Settled, true)
        );
        assert_eq!(
            transition(state, Event::Returned, false),
            (State::Settled, true)
        );
        // A consumer bounded like the write reads only written rows.
        assert_eq!(
            transition(state, Event::BoundedRead, false),
            (State::Partial, false)
        );
    }

    #[test]
    fn a_masked_write_leaks_to_an_unbounded_consumer_but_not_when_returned() {
        let (state, _) = transition(State::Fresh, Event::Bounded, false);
        assert_eq!(state, State::Masked);
        assert_eq!(
            transition(state, Event::Unbounded, false),
            (State::Settled, true)
        );
        // The caller holds the same bound.
        assert_eq!(
            transition(state, Event::Returned, false),
            (State::Settled, false)
        );
        assert_eq!(
            transition(state, Event::Bounded, false),
            (State::Masked, false)
        );
    }

    #[test]
    fn whole_writes_loops_and_unknown_uses_settle_silently() {
        for event in [Event::FullWrite, Event::Other, Event::UnknownWrite] {
            assert_eq!(
                transition(State::Fresh, event, false),
                (State::Settled, false)
            );
        }
        assert_eq!(
            transition(State::Partial, Event::Unbounded, true),
            (State::Settled, false)
        );
        assert_eq!(
            transition(State::Settled, Event::Unbounded, false),
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
        assert!(names_row_bound(&parse("masked_m")));
        assert!(!names_row_bound(&parse("num_tokens")));
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
