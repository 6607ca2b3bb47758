//! Which functions the project invokes through a method name (`self.mlp(x)` and
//! `layer.forward(x)` are calls of `forward`), and which module forwards it invokes only in
//! guarded code.

use super::index::{NodeId, ProjectIndex};
use rayon::prelude::*;
use rustc_hash::FxHashSet;

impl ProjectIndex<'_> {
    /// The functions that some call in the project may run through a call of `method`
    /// (`self.mlp(x)` and `layer.forward(x)` are calls of `forward`).
    pub fn called_through(&self, method: &str) -> FxHashSet<NodeId> {
        self.modules()
            .par_iter()
            .enumerate()
            .flat_map_iter(|(module, summary)| {
                summary
                    .functions
                    .iter()
                    .flat_map(|function| &function.calls)
                    .filter(|site| site.target.method_name() == method)
                    .flat_map(move |site| self.resolve(module, &site.target))
            })
            .collect()
    }

    /// The module forwards invoked in guarded code (see
    /// [`crate::summary::FunctionSummary::guarded_invocations`]).
    pub fn invoked_guarded(&self) -> FxHashSet<NodeId> {
        self.modules()
            .par_iter()
            .enumerate()
            .flat_map_iter(|(module, summary)| {
                summary
                    .functions
                    .iter()
                    .flat_map(|function| &function.guarded_invocations)
                    .flat_map(move |target| self.resolve(module, target))
            })
            .collect()
    }
}
