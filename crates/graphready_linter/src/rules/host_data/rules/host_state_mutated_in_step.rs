use crate::checker::Checker;
use crate::declare_violation;
use crate::rules::sync::rules::tensor_formatting::LOG_METHODS;
use crate::semantic::Ty;
use crate::violation::{Check, Violation};
use graphready_diagnostics::Severity;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for host state that the step changes: a counter on
    /// `self` bumped every call (`self.step += 1`), and a flag set lazily on first use
    /// (`if not self._initialized: ...; self._initialized = True`, where no other method sets
    /// the flag again) around work that reads the call's inputs. Work made from the module's
    /// own state alone (a rotary cache recomputed after loading) is done by the warm-up that
    /// precedes capture, and the graph need not contain it.
    ///
    /// ## Why is this bad?
    /// A CUDA graph replays kernels, not Python. The counter stops at the value it had when the
    /// graph was captured, and anything computed from it is frozen. A lazily set flag is worse:
    /// if the first call is the capture (or the warm-up right before it), the init work runs
    /// eagerly once, the flag flips, and the captured graph never contains the init kernel.
    ///
    /// ## Example
    /// ```python
    /// def forward(self, x):
    ///     if not self._initialized:
    ///         self.scale.copy_(x.abs().amax())
    ///         self._initialized = True
    ///     self.step += 1
    ///     return self.layer(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def prepare(self, x):  # called once, before capture
    ///     self.scale.copy_(x.abs().amax())
    ///
    /// def forward(self, x):
    ///     self.step_buf.add_(1)  # a device counter advances on every replay
    ///     return self.layer(x)
    /// ```
    pub struct HostStateMutatedInStep {
        attribute: String,
        lazy: bool,
    }
}

impl Violation for HostStateMutatedInStep {
    const CODE: &'static str = "GR304";
    const NAME: &'static str = "host-state-mutated-in-step";
    const SEVERITY: Severity = Severity::Warning;
    const CAPTURED_ONLY: bool = true;

    fn message(&self) -> String {
        if self.lazy {
            format!(
                "lazily set flag `self.{}` flips once on the host; the captured graph may skip \
                 the work it guards",
                self.attribute
            )
        } else {
            format!(
                "`self.{}` is changed on the host every step; replay does not repeat it",
                self.attribute
            )
        }
    }

    fn fix_title(&self) -> Option<String> {
        Some(if self.lazy {
            "Do the one-time work in an explicit setup call before capture".to_string()
        } else {
            "Keep the counter in a device tensor (`buf.add_(1)`), or update it outside the graph"
                .to_string()
        })
    }
}

impl Check for HostStateMutatedInStep {
    fn expression<'a>(checker: &mut Checker<'a>, expr: &'a Expr) {
        if let Expr::Attribute(attribute) = expr {
            self_read(checker, attribute);
        }
    }

    fn statement<'a>(checker: &mut Checker<'a>, stmt: &'a Stmt) {
        match stmt {
            Stmt::AugAssign(assign) => augmented(checker, assign),
            Stmt::If(if_stmt) => lazy_flag(checker, if_stmt),
            _ => {}
        }
        track_logging(checker, stmt);
    }

    fn function_exit(checker: &mut Checker) {
        counters_read(checker);
    }
}

/// `self.<attribute>`, when the receiver is the method's `self`.
fn self_attribute<'e>(checker: &Checker, expr: &'e Expr) -> Option<&'e str> {
    let Expr::Attribute(attribute) = expr else {
        return None;
    };
    let self_name = checker.model.self_name()?;
    matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name)
        .then(|| attribute.attr.id.as_str())
}

/// `self.step += 1`: remembered, and reported at the end of the function if the function also
/// reads the attribute (a counter used as data or control flow, not a statistic).
fn augmented<'a>(checker: &mut Checker<'a>, assign: &'a ast::StmtAugAssign) {
    if !checker.in_captured_code() {
        return;
    }
    let Some(attribute) = self_attribute(checker, &assign.target) else {
        return;
    };
    if checker.model.self_attribute_ty(attribute) != Ty::Host
        || checker.ty(&assign.value) == Ty::Tensor
    {
        return;
    }
    checker
        .rule_state
        .host_data
        .counters
        .push((attribute, assign.range()));
}

/// A read of `self.<attribute>`.
fn self_read<'a>(checker: &mut Checker<'a>, attribute: &'a ast::ExprAttribute) {
    if !matches!(attribute.ctx, ast::ExprContext::Load) {
        return;
    }
    let Some(self_name) = checker.model.self_name() else {
        return;
    };
    if matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name)
        && !checker
            .rule_state
            .host_data
            .logging
            .iter()
            .any(|range| range.contains_range(attribute.range()))
    {
        checker
            .rule_state
            .host_data
            .self_reads
            .insert(attribute.attr.id.as_str());
    }
}

