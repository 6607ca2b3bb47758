//! Branches in the summary: the blocks that handle a batch's prefill work (see
//! `semantic::prefill`) and those that run only when a test of a parameter passes (see
//! `summary::constants`), as source ranges and as marks on the calls made in them.

use super::SummaryBuilder;
use crate::semantic::SemanticModel;
use crate::summary::constants::name_tests;
use crate::summary::{ParamBlock, ParamTest};
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

impl SummaryBuilder<'_> {
    /// The lines a block spans, when it has statements.
    fn block_lines(&self, body: &[Stmt]) -> Option<(u32, u32)> {
        let (first, last) = (body.first()?, body.last()?);
        Some((self.line_of(first.start()), self.line_of(last.end())))
    }

    /// The statements of a block that handles a batch's prefill work begin; calls there are
    /// [`crate::summary::CallSite::prefill`] until [`Self::exit_prefill`].
    pub(crate) fn enter_prefill(&mut self, body: &[Stmt]) {
        let Some(depth) = self.prefill_depths.last_mut() else {
            return;
        };
        *depth += 1;
        let Some(lines) = self.block_lines(body) else {
            return;
        };
        if let Some(function) = self.building.last_mut() {
            function.prefill_blocks.push(lines);
        }
    }

    /// [`Self::enter_prefill`] for the operands of a boolean operation after a prefill test.
    /// Returns whether it entered (an [`Self::exit_prefill`] is due).
    pub(crate) fn enter_prefill_exprs(&mut self, operands: &[Expr]) -> bool {
        let (Some(first), Some(last)) = (operands.first(), operands.last()) else {
            return false;
        };
        let Some(depth) = self.prefill_depths.last_mut() else {
            return false;
        };
        *depth += 1;
        let lines = (self.line_of(first.start()), self.line_of(last.end()));
        if let Some(function) = self.building.last_mut() {
            function.prefill_blocks.push(lines);
        }
        true
    }

    pub(crate) fn exit_prefill(&mut self) {
        if let Some(depth) = self.prefill_depths.last_mut() {
            *depth = depth.saturating_sub(1);
        }
    }

    /// A block that runs only when `test` evaluates to `!negated` begins: the tests it makes of
    /// the function's parameters with a literal default (`if check:`, `if out is None:`) hold
    /// for its lines and the calls made there, until [`Self::exit_param_guard`] with the count
    /// returned.
    pub(crate) fn enter_param_guard(
        &mut self,
        model: &SemanticModel,
        body: &[Stmt],
        test: &Expr,
        negated: bool,
    ) -> usize {
        let assigns = |name: &str| assigns_name(body, name);
        self.enter_guard(model, test, negated, &assigns, |builder| {
            builder
                .block_lines(body)
                .map(|(first, last)| ((first, 0), (last, u32::MAX)))
        })
    }

    /// [`Self::enter_param_guard`] for a branch of a conditional expression (`other`: the
    /// other branch).
    pub(crate) fn enter_param_guard_expr(
        &mut self,
        model: &SemanticModel,
        branch: &Expr,
        other: &Expr,
        test: &Expr,
        negated: bool,
    ) -> usize {
        // `p if p is not None else fallback`: the branch stands in for the parameter.
        let stands_in = |name: &str| matches!(other, Expr::Name(n) if n.id.as_str() == name);
        self.enter_guard(model, test, negated, &stands_in, |builder| {
            Some((
                builder.position(branch.start()),
                builder.position(branch.end()),
            ))
        })
    }

    /// The (line, column) of an offset, as findings give their positions.
    fn position(&self, offset: ruff_text_size::TextSize) -> (u32, u32) {
        let location = crate::location(&self.lines, self.source, offset);
        (location.line, location.column)
    }

    /// `span`: where the guarded code starts and ends, asked for only when the test says
    /// something of a parameter; `replaces`: whether the code computes a parameter's value in
    /// its place (see [`ParamBlock::fallback`]).
    fn enter_guard(
        &mut self,
        model: &SemanticModel,
        test: &Expr,
        negated: bool,
        replaces: &dyn Fn(&str) -> bool,
        span: impl FnOnce(&Self) -> Option<((u32, u32), (u32, u32))>,
    ) -> usize {
        if self.returns_only {
            return 0;
        }
        let mut tests = Vec::new();
        name_tests(test, negated, &mut tests);
        if tests.is_empty() {
            return 0;
        }
        let span = span(self);
        let (Some(function), Some(conditions)) =
            (self.building.last_mut(), self.param_conditions.last_mut())
        else {
            return 0;
        };
        let mut entered = 0;
        for (name, test) in tests {
            let defaulted = function
                .params
                .iter()
                .any(|p| p.name == name && p.default.is_some());
            if !defaulted || !model.is_parameter(name) {
                continue;
            }
            conditions.push((name.into(), test));
            entered += 1;
            if let Some((start, end)) = span {
                function.param_blocks.push(ParamBlock {
                    start,
                    end,
                    param: name.into(),
                    test,
                    fallback: test == ParamTest::IsNone && replaces(name),
                });
            }
        }
        entered
    }

    pub(crate) fn exit_param_guard(&mut self, entered: usize) {
        if let Some(conditions) = self.param_conditions.last_mut() {
            conditions.truncate(conditions.len().saturating_sub(entered));
        }
    }
}

/// Whether a block binds `name` at its top level (`name = ...`, `name, rest = ...`, `name: T =
/// ...`).
fn assigns_name(body: &[Stmt], name: &str) -> bool {
    fn binds(target: &Expr, name: &str) -> bool {
        match target {
            Expr::Name(n) => n.id.as_str() == name,
            Expr::Tuple(t) => t.elts.iter().any(|e| binds(e, name)),
            Expr::List(l) => l.elts.iter().any(|e| binds(e, name)),
            _ => false,
        }
    }
    body.iter().any(|stmt| match stmt {
        Stmt::Assign(assign) => assign.targets.iter().any(|t| binds(t, name)),
        Stmt::AnnAssign(assign) => binds(&assign.target, name),
        _ => false,
    })
}
