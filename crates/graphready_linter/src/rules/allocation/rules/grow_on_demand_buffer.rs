use super::super::{LIKE_FACTORIES, NEW_METHODS, SIZED_FACTORIES};
use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::{builtin_call, method_call};
use crate::violation::{Check, Violation};
use ruff_python_ast::comparable::ComparableExpr;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for a buffer reallocated when it is too small:
    /// `if buf is None or buf.numel() < n: buf = torch.empty(n, ...)`, on a local or on `self`.
    ///
    /// ## Why is this bad?
    /// A CUDA graph records the buffer's address. When a later call (another bucket's capture, a
    /// larger batch) grows the buffer, graphs captured earlier keep reading and writing the old
    /// memory, which the allocator may already have handed to something else: silent corruption.
    /// A growth during capture itself allocates from the graph's private pool.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     if self.workspace is None or self.workspace.numel() < x.numel():
    ///         self.workspace = torch.empty(x.numel(), device=x.device)
    ///     return kernel(x, self.workspace)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def __init__(self, max_tokens, hidden):
    ///     self.workspace = torch.empty(max_tokens * hidden, device="cuda")  # the largest bucket
    ///
    /// def forward(self, x):
    ///     return kernel(x, self.workspace[: x.numel()])
    /// ```
    pub struct GrowOnDemandBuffer {
        buffer: String,
    }
}

impl Violation for GrowOnDemandBuffer {
    const CODE: &'static str = "GR403";
    const NAME: &'static str = "grow-on-demand-buffer";
    const CAPTURED_ONLY: bool = true;

    fn message(&self) -> String {
        format!(
            "`{}` is reallocated when too small; graphs captured earlier keep its old address",
            self.buffer
        )
    }

    fn fix_title(&self) -> Option<String> {
        Some("Allocate the buffer once at its largest size before capture and slice it".to_string())
    }
}

impl Check for GrowOnDemandBuffer {
    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        if let Stmt::If(if_stmt) = stmt {
            grow_on_demand_buffer(checker, if_stmt);
        }
    }
}

/// The receivers whose size a test compares with something else: `buf.numel() < n`,
/// `buf.shape[0] < n`, `tuple(buf.shape) != (rows, cols)`, `len(buf) < n`.
struct SizedReceivers<'c, 'a, 'e> {
    checker: &'c Checker<'a>,
    receivers: Vec<&'e Expr>,
}

impl<'e> SizedReceivers<'_, '_, 'e> {
    /// The tensor whose size an operand is.
    fn size_of(&self, operand: &'e Expr) -> Option<&'e Expr> {
        match operand {
            Expr::Call(call) => {
                if let Some(("numel" | "size" | "nelement", receiver)) = method_call(call) {
                    return Some(receiver);
                }
                match builtin_call(self.checker, call) {
                    Some("len") => call.arguments.args.first(),
                    Some("tuple") => call.arguments.args.first().and_then(|a| self.size_of(a)),
                    _ => None,
                }
            }
            Expr::Attribute(attribute) if attribute.attr.id.as_str() == "shape" => {
                Some(&attribute.value)
            }
            Expr::Subscript(subscript) => self.size_of(&subscript.value),
            _ => None,
        }
    }
}

impl<'e> Visitor<'e> for SizedReceivers<'_, '_, 'e> {
    fn visit_expr(&mut self, expr: &'e Expr) {
        if let Expr::Compare(compare) = expr {
            let operands: Vec<&'e Expr> = std::iter::once(&*compare.left)
                .chain(compare.comparators.iter())
                .collect();
            for (index, op) in compare.ops.iter().enumerate() {
                if !matches!(
                    op,
                    ast::CmpOp::Lt
                        | ast::CmpOp::LtE
                        | ast::CmpOp::Gt
                        | ast::CmpOp::GtE
                        | ast::CmpOp::NotEq
                ) {
                    continue;
                }
                let (left, right) = (operands[index], operands[index + 1]);
                let (left_of, right_of) = (self.size_of(left), self.size_of(right));
                let same = |a: Option<&Expr>, b: Option<&Expr>| match (a, b) {
                    (Some(a), Some(b)) => ComparableExpr::from(a) == ComparableExpr::from(b),
                    _ => false,
                };
                if same(left_of, right_of) {
                    continue;
                }
                self.receivers.extend(left_of);
                self.receivers.extend(right_of);
            }
        }
        visitor::walk_expr(self, expr);
    }
}

fn is_allocation(checker: &Checker, expr: &Expr) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    if let Some(qualified) = crate::rules::callee(checker, call) {
        return qualified
            .strip_prefix("torch.")
            .is_some_and(|name| SIZED_FACTORIES.contains(&name) || LIKE_FACTORIES.contains(&name));
    }
    matches!(method_call(call), Some((method, _)) if NEW_METHODS.contains(&method))
}

/// GR403
fn grow_on_demand_buffer(checker: &mut Checker, if_stmt: &ast::StmtIf) {
    let mut sized = SizedReceivers {
        checker,
        receivers: Vec::new(),
    };
    sized.visit_expr(&if_stmt.test);
    if sized.receivers.is_empty() {
        return;
    }
    let receivers: Vec<ComparableExpr> = sized.receivers.into_iter().map(Into::into).collect();
    let mut found = Vec::new();
    for (index, stmt) in if_stmt.body.iter().enumerate() {
        let Stmt::Assign(assign) = stmt else {
            continue;
        };
        if !is_allocation(checker, &assign.value) {
            continue;
        }
        for target in &assign.targets {
            let tested = matches!(target, Expr::Name(_) | Expr::Attribute(_))
                && receivers.contains(&ComparableExpr::from(target));
            // A local is a kept buffer only when the block stores it somewhere that outlives the
            // call (`self._buf = buf`, `CACHE[key] = buf`); otherwise it is a one-off fallback.
            let kept = match target {
                Expr::Name(name) => stored(&if_stmt.body[index + 1..], name.id.as_str()),
                _ => true,
            };
            if tested && kept {
                found.push((name_of(target), assign.range()));
            }
        }
    }
    for (buffer, range) in found {
        checker.report(GrowOnDemandBuffer { buffer }, range);
    }
}

/// Whether a block stores `name` into an attribute or a container.
fn stored(body: &[Stmt], name: &str) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Assign(assign) => {
            matches!(&*assign.value, Expr::Name(value) if value.id.as_str() == name)
                && assign
                    .targets
                    .iter()
                    .any(|target| matches!(target, Expr::Attribute(_) | Expr::Subscript(_)))
        }
        Stmt::If(if_stmt) => stored(&if_stmt.body, name),
        Stmt::Try(try_stmt) => stored(&try_stmt.body, name),
        _ => false,
    })
}

fn name_of(expr: &Expr) -> String {
    match expr {
        Expr::Name(name) => name.id.to_string(),
        Expr::Attribute(attribute) => format!("{}.{}", name_of(&attribute.value), attribute.attr),
        _ => "buffer".to_string(),
    }
}
