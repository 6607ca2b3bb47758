//! Classes: the types of their attributes, from annotations in the class body, `self.x = ...`
//! in its methods, and `register_buffer`.

use super::model::{ClassInfo, SemanticModel};
use super::types::Ty;
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

impl<'a> SemanticModel<'a> {
    /// Scans a class's methods for `self.x = ...` and `register_buffer` to type its attributes.
    pub fn class_info(&mut self, class: &'a ast::StmtClassDef) -> ClassInfo<'a> {
        let mut info = ClassInfo {
            bases: class
                .arguments
                .as_ref()
                .map(|arguments| arguments.args.iter().collect())
                .unwrap_or_default(),
            ..ClassInfo::default()
        };
        info.module = info.bases.iter().any(|base| self.is_module_class(base));
        info.record = class
            .decorator_list
            .iter()
            .any(|decorator| crate::util::last_segment(&decorator.expression) == Some("dataclass"));
        let merge = |attributes: &mut rustc_hash::FxHashMap<&'a str, Ty>, name, ty| {
            attributes
                .entry(name)
                .and_modify(|existing: &mut Ty| {
                    if *existing != ty {
                        *existing = Ty::Unknown;
                    }
                })
                .or_insert(ty);
        };
        // Attributes set from an off-by-default flag (or to `False`), and those set otherwise
        // somewhere.
        let mut flagged: Vec<&'a str> = Vec::new();
        let mut unflagged: Vec<&'a str> = Vec::new();
        // Attributes some method sets to `None`, and those `__init__` sets to a value.
        let mut emptied: Vec<&'a str> = Vec::new();
        let mut constructed: Vec<&'a str> = Vec::new();
        for stmt in &class.body {
            match stmt {
                Stmt::AnnAssign(assign) => {
                    if let Expr::Name(name) = &*assign.target {
                        let ty = match self.annotation_ty(&assign.annotation) {
                            // `prompt_lens: torch.Tensor  # CPU tensor`.
                            Ty::Tensor if self.commented_host(assign.annotation.end()) => {
                                Ty::CpuTensor
                            }
                            ty => ty,
                        };
                        merge(&mut info.attributes, name.id.as_str(), ty);
                        if assign.value.as_deref().is_some_and(is_state_field) {
                            info.state_fields.push(name.id.as_str());
                        }
                    }
                }
                Stmt::FunctionDef(method) => {
                    if crate::util::is_property(method) {
                        info.properties.push(method.name.id.as_str());
                    }
                    let Some(self_param) = method.parameters.iter_non_variadic_params().next()
                    else {
                        continue;
                    };
                    let self_name = self_param.parameter.name.id.as_str();
                    self.push_scope(false);
                    self.bind_parameters(&method.parameters);
                    self.bind(self_name, Ty::Unknown);
                    // `device = "cpu"`, moved elsewhere only on another platform or behind a
                    // switch off by default: the buffers the method makes there are host memory.
                    let mut devices = Vec::new();
                    self.device_literals(&method.body, &mut devices);
                    for &(name, _) in &devices {
                        if devices.iter().all(|&(n, host)| n != name || host) {
                            self.bind(name, Ty::Host);
                            self.current().host_devices.insert(name);
                        }
                    }
                    let mut assignments = Vec::new();
                    collect_self_assignments(&method.body, self_name, &mut assignments);
                    collect_key_stores(method, self_name, &mut info.key_stores);
                    let resets = method.name.id.as_str() != "__init__";
                    for (name, value) in assignments {
                        *info.assignments.entry(name).or_default() += 1;
                        if resets {
                            if matches!(value, Some(Expr::NoneLiteral(_))) {
                                info.resets.push(name);
                            }
                            info.setters.push((method.name.id.as_str(), name));
                        }
                        if let Some(held) = value.and_then(constructed_class) {
                            info.instances
                                .entry(name)
                                .and_modify(|existing| {
                                    if *existing != held {
                                        *existing = "";
                                    }
                                })
                                .or_insert(held);
                        }
                        // Set from a flag off by default, or only ever to `False`.
                        let off = value.is_some_and(|value| {
                            self.is_off_flag(value)
                                || matches!(value, Expr::BooleanLiteral(b) if !b.value)
                        });
                        if off {
                            flagged.push(name);
                        } else {
                            unflagged.push(name);
                        }
                        let ty = match value {
                            Some(Expr::NoneLiteral(_)) => {
                                emptied.push(name);
                                continue;
                            }
                            Some(value) => {
                                // `resets`: the method is not `__init__`.
                                if !resets && !explicitly_host(value) {
                                    constructed.push(name);
                                }
                                self.ty(value)
                            }
                            None => Ty::Tensor,
                        };
                        merge(&mut info.attributes, name, ty);
                    }
                    self.pop_scope();
                }
                _ => {}
            }
        }
        // An attribute also set to `None` (a buffer made only when a feature is on) keeps what
        // its host buffers say: it holds one or nothing. Any other type it held is unknown, as
        // is one a constructor of a class with bases makes without naming the host: a module's
        // (maybe through a base another module defines) may be built under a default device (an
        // engine's loader runs `with torch.device("cuda"):`), where `torch.tensor(ids)` is made
        // on the GPU, though `t.to("cpu")` is not.
        let plain = info.bases.is_empty() && !info.module;
        for name in emptied {
            let ty = info.attributes.get(name).copied();
            let host = (plain || !constructed.contains(&name))
                && ty.is_some_and(|ty| ty.is_host_tensor() || ty == Ty::Array);
            if !host {
                merge(&mut info.attributes, name, Ty::Host);
            }
        }
        flagged.retain(|name| !unflagged.contains(name));
        flagged.dedup();
        info.off_flags = flagged;
        info
    }

