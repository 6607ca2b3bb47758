//! What functions return: the types of their returns (joined over every `return`, tuple
//! elements by position) and the classes and functions they hand back, for the index.

use super::SummaryBuilder;
use crate::semantic::{SemanticModel, Ty};
use crate::summary::{PathStep, TypePath};
use ruff_python_ast::Expr;

impl SummaryBuilder<'_> {
    /// `return value`: what the function returns.
    pub(crate) fn returned(&mut self, model: &SemanticModel, value: Option<&Expr>) {
        // `return self._cache[key]`: the function returns what it stores there, which its
        // other returns return.
        if value.is_some_and(memo_lookup) {
            if let Some(memo) = self.memo_returns.last_mut() {
                *memo = true;
            }
            return;
        }
        if !self.returns_only {
            self.returned_values(model, value);
        }
        // A `None` in a position is the value's absence (`return False, None, 0` beside `return
        // True, counts, 1`): the position holds what the other returns put there.
        let elements: Option<Vec<Option<Ty>>> = match value {
            Some(Expr::Tuple(tuple)) if !tuple.elts.iter().any(Expr::is_starred_expr) => Some(
                tuple
                    .elts
                    .iter()
                    .map(|element| (!element.is_none_literal_expr()).then(|| model.ty(element)))
                    .collect(),
            ),
            // `result = (cos, sin, lens)` ... `return result`.
            Some(Expr::Name(name)) => self
                .tuple_locals
                .last()
                .and_then(|scope| scope.get(name.id.as_str()))
                .map(|types| types.iter().map(|ty| Some(*ty)).collect()),
            _ => None,
        };
        if let Some(slot) = self.forward_calls.last_mut() {
            let call = match value {
                Some(Expr::Call(call)) => Some(ruff_text_size::Ranged::start(call).to_u32()),
                _ => None,
            };
            // A second `return` returns another call, or something else.
            *slot = Some(if slot.is_none() { call } else { None });
        }
        if let Some(slot) = self.tuple_returns.last_mut() {
            *slot = Some(match (slot.take(), elements) {
                (None, elements) => elements,
                (Some(Some(previous)), Some(elements)) if previous.len() == elements.len() => Some(
                    previous
                        .iter()
                        .zip(elements)
                        .map(|(a, b)| match (*a, b) {
                            (Some(a), Some(b)) => Some(a.join(b)),
                            (a, b) => a.or(b),
                        })
                        .collect(),
                ),
                _ => None,
            });
        }
        let ty = value.map_or(Ty::Host, |value| model.ty(value));
        if let Some(slot) = self.return_types.last_mut() {
            *slot = Some(match *slot {
                None => ty,
                Some(previous) => previous.join(ty),
            });
        }
    }

    /// The classes and functions a `return` hands back, for the index.
    fn returned_values(&mut self, model: &SemanticModel, value: Option<&Expr>) {
        // What the returns say; the index reads them when the annotation names no project
        // class (`-> tuple[Any, Any] | None`). A tuple returns its elements, positions unknown.
        let paths: Vec<TypePath> = match value {
            Some(Expr::Tuple(tuple)) => tuple
                .elts
                .iter()
                .filter_map(|element| self.type_path(model, element))
                .map(|path| path.then(PathStep::Elements))
                .collect(),
            Some(value) => self
                .type_path(model, value)
                .or_else(|| self.class_object_path(model, value))
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        if let Some(function) = self.building.last_mut() {
            for path in paths {
                if function.return_paths.len() < 8 && !function.return_paths.contains(&path) {
                    function.return_paths.push(path);
                }
            }
        }
        if let Some(value) = value {
            let mut held = Vec::new();
            self.held_at(model, value, &mut Vec::new(), &mut held);
            if let Some(function) = self.building.last_mut() {
                for entry in held {
                    if function.returned_functions.len() < 32
                        && !function.returned_functions.contains(&entry)
                    {
                        function.returned_functions.push(entry);
                    }
                }
            }
        }
    }

    /// A function's body was visited: its summary is complete.
    pub(crate) fn exit_function(&mut self, model: &mut SemanticModel) {
        self.method_self = self.saved_method_self.pop().flatten();
        self.local_defs.pop();
        self.instances.pop();
        self.locals.pop();
        self.loop_depths.pop();
        self.while_depths.pop();
        self.prefill_depths.pop();
        self.param_conditions.pop();
        self.method_aliases.pop();
        self.function_aliases.pop();
        self.tuple_locals.pop();
        self.dict_locals.pop();
        self.globals.pop();
        // A position only ever `None` holds a host value.
        let tuple: Option<Vec<Ty>> = self
            .tuple_returns
            .pop()
            .flatten()
            .flatten()
            .map(|elements| {
                elements
                    .into_iter()
                    .map(|e| e.unwrap_or(Ty::Host))
                    .collect()
            });
        let forwards = self.forward_calls.pop().flatten().flatten();
        let host_only = self.host_only.pop().unwrap_or(false);
        // A function whose only returns are memoised lookups returns what nothing here says.
        let memo_only = self.memo_returns.pop().unwrap_or(false);
        let inferred = self.return_types.pop().flatten().unwrap_or(if memo_only {
            Ty::Unknown
        } else {
            Ty::Host
        });
        // An annotation that names a host list (of lists) says more than host values returned
        // through helpers nothing types (`-> list[list[int]]`).
        let returns = match (inferred, self.annotated_returns.pop()) {
            (
                Ty::Host | Ty::HostList | Ty::Unknown,
                Some(annotated @ (Ty::HostList | Ty::HostLists)),
            ) => annotated,
            _ => inferred,
        };
        if let Some(mut summary) = self.building.pop() {
            // A helper whose every return is a capture or compile predicate guards like one.
            summary.returns = if model.is_learned_predicate(&summary.qualname) {
                Ty::CaptureFlag
            } else {
                returns
            };
            summary.returns_uninitialized =
                model.is_learned_uninitialized_buffer(&summary.qualname);
            model.learn_return(&summary.qualname, returns);
            if host_only {
                model.learn_host_preserving(&summary.qualname);
            }
            summary.host_preserving = host_only;
            summary.forwards = forwards;
            if let Some(elements) = tuple {
                // Other modules unpacking the tuple learn the positions that say where a tensor
                // lives.
                if elements
                    .iter()
                    .any(|ty| ty.is_tensor_like() || ty.is_host_tensor() || *ty == Ty::Array)
                {
                    summary.tuple_returns = Some(elements.clone().into_boxed_slice());
                }
                model.learn_tuple_return(&summary.qualname, elements);
            }
            self.summary.functions.push(summary);
        }
    }
}

/// Whether a returned value is a lookup in a memo: a subscript of a container named for a
/// cache or a memo (`self._rope_by_thw_cache[key]`, `_MEMO[n]`).
fn memo_lookup(value: &Expr) -> bool {
    let Expr::Subscript(subscript) = value else {
        return false;
    };
    let name = match &*subscript.value {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.as_str(),
        _ => return false,
    };
    let name = name.to_ascii_lowercase();
    name.contains("cache") || name.contains("memo")
}
