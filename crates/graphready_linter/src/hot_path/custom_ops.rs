//! Custom operators on the index side: `torch.ops.<namespace>.<name>(...)` (or its
//! `.default` overload) runs the project function registered under `name` (see
//! `summary::builder::custom_ops`). The namespace is not checked: a project registers its
//! operators in its own.

use super::index::{Definition, ProjectIndex};
use rustc_hash::FxHashMap;

/// The project's custom operators: operator name to the registered function.
pub(super) type CustomOps = FxHashMap<String, Definition>;

impl ProjectIndex<'_> {
    /// The function a `torch.ops.` qualified name runs, when the project registers it.
    pub(super) fn custom_op(&self, qualified: &str) -> Option<Definition> {
        let name = qualified.strip_prefix("torch.ops.")?.split('.').nth(1)?;
        let table = self.custom_ops.get_or_init(|| {
            let mut table = CustomOps::default();
            for (module, summary) in self.modules().iter().enumerate() {
                for (name, reference) in &summary.custom_ops {
                    if table.contains_key(name) {
                        continue;
                    }
                    if let Some(definition @ Definition::Function(_)) =
                        self.lookup(module, reference)
                    {
                        table.insert(name.clone(), definition);
                    }
                }
            }
            table
        });
        table.get(name).copied()
    }
}