    /// The class, as its constructor call names it, whose instance `self.<attribute>` (of a
    /// class defined in this module) holds, when every assignment constructs the same one
    /// (`self.corpus = NgramCorpus(...)`), qualified where an import binds the name.
    pub fn constructed_instance(&self, expr: &Expr) -> Option<String> {
        let Expr::Attribute(attribute) = expr else {
            return None;
        };
        let owner = self.instance_class(&attribute.value)?;
        let held = *self
            .classes
            .get(owner)?
            .instances
            .get(attribute.attr.id.as_str())?;
        if held.is_empty() {
            return None;
        }
        Some(match self.lookup(held) {
            Some(super::scope::Binding::Import(qualified)) => qualified.clone(),
            _ => held.to_string(),
        })
    }

    /// Whether a base class expression names `torch.nn.Module`, another `torch.nn` class, or a
    /// module class of this module.
    fn is_module_class(&self, base: &Expr) -> bool {
        if let Expr::Name(name) = base {
            if let Some(local) = self.classes.get(name.id.as_str()) {
                return local.module;
            }
        }
        self.qualified_name(base).is_some_and(|qualified| {
            qualified.strip_prefix("torch.nn.").is_some_and(|class| {
                !class.contains('.') && class.starts_with(|c: char| c.is_ascii_uppercase())
            }) || &*qualified == "torch.nn.modules.module.Module"
        })
    }

    /// The names a method body binds to device strings, each with whether the string is the
    /// host (`"cpu"`); any other value bound to the name counts as not the host. Clauses for
    /// code off under the defaults (see [`Self::off_by_default`]) are skipped.
    fn device_literals(&self, body: &'a [Stmt], out: &mut Vec<(&'a str, bool)>) {
        for stmt in body {
            match stmt {
                Stmt::Assign(assign) => {
                    if let [Expr::Name(name)] = &*assign.targets {
                        let host = matches!(&*assign.value, Expr::StringLiteral(s)
                            if s.value.to_str() == "cpu");
                        out.push((name.id.as_str(), host));
                    }
                }
                Stmt::If(if_stmt) => {
                    let off = |test: &Expr| self.off_by_default(test, &|_| false);
                    if !off(&if_stmt.test) {
                        self.device_literals(&if_stmt.body, out);
                    }
                    for clause in &if_stmt.elif_else_clauses {
                        if !clause.test.as_ref().is_some_and(off) {
                            self.device_literals(&clause.body, out);
                        }
                    }
                }
                Stmt::With(with) => self.device_literals(&with.body, out),
                _ => {}
            }
        }
    }
}

/// Whether an expression names the host as where its tensor lives, whatever the default
/// device: `.cpu()`, `.to("cpu")`, `device="cpu"` (any spelling `syntax::is_cpu_device` knows), `pin_memory=True`, `.pin_memory()`,
/// `torch.from_numpy(...)` or `.numpy()` somewhere in it.
fn explicitly_host(value: &Expr) -> bool {
    struct Finder(bool);
    impl<'a> ruff_python_ast::visitor::Visitor<'a> for Finder {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(call) = expr {
                use super::syntax::{is_cpu_device, keyword, keyword_true};
                let method = match &*call.func {
                    Expr::Attribute(attribute) => attribute.attr.as_str(),
                    _ => "",
                };
                self.0 |= matches!(method, "cpu" | "pin_memory" | "numpy" | "from_numpy")
                    || (method == "to" && call.arguments.args.first().is_some_and(is_cpu_device))
                    || keyword(call, "device").is_some_and(is_cpu_device)
                    || keyword_true(call, "pin_memory");
            }
            ruff_python_ast::visitor::walk_expr(self, expr);
        }
    }
    let mut finder = Finder(false);
    ruff_python_ast::visitor::Visitor::visit_expr(&mut finder, value);
    finder.0
}

