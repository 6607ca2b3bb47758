//! Classes in the summary: bases, methods, and the instances their attributes hold.

use super::SummaryBuilder;
use crate::semantic::{SemanticModel, Ty};
use crate::summary::{ClassSummary, Ref, TypePath};
use crate::util::last_segment;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;
use std::borrow::Cow;

impl<'a> SummaryBuilder<'a> {
    /// Whether the module serves a device without CUDA graphs: no instance of its classes runs
    /// on a CUDA engine.
    pub(crate) fn other_platform(&mut self, other: bool) {
        self.other_platform = other;
    }

    /// The summary of a class (`name` qualified inside the module): bases, the instances its
    /// attributes hold, its methods.
    pub(crate) fn class(
        &mut self,
        model: &SemanticModel,
        class: &'a ast::StmtClassDef,
        name: String,
    ) {
        if self.returns_only {
            return;
        }
        let mut bases = Vec::new();
        let mut typed_bases = Vec::new();
        for base in class.arguments.iter().flat_map(|arguments| &arguments.args) {
            // `Builder[Metadata]`: a generic base is its class.
            let base = match base {
                Expr::Subscript(subscript) => &subscript.value,
                other => other,
            };
            // A class made in a function from a class object it was given or computed
            // (`base = backend.get_builder_cls()`, `class Builder(base):`): the index decides.
            if let Some(path) = match base {
                Expr::Name(name) => self.local_type(name.id.as_str()),
                _ => None,
            } {
                typed_bases.push(path);
            } else if let Some(reference) = self.reference(model, base) {
                bases.push(reference);
            }
        }
        let direct_module = bases
            .iter()
            .any(|base| matches!(base, Ref::Qualified(q) if is_module_base(q)));
        let compiled = class.decorator_list.iter().any(|decorator| {
            last_segment(&decorator.expression).is_some_and(|name| name == "support_torch_compile")
        });
        let abstract_method = |stmt: &Stmt| {
            matches!(stmt, Stmt::FunctionDef(method) if method.decorator_list.iter().any(|d| {
                last_segment(&d.expression) == Some("abstractmethod")
            }))
        };
        let other_platform = self.other_platform
            || crate::util::other_platform_class(class.name.id.as_str(), model.platforms());
        // What a class decorator resolves to decides whether it replaces `forward`.
        let decorators = self.decorator_refs(model, &class.decorator_list);
        let mut summary = ClassSummary {
            name,
            bases,
            typed_bases,
            direct_module,
            compiled,
            decorators,
            no_instance: other_platform || class.body.iter().any(abstract_method),
            ..ClassSummary::default()
        };
        summary.compiles_whole = class.body.iter().find_map(compiles_whole);
        summary.fields = self.fields(model, class, &summary.name);
        summary.host_fields = host_fields(model, class);
        for stmt in &class.body {
            if let Stmt::FunctionDef(method) = stmt {
                summary.methods.push(method.name.id.to_string());
                if is_capture_hook(method) {
                    summary.capture_hooks.push(method.name.id.to_string());
                }
                self.scan_imports(model, &method.body);
                let Some(self_param) = method.parameters.iter_non_variadic_params().next() else {
                    continue;
                };
                let mut assignments = Vec::new();
                collect_instance_assignments(
                    &method.body,
                    self_param.parameter.name.id.as_str(),
                    &mut assignments,
                );
                let self_name = self_param.parameter.name.id.as_str();
                for (attribute, value) in assignments {
                    if let Some(copy) = self.host_copy(model, self_name, &attribute, value) {
                        summary.host_copies.push(copy);
                    }
                    let refs = self.constructed(model, value);
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
        self.method_imports.clear();
        self.summary.classes.push(summary);
    }

    /// The names a method body imports (outside nested definitions), for the class scan that
    /// reads the body before the visit binds them.
    fn scan_imports(&mut self, model: &SemanticModel, body: &'a [Stmt]) {
        self.method_imports.clear();
        let mut pending: Vec<&'a [Stmt]> = vec![body];
        while let Some(block) = pending.pop() {
            for stmt in block {
                match stmt {
                    Stmt::Import(_) | Stmt::ImportFrom(_) => {
                        for (bound, qualified) in model.import_bindings(stmt) {
                            self.method_imports.insert(bound, qualified);
                        }
                    }
                    Stmt::If(s) => {
                        pending.push(&s.body);
                        pending.extend(s.elif_else_clauses.iter().map(|c| c.body.as_slice()));
                    }
                    Stmt::Try(s) => {
                        pending.push(&s.body);
                        pending.push(&s.orelse);
                        pending.push(&s.finalbody);
                        for handler in &s.handlers {
                            let ast::ExceptHandler::ExceptHandler(h) = handler;
                            pending.push(&h.body);
                        }
                    }
                    Stmt::With(s) => pending.push(&s.body),
                    Stmt::For(s) => pending.push(&s.body),
                    Stmt::While(s) => pending.push(&s.body),
                    _ => {}
                }
            }
        }
    }

    /// The attributes whose type follows from an annotation or an assignment: annotated names
    /// in the class body (dataclass fields), properties with a return annotation, and in every
    /// method `self.x: T = ...` and `self.x = <typed expression>` (an annotated parameter, a
    /// constructor or factory call, another typed attribute).
    fn fields(
        &mut self,
        model: &SemanticModel,
        class: &'a ast::StmtClassDef,
        class_name: &str,
    ) -> Vec<(String, TypePath)> {
        let mut fields = Vec::new();
        for stmt in &class.body {
            match stmt {
                Stmt::AnnAssign(assign) => {
                    if let Expr::Name(name) = &*assign.target {
                        if let Some(ty) = self.annotation_type(model, &assign.annotation) {
                            fields.push((name.id.to_string(), TypePath::of_type(ty)));
                        }
                    }
                }
                Stmt::FunctionDef(method) => {
                    if crate::util::is_property(method) {
                        if let Some(ty) = method
                            .returns
                            .as_deref()
                            .and_then(|annotation| self.annotation_type(model, annotation))
                        {
                            fields.push((method.name.id.to_string(), TypePath::of_type(ty)));
                        }
                        continue;
                    }
                    self.scan_imports(model, &method.body);
                    self.method_fields(model, class_name, method, &mut fields);
                }
                _ => {}
            }
        }
        self.method_imports.clear();
        fields
    }

    /// `self.x` assignments in one method, typed with the method's parameters in scope.
    fn method_fields(
        &mut self,
        model: &SemanticModel,
        class: &str,
        method: &'a ast::StmtFunctionDef,
        fields: &mut Vec<(String, TypePath)>,
    ) {
        let Some(self_param) = method.parameters.iter_non_variadic_params().next() else {
            return;
        };
        let self_name = self_param.parameter.name.id.as_str();
        let mut assignments = Vec::new();
        collect_field_assignments(&method.body, self_name, &mut assignments);
        if assignments.is_empty() {
            return;
        }
        let mut locals = rustc_hash::FxHashMap::default();
        for parameter in method.parameters.iter_non_variadic_params().skip(1) {
            if let Some(ty) = parameter
                .parameter
                .annotation()
                .and_then(|annotation| self.annotation_type(model, annotation))
            {
                locals.insert(parameter.parameter.name.id.as_str(), TypePath::of_type(ty));
            }
        }
        let saved = self
            .method_self
            .replace((std::rc::Rc::from(class), self_name));
        self.locals.push(locals);
        // Locals the fields are built from (`impl_cls = self.backend.get_impl_cls()`), in source
        // order.
        let mut local_assignments = Vec::new();
        collect_local_assignments(&method.body, &mut local_assignments);
        // A reassignment whose type is unknown keeps what the parameter's annotation said
        // (`config = config.get_text_config()`).
        for (name, value) in local_assignments {
            if let Some(path) = self.type_path(model, value) {
                self.bind_local(name, Some(path));
            }
        }
        for (attribute, annotation, value) in assignments {
            let path = annotation
                .and_then(|annotation| self.annotation_type(model, annotation))
                .map(TypePath::of_type)
                .or_else(|| {
                    value.and_then(|value| match value {
                        FieldValue::Whole(value) => self.type_path(model, value),
                        FieldValue::Element(value) => self
                            .type_path(model, value)
                            .map(|path| path.then(crate::summary::PathStep::Item)),
                    })
                });
            if let Some(path) = path {
                // `self.x = self.x` and friends say nothing.
                let circular = matches!(&path.root, crate::summary::PathRoot::SelfOf(_))
                    && path.steps.first()
                        == Some(&crate::summary::PathStep::Attr(attribute.to_string()));
                if !circular {
                    fields.push((attribute.to_string(), path));
                }
            }
        }
        self.locals.pop();
        self.method_self = saved;
    }

    /// Classes constructed by an expression: `MLP(...)`, `nn.ModuleList([Layer(...) ...])`,
    /// `nn.Sequential(A(), B())`.
    fn constructed(&self, model: &SemanticModel, value: &Expr) -> Vec<Ref> {
        let Expr::Call(call) = value else {
            return Vec::new();
        };
        let container = model.qualified_name(&call.func).is_some_and(|q| {
            matches!(
                &*q,
                "torch.nn.ModuleList" | "torch.nn.Sequential" | "torch.nn.ModuleDict"
            )
        });
        if !container {
            return self.reference(model, &call.func).into_iter().collect();
        }
        let mut refs = Vec::new();
        for argument in call.arguments.args.iter() {
            match argument {
                Expr::List(ast::ExprList { elts, .. })
                | Expr::Tuple(ast::ExprTuple { elts, .. }) => {
                    for element in elts {
                        refs.extend(self.constructed(model, element));
                    }
                }
                Expr::ListComp(comprehension) => {
                    refs.extend(self.constructed(model, &comprehension.elt));
                }
                Expr::Generator(generator) => refs.extend(self.constructed(model, &generator.elt)),
                Expr::Dict(dict) => {
                    for item in &dict.items {
                        refs.extend(self.constructed(model, &item.value));
                    }
                }
                other => refs.extend(self.constructed(model, other)),
            }
        }
        refs
    }
}

/// `self.<attribute> = <value>` anywhere in a method body (not in nested functions), and
/// `self.<a>.<b> = <value>` under the key `a.b` (a submodule set on a held module,
/// `self.model.vision_tower = Tower(...)`).
fn collect_instance_assignments<'a>(
    body: &'a [Stmt],
    self_name: &str,
    out: &mut Vec<(Cow<'a, str>, &'a Expr)>,
) {
    let key = |target: &'a Expr| -> Option<Cow<'a, str>> {
        let Expr::Attribute(attribute) = target else {
            return None;
        };
        match &*attribute.value {
            Expr::Name(n) if n.id.as_str() == self_name => {
                Some(Cow::Borrowed(attribute.attr.id.as_str()))
            }
            Expr::Attribute(held) => match &*held.value {
                Expr::Name(n) if n.id.as_str() == self_name => Some(Cow::Owned(format!(
                    "{}.{}",
                    held.attr.id, attribute.attr.id
                ))),
                _ => None,
            },
            _ => None,
        }
    };
    for stmt in body {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Some(key) = key(target) {
                        out.push((key, &assign.value));
                    }
                }
            }
            Stmt::AnnAssign(ast::StmtAnnAssign {
                target,
                value: Some(value),
                ..
            }) => {
                if let Some(key) = key(target) {
                    out.push((key, value));
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

/// `name = value` for a plain name anywhere in a method body (not in nested functions).
fn collect_local_assignments<'a>(body: &'a [Stmt], out: &mut Vec<(&'a str, &'a Expr)>) {
    for stmt in body {
        match stmt {
            Stmt::Assign(assign) => {
                if let [Expr::Name(name)] = assign.targets.as_slice() {
                    out.push((name.id.as_str(), &assign.value));
                }
            }
            Stmt::If(if_stmt) => {
                collect_local_assignments(&if_stmt.body, out);
                for clause in &if_stmt.elif_else_clauses {
                    collect_local_assignments(&clause.body, out);
                }
            }
            Stmt::With(with) => collect_local_assignments(&with.body, out),
            Stmt::Try(try_stmt) => collect_local_assignments(&try_stmt.body, out),
            _ => {}
        }
    }
}

/// What a field is assigned.
#[derive(Clone, Copy)]
enum FieldValue<'a> {
    /// `self.x = value`.
    Whole(&'a Expr),
    /// `self.x, self.y = value`: an element of the value, its position not followed (the index
    /// knows the classes a call's result holds, not where).
    Element(&'a Expr),
}

/// `self.<attribute> = <value>`, `self.a, self.b = <value>` and `self.<attribute>: T [= value]`
/// anywhere in a method body (not in nested functions), with the annotation and the value when
/// there is one.
fn collect_field_assignments<'a>(
    body: &'a [Stmt],
    self_name: &str,
    out: &mut Vec<(&'a str, Option<&'a Expr>, Option<FieldValue<'a>>)>,
) {
    let self_attribute = |target: &'a Expr| match target {
        Expr::Attribute(attribute) if matches!(&*attribute.value, Expr::Name(n) if n.id.as_str() == self_name) => {
            Some(attribute.attr.id.as_str())
        }
        _ => None,
    };
    for stmt in body {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Some(attribute) = self_attribute(target) {
                        out.push((attribute, None, Some(FieldValue::Whole(&assign.value))));
                    } else if let Expr::Tuple(ast::ExprTuple { elts, .. })
                    | Expr::List(ast::ExprList { elts, .. }) = target
                    {
                        for attribute in elts.iter().filter_map(self_attribute) {
                            out.push((attribute, None, Some(FieldValue::Element(&assign.value))));
                        }
                    }
                }
            }
            Stmt::AnnAssign(assign) => {
                if let Some(attribute) = self_attribute(&assign.target) {
                    out.push((
                        attribute,
                        Some(&assign.annotation),
                        assign.value.as_deref().map(FieldValue::Whole),
                    ));
                }
            }
            Stmt::If(if_stmt) => {
                collect_field_assignments(&if_stmt.body, self_name, out);
                for clause in &if_stmt.elif_else_clauses {
                    collect_field_assignments(&clause.body, self_name, out);
                }
            }
            Stmt::For(for_stmt) => collect_field_assignments(&for_stmt.body, self_name, out),
            Stmt::While(while_stmt) => collect_field_assignments(&while_stmt.body, self_name, out),
            Stmt::With(with) => collect_field_assignments(&with.body, self_name, out),
            Stmt::Try(try_stmt) => {
                collect_field_assignments(&try_stmt.body, self_name, out);
                for handler in &try_stmt.handlers {
                    let ast::ExceptHandler::ExceptHandler(handler) = handler;
                    collect_field_assignments(&handler.body, self_name, out);
                }
                collect_field_assignments(&try_stmt.orelse, self_name, out);
            }
            _ => {}
        }
    }
}

