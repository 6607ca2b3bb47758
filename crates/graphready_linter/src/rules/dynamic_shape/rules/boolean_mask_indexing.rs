use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, host_named, method_call};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for indexing with a boolean mask that lives on the device: reading `x[mask]`,
    /// writing a tensor through it (`x[mask] = y`, `x[mask] += y`) and `index_put_` with a
    /// boolean index.
    ///
    /// ## Why is this bad?
    /// A boolean mask selects as many elements as it has `True` values, so PyTorch turns it into
    /// indices with `nonzero` and has to learn their number on the host: the stream synchronises,
    /// capture fails, and the output shape changes with the data. Writing a plain scalar through
    /// a mask (`x[mask] = 0.0`) is a masked fill and is fine.
    ///
    /// ## Example
    /// ```python
    /// valid = scores > threshold
    /// kept = scores[valid]
    /// logits[valid] = bias[valid]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// kept = torch.where(valid, scores, 0.0)
    /// logits = torch.where(valid, bias, logits)
    /// ```
    ///
    /// ## Known problems
    /// Only masks graphready knows to be boolean are reported: comparisons of device tensors,
    /// `.bool()`, `.to(torch.bool)`, `torch.isnan` and similar predicates, logical operations and
    /// `dtype=torch.bool` factories. A mask passed in as a parameter is not recognised.
    pub struct BooleanMaskIndexing {
        form: &'static str,
    }
}

impl Violation for BooleanMaskIndexing {
    const CODE: &'static str = "GR202";
    const NAME: &'static str = "boolean-mask-indexing";
    const CALLS: Calls = Calls::named(&["index_put", "index_put_"]);

    fn message(&self) -> String {
        format!(
            "{} with a device boolean mask has a data-dependent shape and synchronises",
            self.form
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Keep the shape fixed: `torch.where(mask, a, b)`, `masked_fill` or `masked_scatter_`"
                .to_string(),
        )
    }
}

impl Check for BooleanMaskIndexing {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        index_put(checker, call);
    }

    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        if let Expr::Subscript(subscript) = expr {
            if matches!(subscript.ctx, ExprContext::Load) {
                mask_load(checker, subscript);
            }
        }
    }

    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    mask_store(checker, target, Some(&assign.value));
                }
            }
            Stmt::AugAssign(assign) => mask_store(checker, &assign.target, None),
            _ => {}
        }
    }
}

/// Whether a subscript's index holds a device boolean mask (alone or in a tuple of indices).
fn has_device_mask(checker: &Checker, index: &Expr) -> bool {
    match index {
        Expr::Tuple(tuple) => tuple
            .elts
            .iter()
            .any(|elt| checker.model.is_bool_tensor(elt)),
        other => checker.model.is_bool_tensor(other),
    }
}

/// Whether the indexed value can be a device tensor (a mask of the device indexes nothing else).
fn indexable(checker: &Checker, value: &Expr) -> bool {
    !matches!(checker.ty(value), Ty::CpuTensor | Ty::Array | Ty::Host) && !host_named(value)
}

/// `x[mask]`
fn mask_load(checker: &mut Checker, subscript: &ast::ExprSubscript) {
    if has_device_mask(checker, &subscript.slice) && indexable(checker, &subscript.value) {
        checker.report(BooleanMaskIndexing { form: "indexing" }, subscript.range());
    }
}

/// `x[mask] = tensor` and `x[mask] += y` (`value` is `None` for augmented assignment, which reads
/// `x[mask]` first).
fn mask_store(checker: &mut Checker, target: &Expr, value: Option<&Expr>) {
    let Expr::Subscript(subscript) = target else {
        return;
    };
    if !has_device_mask(checker, &subscript.slice) || !indexable(checker, &subscript.value) {
        return;
    }
    // A scalar written through a mask is `masked_fill_`: fixed shape, no synchronisation.
    if value.is_some_and(|value| checker.ty(value) != Ty::Tensor) {
        return;
    }
    checker.report(
        BooleanMaskIndexing {
            form: "assignment through a mask",
        },
        subscript.range(),
    );
}

/// `x.index_put_((mask,), values)` and `torch.index_put(x, (mask,), values)`.
fn index_put(checker: &mut Checker, call: &ast::ExprCall) {
    let indices = match crate::rules::callee(checker, call).as_deref() {
        Some("torch.index_put" | "torch.index_put_") => argument(call, 1, "indices"),
        Some(_) => return,
        None => match method_call(call) {
            Some(("index_put_" | "index_put", receiver)) if indexable(checker, receiver) => {
                argument(call, 0, "indices")
            }
            _ => return,
        },
    };
    let Some(Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. })) =
        indices
    else {
        return;
    };
    if elts.iter().any(|elt| checker.model.is_bool_tensor(elt)) {
        checker.report(
            BooleanMaskIndexing {
                form: "`index_put_`",
            },
            call.range(),
        );
    }
}
