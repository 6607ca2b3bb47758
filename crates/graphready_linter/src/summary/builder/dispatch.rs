//! Class decorators that replace a module's `forward` with a dispatcher: the decorator keeps the
//! class's own `forward` (`original = cls.forward`), defines a new one that looks an
//! implementation up by a setting and passes the original only as the fallback of that lookup
//! (`impl = registry.get(self.config.impl_name, original); return impl(self, *args)`), and
//! assigns it (`cls.forward = forward`). The class's own body runs only when the setting
//! selects it: transformers' `@use_experts_implementation` runs a fused grouped or batched
//! matmul by default, and the per-expert loop it wraps only with `experts_implementation="eager"`.

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Stmt};
use rustc_hash::FxHashSet;

/// Whether a function (a class decorator, or a factory of one) replaces its class's `forward`
/// with a dispatcher that never calls the original itself.
pub(super) fn dispatches_forward(function: &ast::StmtFunctionDef) -> bool {
    let mut scan = Scan::default();
    scan.visit_body(&function.body);
    if scan.originals.is_empty() {
        return false;
    }
    scan.replacements.iter().any(|name| {
        scan.definitions
            .iter()
            .any(|def| def.name.id.as_str() == *name && passes_original_only(def, &scan.originals))
    })
}

/// What a decorator's body does with `forward`: the locals holding a class's own `forward`,
/// the names of the functions assigned in its place, and the functions it defines (at any
/// depth).
#[derive(Default)]
struct Scan<'a> {
    originals: FxHashSet<&'a str>,
    replacements: Vec<&'a str>,
    definitions: Vec<&'a ast::StmtFunctionDef>,
}

impl<'a> Visitor<'a> for Scan<'a> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Assign(assign) => {
                for target in &assign.targets {
                    match (target, &*assign.value) {
                        // `original_forward = cls.forward`
                        (Expr::Name(local), value) if is_forward_of_name(value) => {
                            self.originals.insert(local.id.as_str());
                        }
                        // `cls.forward = forward`
                        (target, Expr::Name(replacement)) if is_forward_of_name(target) => {
                            self.replacements.push(replacement.id.as_str());
                        }
                        _ => {}
                    }
                }
            }
            Stmt::FunctionDef(def) => self.definitions.push(def),
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }
}

/// `name.forward`.
fn is_forward_of_name(expr: &Expr) -> bool {
    matches!(expr, Expr::Attribute(attribute)
        if attribute.attr.id.as_str() == "forward" && attribute.value.is_name_expr())
}

/// Whether a replacement hands one of the originals to a call (the lookup's fallback) and
/// never calls one itself.
fn passes_original_only(def: &ast::StmtFunctionDef, originals: &FxHashSet<&str>) -> bool {
    #[derive(Default)]
    struct Calls {
        passed: bool,
        called: bool,
    }
    struct Finder<'o> {
        originals: &'o FxHashSet<&'o str>,
        calls: Calls,
    }
    impl<'a> Visitor<'a> for Finder<'_> {
        fn visit_expr(&mut self, expr: &'a Expr) {
            if let Expr::Call(call) = expr {
                let original = |e: &Expr| matches!(e, Expr::Name(name) if self.originals.contains(name.id.as_str()));
                self.calls.called |= original(&call.func);
                self.calls.passed |= call.arguments.args.iter().any(original)
                    || call.arguments.keywords.iter().any(|k| original(&k.value));
            }
            visitor::walk_expr(self, expr);
        }
    }
    let mut finder = Finder {
        originals,
        calls: Calls::default(),
    };
    finder.visit_body(&def.body);
    finder.calls.passed && !finder.calls.called
}
