//! The one visitor: it walks a module in source order, keeps the semantic model current, tracks
//! guards and the enclosing function, and dispatches each node to the rules that want it.

mod branches;
pub(crate) mod guards;
mod order;

use crate::registry::{Rule, RuleOf, RuleSet};
use crate::rules;
use crate::semantic::{ProjectFacts, SemanticModel, Ty};
use crate::settings::Settings;
use crate::summary::builder::SummaryBuilder;
use crate::summary::ModuleSummary;
use crate::violation::Violation;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::TextRange;
use rustc_hash::FxHashSet;

/// A finding before positions are turned into lines and columns.
#[derive(Debug)]
pub struct RawDiagnostic {
    pub rule: Rule,
    pub range: TextRange,
    pub message: String,
    pub fix: Option<String>,
    pub function: Option<String>,
    pub captured_only: bool,
}

/// A function body whose visit waits until the enclosing module (or class) is fully bound.
struct Deferred<'a> {
    function: &'a ast::StmtFunctionDef,
    /// The class a method belongs to: its name for the semantic model, qualified inside the
    /// module for the summary (`make_backend.Builder` for a class defined in a function).
    class: Option<&'a str>,
    class_qualname: Option<String>,
    qualname: String,
    safe: bool,
}

pub struct Checker<'a> {
    /// When set, the only deferred function bodies visited.
    only: Option<&'a FxHashSet<String>>,
    pub settings: &'a Settings,
    /// The rules that may report in this file.
    rules: RuleSet,
    pub model: SemanticModel<'a>,
    diagnostics: Vec<RawDiagnostic>,
    /// Non-zero while inside code that cannot run during capture.
    safe_depth: u32,
    /// The statement before the one being visited, in its block.
    previous: Option<&'a Stmt>,
    /// The statement after the one being visited, in its block.
    next: Option<&'a Stmt>,
    /// Qualified name of the function being visited (`Class.method`, `outer.inner`).
    function: Option<String>,
    /// Class bodies being visited, innermost last.
    classes: Vec<&'a str>,
    /// The qualified name of the class whose body is being visited directly (not inside one of
    /// its methods): its `def`s are its methods, wherever the class itself is defined.
    class_body: Option<String>,
    deferred: Vec<Deferred<'a>>,
    /// Per function being visited, the functions defined in its body: visited when the body
    /// ends, so that what they read of the enclosing function's names is what it binds by
    /// then (a closure runs after the names it reads are set: `def gather(): ... tp_sizes
    /// ...` before `tp_sizes = torch.tensor(sizes)`).
    nested: Vec<Vec<Deferred<'a>>>,
    /// What the project-wide analysis needs from this module, fed at the same visit points.
    summary: SummaryBuilder<'a>,
    /// Per-function state of the rules that judge a whole function.
    pub(crate) rule_state: rules::FunctionState<'a>,
    /// What the rules learned about this module's functions, for their callers visited later.
    pub(crate) module_facts: rules::ModuleFacts,
}

/// What a checker run produces.
pub struct Analysis {
    pub diagnostics: Vec<RawDiagnostic>,
    /// Line starts of the source, computed once for the summaries and the diagnostics.
    pub lines: ruff_source_file::LineIndex,
    pub summary: ModuleSummary,
}

impl<'a> Checker<'a> {
    pub fn new(
        settings: &'a Settings,
        rules: RuleSet,
        source: &'a str,
        module: Option<&str>,
        is_package: bool,
        returns: ProjectFacts<'a>,
    ) -> Self {
        let mut model = SemanticModel::new(module, is_package, returns);
        model.set_capture_predicates(&settings.capture_predicates);
        model.set_platforms(settings.platforms);
        model.set_source(source);
        Checker {
            settings,
            rules,
            model,
            summary: SummaryBuilder::new(source, module),
            diagnostics: Vec::new(),
            safe_depth: 0,
            previous: None,
            next: None,
            function: None,
            classes: Vec::new(),
            class_body: None,
            deferred: Vec::new(),
            nested: Vec::new(),
            rule_state: rules::FunctionState::default(),
            module_facts: rules::ModuleFacts::default(),
            only: None,
        }
    }

