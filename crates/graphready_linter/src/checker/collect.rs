//! Gathers the module summary while the checker walks: functions and the calls they make,
//! classes and the instances their attributes hold, capture sites, markers and entry callables.

use super::last_segment;
use super::semantic::{keyword, Ty};
use super::Checker;
use crate::summary::{
    CallSite, CallTarget, CallableEntry, ClassSummary, EntryReason, FunctionSummary, Marker, Ref,
};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

/// Decorators that mark an eager break (breakable-graph runtimes, compiler opt-outs).
const EAGER_DECORATORS: &[&str] = &["no_graph", "disable"];

/// `torch.compile` modes that capture CUDA graphs.
const GRAPH_MODES: &[&str] = &["reduce-overhead", "max-autotune"];

/// Top-level modules outside any project graphready checks: their calls are not followed.
const EXTERNAL_ROOTS: &[&str] = &[
    "torch",
    "numpy",
    "math",
    "os",
    "sys",
    "time",
    "typing",
    "functools",
    "itertools",
    "collections",
    "logging",
    "warnings",
    "dataclasses",
    "enum",
    "json",
    "re",
    "abc",
    "contextlib",
    "einops",
    "triton",
    "safetensors",
    "copy",
    "random",
];

fn is_external(qualified: &str) -> bool {
    let root = qualified.split('.').next().unwrap_or(qualified);
    EXTERNAL_ROOTS.contains(&root)
}

impl<'a> Checker<'a> {
    pub(super) fn line_of(&self, offset: ruff_text_size::TextSize) -> u32 {
        u32::try_from(self.lines.line_index(offset).get()).unwrap_or(u32::MAX)
    }

    /// The `# graphready: <word>` marker on the line of the `def`.
    fn def_line_marker(&self, function: &ast::StmtFunctionDef) -> Option<Marker> {
        let start = function
            .name
            .range()
            .start()
            .to_usize()
            .min(self.source.len());
        let bytes = self.source.as_bytes();
        let line_start = memchr::memrchr(b'\n', &bytes[..start]).map_or(0, |i| i + 1);
        let line_end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        let line = &self.source[line_start..line_end];
        let (_, marker) = line.split_once("# graphready:")?;
        match marker.split_whitespace().next()? {
            "captured" => Some(Marker::Captured),
            "eager" => Some(Marker::Eager),
            "step" => Some(Marker::Step),
            _ => None,
        }
    }

    /// Whether a `torch.compile(...)` call (or decorator) captures CUDA graphs.
    fn compiles_with_graphs(&self, call: &ast::ExprCall) -> bool {
        self.model.is(&call.func, "torch.compile")
            && keyword(call, "mode").is_some_and(|mode| {
                matches!(mode, Expr::StringLiteral(s) if GRAPH_MODES.contains(&s.value.to_str()))
            })
    }

    pub(super) fn enter_function_summary(
        &mut self,
        function: &ast::StmtFunctionDef,
        qualname: &str,
    ) {
        let mut markers: Vec<Marker> = self.def_line_marker(function).into_iter().collect();
        for decorator in &function.decorator_list {
            let expr = &decorator.expression;
            if let Expr::Call(call) = expr {
                if self.compiles_with_graphs(call) {
                    markers.push(Marker::Compiled);
                }
            }
            if last_segment(expr).is_some_and(|name| EAGER_DECORATORS.contains(&name))
                && !self.model.is(expr, "torch.compile")
            {
                let qualified = self.model.qualified_name(match expr {
                    Expr::Call(call) => &call.func,
                    other => other,
                });
                // `@disable` only from the compiler namespaces; `@no_graph` from anywhere.
                let is_break = match last_segment(expr) {
                    Some("disable") => qualified.is_some_and(|q| {
                        q.starts_with("torch.compiler") || q.starts_with("torch._dynamo")
                    }),
                    _ => true,
                };
                if is_break {
                    markers.push(Marker::Eager);
                }
            }
        }
        let class = (self.function.is_none())
            .then(|| self.classes.last().map(|c| (*c).to_string()))
            .flatten();
        self.building.push(FunctionSummary {
            qualname: qualname.to_string(),
            class,
            line: self.line_of(function.name.range().start()),
            markers,
            calls: Vec::new(),
            captured_calls: Vec::new(),
            capture_blocks: Vec::new(),
            replays_graph: false,
            returns: Ty::Unknown,
        });
        self.return_types.push(None);
        self.instances.push(rustc_hash::FxHashMap::default());
    }

