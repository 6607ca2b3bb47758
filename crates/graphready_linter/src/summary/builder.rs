//! Gathers the module summary while the checker walks: functions and the calls they make,
//! classes and the instances their attributes hold, capture sites, markers and entry callables.
//! The checker feeds it at the same visit points where it runs the rules, with the semantic
//! model as it stands there.

use super::{CallTarget, FunctionSummary, Marker, ModuleSummary, Ref, TypePath};
use crate::semantic::{keyword, SemanticModel, Ty};
use crate::util::last_segment;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_source_file::LineIndex;
use ruff_text_size::Ranged;
use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

mod arg_types;
mod bindings;
mod branches;
mod calls;
mod capture;
mod classes;
mod custom_ops;
mod dispatch;
mod host_copies;
mod lookups;
mod model_runs;
mod returns;
mod types;

/// Decorators that mark an eager break (breakable-graph runtimes: SGLang's `@eager_on_graph`
/// runs its function between the captured segments; compiler opt-outs).
const EAGER_DECORATORS: &[&str] = &["no_graph", "eager_on_graph", "disable"];

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
    // A custom operator may be the project's own (see `custom_ops`).
    if qualified.starts_with("torch.ops.") {
        return false;
    }
    let root = qualified.split('.').next().unwrap_or(qualified);
    EXTERNAL_ROOTS.contains(&root)
}