/// The fields a class body annotates as host data (NumPy arrays, numbers, lists of numbers,
/// tensors whose comment says they live on the host), and the attributes its methods bind to
/// host tensors or arrays.
fn host_fields(model: &SemanticModel, class: &ast::StmtClassDef) -> Vec<(String, Ty)> {
    let mut fields: Vec<(String, Ty)> = class
        .body
        .iter()
        .filter_map(|stmt| match stmt {
            Stmt::AnnAssign(assign) => match &*assign.target {
                Expr::Name(name) => match model.annotation_ty(&assign.annotation) {
                    ty @ (Ty::Array | Ty::HostList | Ty::HostLists) => {
                        Some((name.id.to_string(), ty))
                    }
                    // `prompt_lens: torch.Tensor  # CPU tensor`.
                    Ty::Tensor if model.commented_host(assign.annotation.end()) => {
                        Some((name.id.to_string(), Ty::CpuTensor))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect();
    for (name, ty) in model.host_attributes_of(class.name.id.as_str()) {
        if !fields.iter().any(|(field, _)| field == name) {
            fields.push((name.to_string(), ty));
        }
    }
    fields
}

/// Whether a method prepares CUDA-graph capture and leaves it to subclasses: its name speaks of
/// CUDA graphs and its body, past a docstring, only raises `NotImplementedError` (or, abstract,
/// does nothing).
fn is_capture_hook(method: &ast::StmtFunctionDef) -> bool {
    if !crate::summary::names_cuda_graphs(method.name.id.as_str()) {
        return false;
    }
    let body = match method.body.split_first() {
        Some((Stmt::Expr(expr), rest)) if expr.value.is_string_literal_expr() => rest,
        _ => &method.body[..],
    };
    let abstract_method = method
        .decorator_list
        .iter()
        .any(|d| last_segment(&d.expression) == Some("abstractmethod"));
    match body {
        [Stmt::Raise(raise)] => raise
            .exc
            .as_deref()
            .is_some_and(|exc| last_segment(exc) == Some("NotImplementedError")),
        [] => abstract_method,
        [Stmt::Pass(_)] => abstract_method,
        [Stmt::Expr(expr)] => abstract_method && expr.value.is_ellipsis_literal_expr(),
        _ => false,
    }
}

/// Whether a class another package defines is `torch.nn.Module` or one of its subclasses:
/// `torch.nn.Module` itself, and the models of `transformers`, which derive from it: any
/// `...PreTrainedModel`, a top-level `LlamaModel` / `...ForCausalLM` /
/// `...ForConditionalGeneration`, and the classes of a `transformers.models.*.modeling_*`
/// module but its output records (`...Output`).
fn is_module_base(qualified: &str) -> bool {
    if matches!(
        qualified,
        "torch.nn.Module" | "torch.nn.modules.module.Module"
    ) {
        return true;
    }
    let Some(path) = qualified.strip_prefix("transformers.") else {
        return false;
    };
    let (module, name) = path.rsplit_once('.').unwrap_or(("", path));
    if name.ends_with("Output") || name.starts_with("Auto") {
        return false;
    }
    let modeling = module.starts_with("models.")
        && module
            .rsplit('.')
            .next()
            .is_some_and(|last| last.starts_with("modeling_"));
    let model_name = ["Model", "ForCausalLM", "ForConditionalGeneration"]
        .iter()
        .any(|suffix| name.ends_with(suffix));
    name.ends_with("PreTrainedModel") || modeling || module.is_empty() && model_name
}

/// What a class-body statement declares of compiling the model whole: `_can_compile_fullgraph
/// = False` (or annotated: `_can_compile_fullgraph: bool = True`).
fn compiles_whole(stmt: &Stmt) -> Option<bool> {
    let (target, value) = match stmt {
        Stmt::Assign(assign) => match assign.targets.as_slice() {
            [target] => (target, &*assign.value),
            _ => return None,
        },
        Stmt::AnnAssign(assign) => (&*assign.target, assign.value.as_deref()?),
        _ => return None,
    };
    let (Expr::Name(name), Expr::BooleanLiteral(value)) = (target, value) else {
        return None;
    };
    (name.id.as_str().trim_start_matches('_') == "can_compile_fullgraph").then_some(value.value)
}
