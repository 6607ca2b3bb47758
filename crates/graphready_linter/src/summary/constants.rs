//! Constant arguments: the literal defaults of a function's parameters (`check=False`,
//! `out=None`), the literals a call site passes, and the tests of a parameter that decide
//! whether code runs (`if check:`, `if out is not None:`). When every call of a function in the
//! project leaves a parameter at its default (or passes the same literal), the branches that
//! default rules out never run: the project index decides that (`hot_path::constants`).
//! Numbers and strings count too, tested by comparison (`if kv_block_num > 0:` with
//! `kv_block_num=-1`, `if mode == "prefill":` with `mode="auto"`).

use ruff_python_ast::{self as ast, Expr};
use std::hash::{Hash, Hasher};

/// A literal a parameter can be decided by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Const {
    True,
    False,
    None,
    Int(i64),
    /// A string, by a hash of its text (only compared for equality).
    Str(u64),
}

impl Const {
    /// The literal an expression is, if it is one of these.
    pub fn of(expr: &Expr) -> Option<Const> {
        match expr {
            Expr::BooleanLiteral(b) if b.value => Some(Const::True),
            Expr::BooleanLiteral(_) => Some(Const::False),
            Expr::NoneLiteral(_) => Some(Const::None),
            Expr::NumberLiteral(number) => match &number.value {
                ast::Number::Int(int) => int.as_i64().map(Const::Int),
                _ => None,
            },
            Expr::UnaryOp(ast::ExprUnaryOp {
                op: ast::UnaryOp::USub,
                operand,
                ..
            }) => match Const::of(operand)? {
                Const::Int(int) => int.checked_neg().map(Const::Int),
                _ => None,
            },
            Expr::StringLiteral(string) => Some(Const::string(string.value.to_str())),
            _ => None,
        }
    }

    /// The literal `"cpu"`: what a call passes for a device that names the host (a
    /// `torch.device("cpu")` or a local bound to one counts as this literal).
    pub fn host_device() -> Const {
        Const::string("cpu")
    }

    fn string(text: &str) -> Const {
        let mut hasher = rustc_hash::FxHasher::default();
        text.hash(&mut hasher);
        Const::Str(hasher.finish())
    }

    /// Python's truth value of the literal.
    fn truthy(self) -> bool {
        match self {
            Const::True => true,
            Const::False | Const::None => false,
            Const::Int(int) => int != 0,
            Const::Str(_) => self != Const::string(""),
        }
    }

    /// The literal as an integer, where Python compares it as one (`True == 1`).
    fn as_int(self) -> Option<i64> {
        match self {
            Const::True => Some(1),
            Const::False => Some(0),
            Const::Int(int) => Some(int),
            _ => None,
        }
    }

    /// What `self <op> other` evaluates to, where Python defines it (`None > 0` raises: not
    /// known).
    fn compare(self, op: Cmp, other: Const) -> Option<bool> {
        if let (Some(a), Some(b)) = (self.as_int(), other.as_int()) {
            return Some(match op {
                Cmp::Eq => a == b,
                Cmp::NotEq => a != b,
                Cmp::Lt => a < b,
                Cmp::LtE => a <= b,
                Cmp::Gt => a > b,
                Cmp::GtE => a >= b,
            });
        }
        // Values of different kinds are never equal; only numbers are ordered here.
        match op {
            Cmp::Eq => Some(self == other),
            Cmp::NotEq => Some(self != other),
            _ => None,
        }
    }
}

/// A comparison operator a parameter is tested with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cmp {
    Eq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
}

impl Cmp {
    fn of(op: ast::CmpOp) -> Option<Cmp> {
        Some(match op {
            ast::CmpOp::Eq => Cmp::Eq,
            ast::CmpOp::NotEq => Cmp::NotEq,
            ast::CmpOp::Lt => Cmp::Lt,
            ast::CmpOp::LtE => Cmp::LtE,
            ast::CmpOp::Gt => Cmp::Gt,
            ast::CmpOp::GtE => Cmp::GtE,
            _ => return None,
        })
    }

    fn negate(self) -> Cmp {
        match self {
            Cmp::Eq => Cmp::NotEq,
            Cmp::NotEq => Cmp::Eq,
            Cmp::Lt => Cmp::GtE,
            Cmp::GtE => Cmp::Lt,
            Cmp::Gt => Cmp::LtE,
            Cmp::LtE => Cmp::Gt,
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
    /// `if p > 0:`, `if p == "prefill":`
    Compare(Cmp, Const),
}

impl ParamTest {
    /// Whether the test passes for a parameter holding `value` (or may: a comparison Python
    /// does not define is not ruled out).
    pub fn holds(self, value: Const) -> bool {
        match self {
            ParamTest::Truthy => value.truthy(),
            ParamTest::Falsy => !value.truthy(),
            ParamTest::IsNone => value == Const::None,
            ParamTest::IsNotNone => value != Const::None,
            ParamTest::Compare(op, other) => value.compare(op, other).unwrap_or(true),
        }
    }

    fn negate(self) -> ParamTest {
        match self {
            ParamTest::Truthy => ParamTest::Falsy,
            ParamTest::Falsy => ParamTest::Truthy,
            ParamTest::IsNone => ParamTest::IsNotNone,
            ParamTest::IsNotNone => ParamTest::IsNone,
            ParamTest::Compare(op, other) => ParamTest::Compare(op.negate(), other),
        }
    }
}

/// Code of a function that runs only when a test of one of its parameters passes: the lines
/// of an `if` statement's clause, or a branch of a conditional expression (`x.cpu() if
/// in_capture else x_cpu`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamBlock {
    /// Where the code starts and ends, as (line, column), inclusive.
    pub start: (u32, u32),
    pub end: (u32, u32),
    pub param: Box<str>,
    pub test: ParamTest,
    /// The code computes the parameter's value in its place (`if p is None: p = ...`, `p if p
    /// is not None else ...`): a fallback for the callers that leave the parameter out.
    pub fallback: bool,
}

impl ParamBlock {
    /// Whether the code holds a position (line, column).
    pub fn contains(&self, line: u32, column: u32) -> bool {
        (self.start..=self.end).contains(&(line, column))
    }
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
        // `isinstance(p, list) or isinstance(p, torch.Tensor)`: `p` is not `None`.
        test if !negated && not_none_named(test).is_some() => {
            if let Some(name) = not_none_named(test) {
                out.push((name, ParamTest::IsNotNone));
            }
        }
        Expr::Compare(compare) => {
            let ([op], [right], Expr::Name(name)) =
                (&*compare.ops, &*compare.comparators, &*compare.left)
            else {
                return;
            };
            let t = match op {
                ast::CmpOp::Is if right.is_none_literal_expr() => ParamTest::IsNone,
                ast::CmpOp::IsNot if right.is_none_literal_expr() => ParamTest::IsNotNone,
                op => match (Cmp::of(*op), Const::of(right)) {
                    (Some(op), Some(value)) => ParamTest::Compare(op, value),
                    _ => return,
                },
            };
            out.push((name.id.as_str(), if negated { t.negate() } else { t }));
        }
        _ => {}
    }
}