    pub(super) fn exit_function_summary(&mut self) {
        self.instances.pop();
        let returns = self.return_types.pop().flatten().unwrap_or(Ty::Host);
        if let Some(mut summary) = self.building.pop() {
            summary.returns = returns;
            self.model.learn_return(&summary.qualname, returns);
            self.summary.functions.push(summary);
        }
    }

    pub(super) fn record_return(&mut self, value: Option<&Expr>) {
        let ty = value.map_or(Ty::Host, |value| self.model.ty(value));
        if let Some(slot) = self.return_types.last_mut() {
            *slot = Some(match *slot {
                None => ty,
                Some(previous) if previous == ty => ty,
                Some(_) => Ty::Unknown,
            });
        }
    }

    /// A reference to a class or function named by an expression.
    pub(super) fn reference(&self, expr: &Expr) -> Option<Ref> {
        if let Some(qualified) = self.model.qualified_name(expr) {
            return Some(Ref::Qualified(qualified.to_string()));
        }
        match expr {
            Expr::Name(name) => self.local_definition(name.id.as_str()).map(Ref::Local),
            Expr::Attribute(attribute) => match self.reference(&attribute.value)? {
                Ref::Local(base) => Some(Ref::Local(format!("{base}.{}", attribute.attr.id))),
                Ref::Qualified(_) => None,
            },
            _ => None,
        }
    }

    fn local_definition(&self, name: &str) -> Option<String> {
        for scope in self.local_defs.iter().rev() {
            if let Some(qualname) = scope.get(name) {
                return Some(qualname.clone());
            }
        }
        self.module_defs.contains(name).then(|| name.to_string())
    }

    fn self_context(&self) -> Option<(&'a str, &'a str)> {
        self.method_self
    }

    /// Instances held by an expression: `self.mlp`, a local bound to `MLP(...)`, `self.layers[i]`.
    fn instances_of(&self, expr: &Expr) -> Vec<Ref> {
        match expr {
            Expr::Name(name) => self
                .instances
                .iter()
                .rev()
                .find_map(|scope| scope.get(name.id.as_str()).cloned())
                .unwrap_or_default(),
            Expr::Attribute(attribute) => match (&*attribute.value, self.self_context()) {
                (Expr::Name(receiver), Some((class, self_name)))
                    if receiver.id.as_str() == self_name =>
                {
                    self.class_instances(class, attribute.attr.id.as_str())
                }
                _ => Vec::new(),
            },
            Expr::Subscript(subscript) => self.instances_of(&subscript.value),
            _ => Vec::new(),
        }
    }

    fn class_instances(&self, class: &str, attribute: &str) -> Vec<Ref> {
        self.summary
            .classes
            .iter()
            .find(|c| c.name == class)
            .and_then(|c| c.attributes.get(attribute).cloned())
            .unwrap_or_default()
    }

    /// What a call expression may invoke, as far as this module can tell.
    pub(super) fn call_targets(&self, func: &Expr) -> Vec<CallTarget> {
        let instances = self.instances_of(func);
        if !instances.is_empty() {
            return instances
                .into_iter()
                .map(|class| CallTarget::InstanceMethod {
                    class,
                    method: "forward".to_string(),
                })
                .collect();
        }
        if let Some(reference) = self.reference(func) {
            return vec![CallTarget::Function(reference)];
        }
        let Expr::Attribute(attribute) = func else {
            return Vec::new();
        };
        let method = attribute.attr.id.to_string();
        match &*attribute.value {
            Expr::Name(receiver) => {
                if let Some((class, self_name)) = self.self_context() {
                    if receiver.id.as_str() == self_name {
                        return vec![CallTarget::SelfMethod {
                            class: class.to_string(),
                            method,
                        }];
                    }
                }
                self.instances_of(&attribute.value)
                    .into_iter()
                    .map(|class| CallTarget::InstanceMethod {
                        class,
                        method: method.clone(),
                    })
                    .collect()
            }
            Expr::Call(inner) if matches!(&*inner.func, Expr::Name(n) if n.id.as_str() == "super") => {
                match self.self_context() {
                    Some((class, _)) => vec![CallTarget::Super {
                        class: class.to_string(),
                        method,
                    }],
                    None => Vec::new(),
                }
            }
            receiver => self
                .instances_of(receiver)
                .into_iter()
                .map(|class| CallTarget::InstanceMethod {
                    class,
                    method: method.clone(),
                })
                .collect(),
        }
    }

