//! Facts the index derives once its tables and the hierarchy the class statements name stand:
//! bases that are values (`class Builder(base):` in a function, `base` a class object), and
//! what the project puts into instances of container classes. Both are evaluated with the
//! typed model itself, so they come last.

use super::index::{ClassId, ProjectIndex};
use rayon::prelude::*;

impl ProjectIndex<'_> {
    /// What project code puts into instances of container classes, evaluated on the finished
    /// hierarchy.
    pub(super) fn add_container_elements(&mut self) {
        let index = &*self;
        let pairs: Vec<(ClassId, ClassId)> = self
            .modules()
            .par_iter()
            .enumerate()
            .flat_map_iter(|(module, summary)| {
                summary
                    .container_appends
                    .iter()
                    .flat_map(move |(receiver, element)| {
                        let Some(element) = index.class_of(module, element) else {
                            return Vec::new();
                        };
                        let container = index.eval_path(module, receiver);
                        if container.elements || container.class_object {
                            return Vec::new();
                        }
                        container
                            .classes
                            .into_iter()
                            .map(|class| (class, element))
                            .collect()
                    })
            })
            .collect();
        for (container, element) in pairs {
            let elements = self.container_elements.entry(container).or_default();
            if !elements.contains(&element) {
                elements.push(element);
            }
        }
    }

    /// Bases that are values: evaluated on the hierarchy the class statements name, then added
    /// to it. The memos filled on the way are dropped.
    pub(super) fn add_typed_bases(&mut self) {
        let index = &*self;
        let edges: Vec<(ClassId, ClassId)> = self
            .modules()
            .par_iter()
            .enumerate()
            .flat_map_iter(|(module, summary)| {
                summary
                    .classes
                    .iter()
                    .enumerate()
                    .filter(|(_, class)| !class.typed_bases.is_empty())
                    .flat_map(move |(class, summary)| {
                        summary
                            .typed_bases
                            .iter()
                            .flat_map(move |path| {
                                let value = index.eval_path(module, path);
                                if value.class_object {
                                    value.classes
                                } else {
                                    Vec::new()
                                }
                            })
                            .filter(move |&base| base != (module, class))
                            .map(move |base| (base, (module, class)))
                    })
            })
            .collect();
        if edges.is_empty() {
            return;
        }
        for (base, sub) in edges {
            self.subclasses.entry(base).or_default().push(sub);
            self.typed_bases.entry(sub).or_default().push(base);
        }
        self.clear_memos();
    }

    /// The bases a class takes from values (see [`ClassSummary::typed_bases`]).
    pub(super) fn typed_bases_of(&self, module: usize, class: &str) -> &[ClassId] {
        self.class_named(module, class)
            .and_then(|class| self.typed_bases.get(&class))
            .map_or(&[], Vec::as_slice)
    }
}