    /// Visits only the bodies of these module-level functions and methods (and what they nest).
    #[must_use]
    pub fn only(mut self, only: Option<&'a FxHashSet<String>>) -> Self {
        self.only = only;
        self
    }

    /// Without a summary for the project (a second check of a file, whose first summary
    /// stands): the summary builder keeps only the return types the walk needs.
    #[must_use]
    pub fn summarise(mut self, summarise: bool) -> Self {
        if !summarise {
            self.summary.returns_only();
        }
        self
    }

    /// A module for a device without CUDA graphs (see [`crate::analyze`]): nothing in it is
    /// reported, and its calls lead nowhere.
    #[must_use]
    pub fn other_platform(mut self, other: bool) -> Self {
        self.safe_depth = u32::from(other);
        self.summary.other_platform(other);
        self
    }

    /// The qualified name of the function being visited (`Class.method`), if any.
    pub fn function(&self) -> Option<&str> {
        self.function.as_deref()
    }

    /// The statement after the one being visited, in its block (`None` at a block's end).
    pub fn next_statement(&self) -> Option<&'a Stmt> {
        self.next
    }

    pub fn enabled(&self, rule: Rule) -> bool {
        self.rules.contains(rule)
    }

    /// Whether any rule of this run can report here: false under a "not capturing" guard.
    pub fn in_captured_code(&self) -> bool {
        self.safe_depth == 0
    }

    pub fn report<V: Violation + RuleOf>(&mut self, violation: V, range: TextRange) {
        if !self.enabled(V::RULE) || !self.in_captured_code() {
            return;
        }
        if V::RULE.family() == crate::registry::Family::Sync {
            self.summary.host_sync(V::RULE.code());
        }
        self.diagnostics.push(RawDiagnostic {
            rule: V::RULE,
            range,
            message: violation.message(),
            fix: violation.fix_title(),
            function: self.function.clone(),
            captured_only: violation.captured_only(),
        });
    }

    /// A test whose truth value Python takes: the rules judge it, and the summary notes the
    /// parameters it reads (a tensor argument there changes the verdict).
    fn truth_test(&mut self, test: &'a Expr) {
        rules::truth_test(self, test);
        self.summary.judged(test);
    }

    pub fn is_tensor(&self, expr: &Expr) -> bool {
        self.model.is_tensor(expr)
    }

    pub fn ty(&self, expr: &Expr) -> Ty {
        self.model.ty(expr)
    }

    /// Walks a module and returns what the rules found.
    pub fn run(mut self, module: &'a ast::ModModule) -> Analysis {
        if memchr::memmem::find(self.summary.source().as_bytes(), b"keep_on_cpu").is_some() {
            self.model.learn_host_fields(module);
        }
        self.summary.module_definitions(&module.body);
        self.visit_body(&module.body);
        // Callees before callers, so that a call of this module's tensor-returning function
        // already knows what it returns; summaries go back to source order afterwards.
        let (visited, skipped): (Vec<_>, Vec<_>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|deferred| {
                self.only
                    .is_none_or(|only| only.contains(&deferred.qualname))
            });
        // What phase 1 learnt of the functions skipped, before any body is visited.
        for deferred in skipped {
            self.model.learn_skipped_return(&deferred.qualname);
            crate::rules::skipped_function(&mut self, deferred.function, &deferred.qualname);
        }
        for deferred in order::callees_first(visited) {
            self.visit_function_body(deferred);
        }
        let (summary, lines) = self.summary.finish(module, &self.model);
        Analysis {
            diagnostics: self.diagnostics,
            lines,
            summary,
        }
    }

    fn visit_function_body(&mut self, deferred: Deferred<'a>) {
        let function = deferred.function;
        let self_name = deferred.class.and_then(|_| {
            let is_static = function.decorator_list.iter().any(|decorator| {
                matches!(&decorator.expression, Expr::Name(n) if n.id.as_str() == "staticmethod")
            });
            (!is_static)
                .then(|| function.parameters.iter_non_variadic_params().next())
                .flatten()
                .map(|p| p.parameter.name.id.as_str())
        });
        self.summary.enter_function(
            &self.model,
            function,
            &deferred.qualname,
            deferred.class_qualname.as_deref(),
            self_name,
        );
        let saved_function = self.function.replace(deferred.qualname);
        let saved_body = self.class_body.take();
        let saved_safe = self.safe_depth;
        if deferred.safe {
            self.safe_depth += 1;
        }
        let saved_state = std::mem::take(&mut self.rule_state);
        self.model.enter_function(deferred.class, self_name);
        self.model.bind_parameters(&function.parameters);
        self.model.bind_documented_host(function);
        // Parameters whose type the reached call sites decide (device tensors passed to a `bool`
        // parameter, host lists passed to a tensor one).
        let param_types = self
            .function
            .as_deref()
            .map_or(&[][..], |qualname| self.model.param_types(qualname));
        for (name, ty) in param_types {
            self.model.bind(name, *ty);
        }
        if let Some(self_name) = self_name {
            self.model.bind(self_name, Ty::Unknown);
        }
        // Fields the parameters' classes annotate as host data (`input_batch.num_scheduled_tokens`
        // with `num_scheduled_tokens: np.ndarray`).
        let attribute_types = self
            .function
            .as_deref()
            .map_or(&[][..], |qualname| self.model.attribute_types(qualname));
        for known in attribute_types {
            self.model
                .assume_attribute(format!("{}.{}", known.receiver, known.field), known.ty);
        }
        // An assertion in the body proper runs on every call: what it says of a parameter
        // (`assert lens.is_cpu`) held from the call on, before the assertion too.
        for stmt in &function.body {
            if let Stmt::Assert(assert) = stmt {
                self.model.assume_host(&assert.test);
            }
        }
        self.nested.push(Vec::new());
        self.visit_body(&function.body);
        for nested in self.nested.pop().unwrap_or_default() {
            self.visit_function_body(nested);
        }
        rules::function_exit(self);
        self.rule_state = saved_state;
        self.model.exit_function();
        self.safe_depth = saved_safe;
        self.function = saved_function;
        self.class_body = saved_body;
        self.summary.exit_function(&mut self.model);
    }

    fn qualify(&self, name: &str) -> String {
        // A class body's `def`s and classes are qualified by the class; anything else inside a
        // function by the function.
        match (&self.class_body, &self.function) {
            (Some(class), _) => format!("{class}.{name}"),
            (None, Some(function)) => format!("{function}.{name}"),
            (None, None) => name.to_string(),
        }
    }
}

