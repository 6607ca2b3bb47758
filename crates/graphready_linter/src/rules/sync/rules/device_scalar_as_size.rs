use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{builtin_call, method_call};
use crate::semantic::is_sequence;
use crate::violation::{Calls, Check, Violation};
use ruff_python_ast::{self as ast, Expr};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks for a device tensor used where Python needs an integer: slice bounds (`x[:n]`),
    /// `range(n)`, the sizes given to allocations and shape methods (`torch.empty(n)`,
    /// `x.view(n, -1)`, `x.new_zeros(n)`), and the count that repeats a list (`[w] * n`).
    ///
    /// ## Why is this bad?
    /// Python calls `n.__index__()`, which reads the value on the host: a device→host
    /// synchronisation. Inside a CUDA graph capture this fails; and even where it works, the
    /// resulting shape depends on data, so a replayed graph would reuse the shape seen during
    /// capture.
    ///
    /// ## Example
    /// ```python
    /// n = mask.sum()
    /// active = x[:n]
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// # fixed shape: keep every row and zero the inactive ones
    /// active = x * mask[:, None]
    /// ```
    pub struct DeviceScalarAsSize {
        context: &'static str,
    }
}

impl Violation for DeviceScalarAsSize {
    const CODE: &'static str = "GR109";
    const NAME: &'static str = "device-scalar-as-size";
    const CALLS: Calls = Calls::Any;

    fn message(&self) -> String {
        format!(
            "a device tensor used as {} is read on the host, which synchronises the stream",
            self.context
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some(
            "Use a host-known size (static shape or bucket) and mask the rest on the device"
                .to_string(),
        )
    }
}

impl Check for DeviceScalarAsSize {
    fn call<'a>(checker: &mut Checker<'a>, call: &'a ast::ExprCall) {
        size_arguments(checker, call);
    }

    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        match expr {
            Expr::Subscript(subscript) => slice_bounds(checker, subscript),
            Expr::BinOp(binop) => repetition_count(checker, binop),
            _ => {}
        }
    }
}

/// `x[a:b:c]` with a tensor bound.
fn slice_bounds(checker: &mut Checker, subscript: &ast::ExprSubscript) {
    let slices: Vec<&ast::ExprSlice> = match &*subscript.slice {
        Expr::Slice(slice) => vec![slice],
        Expr::Tuple(tuple) => tuple
            .elts
            .iter()
            .filter_map(|elt| match elt {
                Expr::Slice(slice) => Some(slice),
                _ => None,
            })
            .collect(),
        _ => return,
    };
    let bounds: Vec<_> = slices
        .into_iter()
        .flat_map(|slice| [&slice.lower, &slice.upper, &slice.step])
        .flatten()
        .filter(|bound| checker.is_tensor(bound))
        .map(|bound| bound.range())
        .collect();
    for range in bounds {
        checker.report(
            DeviceScalarAsSize {
                context: "a slice bound",
            },
            range,
        );
    }
}

/// `[w] * n` with a tensor `n`: Python repeats the list `n.__index__()` times.
fn repetition_count(checker: &mut Checker, binop: &ast::ExprBinOp) {
    if !matches!(binop.op, ast::Operator::Mult) {
        return;
    }
    let (left, right) = (&*binop.left, &*binop.right);
    let count = if is_sequence(left, checker.ty(left)) {
        right
    } else if is_sequence(right, checker.ty(right)) {
        left
    } else {
        return;
    };
    if checker.is_tensor(count) {
        checker.report(
            DeviceScalarAsSize {
                context: "a list repetition count",
            },
            count.range(),
        );
    }
}

/// Allocation functions whose positional arguments are sizes.
const SIZED_FACTORIES: &[&str] = &[
    "torch.empty",
    "torch.zeros",
    "torch.ones",
    "torch.rand",
    "torch.randn",
    "torch.arange",
    "torch.full",
    "torch.empty_strided",
];

/// Tensor methods whose positional arguments are sizes.
const SIZED_METHODS: &[&str] = &[
    "view",
    "reshape",
    "expand",
    "repeat",
    "new_empty",
    "new_zeros",
    "new_ones",
    "new_full",
    "narrow",
    "unflatten",
];

/// `range(n)`, `torch.empty(n)`, `x.view(n, -1)` with tensor sizes.
fn size_arguments(checker: &mut Checker, call: &ast::ExprCall) {
    let (context, sizes): (&'static str, &[Expr]) = if builtin_call(checker, call) == Some("range")
    {
        ("a `range()` bound", &call.arguments.args)
    } else if let Some(qualified) = checker.model.qualified_name(&call.func) {
        if !SIZED_FACTORIES.contains(&&*qualified) {
            return;
        }
        let args = &call.arguments.args;
        // `torch.full(size, fill_value)`: only the size is a size.
        let args = if &*qualified == "torch.full" {
            &args[..args.len().min(1)]
        } else {
            args
        };
        ("an allocation size", args)
    } else {
        match method_call(call) {
            Some((method, receiver))
                // On a host tensor too: the size is read on the host all the same.
                if SIZED_METHODS.contains(&method) && checker.ty(receiver).is_tensor() =>
            {
                let args = &call.arguments.args;
                let args = if method == "new_full" {
                    &args[..args.len().min(1)]
                } else {
                    args
                };
                ("a shape argument", args)
            }
            _ => return,
        }
    };
    let mut ranges = Vec::new();
    for size in sizes {
        match size {
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                ranges.extend(
                    elts.iter()
                        .filter(|e| checker.is_tensor(e))
                        .map(Ranged::range),
                );
            }
            other if checker.is_tensor(other) => ranges.push(other.range()),
            _ => {}
        }
    }
    for range in ranges {
        checker.report(DeviceScalarAsSize { context }, range);
    }
}
