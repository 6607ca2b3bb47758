//! The contract every rule fulfils: what it declares about itself ([`Violation`]) and where the
//! checker hands it nodes ([`Check`]).

use crate::checker::Checker;
use graphready_diagnostics::Severity;
use ruff_python_ast::{self as ast, Expr, Stmt};

/// Which calls a rule's [`Check::call`] judges: the checker hands it only those, so most calls
/// cost no rule anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calls {
    /// No call.
    None,
    /// Calls whose callee's last name is one of these (`item` for `x.item()` and `item(x)`),
    /// or that pass one of `keywords` (`generator=`).
    Named {
        names: &'static [&'static str],
        keywords: &'static [&'static str],
    },
    /// Every call: the rule matches qualified names through import aliases, or any callee.
    Any,
}

impl Calls {
    /// Calls by these last names.
    pub const fn named(names: &'static [&'static str]) -> Self {
        Calls::Named {
            names,
            keywords: &[],
        }
    }
}

/// A violation: the data a rule found, able to explain itself, and everything the rule
/// declares about itself. The doc comment of the type (see [`crate::declare_violation`]) is the
/// rule's documentation; the registry row only names the type.
///
/// Messages start lowercase and carry no trailing period; fix titles are imperative.
pub trait Violation {
    /// `GR` and three digits; the hundreds digit is the family.
    const CODE: &'static str;
    /// Kebab-case, named for the bad pattern.
    const NAME: &'static str;
    const SEVERITY: Severity = Severity::Error;
    /// Runs only when selected by code, prefix or `ALL`: advice for a tuned step rather than a
    /// hazard.
    const OPT_IN: bool = false;
    /// A hazard only where the code is known to run captured (host state mutated per step, a
    /// per-step allocation): reported only for functions the hot-path analysis reaches from a
    /// captured entry point, never under `--scope all` alone.
    const CAPTURED_ONLY: bool = false;
    /// The calls [`Check::call`] judges.
    const CALLS: Calls = Calls::None;
    fn message(&self) -> String;
    /// Whether this finding is a hazard only where the code runs captured. A rule whose forms
    /// differ (a value baked into the graph, or a copy that also stalls every step) answers per
    /// finding; the default is the rule's [`Violation::CAPTURED_ONLY`].
    fn captured_only(&self) -> bool {
        Self::CAPTURED_ONLY
    }
    fn fix_title(&self) -> Option<String> {
        None
    }
}

/// Where the checker hands a rule the nodes it judges. Every hook does nothing by default; a
/// rule implements those it needs. Hooks run whether or not the rule is selected (rules keep
/// per-function state); only [`Checker::report`] looks at the selection.
pub trait Check {
    /// A call among [`Violation::CALLS`], after its children.
    fn call<'a>(_checker: &mut Checker<'a>, _call: &'a ast::ExprCall) {}
    /// Every expression but calls, after its children.
    fn expression<'a>(_checker: &mut Checker<'a>, _expr: &'a Expr) {}
    /// Every statement, before its children and before its bindings take effect.
    fn statement<'a>(_checker: &mut Checker<'a>, _stmt: &'a Stmt) {}
    /// A test whose truth value Python takes: `if`, `elif`, `while`, `assert`, comprehension
    /// conditions and conditional expressions.
    fn truth_test<'a>(_checker: &mut Checker<'a>, _test: &'a Expr) {}
    /// After a function's body, with its bindings still in scope: rules that judge a whole
    /// function from the state they gathered.
    fn function_exit(_checker: &mut Checker) {}
    /// A function whose body the run does not visit (phase 3 under `--scope hot` visits only
    /// the functions whose findings can be reported), by its qualified name inside the module,
    /// before any body is visited: rules that gather module facts from every function read
    /// what they need from its syntax.
    fn skipped_function<'a>(
        _checker: &mut Checker<'a>,
        _function: &'a ast::StmtFunctionDef,
        _qualname: &str,
    ) {
    }
}

/// Declares a violation struct whose doc comment is the rule's documentation.
///
/// Like clippy's `declare_clippy_lint!`, the doc comment is captured with `concat!`, so the docs
/// printed by `graphready rule GR101` and written to `docs/rules/` come from one place.
#[macro_export]
macro_rules! declare_violation {
    ($(#[doc = $doc:literal])+ pub struct $name:ident { $($field:ident : $ty:ty),* $(,)? }) => {
        $(#[doc = $doc])+
        #[derive(Debug, Clone)]
        pub struct $name { $(pub $field: $ty),* }
        impl $name {
            /// The rule documentation, exactly as written in the doc comment.
            pub const DOCS: &'static str = concat!($($doc, "\n"),+);
        }
    };
}