impl<'a> Visitor<'a> for Checker<'a> {
    fn visit_body(&mut self, body: &'a [Stmt]) {
        self.visit_block(body);
    }

    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        rules::statement(self, stmt);
        match stmt {
            Stmt::Import(_) | Stmt::ImportFrom(_) => self.model.bind_import(stmt),
            Stmt::Global(global) => self.summary.declare_globals(&global.names),
            Stmt::FunctionDef(function) => {
                for decorator in &function.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                let name = function.name.id.as_str();
                self.model.bind(name, Ty::Host);
                self.summary
                    .local_definition_bound(name, self.qualify(name));
                let in_class = self.class_body.is_some();
                let deferred = Deferred {
                    function,
                    class: self.classes.last().copied().filter(|_| in_class),
                    class_qualname: self.class_body.clone(),
                    qualname: self.qualify(name),
                    safe: !self.in_captured_code()
                        || guards::is_device_kernel(&self.model, function)
                        || crate::util::other_device_function(name, self.settings.platforms),
                };
                match self.nested.last_mut() {
                    Some(nested) if self.function.is_some() => nested.push(deferred),
                    _ => self.deferred.push(deferred),
                }
            }
            Stmt::ClassDef(class) => {
                for decorator in &class.decorator_list {
                    self.visit_expr(&decorator.expression);
                }
                if let Some(arguments) = &class.arguments {
                    self.visit_arguments(arguments);
                }
                let name = class.name.id.as_str();
                let qualified = self.qualify(name);
                let info = self.model.class_info(class);
                self.model.define_class(name, info);
                self.summary.class(&self.model, class, qualified.clone());
                self.model.bind(name, Ty::Host);
                self.classes.push(name);
                let saved_body = self.class_body.replace(qualified);
                // A class for a device without CUDA graphs (`VisionIntelXPUAttention`, whose
                // constructor raises elsewhere): nothing in it is reported or followed.
                let other_platform =
                    crate::util::other_platform_class(name, self.settings.platforms);
                self.safe_depth += u32::from(other_platform);
                self.model.push_scope(true);
                self.visit_block(&class.body);
                self.model.pop_scope();
                self.safe_depth -= u32::from(other_platform);
                self.class_body = saved_body;
                self.classes.pop();
            }
            Stmt::If(if_stmt) => self.visit_if(if_stmt),
            Stmt::While(while_stmt) => {
                // The test runs on every iteration too.
                self.summary.enter_loop(while_stmt.range, true);
                self.visit_expr(&while_stmt.test);
                self.truth_test(&while_stmt.test);
                self.visit_block(&while_stmt.body);
                self.summary.exit_loop(true);
                self.visit_block(&while_stmt.orelse);
            }
            Stmt::Assert(assert) => {
                self.visit_expr(&assert.test);
                self.truth_test(&assert.test);
                self.model.assume_host(&assert.test);
                // The message is built only when the assertion fails: the process is going down.
                if let Some(msg) = &assert.msg {
                    self.safe_depth += 1;
                    self.visit_expr(msg);
                    self.safe_depth -= 1;
                }
            }
            Stmt::Assign(assign) => {
                self.visit_expr(&assign.value);
                for target in &assign.targets {
                    self.visit_expr(target);
                    self.model.bind_assignment(target, &assign.value);
                    // `cg = buffers if capturing else None`, `use_naive = _is_xpu or (cg is
                    // None and small)`: what the name says about capture.
                    if let Expr::Name(name) = target {
                        if !self
                            .model
                            .learn_capture_only(name.id.as_str(), &assign.value)
                            && guards::false_while_capturing(&self.model, &assign.value)
                        {
                            self.model.mark_false_while_capturing(name.id.as_str());
                        }
                    }
                    self.summary.assignment(&self.model, target, &assign.value);
                }
            }
            Stmt::Return(ret) => {
                if let Some(value) = &ret.value {
                    self.visit_expr(value);
                }
                self.summary.returned(&self.model, ret.value.as_deref());
            }
            Stmt::AnnAssign(assign) => {
                if let Some(value) = &assign.value {
                    self.visit_expr(value);
                }
                self.visit_expr(&assign.target);
                self.model.bind_annotated(
                    &assign.target,
                    &assign.annotation,
                    assign.value.as_deref(),
                );
                if let Some(value) = &assign.value {
                    self.summary.annotated_assignment(
                        &self.model,
                        &assign.target,
                        &assign.annotation,
                        value,
                    );
                }
            }
            Stmt::AugAssign(assign) => {
                self.visit_expr(&assign.value);
                self.visit_expr(&assign.target);
                if self.model.is_tensor(&assign.value) {
                    self.model.bind_target(&assign.target, Ty::Tensor);
                }
            }
            Stmt::For(for_stmt) => {
                self.visit_expr(&for_stmt.iter);
                self.model
                    .bind_loop_target(&for_stmt.target, &for_stmt.iter);
                self.summary
                    .loop_target(&self.model, &for_stmt.target, &for_stmt.iter);
                self.visit_expr(&for_stmt.target);
                self.summary.enter_loop(for_stmt.range, false);
                self.visit_block(&for_stmt.body);
                self.summary.exit_loop(false);
                self.visit_block(&for_stmt.orelse);
            }
            Stmt::With(with) => {
                for item in &with.items {
                    self.visit_expr(&item.context_expr);
                    if let Some(vars) = &item.optional_vars {
                        let ty = match self.model.ty(&item.context_expr) {
                            ty @ (Ty::Stream | Ty::Event) => ty,
                            _ => Ty::Unknown,
                        };
                        self.model.bind_target(vars, ty);
                    }
                }
                let capture = with
                    .items
                    .iter()
                    .any(|item| SummaryBuilder::is_capture_context(&self.model, item));
                let eager = with.items.iter().any(guards::opens_eager_block);
                if capture {
                    self.summary.enter_capture(&with.body);
                }
                self.safe_depth += u32::from(eager);
                self.visit_block(&with.body);
                self.safe_depth -= u32::from(eager);
                if capture {
                    self.summary.exit_capture();
                }
            }
            _ => visitor::walk_stmt(self, stmt),
        }
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        match expr {
            Expr::Lambda(lambda) => {
                // A message callable (`torch._check(cond, lambda: f"... {t}")`) is formatted
                // only when the check fails: nothing in it runs in the step.
                if lambda.parameters.is_none() && is_text(&lambda.body) {
                    return;
                }
                // Lambda parameters shadow outer names; their bodies are rarely where syncs hide.
                self.model.push_scope(false);
                visitor::walk_expr(self, expr);
                self.model.pop_scope();
                return;
            }
            Expr::Named(named) => {
                self.visit_expr(&named.value);
                self.model
                    .bind_target(&named.target, self.model.ty(&named.value));
                return;
            }
            Expr::ListComp(_) | Expr::SetComp(_) | Expr::DictComp(_) | Expr::Generator(_) => {
                self.model.push_scope(false);
                visitor::walk_expr(self, expr);
                self.model.pop_scope();
                rules::expression(self, expr);
                return;
            }
            Expr::BoolOp(bool_op) => {
                // `not is_compiling() and check(x)`: operands after a guard run only when the
                // guard let them, like the body of an `if`.
                // Operands after a first one that holds only for prefill work (`pixel_values is
                // not None and ...`) are prefill work too.
                let saved = self.safe_depth;
                let or = matches!(bool_op.op, ast::BoolOp::Or);
                let mut prefill = false;
                for (i, value) in bool_op.values.iter().enumerate() {
                    self.visit_expr(value);
                    if guards::guards_rest(&self.model, self.settings, bool_op.op, value) {
                        self.safe_depth += 1;
                    }
                    if i == 0 && self.model.prefill_when(value, or) {
                        if let [_, rest @ ..] = &bool_op.values[..] {
                            prefill = self.summary.enter_prefill_exprs(rest);
                        }
                    }
                }
                if prefill {
                    self.summary.exit_prefill();
                }
                self.safe_depth = saved;
                rules::expression(self, expr);
                return;
            }
            Expr::If(if_expr) => {
                self.visit_if_expr(if_expr);
                rules::expression(self, expr);
                return;
            }
            _ => {}
        }
        if let Expr::Await(ast::ExprAwait { value, .. }) = expr {
            if let Expr::Call(call) = &**value {
                self.summary.awaiting(call);
            }
        }
        let mut anomaly = false;
        if let Expr::Call(call) = expr {
            let in_captured_code = self.in_captured_code();
            self.summary.call(&self.model, call, in_captured_code);
            self.model.learn_record_fields(call);
            self.model.learn_append(call);
            // A warning's arguments are read when something unusual happened.
            anomaly = guards::reports_anomaly(&self.model, call);
        }
        self.safe_depth += u32::from(anomaly);
        visitor::walk_expr(self, expr);
        rules::expression(self, expr);
        self.safe_depth -= u32::from(anomaly);
    }

    /// An exception handler is a recovery path (an out-of-memory fallback, a kernel that failed
    /// on this hardware), not the step that runs every time.
    fn visit_except_handler(&mut self, handler: &'a ast::ExceptHandler) {
        self.safe_depth += 1;
        visitor::walk_except_handler(self, handler);
        self.safe_depth -= 1;
    }

    fn visit_comprehension(&mut self, comprehension: &'a ast::Comprehension) {
        self.visit_expr(&comprehension.iter);
        self.model
            .bind_loop_target(&comprehension.target, &comprehension.iter);
        for condition in &comprehension.ifs {
            self.visit_expr(condition);
            self.truth_test(condition);
        }
    }
}

/// Text built by formatting: an f-string, `"...".format(...)` or `"..." % ...`.
fn is_text(expr: &Expr) -> bool {
    match expr {
        Expr::FString(_) => true,
        Expr::Call(call) => matches!(&*call.func, Expr::Attribute(attribute)
            if attribute.attr.id.as_str() == "format"
                && matches!(&*attribute.value, Expr::StringLiteral(_))),
        Expr::BinOp(binop) => {
            matches!(binop.op, ast::Operator::Mod | ast::Operator::Add)
                && matches!(&*binop.left, Expr::StringLiteral(_) | Expr::FString(_))
        }
        _ => false,
    }
}
