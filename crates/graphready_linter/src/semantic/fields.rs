//! Fields an engine declares host-resident. vLLM's multimodal processors say which of a
//! model's inputs stay in host memory when batched (`image_grid_thw=
//! MultiModalFieldConfig.batched("image", keep_on_cpu=True)`): the model's code reads them as
//! host tensors (`grid_thw = kwargs.pop("image_grid_thw")`, `image_input["image_grid_thw"]`,
//! `image_input.image_grid_thw`), though the input schemas annotate them `torch.Tensor`.

use super::model::SemanticModel;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr};
use rustc_hash::FxHashSet;

/// The names of the fields a module declares host-resident: the keyword or string key that a
/// call with `keep_on_cpu=True` is given to.
pub(crate) fn host_fields(module: &ast::ModModule) -> FxHashSet<&str> {
    let mut collector = Collector::default();
    collector.visit_body(&module.body);
    collector.fields
}

#[derive(Default)]
struct Collector<'a> {
    fields: FxHashSet<&'a str>,
}

fn keeps_on_cpu(value: &Expr) -> bool {
    let Expr::Call(call) = value else {
        return false;
    };
    super::syntax::keyword_true(call, "keep_on_cpu")
}

impl<'a> Visitor<'a> for Collector<'a> {
    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Call(call) => {
                for keyword in &call.arguments.keywords {
                    if let Some(arg) = &keyword.arg {
                        if keeps_on_cpu(&keyword.value) {
                            self.fields.insert(arg.id.as_str());
                        }
                    }
                }
            }
            Expr::Dict(dict) => {
                for item in &dict.items {
                    if let (Some(Expr::StringLiteral(key)), true) =
                        (&item.key, keeps_on_cpu(&item.value))
                    {
                        self.fields.insert(key.value.to_str());
                    }
                }
            }
            _ => {}
        }
        visitor::walk_expr(self, expr);
    }
}

impl<'a> SemanticModel<'a> {
    /// Whether the module declares a field of this name host-resident.
    pub(super) fn is_host_field(&self, name: &str) -> bool {
        !self.host_fields.is_empty() && self.host_fields.contains(name)
    }

    /// A read of a host-resident field by key: `kwargs.pop("image_grid_thw")`,
    /// `kwargs.get(...)`, `inputs["image_grid_thw"]`.
    pub(super) fn reads_host_field(&self, expr: &Expr) -> bool {
        if self.host_fields.is_empty() {
            return false;
        }
        let key = match expr {
            Expr::Subscript(subscript) => &*subscript.slice,
            Expr::Call(call) => match (&*call.func, call.arguments.args.first()) {
                (Expr::Attribute(attribute), Some(key))
                    if matches!(attribute.attr.id.as_str(), "pop" | "get") =>
                {
                    key
                }
                _ => return false,
            },
            _ => return false,
        };
        matches!(key, Expr::StringLiteral(key) if self.host_fields.contains(key.value.to_str()))
    }
}
