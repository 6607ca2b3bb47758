//! Boolean masks: which expressions are boolean tensors that may live on the device.

use super::model::SemanticModel;
use super::syntax::keyword;
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr};

/// Operations that reshape, repeat or copy a tensor without changing its dtype.
const SHAPE_OPS: &[&str] = &[
    "view",
    "view_as",
    "reshape",
    "reshape_as",
    "expand",
    "expand_as",
    "unsqueeze",
    "squeeze",
    "flatten",
    "transpose",
    "permute",
    "contiguous",
    "clone",
    "repeat",
    "repeat_interleave",
    "narrow",
    "select",
    "detach",
    "unflatten",
];

impl SemanticModel<'_> {
    /// Whether the expression is a boolean tensor that may live on the device (a mask):
    /// comparisons of device tensors (or, in a module that never imports NumPy, of values of
    /// unknown type: `ids == expert`), `.bool()`, `.to(torch.bool)`, `torch.isnan` and friends,
    /// logical operations, `~` / `&` / `|` of masks, views and repeats of masks, and factories
    /// with `dtype=torch.bool`. Anything less certain is not a mask.
    pub fn is_bool_tensor(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Name(name) => self
                .lookup_scope(name.id.as_str())
                .is_some_and(|scope| scope.bool_tensors.contains(name.id.as_str())),
            Expr::Compare(compare) => {
                compare.ops.iter().all(|op| {
                    matches!(
                        op,
                        ast::CmpOp::Lt
                            | ast::CmpOp::LtE
                            | ast::CmpOp::Gt
                            | ast::CmpOp::GtE
                            | ast::CmpOp::Eq
                            | ast::CmpOp::NotEq
                    )
                }) && match self.ty(expr) {
                    Ty::Tensor => true,
                    Ty::Unknown => !self.imports_numpy && self.compares_values(compare),
                    _ => false,
                }
            }
            Expr::UnaryOp(unary) => {
                matches!(unary.op, ast::UnaryOp::Invert) && self.is_bool_tensor(&unary.operand)
            }
            Expr::BinOp(binop) => {
                matches!(
                    binop.op,
                    ast::Operator::BitAnd | ast::Operator::BitOr | ast::Operator::BitXor
                ) && self.is_bool_tensor(&binop.left)
                    && self.is_bool_tensor(&binop.right)
            }
            Expr::Subscript(subscript) => self.is_bool_tensor(&subscript.value),
            Expr::Named(named) => self.is_bool_tensor(&named.value),
            Expr::Call(call) => self.is_bool_call(call) && self.ty(expr) == Ty::Tensor,
            _ => false,
        }
    }

    /// A comparison of values that may be tensors: every operand of unknown type or a device
    /// tensor, at least one a variable (not a literal), none a string or `None`.
    fn compares_values(&self, compare: &ast::ExprCompare) -> bool {
        let operands = || std::iter::once(&*compare.left).chain(compare.comparators.iter());
        operands().all(|operand| {
            !matches!(
                operand,
                Expr::StringLiteral(_)
                    | Expr::BytesLiteral(_)
                    | Expr::NoneLiteral(_)
                    | Expr::FString(_)
                    | Expr::BooleanLiteral(_)
            ) && matches!(self.ty(operand), Ty::Tensor | Ty::Unknown | Ty::Host)
        }) && operands().any(|operand| {
            matches!(
                operand,
                Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) | Expr::Call(_)
            ) && matches!(self.ty(operand), Ty::Tensor | Ty::Unknown)
        })
    }

    fn is_bool_call(&self, call: &ast::ExprCall) -> bool {
        const BOOL_OPS: &[&str] = &[
            "isnan",
            "isinf",
            "isfinite",
            "isneginf",
            "isposinf",
            "isreal",
            "isin",
            "isclose",
            "signbit",
            "logical_and",
            "logical_or",
            "logical_not",
            "logical_xor",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "greater",
            "less",
            "greater_equal",
            "less_equal",
            "not_equal",
        ];
        let is_bool_dtype = |expr: &Expr| self.is(expr, "torch.bool");
        let dtype_is_bool = keyword(call, "dtype").is_some_and(is_bool_dtype);
        if let Some(qualified) = self.qualified_name(&call.func) {
            let Some(name) = qualified.strip_prefix("torch.") else {
                return false;
            };
            // `torch.repeat_interleave(mask, n)`: a mask, repeated.
            let of_mask = SHAPE_OPS.contains(&name)
                && call
                    .arguments
                    .args
                    .first()
                    .is_some_and(|first| self.is_bool_tensor(first));
            return BOOL_OPS.contains(&name) || dtype_is_bool || of_mask;
        }
        let Expr::Attribute(attribute) = &*call.func else {
            return false;
        };
        match attribute.attr.id.as_str() {
            "bool" => call.arguments.is_empty(),
            "to" if call.arguments.args.iter().any(is_bool_dtype) || dtype_is_bool => true,
            "new_zeros" | "new_ones" | "new_empty" | "new_full" => dtype_is_bool,
            // `(a < b).expand_as(logits)`, `mask.to(device)`: the same mask, reshaped or moved.
            method if SHAPE_OPS.contains(&method) || method == "to" => {
                self.is_bool_tensor(&attribute.value)
            }
            method => BOOL_OPS.contains(&method),
        }
    }
}
