//! Capture predicates: host values that are true whenever the code runs inside a CUDA graph
//! capture or a `torch.compile` trace ([`Ty::CaptureFlag`]). Code under `if not <flag>:` never
//! runs captured.
//!
//! A value is a flag when it is a call of a capture predicate (`torch.cuda.
//! is_current_stream_capturing()` and the configured names, matched on their last name), of a
//! compile predicate (`torch.compiler.is_compiling()`), or of a function whose every return is a
//! flag (learned in this module, callees first, or known from other modules); `a or b` with a
//! flag among them; `a and b` of flags; `flag | x`; `bool(flag)`; and a name bound to a flag.
//!
//! The other way round, a name can be false while capturing: `if not capturing: any_visual =
//! mask.any() else: any_visual = False` (the checker marks it; see
//! [`SemanticModel::mark_false_while_capturing`]).

use super::model::SemanticModel;
use super::types::Ty;
use crate::util::last_segment;
use ruff_python_ast::{self as ast, Expr};

/// Predicates whose truthy value means "being compiled or traced", by qualified name.
const COMPILING_PREDICATES: &[&str] = &[
    "torch.compiler.is_compiling",
    "torch.compiler.is_dynamo_compiling",
    "torch.compiler.is_exporting",
    "torch._dynamo.is_compiling",
    "torch._utils.is_compiling",
    "torch.jit.is_tracing",
    "torch.jit.is_scripting",
];

impl<'a> SemanticModel<'a> {
    /// The configured capture predicates (last names), from the file's settings.
    pub fn set_capture_predicates(&mut self, names: &'a [String]) {
        self.invalidate();
        self.types.capture_predicates = names;
    }

    /// The GPUs the analysis targets, from the file's settings.
    pub fn set_platforms(&mut self, platforms: crate::settings::Platforms) {
        self.invalidate();
        self.types.platforms = platforms;
    }

    /// The GPUs the analysis targets (see [`crate::settings::Platforms`]).
    pub fn platforms(&self) -> crate::settings::Platforms {
        self.types.platforms
    }

    /// Records that every return of a function of this module is a capture flag.
    pub fn learn_predicate(&mut self, qualname: &str) {
        self.invalidate();
        self.types.learned_predicates.insert(qualname.to_string());
    }

    /// Whether a function of this module (`helper`, `Class.method`) returns a capture flag.
    pub fn is_learned_predicate(&self, qualname: &str) -> bool {
        self.types.learned_predicates.contains(qualname)
    }

