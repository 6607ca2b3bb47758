//! Which functions the project invokes through a method name (`self.mlp(x)` and
//! `layer.forward(x)` are calls of `forward`), and which module forwards it invokes only in
//! guarded code.

use super::index::{NodeId, ProjectIndex};
use crate::summary::{CallTarget, FunctionSummary};
use rayon::prelude::*;
use rustc_hash::FxHashSet;

/// The call targets of one function that a query resolves.
type Targets<'s> = Box<dyn Iterator<Item = &'s CallTarget> + 's>;

impl<'s> ProjectIndex<'s> {
    /// The functions that some call in the project may run through a call of `method`
    /// (`self.mlp(x)` and `layer.forward(x)` are calls of `forward`), split by the callers that
    /// make the call: `[calls made by functions `side` says false of, by those it says true of]`.
    /// Also `self.encoder.adaptor(x)` and `self.vit(x)`, a call of an attribute that holds a
    /// module, which runs the module's `forward`. One pass over the project serves both sides.
    pub fn called_through(
        &self,
        method: &str,
        side: impl Fn(&FunctionSummary) -> bool + Sync,
    ) -> [FxHashSet<NodeId>; 2] {
        // Only names some class holds instances under are worth resolving.
        let holding: FxHashSet<&str> = self
            .modules()
            .iter()
            .flat_map(|summary| &summary.classes)
            .flat_map(|class| {
                class
                    .attributes
                    .keys()
                    .chain(class.fields.iter().map(|(name, _)| name))
            })
            .map(String::as_str)
            .collect();
        let holding = &holding;
        let side = &side;
        self.modules()
            .par_iter()
            .enumerate()
            .fold(
                || [FxHashSet::default(), FxHashSet::default()],
                |mut sets, (module, summary)| {
                    for function in &summary.functions {
                        let set = &mut sets[usize::from(side(function))];
                        for site in &function.calls {
                            let target = &site.target;
                            if target.method_name() == method {
                                set.extend(self.resolve(module, target));
                            } else if matches!(target, CallTarget::InstanceMethod { method: name, .. }
                                | CallTarget::SelfMethod { method: name, .. }
                                if holding.contains(name.as_str()))
                            {
                                set.extend(self.resolve(module, target).into_iter().filter(
                                    |node| {
                                        self.function(*node).qualname.rsplit('.').next()
                                            == Some(method)
                                    },
                                ));
                            }
                        }
                    }
                    sets
                },
            )
            .reduce(
                || [FxHashSet::default(), FxHashSet::default()],
                |mut a, b| {
                    for (into, from) in a.iter_mut().zip(b) {
                        into.extend(from);
                    }
                    a
                },
            )
    }

    /// The module forwards invoked in guarded code (see
    /// [`crate::summary::FunctionSummary::guarded_invocations`]).
    pub fn invoked_guarded(&self) -> FxHashSet<NodeId> {
        self.resolve_all(|function| Box::new(function.guarded_invocations.iter()))
    }

    /// What the targets `of` each function of the project picks out resolve to.
    fn resolve_all<'q>(
        &self,
        of: impl Fn(&'s FunctionSummary) -> Targets<'q> + Sync,
    ) -> FxHashSet<NodeId>
    where
        's: 'q,
    {
        self.modules()
            .par_iter()
            .enumerate()
            .flat_map_iter(|(module, summary)| {
                summary
                    .functions
                    .iter()
                    .flat_map(&of)
                    .flat_map(move |target| self.resolve(module, target))
            })
            .collect()
    }
}
