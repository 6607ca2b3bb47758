//! What functions return: the types of their returns (joined over every `return`, tuple
//! elements by position) and the classes and functions they hand back, for the index.

use super::SummaryBuilder;
use crate::semantic::{SemanticModel, Ty};
use crate::summary::{PathStep, TypePath};
use ruff_python_ast::Expr;

impl SummaryBuilder<'_> {
    /// `return value`: what the function returns.
    pub(crate) fn returned(&mut self, model: &SemanticModel, value: Option<&Expr>) {
        if !self.returns_only {
            self.returned_values(model, value);
        }
        let elements: Option<Vec<Ty>> = match value {
            Some(Expr::Tuple(tuple)) if !tuple.elts.iter().any(Expr::is_starred_expr) => {
                Some(tuple.elts.iter().map(|element| model.ty(element)).collect())
            }
            _ => None,
        };
        if let Some(slot) = self.tuple_returns.last_mut() {
            *slot = Some(match (slot.take(), elements) {
                (None, elements) => elements,
                (Some(Some(previous)), Some(elements)) if previous.len() == elements.len() => Some(
                    previous
                        .iter()
                        .zip(elements)
                        .map(|(a, b)| a.join(b))
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
            Some(value) => self.type_path(model, value).into_iter().collect(),
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
}
