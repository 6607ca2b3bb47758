//! Blocks and branches: how the checker walks a block (what an early return leaves safe) and
//! `if` statements (guards that make a body safe, clauses that see the names as they were before
//! the statement, `isinstance` narrowing), and what it knows about a block's ways out.

use super::{guards, Checker};
use ruff_python_ast::visitor::Visitor;
use ruff_python_ast::{self as ast, Expr, Stmt};

impl<'a> Checker<'a> {
    /// Visits a block; after `if <test>: return`, the rest of the block runs only when `test`
    /// is false, which may make it safe. A block that can only end by raising is an error path:
    /// what it does before the `raise` (formatting the values for the message) runs only when
    /// something already went wrong.
    pub(super) fn visit_block(&mut self, body: &'a [Stmt]) {
        let saved = self.safe_depth;
        if only_raises(body) {
            self.safe_depth += 1;
        }
        let saved_previous = self.previous;
        let saved_next = self.next;
        let mut prefill = 0;
        let mut guarded = 0;
        let mut extend_only = false;
        for (i, stmt) in body.iter().enumerate() {
            self.previous = i.checked_sub(1).map(|j| &body[j]);
            self.next = body.get(i + 1);
            // A statement that reads the batch's extend data unguarded, and the rest of the
            // block: extend work.
            if !extend_only && crate::semantic::reads_extend_data(stmt) {
                extend_only = true;
                self.summary.enter_prefill(&body[i..]);
                prefill += 1;
            }
            self.visit_stmt(stmt);
            // What follows a `return`, `raise`, `continue` or `break` never runs.
            if body_always_exits(std::slice::from_ref(stmt)) {
                break;
            }
            // `try: if capturing: return ... except ...: pass`: the check made inside a `try`.
            if let Stmt::Try(try_stmt) = stmt {
                if try_stmt.body.iter().any(|inner| {
                    matches!(inner, Stmt::If(if_stmt) if if_stmt.elif_else_clauses.is_empty()
                        && body_always_exits(&if_stmt.body)
                        && guards::safe_when(&self.model, self.settings, &if_stmt.test, true))
                }) {
                    self.safe_depth += 1;
                }
            }
            if let Stmt::If(if_stmt) = stmt {
                if if_stmt.elif_else_clauses.is_empty() && body_always_exits(&if_stmt.body) {
                    if guards::safe_when(&self.model, self.settings, &if_stmt.test, true)
                        || guards::mirror_fallback(&if_stmt.test, true, &body[i + 1..])
                        || guards::is_lazy_early_return(
                            &self.model,
                            if_stmt,
                            self.previous,
                            &body[i + 1..],
                        )
                    {
                        self.safe_depth += 1;
                    }
                    // `if is_decode: return ...`: the rest handles prefill work.
                    if self.model.prefill_when(&if_stmt.test, true) {
                        self.summary.enter_prefill(&body[i + 1..]);
                        prefill += 1;
                    }
                    // `if not check: return`: the rest runs with `check` true.
                    guarded += self.summary.enter_param_guard(
                        &self.model,
                        &body[i + 1..],
                        &if_stmt.test,
                        true,
                    );
                }
            }
        }
        for _ in 0..prefill {
            self.summary.exit_prefill();
        }
        self.summary.exit_param_guard(guarded);
        self.safe_depth = saved;
        self.previous = saved_previous;
        self.next = saved_next;
    }

    pub(super) fn visit_guarded(&mut self, safe: bool, body: &'a [Stmt]) {
        if safe {
            self.safe_depth += 1;
        }
        self.visit_block(body);
        if safe {
            self.safe_depth -= 1;
        }
    }

