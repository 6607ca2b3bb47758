use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{argument, device_tensor, host_named, method_call};
use crate::semantic::Ty;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::comparable::ComparableExpr;
use ruff_python_ast::visitor::{self, Visitor};
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
fn has_device_mask(checker: &Checker, value: &Expr, index: &Expr) -> bool {
    let is_mask = |elt: &Expr| checker.model.is_bool_tensor(elt) || named_mask(checker, value, elt);
    match index {
        Expr::Tuple(tuple) => tuple.elts.iter().any(is_mask),
        other => is_mask(other),
    }
}

/// A tensor named as a mask (`batch_mask`, `self.valid_mask`) used as an index: integer index
/// tensors are named for indices, and a float mask cannot index. A mask of unknown type counts
/// when the indexed value is known to be a device tensor.
fn named_mask(checker: &Checker, value: &Expr, index: &Expr) -> bool {
    let name = match index {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    if !mask_named(name) || host_named(index) {
        return false;
    }
    match checker.ty(index) {
        Ty::Tensor => true,
        Ty::Unknown => device_tensor(checker, value),
        _ => false,
    }
}

/// Whether the indexed value can be a device tensor (a mask of the device indexes nothing else).
fn indexable(checker: &Checker, value: &Expr) -> bool {
    !checker.ty(value).is_host() && !host_named(value)
}

/// A name whose words say "mask" (`mask`, `keep_mask`, `image_masks`, `mask0`) and none of which
/// say index or slice (`mask_indices` is an index tensor, `mask_slice` a slice).
fn mask_named(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let words = || lower.split('_').filter(|word| !word.is_empty());
    words().any(|word| {
        word.strip_prefix("mask").is_some_and(|rest| {
            rest.is_empty() || rest == "s" || rest.bytes().all(|b| b.is_ascii_digit())
        })
    }) && !words().any(|word| {
        matches!(
            word,
            "idx"
                | "indices"
                | "index"
                | "ids"
                | "id"
                | "slice"
                | "slices"
                | "len"
                | "lens"
                | "size"
                | "sizes"
                | "shape"
                | "offset"
                | "offsets"
        )
    })
}

/// `x[mask]`
fn mask_load(checker: &mut Checker, subscript: &ast::ExprSubscript) {
    if has_device_mask(checker, &subscript.value, &subscript.slice)
        && indexable(checker, &subscript.value)
    {
        checker.report(BooleanMaskIndexing { form: "indexing" }, subscript.range());
    }
}

/// `x[mask] = tensor` and `x[mask] += y` (`value` is `None` for augmented assignment, which reads
/// `x[mask]` first).
fn mask_store(checker: &mut Checker, target: &Expr, value: Option<&Expr>) {
    let Expr::Subscript(subscript) = target else {
        return;
    };
    if !has_device_mask(checker, &subscript.value, &subscript.slice)
        || !indexable(checker, &subscript.value)
    {
        return;
    }
    // A scalar written through a mask is `masked_fill_`: fixed shape, no synchronisation. A
    // value computed from a read through the same mask (`out[m] = out[m] + r`) is a tensor.
    if value.is_some_and(|value| {
        checker.ty(value) != Ty::Tensor && !reads_through(value, &subscript.slice)
    }) {
        return;
    }
    checker.report(
        BooleanMaskIndexing {
            form: "assignment through a mask",
        },
        subscript.range(),
    );
}

/// Whether an expression reads some tensor through the same index (`out[m] + r` for `[m]`).
fn reads_through(value: &Expr, index: &Expr) -> bool {
    struct Finder<'i> {
        index: ComparableExpr<'i>,
        found: bool,
    }
    impl<'e> Visitor<'e> for Finder<'_> {
        fn visit_expr(&mut self, expr: &'e Expr) {
            if let Expr::Subscript(subscript) = expr {
                if ComparableExpr::from(&*subscript.slice) == self.index {
                    self.found = true;
                    return;
                }
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut finder = Finder {
        index: ComparableExpr::from(index),
        found: false,
    };
    finder.visit_expr(value);
    finder.found
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
