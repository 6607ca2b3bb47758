//! Classes in the summary: bases, methods, and the instances their attributes hold.

use super::SummaryBuilder;
use crate::semantic::SemanticModel;
use crate::summary::{ClassSummary, Ref};
use crate::util::last_segment;
use ruff_python_ast::{self as ast, Expr, Stmt};

impl<'a> SummaryBuilder<'a> {
    /// The summary of a class (`name` qualified inside the module): bases, the instances its
    /// attributes hold, its methods.
    pub(crate) fn class(
        &mut self,
        model: &SemanticModel,
        class: &'a ast::StmtClassDef,
        name: String,
    ) {
        let bases: Vec<Ref> = class
            .arguments
            .as_ref()
            .map(|arguments| {
                arguments
                    .args
                    .iter()
                    .filter_map(|b| self.reference(model, b))
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
            name,
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
        self.summary.classes.push(summary);
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