    /// Records a call made by the current function.
    pub(super) fn record_call(&mut self, call: &ast::ExprCall) {
        self.record_module_level_entries(call);
        if self.building.is_empty() {
            return;
        }
        if let Expr::Attribute(attribute) = &*call.func {
            if attribute.attr.id.as_str() == "replay" && call.arguments.is_empty() {
                if let Some(function) = self.building.last_mut() {
                    function.replays_graph = true;
                }
            }
        }
        if !self.in_captured_code() {
            return;
        }
        // Calls into PyTorch and the standard library never lead back into the project.
        if let Some(qualified) = self.model.qualified_name(&call.func) {
            if is_external(&qualified) {
                return;
            }
            self.summary.imported_callees.insert(qualified.to_string());
        }
        let targets = self.call_targets(&call.func);
        let line = self.line_of(call.range().start());
        let capturing = self.capture_depth > 0;
        if let Some(function) = self.building.last_mut() {
            for target in targets {
                let site = CallSite { target, line };
                if capturing {
                    function.captured_calls.push(site);
                } else {
                    function.calls.push(site);
                }
            }
        }
    }

    /// `torch.cuda.make_graphed_callables(f, ...)`, `torch.compile(f, mode=...)` and
    /// `graphready.ProbeTarget(step=f, ...)` (the probe captures its step).
    fn record_module_level_entries(&mut self, call: &ast::ExprCall) {
        let (reason, first) = if self
            .model
            .is(&call.func, "torch.cuda.make_graphed_callables")
            || self
                .model
                .is(&call.func, "torch.cuda.graphs.make_graphed_callables")
        {
            (EntryReason::GraphedCallable, call.arguments.args.first())
        } else if self.compiles_with_graphs(call) {
            (EntryReason::Compiled, call.arguments.args.first())
        } else if self.model.is(&call.func, "graphready.ProbeTarget")
            || self.model.is(&call.func, "graphready.target.ProbeTarget")
        {
            (
                EntryReason::ProbeStep,
                crate::rules::argument(call, 0, "step"),
            )
        } else {
            return;
        };
        let Some(first) = first else {
            return;
        };
        let callables: Vec<&Expr> = match first {
            Expr::Tuple(tuple) => tuple.elts.iter().collect(),
            Expr::List(list) => list.elts.iter().collect(),
            other => vec![other],
        };
        let line = self.line_of(call.range().start());
        for callable in callables {
            for target in self.call_targets(callable) {
                self.summary.callable_entries.push(CallableEntry {
                    target,
                    line,
                    reason,
                });
            }
        }
    }

    /// Whether a `with` item opens a CUDA graph capture.
    pub(super) fn is_capture_context(&self, item: &ast::WithItem) -> bool {
        let Expr::Call(call) = &item.context_expr else {
            return false;
        };
        if let Some(qualified) = self.model.qualified_name(&call.func) {
            return matches!(&*qualified, "torch.cuda.graph" | "torch.cuda.graphs.graph");
        }
        // `self.device_module.graph(g, pool=...)`: engines reach `torch.cuda` indirectly.
        matches!(&*call.func, Expr::Attribute(a) if a.attr.id.as_str() == "graph")
            && !call.arguments.args.is_empty()
    }

    /// Whether a `with` item opens an eager break (`with force_no_graph():`).
    /// Whether a `with` item opens code that never runs captured: an eager break
    /// (`with force_no_graph():`) or vLLM's marker for deliberate eager syncs
    /// (`with gpu_sync_allowed():`).
    pub(super) fn is_eager_context(item: &ast::WithItem) -> bool {
        matches!(&item.context_expr, Expr::Call(call)
        if last_segment(&call.func).is_some_and(|n| {
            matches!(n, "force_no_graph" | "no_graph" | "gpu_sync_allowed")
        }))
    }

    pub(super) fn record_capture_block(&mut self, body: &[Stmt]) {
        let (Some(first), Some(last)) = (body.first(), body.last()) else {
            return;
        };
        let range = (
            self.line_of(first.range().start()),
            self.line_of(last.range().end()),
        );
        if let Some(function) = self.building.last_mut() {
            function.capture_blocks.push(range);
        }
    }

    /// `x = MLP(...)` binds `x` to an instance, for `x(...)` and `x.method(...)` later.
    pub(super) fn bind_instance(&mut self, target: &'a Expr, value: &Expr) {
        let Expr::Name(name) = target else {
            return;
        };
        let refs = match value {
            Expr::Call(call) => self.reference(&call.func).into_iter().collect(),
            other => self.instances_of(other),
        };
        if let Some(scope) = self.instances.last_mut() {
            if refs.is_empty() {
                scope.remove(name.id.as_str());
            } else {
                scope.insert(name.id.as_str(), refs);
            }
        }
    }

    /// `for layer in self.layers:` binds `layer` to the members' classes.
    pub(super) fn bind_loop_instances(&mut self, target: &'a Expr, iter: &Expr) {
        let Expr::Name(name) = target else {
            return;
        };
        let refs = self.instances_of(iter);
        if let Some(scope) = self.instances.last_mut() {
            if !refs.is_empty() {
                scope.insert(name.id.as_str(), refs);
            }
        }
    }

