use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::method_call;
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for `Event.elapsed_time(other)`.
    ///
    /// ## Why is this bad?
    /// `elapsed_time` reads both events' timestamps on the host and needs them to have
    /// completed: it waits for the device, and during capture the events are only recorded into
    /// the graph, never completed, so the call fails. Replay would not rerun the host read anyway.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     self.start.record()
    ///     y = self.layer(x)
    ///     self.end.record()
    ///     self.times.append(self.start.elapsed_time(self.end))
    ///     return y
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def forward(self, x):
    ///     self.start.record()
    ///     y = self.layer(x)
    ///     self.end.record()
    ///     return y
    /// # after replay, outside the graph:
    /// # self.end.synchronize(); elapsed = self.start.elapsed_time(self.end)
    /// ```
    pub struct EventElapsedTimeInStep {}
}

impl Violation for EventElapsedTimeInStep {
    const CODE: &'static str = "GR508";
    const NAME: &'static str = "event-elapsed-time-in-step";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&["elapsed_time"]);

    fn message(&self) -> String {
        "`Event.elapsed_time()` waits for the device on the host inside the step".to_string()
    }

    fn fix_title(&self) -> Option<String> {
        Some("Record the events in the step and read the elapsed time after replay".to_string())
    }
}

impl Check for EventElapsedTimeInStep {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        event_elapsed_time_in_step(checker, call);
    }
}

/// GR508
fn event_elapsed_time_in_step(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(("elapsed_time", receiver)) = method_call(call) else {
        return;
    };
    if call.arguments.args.len() != 1 || checker.model.qualified_name(receiver).is_some() {
        return;
    }
    if matches!(checker.ty(receiver), Ty::Event | Ty::Unknown) {
        checker.report(EventElapsedTimeInStep {}, call.range());
    }
}
