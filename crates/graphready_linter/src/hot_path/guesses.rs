//! Calls resolved by a guess: a method called on a receiver whose class nothing in the project
//! says (the one class hierarchy that defines a method of that name, or every module class when
//! the receiver is some `nn.Module`). The host path follows them: a runner holds whichever model
//! was loaded and runs its methods. The captured search does not: inside a model's forward the
//! receiver is one particular submodule (a language model a registry builds), and a guess by
//! name would call every other model's method captured. A private method one class defines is
//! no guess: nothing else can be what the call runs.

use super::index::{Definition, NodeId, ProjectIndex, MAX_DEPTH};
use crate::summary::CallTarget;
use rustc_hash::FxHashSet;

impl ProjectIndex<'_> {
    /// Whether a call site's targets are a guess by name.
    fn guessed(&self, module: usize, target: &CallTarget) -> bool {
        match target {
            CallTarget::Method { receiver, method } => {
                let value = self.eval_path(module, receiver);
                !value.elements && value.classes.is_empty() && !self.sole_private(method)
            }
            // `x = make(...)` then `x.method()`: an instance of what the factory returns.
            CallTarget::InstanceMethod { class, .. } => matches!(
                self.lookup(module, class),
                Some(Definition::Function(factory))
                    if self.return_type(factory, MAX_DEPTH).classes.is_empty()
            ),
            _ => false,
        }
    }

    /// Whether `method` is a private name (`_forward_impl`, not a dunder) that one class of the
    /// project defines: no other class, and no library's object (whose private methods its
    /// callers do not call), can be what a call of it on an unknown receiver runs, so the call
    /// is no guess (`get_layer_from_name(name).runner._forward_impl(...)` inside a custom
    /// operator).
    fn sole_private(&self, method: &str) -> bool {
        method.starts_with('_') && !method.starts_with("__") && self.definers_of(method).len() == 1
    }

    /// The functions a function's calls run for certain: [`ProjectIndex::callees`] less those
    /// only a guess by name reaches, and less those only its prefill branches and skipped
    /// fallbacks call.
    pub fn exact_callees(&self, node: NodeId) -> Vec<NodeId> {
        let callees = self.callees(node);
        let calls = &self.function(node).calls;
        let sites = self.resolved_sites(node);
        let mut guessed = FxHashSet::default();
        let mut exact = FxHashSet::default();
        for (site, targets) in calls.iter().zip(sites) {
            if targets.is_empty() {
                continue;
            }
            let set = if self.guessed(node.module, &site.target) {
                &mut guessed
            } else {
                &mut exact
            };
            set.extend(targets.iter().copied());
        }
        // Prefill branches, and fallbacks every captured call skips, run outside a decode graph
        // (see `prefill` and `given`).
        let eager = self.eager_only_callees(node);
        if guessed.is_empty() && eager.is_empty() {
            return callees;
        }
        callees
            .into_iter()
            .filter(|callee| !guessed.contains(callee) || exact.contains(callee))
            .filter(|callee| eager.binary_search(callee).is_err())
            .collect()
    }
}
