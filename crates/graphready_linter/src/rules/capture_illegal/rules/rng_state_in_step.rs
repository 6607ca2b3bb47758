use crate::checker::Checker;
use crate::declare_violation;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for seeding or reading and restoring the random number
    /// generator state: `torch.manual_seed`, `torch.seed`, `torch.cuda.manual_seed(_all)`,
    /// `torch.get_rng_state` / `set_rng_state` and their `torch.cuda` / `torch.random` forms.
    ///
    /// ## Why is this bad?
    /// A captured graph draws random numbers from a seed and offset that PyTorch registers at
    /// capture time and advances on every replay. Reseeding or reading the state in the step
    /// happens once, on the host, during capture: replays neither reseed nor see the new state,
    /// and reading the CUDA generator's state while capturing raises an error.
    ///
    /// ## Example
    /// ```python
    /// def sample(self, logits):
    ///     torch.manual_seed(self.seed)
    ///     return torch.multinomial(logits.softmax(-1), 1)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// torch.manual_seed(seed)  # once, before capture
    ///
    /// def sample(self, logits):
    ///     return torch.multinomial(logits.softmax(-1), 1)
    /// ```
    pub struct RngStateInStep {
        call: String,
    }
}

impl Violation for RngStateInStep {
    const CODE: &'static str = "GR503";
    const NAME: &'static str = "rng-state-in-step";
    const CAPTURED_ONLY: bool = true;
    const CALLS: Calls = Calls::named(&[
        "manual_seed",
        "seed",
        "get_rng_state",
        "set_rng_state",
        "manual_seed_all",
        "seed_all",
        "get_rng_state_all",
        "set_rng_state_all",
    ]);

    fn message(&self) -> String {
        format!(
            "`{}` changes or reads the RNG state inside the step; replay does not repeat it",
            self.call
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Seed once before capture; for per-request seeds use a generator registered with \
             `graph.register_generator_state`"
                .to_string(),
        )
    }
}

impl Check for RngStateInStep {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        rng_state_in_step(checker, call);
    }
}

const RNG_STATE_CALLS: &[&str] = &[
    "torch.manual_seed",
    "torch.seed",
    "torch.get_rng_state",
    "torch.set_rng_state",
    "torch.random.manual_seed",
    "torch.random.seed",
    "torch.random.get_rng_state",
    "torch.random.set_rng_state",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "torch.cuda.seed",
    "torch.cuda.seed_all",
    "torch.cuda.get_rng_state",
    "torch.cuda.get_rng_state_all",
    "torch.cuda.set_rng_state",
    "torch.cuda.set_rng_state_all",
    "torch.cuda.random.manual_seed",
    "torch.cuda.random.manual_seed_all",
];

/// GR503
fn rng_state_in_step(checker: &mut Checker, call: &ast::ExprCall) {
    let Some(qualified) = crate::rules::callee(checker, call) else {
        return;
    };
    if RNG_STATE_CALLS.contains(&&*qualified) {
        checker.report(
            RngStateInStep {
                call: qualified.to_string(),
            },
            call.range(),
        );
    }
}
