//! Which calls run a model: the seeds of the per-step host path (`hot_path::steps`).

use super::SummaryBuilder;
use ruff_python_ast::{self as ast, Expr};

impl SummaryBuilder<'_> {
    /// Whether a call runs a model (see [`calls_a_model`]), other than a class's `__call__`
    /// running its own `forward`, and other than an awaited call: a model's `forward` is no
    /// coroutine, so `await client.forward(request)` sends a request on (an HTTP handler to the
    /// scheduler), once per request.
    pub(super) fn runs_model(&self, call: &ast::ExprCall) -> bool {
        calls_a_model(call, self.method_self.is_some())
            && !self.forwards_own_call(call)
            && self.awaited != Some(ruff_text_size::Ranged::start(call))
    }

    /// The checker is about to visit the call an `await` awaits.
    pub(crate) fn awaiting(&mut self, call: &ast::ExprCall) {
        self.awaited = Some(ruff_text_size::Ranged::start(call));
    }

    /// Whether a call is `self.forward(...)` in the class's own `__call__`: the object's call
    /// protocol (what `nn.Module.__call__` does for modules), not a run of a model; see
    /// `hot_path::steps::forwards_own_call`.
    fn forwards_own_call(&self, call: &ast::ExprCall) -> bool {
        let Expr::Attribute(attribute) = &*call.func else {
            return false;
        };
        attribute.attr.id.as_str() == "forward"
            && matches!((&*attribute.value, &self.method_self),
                (Expr::Name(receiver), Some((_, own))) if receiver.id.as_str() == *own)
            && self
                .building
                .last()
                .is_some_and(|function| function.qualname.rsplit('.').next() == Some("__call__"))
    }
}

/// Whether a call runs a model: `x.forward(...)`, `self.model(...)`, `model(...)`,
/// `model_forward(...)`, and `self(...)` in a method (a model calling itself, as generation
/// mixins do).
fn calls_a_model(call: &ast::ExprCall, in_method: bool) -> bool {
    match &*call.func {
        Expr::Attribute(attribute) => matches!(attribute.attr.id.as_str(), "forward" | "model"),
        Expr::Name(name) => {
            let name = name.id.as_str();
            matches!(name, "model" | "model_forward") || (in_method && name == "self")
        }
        _ => false,
    }
}

/// Words that end the name of what holds a model: `self.model`, `draft_model`, `model_runner`,
/// a `drafter`, an `llm` or `vlm`, a diffusion pipeline's `transformer` or `unet`, a graph
/// `wrapper`, a `backbone`, an RL `policy`.
const MODEL_HOLDERS: &[&str] = &[
    "model",
    "runner",
    "transformer",
    "dit",
    "unet",
    "net",
    "module",
    "wrapper",
    "graph",
    "engine",
    "lm",
    "backbone",
    "executor",
    "worker",
    "draft",
    "drafter",
    "policy",
];

/// Whether an unresolved `x.forward(...)` is named for a model: the receiver's last name
/// (`self.model`, `draft_model`, `self.models[i]`, `self`) ends with a word of
/// [`MODEL_HOLDERS`]. A call of a submodule the function is handed (`rotary_emb.forward(ids)`
/// preparing a pipeline's rotary tables, `attn_impl.forward(q, k, v)`, `nn.Embedding.forward`
/// in an override) runs a layer, not the model: it says nothing of how often the function
/// runs. Other call forms (`model(...)`, `self(...)`, `model.model(...)`) name the model
/// already.
pub(super) fn names_a_model(call: &ast::ExprCall) -> bool {
    let Expr::Attribute(attribute) = &*call.func else {
        return true;
    };
    if attribute.attr.id.as_str() != "forward" {
        return true;
    }
    let mut receiver = &*attribute.value;
    while let Expr::Subscript(subscript) = receiver {
        receiver = &subscript.value;
    }
    let name = match receiver {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return true,
    };
    if name == "self" {
        return true;
    }
    let last = name
        .rsplit('_')
        .find(|word| !word.is_empty())
        .unwrap_or(name);
    let last = last.to_ascii_lowercase();
    let singular = last.strip_suffix('s').unwrap_or(&last);
    MODEL_HOLDERS
        .iter()
        .any(|word| last.ends_with(word) || singular.ends_with(word))
}

#[cfg(test)]
mod tests {
    use super::names_a_model;
    use ruff_python_ast::Expr;

    fn names(source: &str) -> bool {
        let parsed = ruff_python_parser::parse_expression(source).expect("valid expression");
        let Expr::Call(call) = parsed.expr() else {
            panic!("not a call: {source}");
        };
        names_a_model(call)
    }

    #[test]
    fn forward_calls_named_for_a_model() {
        for source in [
            "self.model.forward(ids)",
            "self.draft_model.forward(ids)",
            "self.model_runner.forward(batch)",
            "self.models[i].forward(ids)",
            "self.vlm.forward(ids)",
            "pipe.transformer.forward(latents)",
            "self.forward(ids)",
            "get_model().forward(ids)",
            "model(ids)",
        ] {
            assert!(names(source), "{source}");
        }
    }

    #[test]
    fn forward_calls_of_layers() {
        for source in [
            "rotary_emb.forward(ids)",
            "self.attn_impl.forward(q, k, v)",
            "nn.Embedding.forward(self, ids)",
            "attn_backend.forward(q, k, v, layer, batch)",
            "self.lm_head.forward(hidden)",
        ] {
            assert!(!names(source), "{source}");
        }
    }
}
