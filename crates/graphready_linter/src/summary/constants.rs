//! Constant arguments: the literal defaults of a function's parameters (`check=False`,
//! `out=None`), the literals a call site passes, and the tests of a parameter that decide
//! whether code runs (`if check:`, `if out is not None:`). When every call of a function in the
//! project leaves a parameter at its default (or passes the same literal), the branches that
//! default rules out never run: the project index decides that (`hot_path::constants`).

use ruff_python_ast::{self as ast, Expr};

/// A literal a parameter can be decided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Const {
    True,
    False,
    None,
}

impl Const {
    /// The literal an expression is, if it is one of these.
    pub fn of(expr: &Expr) -> Option<Const> {
        match expr {
            Expr::BooleanLiteral(b) if b.value => Some(Const::True),
            Expr::BooleanLiteral(_) => Some(Const::False),
            Expr::NoneLiteral(_) => Some(Const::None),
            _ => None,
        }
    }
}

/// What a test says of a parameter when the code it guards runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ParamTest {
    /// `if p:`
    Truthy,
    /// `if not p:`
    Falsy,
    /// `if p is None:`
    IsNone,
    /// `if p is not None:`
    IsNotNone,
}

impl ParamTest {
    /// Whether the test passes for a parameter holding `value`.
    pub fn holds(self, value: Const) -> bool {
        match self {
            ParamTest::Truthy => value == Const::True,
            ParamTest::Falsy => value != Const::True,
            ParamTest::IsNone => value == Const::None,
            ParamTest::IsNotNone => value != Const::None,
        }
    }

    fn negate(self) -> ParamTest {
        match self {
            ParamTest::Truthy => ParamTest::Falsy,
            ParamTest::Falsy => ParamTest::Truthy,
            ParamTest::IsNone => ParamTest::IsNotNone,
            ParamTest::IsNotNone => ParamTest::IsNone,
        }
    }
}

/// Lines of a function that run only when a test of one of its parameters passes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamBlock {
    /// Inclusive.
    pub lines: (u32, u32),
    pub param: Box<str>,
    pub test: ParamTest,
}

/// What `test` evaluating to `!negated` says of the names it tests: `if a and not b:` runs
/// with `a` truthy and `b` falsy; `if not (a or b)` likewise. A test of anything else, or an
/// alternative (`a or b` true), says nothing.
pub fn name_tests<'e>(test: &'e Expr, negated: bool, out: &mut Vec<(&'e str, ParamTest)>) {
    match test {
        Expr::Name(name) => {
            let t = if negated {
                ParamTest::Falsy
            } else {
                ParamTest::Truthy
            };
            out.push((name.id.as_str(), t));
        }
        Expr::UnaryOp(ast::ExprUnaryOp {
            op: ast::UnaryOp::Not,
            operand,
            ..
        }) => name_tests(operand, !negated, out),
        Expr::BoolOp(bool_op) if matches!(bool_op.op, ast::BoolOp::And) != negated => {
            for value in &bool_op.values {
                name_tests(value, negated, out);
            }
        }
        Expr::Compare(compare) => {
            let ([op], [right], Expr::Name(name)) =
                (&*compare.ops, &*compare.comparators, &*compare.left)
            else {
                return;
            };
            if !right.is_none_literal_expr() {
                return;
            }
            let t = match op {
                ast::CmpOp::Is => ParamTest::IsNone,
                ast::CmpOp::IsNot => ParamTest::IsNotNone,
                _ => return,
            };
            out.push((name.id.as_str(), if negated { t.negate() } else { t }));
        }
        _ => {}
    }
}