    /// Whether a call returns a capture flag: a capture or compile predicate, or a helper of this
    /// module learned to return one.
    pub(super) fn is_predicate_call(&self, call: &ast::ExprCall) -> bool {
        let qualified = self.qualified_name(&call.func);
        if let Some(qualified) = qualified.as_deref() {
            if COMPILING_PREDICATES.contains(&qualified) {
                return true;
            }
        }
        let segment = qualified
            .as_deref()
            .and_then(|q| q.rsplit('.').next())
            .or_else(|| last_segment(&call.func));
        if segment.is_some_and(|segment| {
            self.types
                .capture_predicates
                .iter()
                .any(|name| name == segment)
        }) {
            return true;
        }
        // `torch.cuda.current_stream().is_capturing()`.
        if let Expr::Attribute(attribute) = &*call.func {
            if attribute.attr.id.as_str() == "is_capturing"
                && self.ty(&attribute.value) == Ty::Stream
            {
                return true;
            }
        }
        if qualified.is_some() || self.types.learned_predicates.is_empty() {
            return false;
        }
        match &*call.func {
            Expr::Name(name) => self.is_learned_predicate(name.id.as_str()),
            Expr::Attribute(attribute) => match (&*attribute.value, self.self_class()) {
                (Expr::Name(receiver), Some((class, self_name)))
                    if receiver.id.as_str() == self_name =>
                {
                    self.is_learned_predicate(&format!("{class}.{}", attribute.attr.id))
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// The type of `a or b` / `a and b`: a capture flag when the operands make one, else a
    /// prefill flag when they make one.
    pub(super) fn bool_op_ty(&self, bool_op: &ast::ExprBoolOp) -> Ty {
        let flag = |value: &Expr| self.ty(value) == Ty::CaptureFlag;
        let is_flag = match bool_op.op {
            // True while capturing if any operand is.
            ast::BoolOp::Or => bool_op.values.iter().any(flag),
            ast::BoolOp::And => bool_op.values.iter().all(flag),
        };
        if is_flag {
            Ty::CaptureFlag
        } else if self.prefill_bool_op(bool_op, false) {
            Ty::PrefillFlag
        } else {
            Ty::Unknown
        }
    }
}

impl<'a> SemanticModel<'a> {
    /// Marks a name as false while capturing (a clause that runs while capturing sets it to a
    /// false literal, the other runs only outside capture), until it is bound again.
    pub fn mark_false_while_capturing(&mut self, name: &'a str) {
        self.invalidate();
        self.current().capture_false.insert(name);
    }

    /// Whether a name in the current scope is false while capturing.
    pub fn is_false_while_capturing(&self, name: &str) -> bool {
        self.scopes.last().is_some_and(|scope| {
            !scope.capture_false.is_empty() && scope.capture_false.contains(name)
        })
    }

    /// Learns that `name = buffers if capturing else None` holds a value only while capturing;
    /// whether the value was one.
    pub fn learn_capture_only(&mut self, name: &'a str, value: &Expr) -> bool {
        let Expr::If(choice) = value else {
            return false;
        };
        let captured_value = match (&*choice.body, &*choice.orelse) {
            (body, Expr::NoneLiteral(_)) if !body.is_none_literal_expr() => {
                self.ty(&choice.test) == Ty::CaptureFlag
            }
            _ => false,
        };
        if captured_value {
            self.invalidate();
            self.current().capture_only.insert(name);
        }
        captured_value
    }

    /// Whether `name is None` (or, `negated`, the failure of `name is not None`) tests a name
    /// that holds a value only while capturing: the test is false while capturing.
    pub fn tests_capture_only_none(&self, test: &Expr, negated: bool) -> bool {
        let Some((name, is_none)) = super::none_comparison(test) else {
            return false;
        };
        is_none != negated
            && self.scopes.last().is_some_and(|scope| {
                !scope.capture_only.is_empty() && scope.capture_only.contains(name)
            })
    }
}

#[cfg(test)]
mod tests {
    use crate::{check, ModuleInfo, Settings};

    fn codes(source: &str) -> Vec<String> {
        check(source, "m.py", &ModuleInfo::default(), &Settings::default())
            .into_iter()
            .map(|d| format!("{}:{}", d.code, d.span.start.line))
            .collect()
    }

    #[test]
    fn helpers_and_flags_guard_like_the_predicates_they_wrap() {
        let source = "\
import torch

def is_capturing():
    try:
        return torch.cuda.is_current_stream_capturing()
    except Exception:
        return False

def is_tracing(t=None):
    tracing = torch.compiler.is_compiling() or is_capturing()
    if t is not None:
        tracing |= isinstance(t, list)
    return tracing

def step(x: torch.Tensor, m: torch.Tensor):
    if not is_tracing(x) and (x == 0).all():
        return x
    flag = torch.jit.is_tracing() or is_capturing()
    if not flag and torch.all(m):
        return m
    return x
";
        assert_eq!(codes(source), Vec::<String>::new());
    }

    #[test]
    fn a_helper_that_can_return_anything_else_is_no_guard() {
        let source = "\
import torch

def maybe(x):
    if x:
        return torch.cuda.is_current_stream_capturing()
    return x.any()

def step(x: torch.Tensor):
    if not maybe(1) and (x == 0).all():
        return x
    return x
";
        assert_eq!(codes(source), vec!["GR104:9".to_string()]);
    }
}
