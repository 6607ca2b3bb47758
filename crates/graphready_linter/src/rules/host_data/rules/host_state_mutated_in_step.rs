use crate::checker::semantic::Ty;
use crate::checker::Checker;
use crate::declare_violation;
use crate::registry::Rule;
use crate::violation::Violation;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

declare_violation! {
    /// ## What it does
    /// Checks, in code that runs captured, for host state that the step changes: a counter on
    /// `self` bumped every call (`self.step += 1`), and a flag set lazily on first use
    /// (`if not self._initialized: ...; self._initialized = True`).
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
    ///         self.cache.zero_()
    ///         self._initialized = True
    ///     self.step += 1
    ///     return self.layer(x)
    /// ```
    ///
    /// Use instead:
    /// ```python
    /// def prepare(self):  # called once, before capture
    ///     self.cache.zero_()
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
    const RULE: Rule = Rule::HostStateMutatedInStep;
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

/// `self.<attribute>`, when the receiver is the method's `self`.
fn self_attribute<'e>(checker: &Checker, expr: &'e Expr) -> Option<&'e str> {
    let Expr::Attribute(attribute) = expr else {
        return None;
    };
    let self_name = checker.model.self_name()?;
    matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name)
        .then(|| attribute.attr.id.as_str())
}

/// `self.step += 1`
pub fn augmented(checker: &mut Checker, assign: &ast::StmtAugAssign) {
    let Some(attribute) = self_attribute(checker, &assign.target) else {
        return;
    };
    if checker.model.self_attribute_ty(attribute) != Ty::Host
        || checker.ty(&assign.value) == Ty::Tensor
    {
        return;
    }
    checker.report(
        HostStateMutatedInStep {
            attribute: attribute.to_string(),
            lazy: false,
        },
        assign.range(),
    );
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
pub fn lazy_flag(checker: &mut Checker, if_stmt: &ast::StmtIf) {
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
                if tested.contains(&attribute) {
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
