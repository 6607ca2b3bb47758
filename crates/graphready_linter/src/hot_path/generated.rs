//! The models a project's own generation loop drives. A library whose decode loop lives in a
//! mixin that its generative models inherit (transformers' `GenerationMixin`, whose `_sample`
//! runs `self(...)` until the sequences finish) captures only those models' decode step: a
//! model outside that family (an encoder-only classifier, a detector, a video tracker, a
//! forecaster) is never decoded by it, and runs eagerly, once per call. Its forward is a
//! per-call entry outside the graph, as an encoder's is; what it runs is reported as such.
//!
//! A model whose class declares it cannot be compiled whole (transformers'
//! `_can_compile_fullgraph = False`, the default its `PreTrainedModel` declares and each
//! compilable model overrides) is decoded eagerly too: `generate()` compiles, and so captures,
//! only the models that can be. The nearest declaration up the class's bases decides.
//!
//! Engines that run their models from a runner (vLLM, SGLang) have no such mixin: every
//! outermost module forward stays a captured entry there.

use super::index::{ClassId, NodeId, ProjectIndex};
use crate::summary::ModelRun;
use rustc_hash::FxHashSet;

/// The classes a generation mixin's loop drives: the mixins (classes that are no modules, with
/// a method running the model until the sequences finish, inherited by module classes) and
/// every class deriving from one. `None` when the project has no such mixin.
pub(super) fn generated_classes(index: &ProjectIndex) -> Option<FxHashSet<ClassId>> {
    let mut out = FxHashSet::default();
    for (module, summary) in index.modules().iter().enumerate() {
        for (position, class) in summary.classes.iter().enumerate() {
            let id = (module, position);
            let loops = class.methods.iter().any(|method| {
                index
                    .own_method(module, &class.name, method)
                    .is_some_and(|function| {
                        let function = index.function(NodeId { module, function });
                        function.runs_model_until_done
                            || function
                                .calls
                                .iter()
                                .any(|site| site.model_run == Some(ModelRun::UntilDone))
                    })
            });
            if !loops || index.is_module_class(module, &class.name) {
                continue;
            }
            let subclasses = index.subclasses_of(id);
            let drives_models = subclasses
                .iter()
                .any(|&sub| index.is_module_class(sub.0, index.class_name(sub)));
            if drives_models {
                out.insert(id);
                out.extend(subclasses.iter().copied());
            }
        }
    }
    if out.is_empty() {
        return None;
    }
    // Less the models the loop decodes eagerly: they cannot be compiled whole.
    let eager: Vec<ClassId> = out
        .iter()
        .copied()
        .filter(|&class| {
            index.find_up(class, |c| index.class_summary(c).compiles_whole) == Some(false)
        })
        .collect();
    for class in eager {
        out.remove(&class);
    }
    Some(out)
}
