use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::method_call;
use crate::rules::op_tags::{lookup, NONDETERMINISTIC_SEEDED};
use crate::semantic::keyword;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for random operations drawing from a user-created
    /// generator: `torch.randn(..., generator=g)`, `x.uniform_(generator=g)`,
    /// `torch.multinomial(p, n, generator=g)`. The random operations are the ones PyTorch tags
    /// `nondeterministic_seeded`.
    ///
    /// ## Why is this bad?
    /// PyTorch advances the default CUDA generator's offset on every replay, but a generator you
    /// created yourself is only handled if it is registered with the graph
    /// (`graph.register_generator_state(g)` on recent PyTorch releases). Otherwise the capture
    /// fails or every replay repeats the random numbers drawn at capture time.
    ///
    /// ## Example
    /// ```python
    /// def sample(self, probs):
    ///     return torch.multinomial(probs, 1, generator=self.generator)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// graph = torch.cuda.CUDAGraph()
    /// graph.register_generator_state(model.generator)  # before capture
    /// with torch.cuda.graph(graph):
    ///     out = model.sample(probs)
    /// ```
    ///
    /// ## Known problems
    /// A generator registered elsewhere is still reported; silence the line with
    /// `# noqa: GR504`.
    pub struct UnregisteredGeneratorInStep {
        op: String,
    }
}

impl Violation for UnregisteredGeneratorInStep {
    const CODE: &'static str = "GR504";
    const NAME: &'static str = "unregistered-generator-in-step";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::Named {
        names: &[],
        keywords: &["generator"],
    };

    fn message(&self) -> String {
        format!(
            "`{}` draws from a user generator that the captured graph does not advance",
            self.op
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Register the generator with `graph.register_generator_state(g)` before capture, or \
             use the default generator"
                .to_string(),
        )
    }
}

impl Check for UnregisteredGeneratorInStep {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        unregistered_generator_in_step(checker, call);
    }
}

/// GR504
fn unregistered_generator_in_step(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(generator) = keyword(call, "generator") else {
        return;
    };
    if matches!(generator, Expr::NoneLiteral(_)) {
        return;
    }
    let op = match crate::rules::callee(checker, call) {
        Some(qualified) => match qualified.strip_prefix("torch.") {
            Some(name) if lookup(NONDETERMINISTIC_SEEDED, name, false) => qualified.to_string(),
            _ => return,
        },
        None => match method_call(call) {
            Some((method, _)) if lookup(NONDETERMINISTIC_SEEDED, method, true) => {
                format!(".{method}()")
            }
            _ => return,
        },
    };
    checker.report(UnregisteredGeneratorInStep { op }, call.range());
}