/// The summary of one module, built during the checker's walk.
pub(crate) struct SummaryBuilder<'a> {
    source: &'a str,
    /// Line starts, for the line numbers of summaries (and, afterwards, of diagnostics).
    lines: LineIndex,
    summary: ModuleSummary,
    /// Summaries of the functions being visited, innermost last.
    building: Vec<FunctionSummary>,
    return_types: Vec<Option<Ty>>,
    /// Per function: every call so far keeps host data on the host.
    host_only: Vec<bool>,
    /// Per function: the positions' types of the tuples returned so far; `Some(None)` once a
    /// return is not a tuple of the same length.
    tuple_returns: Vec<Option<Option<Vec<Option<Ty>>>>>,
    /// Per function: a memoised lookup was returned (see `returns::memo_lookup`).
    memo_returns: Vec<bool>,
    /// Per function being built, the call its one `return` returns (`None` inside when that
    /// return is not a call, or once there is another).
    forward_calls: Vec<Option<Option<u32>>>,
    /// What each function's return annotation says of its value, innermost last.
    annotated_returns: Vec<Ty>,
    /// Locals bound to instances of known classes, per function.
    instances: Vec<FxHashMap<&'a str, Vec<Ref>>>,
    /// Locals whose type the index can compute (annotated parameters, assignments from typed
    /// expressions), per function.
    locals: Vec<FxHashMap<&'a str, TypePath>>,
    /// Loop bodies entered, per function, and how many of them are `while` bodies.
    loop_depths: Vec<u32>,
    while_depths: Vec<u32>,
    /// Prefill branches entered, per function (see [`crate::summary::CallSite::prefill`]).
    prefill_depths: Vec<u32>,
    /// Tests of the function's parameters that hold where the walk is, per function (see
    /// [`crate::summary::CallSite::requires`]).
    param_conditions: Vec<Vec<(Box<str>, crate::summary::ParamTest)>>,
    /// Locals bound to methods of `self` looked up by name (`getattr(type(self), MODES[mode])`),
    /// per function.
    method_aliases: Vec<FxHashMap<&'a str, Vec<String>>>,
    /// Locals that may hold a function of the project, per function: `fn = helper`, or the
    /// result of a call given one (`attention = registry.get_interface(name,
    /// eager_attention_forward)`, `functools.partial(helper, x)`). Every binding adds: a later
    /// call may run any of them.
    function_aliases: Vec<FxHashMap<&'a str, Vec<CallTarget>>>,
    /// Locals bound to a tuple literal, with its elements' types (splatted: `f(*inputs)`).
    tuple_locals: Vec<FxHashMap<&'a str, Vec<Ty>>>,
    /// Dict literals bound to locals, per function: the types of their string-keyed entries
    /// (`options = {"grid": grid}` spread as `f(**options)`).
    dict_locals: Vec<FxHashMap<&'a str, Vec<arg_types::DictEntry>>>,
    /// Names declared `global` in each function being visited.
    globals: Vec<FxHashSet<&'a str>>,
    /// Module-level dicts whose values are strings (`MODES = {Mode.SAMPLE: "_sample"}`).
    string_tables: FxHashMap<&'a str, Vec<String>>,
    /// Module-level dicts whose values name classes (`ATTENTION = {"sdpa": SdpaAttention}`):
    /// a registry a factory indexes and calls (`ATTENTION[kind](...)`).
    class_tables: FxHashMap<&'a str, Vec<&'a Expr>>,
    /// Nested `def`s visible by name, per function.
    local_defs: Vec<FxHashMap<&'a str, String>>,
    /// Top-level functions and classes of the module.
    module_defs: FxHashSet<&'a str>,
    /// Where the call an `await` is about to visit starts: a coroutine, never a model's run.
    awaited: Option<ruff_text_size::TextSize>,
    /// The class (qualified inside the module) and `self` name of the method being visited, and
    /// those of the methods around it.
    method_self: Option<(Rc<str>, &'a str)>,
    saved_method_self: Vec<Option<(Rc<str>, &'a str)>>,
    /// Names a method imports in its body, while the class scan reads the method ahead of
    /// its visit (`from .experts import QuantExperts` inside `__init__`).
    method_imports: FxHashMap<&'a str, String>,
    /// Non-zero inside `with torch.cuda.graph(...)`.
    capture_depth: u32,
    /// Only what the walk itself needs (each function's return type, for its callers in the
    /// module): a second check of a file, whose summary nobody reads, builds no more.
    returns_only: bool,
    /// The module serves a device without CUDA graphs (see `ClassSummary::no_instance`).
    other_platform: bool,
    /// Non-zero inside a branch for a device without CUDA graphs (`if current_platform.is_xpu():`).
    platform_depth: u32,
}

impl<'a> SummaryBuilder<'a> {
    pub(crate) fn new(source: &'a str, module: Option<&str>) -> Self {
        SummaryBuilder {
            source,
            lines: LineIndex::from_source_text(source),
            summary: ModuleSummary {
                module: module.map(str::to_string),
                ..ModuleSummary::default()
            },
            returns_only: false,
            other_platform: false,
            building: Vec::new(),
            return_types: Vec::new(),
            host_only: Vec::new(),
            tuple_returns: Vec::new(),
            memo_returns: Vec::new(),
            forward_calls: Vec::new(),
            annotated_returns: Vec::new(),
            instances: Vec::new(),
            locals: Vec::new(),
            loop_depths: Vec::new(),
            prefill_depths: Vec::new(),
            param_conditions: Vec::new(),
            while_depths: Vec::new(),
            method_aliases: Vec::new(),
            function_aliases: Vec::new(),
            tuple_locals: Vec::new(),
            dict_locals: Vec::new(),
            globals: Vec::new(),
            string_tables: FxHashMap::default(),
            class_tables: FxHashMap::default(),
            local_defs: Vec::new(),
            module_defs: FxHashSet::default(),
            awaited: None,
            method_self: None,
            saved_method_self: Vec::new(),
            method_imports: FxHashMap::default(),
            capture_depth: 0,
            platform_depth: 0,
        }
    }

    /// The module's top-level functions and classes, and its dicts of method names, before
    /// anything is visited.
    pub(crate) fn module_definitions(&mut self, body: &'a [Stmt]) {
        for stmt in body {
            match stmt {
                Stmt::FunctionDef(function) => {
                    self.module_defs.insert(function.name.id.as_str());
                }
                Stmt::ClassDef(class) => {
                    self.module_defs.insert(class.name.id.as_str());
                }
                Stmt::Assign(assign) => {
                    self.string_table(assign);
                    if let [target] = assign.targets.as_slice() {
                        self.class_table(target, &assign.value);
                    }
                }
                Stmt::AnnAssign(assign) => {
                    if let Some(value) = &assign.value {
                        self.class_table(&assign.target, value);
                    }
                }
                _ => {}
            }
        }
    }

    /// The finished summary (functions in source order, module imports recorded once) and the
    /// line index.
    pub(crate) fn finish(
        mut self,
        module: &'a ast::ModModule,
        model: &SemanticModel,
    ) -> (ModuleSummary, LineIndex) {
        self.summary.functions.sort_by_key(|function| function.line);
        // The names `from ... import` bound are the model's final ones: record them once, where
        // the last such statement stands, so that later `import a as b` still override them.
        let last_from = module
            .body
            .iter()
            .rposition(|stmt| matches!(stmt, Stmt::ImportFrom(_)));
        for (i, stmt) in module.body.iter().enumerate() {
            if matches!(stmt, Stmt::Import(_)) || Some(i) == last_from {
                bindings::collect_imports(stmt, &mut self.summary.imports, model);
            }
        }
        self.record_custom_ops(module, model);
        (self.summary, self.lines)
    }

    /// A nested `def`, visible by name in the function being visited.
    pub(crate) fn local_definition_bound(&mut self, name: &'a str, qualname: String) {
        if let Some(scope) = self.local_defs.last_mut() {
            scope.insert(name, qualname);
        }
    }

    fn line_of(&self, offset: ruff_text_size::TextSize) -> u32 {
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
    fn compiles_with_graphs(model: &SemanticModel, call: &ast::ExprCall) -> bool {
        model.is(&call.func, "torch.compile")
            && keyword(call, "mode").is_some_and(|mode| {
                matches!(mode, Expr::StringLiteral(s) if GRAPH_MODES.contains(&s.value.to_str()))
            })
    }

    /// A function's body is about to be visited (`class` and `self_name` for a method).
    pub(crate) fn enter_function(
        &mut self,
        model: &SemanticModel,
        function: &'a ast::StmtFunctionDef,
        qualname: &str,
        class: Option<&str>,
        self_name: Option<&'a str>,
    ) {
        if self.returns_only {
            self.building.push(FunctionSummary {
                qualname: qualname.to_string(),
                ..FunctionSummary::default()
            });
            self.push_scopes(model, function, FxHashMap::default(), class, self_name);
            return;
        }
        let mut markers: Vec<Marker> = self.def_line_marker(function).into_iter().collect();
        for decorator in &function.decorator_list {
            let expr = &decorator.expression;
            if let Expr::Call(call) = expr {
                if Self::compiles_with_graphs(model, call) {
                    markers.push(Marker::Compiled);
                }
            }
            if last_segment(expr).is_some_and(|name| EAGER_DECORATORS.contains(&name))
                && !model.is(expr, "torch.compile")
            {
                let qualified = model.qualified_name(match expr {
                    Expr::Call(call) => &call.func,
                    other => other,
                });
                // `@disable` only from the compiler namespaces; `@no_graph` and `@eager_on_graph`
                // from anywhere.
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
        let decorators = self.decorator_refs(model, &function.decorator_list);
        let params = self.params(model, function);
        let return_annotation = function
            .returns
            .as_deref()
            .and_then(|annotation| self.annotation_type(model, annotation));
        let mut locals = FxHashMap::default();
        for (param, ast_param) in params
            .iter()
            .zip(function.parameters.iter_non_variadic_params())
        {
            if let Some(annotation) = &param.annotation {
                locals.insert(
                    ast_param.parameter.name.id.as_str(),
                    TypePath::of_type(annotation.clone()),
                );
            }
        }
        self.building.push(FunctionSummary {
            qualname: qualname.to_string(),
            class: class.map(str::to_string),
            line: self.line_of(function.name.range().start()),
            markers,
            calls: Vec::new(),
            guarded_invocations: Vec::new(),
            guarded_constructions: Vec::new(),
            platform_constructions: Vec::new(),
            tuple_returns: None,
            forwards: None,
            captured_calls: Vec::new(),
            capture_blocks: Vec::new(),
            replays_graph: false,
            runs_model: false,
            runs_model_in_loop: false,
            runs_model_until_done: false,
            loops: Vec::new(),
            prefill_blocks: Vec::new(),
            param_blocks: Vec::new(),
            returns: Ty::Unknown,
            params,
            return_annotation,
            return_paths: Vec::new(),
            judged_params: Vec::new(),
            returns_uninitialized: false,
            host_preserving: false,
            dispatches_forward: class.is_none()
                && !qualname.contains('.')
                && function.body.iter().any(Stmt::is_function_def_stmt)
                && dispatch::dispatches_forward(function),
            decorators,
            returned_functions: Vec::new(),
            called_params: Vec::new(),
            property: function.decorator_list.iter().any(|decorator| {
                crate::util::last_segment(&decorator.expression) == Some("property")
            }),
            host_sync: None,
            variadic: (
                function.parameters.vararg.is_some(),
                function.parameters.kwarg.is_some(),
            ),
        });
        self.push_scopes(model, function, locals, class, self_name);
    }

    /// The per-function state a function's visit starts with (`locals`: its annotated
    /// parameters' type paths).
    fn push_scopes(
        &mut self,
        model: &SemanticModel,
        function: &'a ast::StmtFunctionDef,
        locals: FxHashMap<&'a str, TypePath>,
        class: Option<&str>,
        self_name: Option<&'a str>,
    ) {
        self.return_types.push(None);
        self.host_only.push(true);
        self.tuple_returns.push(None);
        self.memo_returns.push(false);
        self.forward_calls.push(None);
        self.annotated_returns.push(
            function
                .returns
                .as_deref()
                .map_or(Ty::Unknown, |annotation| model.annotation_ty(annotation)),
        );
        self.instances.push(FxHashMap::default());
        self.locals.push(locals);
        self.loop_depths.push(0);
        self.while_depths.push(0);
        self.prefill_depths.push(0);
        self.param_conditions.push(Vec::new());
        self.method_aliases.push(FxHashMap::default());
        self.function_aliases.push(FxHashMap::default());
        self.tuple_locals.push(FxHashMap::default());
        self.dict_locals.push(FxHashMap::default());
        self.globals.push(FxHashSet::default());
        self.local_defs.push(FxHashMap::default());
        self.saved_method_self.push(self.method_self.clone());
        if let (Some(class), Some(self_name)) = (class, self_name) {
            self.method_self = Some((Rc::from(class), self_name));
        }
    }

    /// Builds only what the walk itself needs (see `returns_only`).
    pub(crate) fn returns_only(&mut self) {
        self.returns_only = true;
    }

    /// The module's source.
    pub(crate) fn source(&self) -> &'a str {
        self.source
    }

    /// `global a, b` in the function being visited: assignments to them bind module globals.
    pub(crate) fn declare_globals(&mut self, names: &'a [ast::Identifier]) {
        if let Some(scope) = self.globals.last_mut() {
            scope.extend(names.iter().map(|name| name.id.as_str()));
        }
    }

    /// A sync-family finding (`code`) in the function being visited, outside any guard.
    pub(crate) fn host_sync(&mut self, code: &'static str) {
        if self.returns_only {
            return;
        }
        if let Some(function) = self.building.last_mut() {
            function.host_sync.get_or_insert(code);
        }
    }

    /// A `for` or `while` body is about to be visited (`range`: the whole statement).
    pub(crate) fn enter_loop(&mut self, range: ruff_text_size::TextRange, is_while: bool) {
        let Some(depth) = self.loop_depths.last_mut() else {
            return;
        };
        *depth += 1;
        if is_while {
            if let Some(depth) = self.while_depths.last_mut() {
                *depth += 1;
            }
        }
        if *depth == 1 {
            let lines = (self.line_of(range.start()), self.line_of(range.end()));
            if let Some(function) = self.building.last_mut() {
                function.loops.push(lines);
            }
        }
    }

    pub(crate) fn exit_loop(&mut self, is_while: bool) {
        if let Some(depth) = self.loop_depths.last_mut() {
            *depth = depth.saturating_sub(1);
        }
        if is_while {
            if let Some(depth) = self.while_depths.last_mut() {
                *depth = depth.saturating_sub(1);
            }
        }
    }

    /// What decorators call (`@dec` and `@dec(...)` alike), where it can be named.
    fn decorator_refs(&self, model: &SemanticModel, decorators: &[ast::Decorator]) -> Vec<Ref> {
        decorators
            .iter()
            .filter_map(|decorator| {
                let callable = match &decorator.expression {
                    Expr::Call(call) => &call.func,
                    other => other,
                };
                self.reference(model, callable)
            })
            .collect()
    }

    /// A reference to a class or function named by an expression.
    fn reference(&self, model: &SemanticModel, expr: &Expr) -> Option<Ref> {
        if let Some(qualified) = model.qualified_name(expr) {
            return Some(Ref::Qualified(qualified.to_string()));
        }
        match expr {
            Expr::Name(name) => self
                .local_definition(name.id.as_str())
                .map(Ref::Local)
                .or_else(|| {
                    let imported = self.method_imports.get(name.id.as_str())?;
                    Some(Ref::Qualified(imported.clone()))
                }),
            Expr::Attribute(attribute) => match self.reference(model, &attribute.value)? {
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

    pub(crate) fn self_context(&self) -> Option<(&str, &'a str)> {
        self.method_self
            .as_ref()
            .map(|(class, self_name)| (&**class, *self_name))
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
                // `self.model.vision_tower`: a submodule the class set on a module it holds.
                (Expr::Attribute(held), Some((class, self_name))) if matches!(&*held.value, Expr::Name(receiver) if receiver.id.as_str() == self_name) => {
                    self.class_instances(class, &format!("{}.{}", held.attr.id, attribute.attr.id))
                }
                _ => Vec::new(),
            },
            Expr::Subscript(subscript) => self.instances_of(&subscript.value),
            _ => Vec::new(),
        }
    }

    /// Whether `expr` is a field of `self` that some method assigns from a computed value (a
    /// path with steps: another field, a method's result, an element of one), not only from
    /// constructors and annotations.
    fn computed_field(&self, expr: &Expr) -> bool {
        let Expr::Attribute(attribute) = expr else {
            return false;
        };
        let Some((class, self_name)) = self.self_context() else {
            return false;
        };
        if !matches!(&*attribute.value, Expr::Name(receiver) if receiver.id.as_str() == self_name) {
            return false;
        }
        self.own_class(class).is_some_and(|c| {
            c.fields
                .iter()
                .any(|(field, path)| field == attribute.attr.id.as_str() && !path.steps.is_empty())
        })
    }

    fn class_instances(&self, class: &str, attribute: &str) -> Vec<Ref> {
        self.own_class(class)
            .and_then(|c| c.attributes.get(attribute).cloned())
            .unwrap_or_default()
    }

    /// A class of this module summarised so far, by its qualified name inside the module.
    fn own_class(&self, class: &str) -> Option<&super::ClassSummary> {
        self.summary.classes.iter().find(|c| c.name == class)
    }
}