    /// The summary of a class: bases, the instances its attributes hold, its methods.
    pub(super) fn summarize_class(&mut self, class: &'a ast::StmtClassDef) {
        let bases: Vec<Ref> = class
            .arguments
            .as_ref()
            .map(|arguments| {
                arguments
                    .args
                    .iter()
                    .filter_map(|b| self.reference(b))
                    .collect()
            })
            .unwrap_or_default();
        let direct_module = bases.iter().any(|base| {
            matches!(base, Ref::Qualified(q) if q == "torch.nn.Module" || q == "torch.nn.modules.module.Module")
        });
        let compiled = class.decorator_list.iter().any(|decorator| {
            last_segment(&decorator.expression).is_some_and(|name| name == "support_torch_compile")
        });
        let mut summary = ClassSummary {
            name: self.qualify(class.name.id.as_str()),
            line: self.line_of(class.name.range().start()),
            bases,
            direct_module,
            compiled,
            ..ClassSummary::default()
        };
        for stmt in &class.body {
            if let Stmt::FunctionDef(method) = stmt {
                summary.methods.push(method.name.id.to_string());
                let Some(self_param) = method.parameters.iter_non_variadic_params().next() else {
                    continue;
                };
                let mut assignments = Vec::new();
                collect_instance_assignments(
                    &method.body,
                    self_param.parameter.name.id.as_str(),
                    &mut assignments,
                );
                for (attribute, value) in assignments {
                    let refs = self.constructed(value);
                    if !refs.is_empty() {
                        summary
                            .attributes
                            .entry(attribute.to_string())
                            .or_default()
                            .extend(refs);
                    }
                }
            }
        }
        self.summary.classes.push(summary);
    }

    /// Classes constructed by an expression: `MLP(...)`, `nn.ModuleList([Layer(...) ...])`,
    /// `nn.Sequential(A(), B())`.
    fn constructed(&self, value: &Expr) -> Vec<Ref> {
        let Expr::Call(call) = value else {
            return Vec::new();
        };
        let container = self.model.qualified_name(&call.func).is_some_and(|q| {
            matches!(
                &*q,
                "torch.nn.ModuleList" | "torch.nn.Sequential" | "torch.nn.ModuleDict"
            )
        });
        if !container {
            return self.reference(&call.func).into_iter().collect();
        }
        let mut refs = Vec::new();
        for argument in call.arguments.args.iter() {
            match argument {
                Expr::List(ast::ExprList { elts, .. })
                | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                    for element in elts {
                        refs.extend(self.constructed(element));
                    }
                }
                Expr::ListComp(comprehension) => refs.extend(self.constructed(&comprehension.elt)),
                Expr::Generator(generator) => refs.extend(self.constructed(&generator.elt)),
                Expr::Dict(dict) => {
                    for item in &dict.items {
                        refs.extend(self.constructed(&item.value));
                    }
                }
                other => refs.extend(self.constructed(other)),
            }
        }
        refs
    }
}

/// `self.<attribute> = <value>` anywhere in a method body (not in nested functions).
fn collect_instance_assignments<'a>(
    body: &'a [Stmt],
    self_name: &str,
    out: &mut Vec<(&'a str, &'a Expr)>,
) {
    for stmt in body {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Expr::Attribute(attribute) = target {
                        if matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name)
                        {
                            out.push((attribute.attr.id.as_str(), &assign.value));
                        }
                    }
                }
            }
            Stmt::AnnAssign(ast::StmtAnnAssign {
                target,
                value: Some(value),
                ..
            }) => {
                if let Expr::Attribute(attribute) = &**target {
                    if matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name) {
                        out.push((attribute.attr.id.as_str(), value));
                    }
                }
            }
            Stmt::If(if_stmt) => {
                collect_instance_assignments(&if_stmt.body, self_name, out);
                for clause in &if_stmt.elif_else_clauses {
                    collect_instance_assignments(&clause.body, self_name, out);
                }
            }
            Stmt::For(for_stmt) => collect_instance_assignments(&for_stmt.body, self_name, out),
            Stmt::With(with) => collect_instance_assignments(&with.body, self_name, out),
            Stmt::Try(try_stmt) => {
                collect_instance_assignments(&try_stmt.body, self_name, out);
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    collect_instance_assignments(&handler.body, self_name, out);
                }
                collect_instance_assignments(&try_stmt.orelse, self_name, out);
            }
            _ => {}
        }
    }
}
