//! Environment flags that a project declares off by default: a switch a user turns on for one
//! investigation or one opt-in feature, so that code behind it is off the serving path as
//! shipped. Read from the registries engines keep, before any file is checked:
//!
//! - SGLang's `class Envs:` with `SGLANG_TRACE_LOGITS_E2E_SYNC = EnvBool(False)`, read as
//!   `envs.SGLANG_TRACE_LOGITS_E2E_SYNC.get()`, and settings without a default
//!   (`SGLANG_EMBEDDINGS_SPARSE_HEAD = EnvStr(None)`), read as `.get()` or `.is_set()`;
//! - vLLM's `environment_variables = {"VLLM_X": lambda: bool(int(os.getenv("VLLM_X", "0")))}`,
//!   read as `envs.VLLM_X`.

use super::model::SemanticModel;
use crate::util::last_segment;
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};

/// The names of the flags a module declares off by default.
pub(crate) fn off_flags(module: &ast::ModModule) -> Vec<String> {
    let mut collector = Collector::default();
    collector.visit_body(&module.body);
    collector.off
}

#[derive(Default)]
struct Collector {
    off: Vec<String>,
}

impl<'a> Visitor<'a> for Collector {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        // `NAME = EnvBool(False)`, or any `Env*` setting whose default is `None` (`EnvStr(None)`:
        // unset unless a user sets it), given by position or as `default=`.
        if let Stmt::Assign(assign) = stmt {
            if let ([Expr::Name(name)], Expr::Call(call)) = (&*assign.targets, &*assign.value) {
                let class = last_segment(&call.func).unwrap_or_default();
                let default = call.arguments.args.first().or_else(|| {
                    call.arguments
                        .keywords
                        .iter()
                        .find(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == "default"))
                        .map(|k| &k.value)
                });
                let off = match default {
                    Some(Expr::BooleanLiteral(b)) => class == "EnvBool" && !b.value,
                    Some(Expr::NoneLiteral(_)) => class.starts_with("Env"),
                    _ => false,
                };
                if off {
                    self.off.push(name.id.to_string());
                }
            }
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        // `"NAME": lambda: bool(int(os.getenv("NAME", "0")))`.
        if let Expr::Dict(dict) = expr {
            for item in &dict.items {
                let (Some(Expr::StringLiteral(key)), Expr::Lambda(lambda)) =
                    (&item.key, &item.value)
                else {
                    continue;
                };
                let key = key.value.to_str();
                if reads_off_default(&lambda.body, key, 0) {
                    self.off.push(key.to_string());
                }
            }
        }
        visitor::walk_expr(self, expr);
    }
}

/// Whether a flag's reader wraps `os.getenv(key, "0")` (or `"false"`) in `bool(...)`: a
/// boolean whose default is off.
fn reads_off_default(expr: &Expr, key: &str, depth: u8) -> bool {
    let Expr::Call(call) = expr else {
        return false;
    };
    if depth > 3 {
        return false;
    }
    let name = last_segment(&call.func);
    if depth > 0 && matches!(name, Some("getenv" | "get")) {
        return matches!(&*call.arguments.args, [Expr::StringLiteral(k), Expr::StringLiteral(d)]
            if k.value.to_str() == key && matches!(d.value.to_str(), "0" | "false" | "False"));
    }
    let wraps = matches!(name, Some("bool" | "int")) && (depth > 0 || name == Some("bool"));
    wraps
        && call
            .arguments
            .args
            .first()
            .is_some_and(|inner| reads_off_default(inner, key, depth + 1))
}