/// The name a test says is not `None` when it holds: `isinstance(p, cls)` (of a class other
/// than `NoneType` or `object`), or an `or` of such tests of one name.
fn not_none_named(test: &Expr) -> Option<&str> {
    match test {
        Expr::Call(call) => {
            let Expr::Name(func) = &*call.func else {
                return None;
            };
            let ([Expr::Name(name), class], []) =
                (&*call.arguments.args, &*call.arguments.keywords)
            else {
                return None;
            };
            let admits_none = |class: &Expr| match class {
                Expr::Name(n) => matches!(n.id.as_str(), "object" | "NoneType"),
                Expr::Attribute(a) => a.attr.as_str() == "NoneType",
                Expr::Call(_) => true,
                _ => false,
            };
            let admits_none = match class {
                Expr::Tuple(tuple) => tuple.elts.iter().any(admits_none),
                class => admits_none(class),
            };
            (func.id.as_str() == "isinstance" && !admits_none).then_some(name.id.as_str())
        }
        Expr::BoolOp(bool_op) if matches!(bool_op.op, ast::BoolOp::Or) => {
            let mut names = bool_op.values.iter().map(not_none_named);
            let first = names.next()??;
            names.all(|name| name == Some(first)).then_some(first)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{name_tests, Const};

    fn constant(source: &str) -> Option<Const> {
        Const::of(ruff_python_parser::parse_expression(source).ok()?.expr())
    }

    /// Whether the block under `if <test>:` runs with `p` holding `value`.
    fn runs(test: &str, value: &str) -> bool {
        let parsed = ruff_python_parser::parse_expression(test).expect("a test");
        let mut tests = Vec::new();
        name_tests(parsed.expr(), false, &mut tests);
        let [(name, test)] = tests.as_slice() else {
            panic!("one test of a name in {test:?}, got {tests:?}");
        };
        assert_eq!(*name, "p");
        test.holds(constant(value).expect("a literal"))
    }

    #[test]
    fn literals() {
        assert_eq!(constant("-1"), Some(Const::Int(-1)));
        assert_eq!(constant("0"), Some(Const::Int(0)));
        assert_eq!(constant("'auto'"), constant("\"auto\""));
        assert_ne!(constant("'auto'"), constant("'prefill'"));
        assert_eq!(constant("1.5"), None);
        assert_eq!(constant("x"), None);
        assert_eq!(constant("-x"), None);
    }

    #[test]
    fn comparisons_decide_with_the_literal_held() {
        assert!(!runs("p > 0", "-1"));
        assert!(runs("p > 0", "4"));
        assert!(runs("not p <= 0", "4"));
        assert!(!runs("p == 'prefill'", "'auto'"));
        assert!(runs("p != 'decode'", "'auto'"));
        assert!(!runs("p != 'auto'", "'auto'"));
        // Python's `True == 1`; `None` equals no number, and is not ordered against one.
        assert!(runs("p == 1", "True"));
        assert!(!runs("p == 0", "None"));
        assert!(runs("p > 0", "None"));
        assert!(runs("p < 'b'", "'a'"));
    }

    #[test]
    fn instance_tests_rule_out_none() {
        assert!(!runs("isinstance(p, list)", "None"));
        assert!(!runs(
            "isinstance(p, list) or isinstance(p, torch.Tensor)",
            "None"
        ));
        assert!(runs("isinstance(p, (list, tuple))", "1"));
        // Classes that admit `None`, and `not isinstance(...)`, say nothing.
        for test in [
            "isinstance(p, (list, type(None)))",
            "isinstance(p, object)",
            "not isinstance(p, list)",
            "isinstance(p, list) or isinstance(q, list)",
        ] {
            let parsed = ruff_python_parser::parse_expression(test).expect("a test");
            let mut tests = Vec::new();
            name_tests(parsed.expr(), false, &mut tests);
            assert!(tests.is_empty(), "{test}: {tests:?}");
        }
    }

    #[test]
    fn truth_values() {
        assert!(!runs("p", "0"));
        assert!(runs("p", "-1"));
        assert!(!runs("p", "''"));
        assert!(runs("p", "'auto'"));
        assert!(runs("not p", "None"));
        assert!(!runs("p", "False"));
    }
}