/// Remembers logging statements and the tests of blocks that only log: a counter read there is a
/// statistic, not data.
fn track_logging(checker: &mut Checker, stmt: &Stmt) {
    match stmt {
        Stmt::Expr(expr) if is_logging_call(&expr.value) => {
            checker.rule_state.host_data.logging.push(expr.range());
        }
        Stmt::If(if_stmt) if !has_work(&if_stmt.body) => {
            checker
                .rule_state
                .host_data
                .logging
                .push(if_stmt.test.range());
        }
        _ => {}
    }
}

/// At the end of a function: the counters it also reads.
fn counters_read(checker: &mut Checker) {
    let read: Vec<(String, ruff_text_size::TextRange)> = checker
        .rule_state
        .host_data
        .counters
        .iter()
        .filter(|(attribute, _)| checker.rule_state.host_data.self_reads.contains(attribute))
        .map(|(attribute, range)| ((*attribute).to_string(), *range))
        .collect();
    for (attribute, range) in read {
        checker.report(
            HostStateMutatedInStep {
                attribute,
                lazy: false,
            },
            range,
        );
    }
}

/// The `self.<name>` attributes an `if` test reads.
struct TestAttributes<'c, 'a, 'e> {
    checker: &'c Checker<'a>,
    found: Vec<&'e str>,
}

impl<'e> Visitor<'e> for TestAttributes<'_, '_, 'e> {
    fn visit_expr(&mut self, expr: &'e Expr) {
        if let Some(attribute) = self_attribute(self.checker, expr) {
            self.found.push(attribute);
        }
        visitor::walk_expr(self, expr);
    }
}

/// `if not self._initialized: ...; self._initialized = True`
fn lazy_flag(checker: &mut Checker, if_stmt: &ast::StmtIf) {
    if checker.model.self_name().is_none() {
        return;
    }
    let mut tested = TestAttributes {
        checker,
        found: Vec::new(),
    };
    tested.visit_expr(&if_stmt.test);
    let tested = tested.found;
    if tested.is_empty() {
        return;
    }
    if !has_work(&if_stmt.body) || !reads_parameters(checker, &if_stmt.body) {
        return;
    }
    let mut flips = Vec::new();
    for stmt in &if_stmt.body {
        let Stmt::Assign(assign) = stmt else {
            continue;
        };
        if !matches!(&*assign.value, Expr::BooleanLiteral(_)) {
            continue;
        }
        for target in &assign.targets {
            if let Some(attribute) = self_attribute(checker, target) {
                // Set here alone outside `__init__`: a flag that flips once. One another method
                // sets too is armed and cleared again (a side stream forked and joined).
                if tested.contains(&attribute) && checker.model.self_setter_count(attribute) <= 1 {
                    flips.push((attribute.to_string(), assign.range()));
                }
            }
        }
    }
    for (attribute, range) in flips {
        checker.report(
            HostStateMutatedInStep {
                attribute,
                lazy: true,
            },
            range,
        );
    }
}

/// Whether a block reads a parameter of the function (`x` in `self.scale.copy_(x.amax())`)
/// other than `self`: work that depends on the call's inputs.
fn reads_parameters(checker: &Checker, body: &[Stmt]) -> bool {
    struct Reads<'c, 'a> {
        checker: &'c Checker<'a>,
        found: bool,
    }
    impl<'e> Visitor<'e> for Reads<'_, '_> {
        fn visit_expr(&mut self, expr: &'e Expr) {
            if let Expr::Name(name) = expr {
                let name = name.id.as_str();
                self.found |= self.checker.model.self_name() != Some(name)
                    && self.checker.model.is_parameter(name);
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut reads = Reads {
        checker,
        found: false,
    };
    reads.visit_body(body);
    reads.found
}

/// Whether a block does work a graph would need to contain, rather than only logging and setting
/// flags (`if not self._logged: logger.info(...); self._logged = True` is harmless).
fn has_work(body: &[Stmt]) -> bool {
    body.iter().any(|stmt| match stmt {
        Stmt::Pass(_) => false,
        Stmt::Assign(assign) => !matches!(&*assign.value, Expr::BooleanLiteral(_)),
        Stmt::Expr(expr) => !is_logging_call(&expr.value),
        Stmt::If(if_stmt) => {
            has_work(&if_stmt.body)
                || if_stmt
                    .elif_else_clauses
                    .iter()
                    .any(|clause| has_work(&clause.body))
        }
        _ => true,
    })
}

fn is_logging_call(expr: &Expr) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    let name = match &*call.func {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.id.as_str(),
        _ => return false,
    };
    name == "print"
        || LOG_METHODS.contains(&name)
        || name.starts_with("log_")
        || name.starts_with("print_")
}
