//! Fields a class's methods replace with host copies of themselves (see [`HostCopy`]).

use super::SummaryBuilder;
use crate::semantic::{is_cpu_move, SemanticModel};
use crate::summary::HostCopy;
use ruff_python_ast::{self as ast, Expr};

impl SummaryBuilder<'_> {
    /// The host copy `self.<key> = <value>` makes, if it makes one: the value is a call that
    /// takes the field itself (`async_d2h(self.next_token_ids)`, its return decided by the
    /// index), a move of the field to the host (`self.x.to("cpu", non_blocking=True)`,
    /// `self.x.cpu()`), or a list of such calls on the elements of the field.
    pub(super) fn host_copy(
        &self,
        model: &SemanticModel,
        self_name: &str,
        key: &str,
        value: &Expr,
    ) -> Option<HostCopy> {
        let (holder, field) = match key.split_once('.') {
            Some((holder, field)) => (Some(holder.to_string()), field.to_string()),
            None => (None, key.to_string()),
        };
        let is_target = |expr: &Expr| reads_field(expr, self_name, key);
        // `[async_d2h(v) if torch.is_tensor(v) else v for v in self.vals]`.
        if let Expr::ListComp(comprehension) = value {
            let [generator] = &*comprehension.generators else {
                return None;
            };
            let Expr::Name(element) = &generator.target else {
                return None;
            };
            if !is_target(&generator.iter) || !generator.ifs.is_empty() {
                return None;
            }
            let call = match &*comprehension.elt {
                Expr::Call(call) => call,
                Expr::If(choice) => match (&*choice.body, &*choice.orelse) {
                    (Expr::Call(call), Expr::Name(kept)) if kept.id == element.id => call,
                    _ => return None,
                },
                _ => return None,
            };
            let takes_element = matches!(
                &*call.arguments.args,
                [Expr::Name(arg)] if arg.id == element.id
            );
            if !takes_element {
                return None;
            }
            let via = self.reference(model, &call.func)?;
            return Some(HostCopy {
                holder,
                field,
                via: Some(via),
                elements: true,
            });
        }
        let Expr::Call(call) = value else {
            return None;
        };
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
                    elements: false,
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
            elements: false,
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