/// The class a constructor call names, as written: `VocabMapping(...)`, capitalised.
fn constructed_class(value: &Expr) -> Option<&str> {
    let Expr::Call(call) = value else {
        return None;
    };
    match &*call.func {
        Expr::Name(name) if name.id.starts_with(|c: char| c.is_ascii_uppercase()) => {
            Some(name.id.as_str())
        }
        _ => None,
    }
}

/// `self.<name> = value` (value `None` for `register_buffer`, which always holds a tensor).
fn collect_self_assignments<'a>(
    body: &'a [Stmt],
    self_name: &str,
    out: &mut Vec<(&'a str, Option<&'a Expr>)>,
) {
    let is_self = |expr: &Expr| matches!(expr, Expr::Name(n) if n.id.as_str() == self_name);
    for stmt in body {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    if let Expr::Attribute(attribute) = target {
                        if is_self(&attribute.value) {
                            out.push((attribute.attr.id.as_str(), Some(&*assign.value)));
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
                    if is_self(&attribute.value) {
                        out.push((attribute.attr.id.as_str(), Some(&**value)));
                    }
                }
            }
            Stmt::Expr(ast::StmtExpr { value, .. }) => {
                if let Expr::Call(call) = &**value {
                    if let Expr::Attribute(method) = &*call.func {
                        if method.attr.id.as_str() == "register_buffer" && is_self(&method.value) {
                            if let Some(Expr::StringLiteral(name)) = call.arguments.args.first() {
                                if !name.value.is_implicit_concatenated() {
                                    let name = name.value.to_str();
                                    out.push((name, None));
                                }
                            }
                        }
                    }
                }
            }
            Stmt::If(if_stmt) => {
                collect_self_assignments(&if_stmt.body, self_name, out);
                for clause in &if_stmt.elif_else_clauses {
                    collect_self_assignments(&clause.body, self_name, out);
                }
            }
            Stmt::For(for_stmt) => collect_self_assignments(&for_stmt.body, self_name, out),
            Stmt::With(with) => collect_self_assignments(&with.body, self_name, out),
            Stmt::Try(try_stmt) => {
                collect_self_assignments(&try_stmt.body, self_name, out);
                collect_self_assignments(&try_stmt.orelse, self_name, out);
            }
            _ => {}
        }
    }
}

/// A dataclass field the constructor does not take (`field(init=False, default_factory=dict)`):
/// the instance's own state, not the data a record carries.
fn is_state_field(value: &Expr) -> bool {
    let Expr::Call(call) = value else {
        return false;
    };
    crate::util::last_segment(&call.func) == Some("field")
        && call.arguments.keywords.iter().any(|keyword| {
            keyword
                .arg
                .as_ref()
                .is_some_and(|arg| arg.as_str() == "init")
                && matches!(
                    keyword.value,
                    Expr::BooleanLiteral(ast::ExprBooleanLiteral { value: false, .. })
                )
        })
}

/// The stores a method makes into a container on `self` under one of its parameters, directly
/// in its body: `self.metadata[bs] = metadata` in `_build(self, bs, ...)`.
fn collect_key_stores<'a>(
    method: &'a ast::StmtFunctionDef,
    self_name: &str,
    out: &mut Vec<(&'a str, &'a str, usize)>,
) {
    let params: Vec<&str> = method
        .parameters
        .iter_non_variadic_params()
        .skip(1)
        .map(|p| p.parameter.name.id.as_str())
        .collect();
    for stmt in &method.body {
        let Stmt::Assign(assign) = stmt else {
            continue;
        };
        for target in &assign.targets {
            let Expr::Subscript(subscript) = target else {
                continue;
            };
            let (Expr::Attribute(container), Expr::Name(key)) =
                (&*subscript.value, &*subscript.slice)
            else {
                continue;
            };
            if !matches!(&*container.value, Expr::Name(n) if n.id.as_str() == self_name) {
                continue;
            }
            if let Some(position) = params.iter().position(|p| *p == key.id.as_str()) {
                out.push((
                    method.name.id.as_str(),
                    container.attr.id.as_str(),
                    position,
                ));
            }
        }
    }
}