impl SemanticModel<'_> {
    /// Whether the code under `test` is off under the defaults: a debug switch, an environment
    /// flag declared off by default, a platform without CUDA graphs, or what `extra` says (a
    /// configured debug guard), alone or as one term of an `and`. Unlike a capture flag (whose
    /// other clause still runs eagerly), such code never runs as shipped.
    pub fn off_by_default(&self, test: &Expr, extra: &dyn Fn(&Expr) -> bool) -> bool {
        match test {
            Expr::BoolOp(ast::ExprBoolOp {
                op: ast::BoolOp::And,
                values,
                ..
            }) => values.iter().any(|value| self.off_by_default(value, extra)),
            test => {
                extra(test)
                    || crate::util::is_debug_switch(test)
                    || self.is_off_flag(test)
                    || crate::util::is_other_platform(test, self.platforms())
            }
        }
    }

    /// Whether a test reads an environment flag the project declares off by default:
    /// `envs.NAME.get()`, `envs.NAME.is_set()`, `envs.NAME.value`, `envs.NAME`, or
    /// `get_bool_env_var("NAME")` without a default that turns it on, or a name bound to one of
    /// those (`_validate = envs.NAME.get()` at module level).
    pub fn is_off_flag(&self, test: &Expr) -> bool {
        let declared = |name: &str| {
            self.types
                .facts
                .off_flags
                .is_some_and(|flags| flags.contains(name))
        };
        match test {
            // `_validate` bound to such a flag (a module global read once).
            Expr::Name(name) => self
                .visible_scopes()
                .find(|scope| scope.bindings.contains_key(name.id.as_str()))
                .is_some_and(|scope| scope.off_flags.contains(name.id.as_str())),
            // `self.trace` where the class sets it only from such a flag.
            Expr::Attribute(attribute)
                if matches!(&*attribute.value, Expr::Name(receiver)
                    if self.self_name() == Some(receiver.id.as_str())) =>
            {
                self.self_class()
                    .and_then(|(class, _)| self.classes.get(class))
                    .is_some_and(|info| info.off_flags.contains(&attribute.attr.as_str()))
            }
            // `envs.NAME.get() == "value"`: an unset setting (or a flag off) equals no value
            // that is true.
            Expr::Compare(compare) => match (&*compare.ops, &*compare.comparators) {
                // `os.environ.get("X", "0") == "1"`, `os.getenv("X", "1") != "1"`: false while
                // the variable is unset.
                ([op @ (ast::CmpOp::Eq | ast::CmpOp::NotEq)], [Expr::StringLiteral(value)])
                    if let Some(default) = environment_default(&compare.left) =>
                {
                    let equal = default == Some(value.value.to_str());
                    equal == matches!(op, ast::CmpOp::NotEq)
                }
                // `envs.NAME.get() is not None`: an unset setting is `None`.
                ([ast::CmpOp::IsNot], [Expr::NoneLiteral(_)]) => self.is_off_flag(&compare.left),
                ([ast::CmpOp::Eq], [right]) => {
                    let truthy = |e: &Expr| match e {
                        Expr::StringLiteral(s) => !s.value.to_str().is_empty(),
                        Expr::BooleanLiteral(b) => b.value,
                        Expr::NumberLiteral(n) => {
                            matches!(&n.value, ast::Number::Int(i) if i.as_u64() != Some(0))
                        }
                        _ => false,
                    };
                    (truthy(right) && self.is_off_flag(&compare.left))
                        || (truthy(&compare.left) && self.is_off_flag(right))
                }
                _ => false,
            },
            Expr::Attribute(attribute) => match (&*attribute.value, attribute.attr.as_str()) {
                (Expr::Attribute(flag), "value") => declared(flag.attr.as_str()),
                (_, name) => declared(name),
            },
            Expr::Call(call) => match (&*call.func, &*call.arguments.args) {
                // `.get()` of an unset setting is its default; `.is_set()` is false.
                (Expr::Attribute(method), [])
                    if matches!(method.attr.as_str(), "get" | "is_set") =>
                {
                    matches!(&*method.value, Expr::Attribute(flag) if declared(flag.attr.as_str()))
                }
                (func, [Expr::StringLiteral(_), ..]) => {
                    let reads_bool =
                        last_segment(func).is_some_and(|name| name == "get_bool_env_var");
                    let default_off = match call.arguments.args.get(1) {
                        None => true,
                        Some(Expr::StringLiteral(d)) => {
                            matches!(d.value.to_str(), "0" | "false" | "False")
                        }
                        Some(_) => false,
                    };
                    reads_bool && default_off
                }
                _ => false,
            },
            _ => false,
        }
    }
}

/// For a read of an environment variable by literal name (`os.environ.get("X", "0")`,
/// `os.getenv("X")`), its default: `Some(None)` without one, `Some(Some(text))` with a string
/// literal; `None` for anything else (a default that is not a literal).
fn environment_default(expr: &Expr) -> Option<Option<&str>> {
    let Expr::Call(call) = expr else {
        return None;
    };
    let reads = match &*call.func {
        Expr::Attribute(method) if method.attr.as_str() == "get" => {
            last_segment(&method.value) == Some("environ")
        }
        func => last_segment(func) == Some("getenv"),
    };
    if !reads || !call.arguments.keywords.is_empty() {
        return None;
    }
    match &*call.arguments.args {
        [Expr::StringLiteral(_)] => Some(None),
        [Expr::StringLiteral(_), Expr::StringLiteral(default)] => {
            Some(Some(default.value.to_str()))
        }
        _ => None,
    }
}
