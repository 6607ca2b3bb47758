//! Fields a class's methods replace with host copies of themselves (see [`HostCopy`]).

use super::SummaryBuilder;
use crate::semantic::{is_cpu_move, SemanticModel};
use crate::summary::HostCopy;
use ruff_python_ast::{self as ast, Expr};

impl SummaryBuilder<'_> {
    /// The host copy `self.<key> = <value>` makes, if it makes one: the value is a call that
    /// takes the field itself (`async_d2h(self.next_token_ids)`, its return decided by the
    /// index), or a move of the field to the host (`self.x.to("cpu", non_blocking=True)`,
    /// `self.x.cpu()`).
    pub(super) fn host_copy(
        &self,
        model: &SemanticModel,
        self_name: &str,
        key: &str,
        value: &Expr,
    ) -> Option<HostCopy> {
        let Expr::Call(call) = value else {
            return None;
        };
        let (holder, field) = match key.split_once('.') {
            Some((holder, field)) => (Some(holder.to_string()), field.to_string()),
            None => (None, key.to_string()),
        };
        let is_target = |expr: &Expr| reads_field(expr, self_name, key);
        if let Expr::Attribute(method) = &*call.func {
            if is_target(&method.value) {
                let moved = match method.attr.id.as_str() {
                    "cpu" => true,
                    "to" => is_cpu_move(call),
                    _ => false,
                };
                return moved.then_some(HostCopy {
                    holder,
                    field,
                    via: None,
                });
            }
        }
        let takes_field = call
            .arguments
            .args
            .iter()
            .chain(call.arguments.keywords.iter().map(|k| &k.value))
            .any(is_target);
        if !takes_field {
            return None;
        }
        let via = self.reference(model, &call.func)?;
        Some(HostCopy {
            holder,
            field,
            via: Some(via),
        })
    }
}

/// Whether `expr` is `<self_name>.<key>`, `key` one attribute or two (`holder.field`).
fn reads_field(expr: &Expr, self_name: &str, key: &str) -> bool {
    let Expr::Attribute(ast::ExprAttribute { value, attr, .. }) = expr else {
        return false;
    };
    match key.rsplit_once('.') {
        Some((holder, field)) => attr.id.as_str() == field && reads_field(value, self_name, holder),
        None => {
            attr.id.as_str() == key
                && matches!(&**value, Expr::Name(name) if name.id.as_str() == self_name)
        }
    }
}
