use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::op_tags::{lookup, DYNAMIC_OUTPUT_SHAPE};
use crate::rules::{argument, device_tensor, maybe_device_tensor, method_call};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for operations whose output shape depends on the values of their input:
    /// `nonzero` (also `as_tuple=True`), `argwhere`, one-argument `torch.where(cond)`,
    /// `masked_select`, `unique`, `unique_consecutive` and `bincount`, as functions or tensor
    /// methods. The list comes from PyTorch's own `dynamic_output_shape` operator tag.
    ///
    /// ## Why is this bad?
    /// To allocate the output, PyTorch must learn its size on the host: the stream synchronises.
    /// Inside a CUDA graph capture that fails, and a graph could not replay a different shape
    /// anyway. The usual fix for an MoE router's `torch.bincount` is `scatter_add_` into a
    /// preallocated `tokens_per_expert` buffer of fixed shape.
    ///
    /// ## Example
    /// ```python
    /// tokens_per_expert = torch.bincount(topk_ids.flatten(), minlength=num_experts)
    /// active = torch.nonzero(mask)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// self.tokens_per_expert.zero_()
    /// self.tokens_per_expert.scatter_add_(0, topk_ids.flatten(), self.ones)
    /// active = torch.nonzero_static(mask, size=max_active, fill_value=-1)
    /// ```
    ///
    /// ## Known problems
    /// `torch.linalg.lstsq` carries the tag too, but its solution has a fixed shape on the GPU;
    /// it is not reported. A receiver of unknown type is assumed to be a tensor unless its name
    /// says it is a host mirror (`*_cpu`, `*_np`).
    pub struct DynamicOutputShapeOp {
        op: String,
        fix: &'static str,
    }
}

impl Violation for DynamicOutputShapeOp {
    const CODE: &'static str = "GR201";
    const NAME: &'static str = "dynamic-output-shape-op";
    const CALLS: Calls = Calls::named(&[
        "nonzero",
        "argwhere",
        "where",
        "masked_select",
        "unique",
        "unique_consecutive",
        "bincount",
    ]);

    fn message(&self) -> String {
        format!(
            "`{}` has a data-dependent output shape: it synchronises and cannot be captured",
            self.op
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(self.fix.to_string())
    }
}

impl Check for DynamicOutputShapeOp {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        dynamic_output_shape_op(checker, call);
    }
}

/// Tagged ops that other rules judge (they are fine with the right argument) or that are not
/// data-dependent on the device.
const JUDGED_ELSEWHERE: &[&str] = &[
    "index",
    "repeat_interleave",
    "nn.functional.one_hot",
    "linalg.lstsq",
];

fn fix_for(op: &str) -> &'static str {
    match op {
        "nonzero" | "argwhere" | "where" => {
            "Use `torch.nonzero_static(x, size=..., fill_value=...)`, which has a fixed output shape"
        }
        "masked_select" => {
            "Keep the shape fixed: `torch.where(mask, x, 0)` or `x.masked_fill(~mask, 0)`"
        }
        _ => "Scatter into a fixed-size preallocated buffer (`buf.zero_(); buf.scatter_add_(...)`)",
    }
}

/// A receiver of unknown type that is a tensor all the same: NumPy arrays have no `.unique()`,
/// `.bincount()` or `.argwhere()` method, and their `.nonzero()` takes no `as_tuple=`; in a module
/// that never imports NumPy, `.nonzero()` is a tensor's too.
fn unknown_tensor(checker: &Checker, call: &ast::ExprCall, method: &str, receiver: &Expr) -> bool {
    if !maybe_device_tensor(checker, receiver)
        || checker.ty(receiver) != Ty::Unknown
        || keyed_by_string(receiver)
    {
        return false;
    }
    method != "nonzero"
        || crate::semantic::keyword(call, "as_tuple").is_some()
        || !checker.model.imports_numpy()
}

/// `df["name"]`: a column of a data frame (tensors are not indexed by strings).
fn keyed_by_string(receiver: &Expr) -> bool {
    match receiver {
        Expr::Subscript(subscript) => {
            matches!(&*subscript.slice, Expr::StringLiteral(_)) || keyed_by_string(&subscript.value)
        }
        Expr::Call(call) => match &*call.func {
            Expr::Attribute(attribute) => keyed_by_string(&attribute.value),
            _ => false,
        },
        Expr::Attribute(attribute) => keyed_by_string(&attribute.value),
        _ => false,
    }
}

/// GR201
fn dynamic_output_shape_op(checker: &mut Checker, call: &ast::ExprCall) {
    if let Some(qualified) = crate::rules::callee(checker, call) {
        let Some(name) = qualified.strip_prefix("torch.") else {
            return;
        };
        let one_argument_where =
            name == "where" && call.arguments.args.len() == 1 && call.arguments.keywords.is_empty();
        if !one_argument_where
            && (!lookup(DYNAMIC_OUTPUT_SHAPE, name, false) || JUDGED_ELSEWHERE.contains(&name))
        {
            return;
        }
        let Some(input) = argument(call, 0, "input") else {
            return;
        };
        if !device_tensor(checker, input) {
            return;
        }
        let op = if one_argument_where {
            "torch.where(cond)".to_string()
        } else {
            format!("torch.{name}")
        };
        checker.report(
            DynamicOutputShapeOp {
                op,
                fix: fix_for(name),
            },
            call.range(),
        );
        return;
    }
    let Some((method, receiver)) = method_call(call) else {
        return;
    };
    if !lookup(DYNAMIC_OUTPUT_SHAPE, method, true) || JUDGED_ELSEWHERE.contains(&method) {
        return;
    }
    if !device_tensor(checker, receiver) && !unknown_tensor(checker, call, method, receiver) {
        return;
    }
    checker.report(
        DynamicOutputShapeOp {
            op: format!(".{method}()"),
            fix: fix_for(method),
        },
        call.range(),
    );
}
