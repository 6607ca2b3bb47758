//! Class-hierarchy predicates: whether a class is a `torch.nn.Module`.

use super::index::{ClassId, Definition, ProjectIndex, MAX_DEPTH};
use crate::summary::Ref;
use rustc_hash::FxHashSet;

impl ProjectIndex<'_> {
    /// Whether a class derives from `torch.nn.Module` (or from a base outside the project, which
    /// for a class with a `forward` is almost always a module).
    pub fn is_module_class(&self, module: usize, class: &str) -> bool {
        self.is_module_in(module, class, MAX_DEPTH)
    }

    fn is_module_in(&self, module: usize, class: &str, depth: u8) -> bool {
        let Some(summary) = self.class(module, class) else {
            return false;
        };
        if summary.direct_module {
            return true;
        }
        if depth == 0 {
            return false;
        }
        summary.bases.iter().any(|base| match self.lookup(module, base) {
            Some(Definition::Class(m, c)) => {
                self.is_module_in(m, &self.modules()[m].classes[c].name, depth - 1)
            }
            Some(Definition::Function(_)) => false,
            None => !matches!(base, Ref::Qualified(q) if q == "object" || q.starts_with("typing.") || q.starts_with("abc.") || q.starts_with("enum.")),
        })
    }

    /// Whether a class derives from `torch.nn.Module` (or a `transformers` model), through
    /// project classes only.
    pub(super) fn derives_from_module(&self, module: usize, class: &str) -> bool {
        self.class_named(module, class).is_some_and(|start| {
            self.find_up(start, |current| {
                self.class_summary(current).direct_module.then_some(())
            })
            .is_some()
        })
    }

    /// The project classes a class holds in its attributes (`self.mlp = MLP(...)`, the members
    /// of an `nn.ModuleList`).
    pub(super) fn held_by(&self, holder: ClassId) -> Vec<ClassId> {
        self.class_summary(holder)
            .attributes
            .values()
            .flatten()
            .filter_map(|reference| self.class_of(holder.0, reference))
            .collect()
    }

    /// The first answer `found` gives for a class or its project bases, nearest first (a
    /// bounded walk: hierarchies with cycles or hundreds of bases end).
    pub(super) fn find_up<T>(
        &self,
        start: ClassId,
        mut found: impl FnMut(ClassId) -> Option<T>,
    ) -> Option<T> {
        let mut seen = FxHashSet::default();
        let mut pending = vec![start];
        while let Some(current) = pending.pop() {
            if !seen.insert(current) || seen.len() > 64 {
                continue;
            }
            if let Some(answer) = found(current) {
                return Some(answer);
            }
            pending.extend(self.bases_of(current));
        }
        None
    }
}