    /// Visits a clause's body, which handles a batch's prefill work when `prefill` says so (see
    /// `semantic::prefill`), and runs when `test` (if given) evaluates to `!negated`.
    fn visit_clause(
        &mut self,
        safe: bool,
        prefill: bool,
        test: Option<(&'a Expr, bool)>,
        body: &'a [Stmt],
    ) {
        if prefill {
            self.summary.enter_prefill(body);
        }
        let entered = test.map_or(0, |(test, negated)| {
            self.summary
                .enter_param_guard(&self.model, body, test, negated)
        });
        let platform = test.is_some_and(|(test, negated)| {
            !negated && guards::on_other_platform(test, self.settings.platforms)
        });
        self.summary.enter_platform(platform);
        self.visit_guarded(safe, body);
        self.summary.exit_platform(platform);
        self.summary.exit_param_guard(entered);
        if prefill {
            self.summary.exit_prefill();
        }
    }

    /// `body if test else orelse`: each branch guarded as an `if` clause is, and under the
    /// tests of the function's parameters it makes.
    pub(super) fn visit_if_expr(&mut self, if_expr: &'a ast::ExprIf) {
        let test = &*if_expr.test;
        self.visit_expr(test);
        self.summary.judged(test);
        for (branch, other, negated) in [
            (&*if_expr.body, &*if_expr.orelse, false),
            (&*if_expr.orelse, &*if_expr.body, true),
        ] {
            let safe = guards::safe_when(&self.model, self.settings, test, negated)
                || guards::mirror_fallback(test, negated, &[]);
            let entered =
                self.summary
                    .enter_param_guard_expr(&self.model, branch, other, test, negated);
            self.safe_depth += u32::from(safe);
            self.visit_expr(branch);
            self.safe_depth -= u32::from(safe);
            self.summary.exit_param_guard(entered);
        }
    }

    pub(super) fn visit_if(&mut self, if_stmt: &'a ast::StmtIf) {
        self.visit_expr(&if_stmt.test);
        self.truth_test(&if_stmt.test);
        let body_safe = guards::safe_when(&self.model, self.settings, &if_stmt.test, false)
            || guards::mirror_fallback(&if_stmt.test, false, &if_stmt.body)
            || guards::is_lazy_init(&self.model, if_stmt, self.previous)
            || guards::is_converging(&self.model, if_stmt);
        // Each later clause sees the names as they were before the statement, not as an earlier
        // clause bound them (`if isinstance(x, Tensor): x = x.tolist() else: ... x ...`).
        // `if isinstance(x, (int, float)):` makes `x` a host value in the body only.
        let narrowing = self.model.isinstance_narrowing(&if_stmt.test);
        // `if x.is_cpu: ... else: ...`: `x` lives on the host in the body, on the device after.
        let device = self.model.device_narrowing(&if_stmt.test);
        // A clause off under the defaults binds nothing the code after the statement sees.
        // Nor does a clause that leaves (`return`, `raise`, `continue`, `break`), or one that
        // never runs while capturing, for the captured code after it.
        let body_off = guards::off_by_default(&self.model, self.settings, &if_stmt.test)
            || body_always_exits(&if_stmt.body)
            || guards::outside_capture(&self.model, &if_stmt.test, false);
        let branches = !if_stmt.elif_else_clauses.is_empty()
            || narrowing.is_some()
            || device.is_some()
            || body_off;
        if branches {
            self.model.begin_clauses();
            self.model.enter_branch();
        }
        if let Some((name, ty)) = narrowing {
            self.model.narrow(name, ty);
        }
        if let Some((name, Some(ty), _)) = device {
            self.model.narrow(name, ty);
        }
        // `if mask is None: mask = torch.ones(n)`: after it, `mask` holds either.
        let fallback = if branches {
            None
        } else {
            none_test(&if_stmt.test).and_then(|name| self.model.value_ty(name).map(|ty| (name, ty)))
        };
        let body_prefill = self.model.prefill_when(&if_stmt.test, false);
        self.visit_clause(
            body_safe,
            body_prefill,
            Some((&if_stmt.test, false)),
            &if_stmt.body,
        );
        if branches {
            self.model.leave_branch(!body_off);
        }
        if let Some((name, before)) = fallback {
            self.model.join_fallback(name, before);
        }
        // Each later clause runs only when every earlier test was false.
        let mut earlier_false_safe =
            guards::safe_when(&self.model, self.settings, &if_stmt.test, true);
        let mut ruled_out = crate::semantic::ModesRuledOut::default();
        let mut earlier_false_prefill =
            self.model.prefill_when(&if_stmt.test, true) || ruled_out.note(&if_stmt.test);
        let mut earlier_false_uncaptured =
            guards::outside_capture(&self.model, &if_stmt.test, true);
        for clause in &if_stmt.elif_else_clauses {
            let off = body_always_exits(&clause.body)
                || earlier_false_uncaptured
                || clause.test.as_ref().is_some_and(|test| {
                    guards::off_by_default(&self.model, self.settings, test)
                        || guards::outside_capture(&self.model, test, false)
                });
            self.model.enter_branch();
            if let Some((name, _, Some(ty))) = device {
                self.model.narrow(name, ty);
            }
            let saved = self.safe_depth;
            self.safe_depth += u32::from(earlier_false_safe);
            match &clause.test {
                Some(test) => {
                    self.visit_expr(test);
                    self.truth_test(test);
                    if let Some((name, ty)) = self.model.isinstance_narrowing(test) {
                        self.model.narrow(name, ty);
                    }
                    let clause_safe = guards::safe_when(&self.model, self.settings, test, false);
                    let prefill = earlier_false_prefill || self.model.prefill_when(test, false);
                    self.visit_clause(clause_safe, prefill, Some((test, false)), &clause.body);
                    earlier_false_safe = earlier_false_safe
                        || guards::safe_when(&self.model, self.settings, test, true);
                    earlier_false_prefill = earlier_false_prefill
                        || self.model.prefill_when(test, true)
                        || ruled_out.note(test);
                    earlier_false_uncaptured = earlier_false_uncaptured
                        || guards::outside_capture(&self.model, test, true);
                }
                None => {
                    // After `if t:` alone, `else:` runs when `t` is false.
                    let single =
                        (if_stmt.elif_else_clauses.len() == 1).then_some((&*if_stmt.test, true));
                    let fallback = single.is_some_and(|(test, negated)| {
                        guards::mirror_fallback(test, negated, &clause.body)
                    });
                    self.visit_clause(fallback, earlier_false_prefill, single, &clause.body);
                }
            }
            self.safe_depth = saved;
            self.model.leave_branch(!off);
        }
        if branches {
            self.model.end_clauses();
        }
        // `if not x.is_cuda: return x`: past the statement, `x` is on the device, whatever its
        // callers were taken to pass.
        if let Some((name, _, Some(ty))) = device {
            if if_stmt.elif_else_clauses.is_empty() && body_always_exits(&if_stmt.body) {
                self.model.bind(name, ty);
            }
        }
        // `if not capturing: any_visual = mask.any() else: any_visual = False`: while capturing,
        // `any_visual` is false, and `if any_visual:` never runs there.
        if let Some(last) = if_stmt.elif_else_clauses.last() {
            if last.test.is_none() && guards::outside_capture(&self.model, &if_stmt.test, false) {
                for name in falsy_assignments(&last.body) {
                    self.model.mark_false_while_capturing(name);
                }
            }
        }
    }
}

/// The names a block assigns a false literal (`False`, `None`, `0`) at its top level.
fn falsy_assignments(body: &[Stmt]) -> impl Iterator<Item = &str> {
    body.iter().filter_map(|stmt| match stmt {
        Stmt::Assign(assign) => match (&*assign.targets, &*assign.value) {
            ([Expr::Name(name)], value)
                if matches!(
                    crate::summary::Const::of(value),
                    Some(crate::summary::Const::False | crate::summary::Const::None)
                        | Some(crate::summary::Const::Int(0))
                ) =>
            {
                Some(name.id.as_str())
            }
            _ => None,
        },
        _ => None,
    })
}

/// The name `test` finds missing: `x is None`.
fn none_test(test: &Expr) -> Option<&str> {
    crate::semantic::none_comparison(test).and_then(|(name, is_none)| is_none.then_some(name))
}

/// Whether a block can only end by raising: its last statement raises and nothing in it
/// leaves it otherwise (`return`, `break`, `continue`, `yield`; nested definitions aside).
/// A function body that returns in its branches and raises at the end is not one.
pub(super) fn only_raises(body: &[Stmt]) -> bool {
    fn leaves(stmt: &Stmt) -> bool {
        match stmt {
            Stmt::Return(_) | Stmt::Break(_) | Stmt::Continue(_) => true,
            Stmt::Expr(expr) => matches!(&*expr.value, Expr::Yield(_) | Expr::YieldFrom(_)),
            Stmt::If(if_stmt) => {
                if_stmt.body.iter().any(leaves)
                    || if_stmt
                        .elif_else_clauses
                        .iter()
                        .any(|clause| clause.body.iter().any(leaves))
            }
            Stmt::For(for_stmt) => for_stmt.body.iter().chain(&for_stmt.orelse).any(leaves),
            Stmt::While(while_stmt) => while_stmt.body.iter().chain(&while_stmt.orelse).any(leaves),
            Stmt::With(with) => with.body.iter().any(leaves),
            Stmt::Try(try_stmt) => {
                try_stmt
                    .body
                    .iter()
                    .chain(&try_stmt.orelse)
                    .chain(&try_stmt.finalbody)
                    .any(leaves)
                    || try_stmt.handlers.iter().any(|handler| {
                        let ast::ExceptHandler::ExceptHandler(handler) = handler;
                        handler.body.iter().any(leaves)
                    })
            }
            Stmt::Match(match_stmt) => match_stmt
                .cases
                .iter()
                .any(|case| case.body.iter().any(leaves)),
            _ => false,
        }
    }
    matches!(body.last(), Some(Stmt::Raise(_))) && !body.iter().any(leaves)
}

pub(super) fn body_always_exits(body: &[Stmt]) -> bool {
    matches!(
        body.last(),
        Some(Stmt::Return(_) | Stmt::Raise(_) | Stmt::Continue(_) | Stmt::Break(_))
    )
}
