use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::capture_illegal::rules::host_clock_as_data::CLOCKS;
use crate::rules::method_call;
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::helpers::any_over_expr;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for explicit host waits on the GPU: `torch.cuda.synchronize()`,
    /// `Stream.synchronize()`, `Event.synchronize()`, `Stream.query()` and `Event.query()`.
    ///
    /// ## Why is this bad?
    /// Each one blocks the host until queued GPU work finishes (or asks whether it has). During
    /// CUDA graph capture, synchronising a capturing stream is illegal and invalidates the
    /// capture; in a step that runs every iteration it serialises host and device. PyTorch's
    /// sync-debug mode does not even warn about `torch.cuda.synchronize()`.
    ///
    /// ## Example
    /// ```python
    /// torch.cuda.synchronize()
    /// start = time.perf_counter()
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # order work with events and stream waits, which the graph can record
    /// side_stream.wait_stream(torch.cuda.current_stream())
    /// ```
    ///
    /// `.query()` never waits: it asks whether the work has finished, and a host loop polling
    /// it (sleeping between polls) stalls nothing. Asking a capturing stream, or an event
    /// recorded in one, is illegal though: it is reported only inside captured code.
    ///
    /// Two kinds of wait are reported only inside captured code, where they break capture.
    /// Waiting on an event (`done.synchronize()`, on a `torch.cuda.Event` or a value named for
    /// one: a last word `event`, `done` or `ready`, as in `copy_done` or `d2h_event`): on the
    /// host path around the graph it is a fence, the way a pipeline consumes an asynchronous
    /// copy it recorded the event after (a scheduler waiting for the sampled tokens it copies
    /// to pinned host memory), which waits for that work and nothing else. And a wait the next
    /// statement follows with a host clock reading (`torch.cuda.synchronize()` then `start =
    /// time.perf_counter()`): it times GPU work, a measurement that needs the wait.
    ///
    /// ## Known problems
    /// `.synchronize()` with no arguments is reported on any receiver not known to be something
    /// else, since in PyTorch code it is almost always a CUDA stream, event or device; an
    /// attribute holding an object its class constructs (`self.corpus = NgramCorpus(...)`,
    /// a class named for neither a stream nor an event) is known to be something else.
    /// `.query()` is reported only on values known to be streams or events.
    pub struct ExplicitSynchronize {
        call: String,
        deliberate: bool,
    }
}

impl Violation for ExplicitSynchronize {
    const CODE: &'static str = "GR107";
    const NAME: &'static str = "explicit-synchronize";
    const CALLS: Calls = Calls::Any;

    fn message(&self) -> String {
        if self.call == ".query()" {
            return "`.query()` asks a stream or event whether its work finished, which capture forbids".to_string();
        }
        format!("`{}` blocks the host until the GPU catches up", self.call)
    }

    fn fix_title(&self) -> Option<String> {
        Some("Order work on the device with `wait_stream`/`wait_event`, or move the wait out of the captured step".to_string())
    }

    /// A wait on an event fences one piece of work, a wait before a clock reading measures,
    /// and `.query()` waits for nothing: problems only while capturing.
    fn captured_only(&self) -> bool {
        self.deliberate
    }
}

impl Check for ExplicitSynchronize {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        explicit_synchronize(checker, call);
    }
}

/// Whether an expression is a stream or an event: a typed value or a call such as
/// `torch.cuda.current_stream()`.
fn is_stream_or_event(checker: &Checker, expr: &Expr) -> bool {
    matches!(checker.ty(expr), Ty::Stream | Ty::Event)
}

/// GR107
fn explicit_synchronize(checker: &mut Checker, call: &ast::ExprCall) {
    if let Some(qualified) = checker.model.qualified_name(&call.func) {
        if matches!(
            &*qualified,
            "torch.cuda.synchronize" | "torch.accelerator.synchronize" | "torch.xpu.synchronize"
        ) {
            checker.report(
                ExplicitSynchronize {
                    call: format!("{qualified}()"),
                    deliberate: times_gpu_work(checker),
                },
                call.range(),
            );
        }
        return;
    }
    let Some((method, receiver)) = method_call(call) else {
        return;
    };
    if !call.arguments.is_empty() {
        return;
    }
    let reported = match method {
        "synchronize" => {
            is_stream_or_event(checker, receiver)
                || (matches!(checker.ty(receiver), Ty::Unknown)
                    && !holds_other_object(checker, receiver))
        }
        "query" => is_stream_or_event(checker, receiver),
        _ => false,
    };
    if reported {
        let fence = method == "synchronize"
            && match checker.ty(receiver) {
                Ty::Event => true,
                Ty::Unknown => names_an_event(receiver),
                _ => false,
            };
        checker.report(
            ExplicitSynchronize {
                call: format!(".{method}()"),
                deliberate: fence || method == "query" || times_gpu_work(checker),
            },
            call.range(),
        );
    }
}

/// Whether `self.<attribute>` holds an object of a class that is no stream or event (by its
/// constructor, `self.corpus = NgramCorpus(...)`, its last name ending in neither `Stream` nor
/// `Event`): its `synchronize()` is that class's own method (a C++ worker's, a trie's), which
/// the call graph follows where the project defines it.
fn holds_other_object(checker: &Checker, receiver: &Expr) -> bool {
    checker
        .model
        .constructed_instance(receiver)
        .is_some_and(|class| {
            let last = class.rsplit('.').next().unwrap_or(&class);
            !last.ends_with("Stream") && !last.ends_with("Event") && !class.starts_with("torch.")
        })
}

/// Whether the statement after the wait reads a host clock (`start = time.perf_counter()`,
/// `elapsed = time.perf_counter() - start`, `return time.perf_counter() - start`): the wait
/// times GPU work.
fn times_gpu_work(checker: &Checker) -> bool {
    let value = match checker.next_statement() {
        Some(Stmt::Assign(assign)) => &*assign.value,
        Some(Stmt::AnnAssign(ast::StmtAnnAssign {
            value: Some(value), ..
        })) => &**value,
        Some(Stmt::AugAssign(assign)) => &*assign.value,
        Some(Stmt::Expr(expr)) => &*expr.value,
        Some(Stmt::Return(ast::StmtReturn {
            value: Some(value), ..
        })) => &**value,
        _ => return false,
    };
    any_over_expr(value, &|expr: &Expr| {
        matches!(expr, Expr::Call(call) if crate::rules::callee(checker, call)
            .is_some_and(|qualified| CLOCKS.contains(&&*qualified)))
    })
}

/// Whether a value is named for an event: the last `_` word of its name (or attribute) is
/// `event`, `done` or `ready` (`copy_done`, `self.prepare_inputs_event`, `publish_ready`).
fn names_an_event(expr: &Expr) -> bool {
    let name = match expr {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.as_str(),
        _ => return false,
    };
    name.rsplit('_').next().is_some_and(|word| {
        matches!(
            word.to_ascii_lowercase().as_str(),
            "event" | "done" | "ready"
        )
    })
}
