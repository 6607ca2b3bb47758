//! The models a project's own generation loop drives. A library whose decode loop lives in a
//! mixin that its generative models inherit (transformers' `GenerationMixin`, whose `_sample`
//! runs `self(...)` until the sequences finish) captures only those models' decode step. A
//! model outside that family is never decoded by it. In a module that also defines a model the
//! loop decodes (a sequence classifier beside a causal LM, or a text model an `AutoModel`
//! factory builds, which the index cannot see held) it may be that model's part: it runs
//! eagerly, once per call, like an encoder. In a module of its own (a detector, a video
//! tracker, an embedding model, a forecaster), it and the modules it runs are on neither the
//! captured path nor the per-step path of any generation: their forwards are no entries
//! (`--scope all` still reports what they run), unless a class of a module with a decoded model
//! holds them, directly or through the parts it holds. Encoders stay per-request entries: a
//! multimodal model often builds its vision tower through a factory the index does not resolve.
//! Within the decoded models' modules, a module another class holds stays part of whichever
//! model runs it. A sibling head is not such a part: a model class there named for a task
//! (`<Family>For<Task>`), that the loop does not decode, that no class holds, and that holds
//! what a decoded model holds (a sequence classifier wrapping the same encoder-decoder a
//! conditional-generation model wraps) is a task of its own that `generate()` never runs; it,
//! and the parts only it holds, are no entries either. (A model named otherwise may be built
//! as a part through a factory the index does not resolve: a vision model, a text model.)
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

/// The classes a generation mixin's loop drives.
pub(super) struct Generated {
    /// Decoded in a captured step: the mixins (classes that are no modules, with a method
    /// running the model until the sequences finish, inherited by module classes) and every
    /// class deriving from one that can be compiled whole.
    captured: FxHashSet<ClassId>,
    /// The modules that define a decoded model.
    modules: FxHashSet<usize>,
    /// The classes the classes of those modules hold, and what those hold in turn (the sibling
    /// heads' holdings aside).
    parts: FxHashSet<ClassId>,
    /// The sibling heads in those modules, and the classes only they hold.
    heads: FxHashSet<ClassId>,
}

impl Generated {
    /// Whether a method is a model's that the loop does not capture, and that no other class
    /// holds as a part: one it decodes eagerly, or one it never decodes.
    pub(super) fn uncaptured(
        &self,
        index: &ProjectIndex,
        held: &FxHashSet<ClassId>,
        node: NodeId,
    ) -> bool {
        index
            .method_class(node)
            .is_some_and(|class| !self.captured.contains(&class) && !held.contains(&class))
    }
}

/// Whether a method is a model's that a generation loop never decodes: its module defines no
/// model the loop decodes, and no class of such a module holds it (directly, or through the
/// parts it holds). A class beside a decoded model may be its part, held through a factory the
/// index does not resolve (`AutoModel.from_config(...)`). Never, in a project without such a
/// loop.
pub(super) fn never_decoded(
    generated: Option<&Generated>,
    index: &ProjectIndex,
    node: NodeId,
) -> bool {
    let Some(generated) = generated else {
        return false;
    };
    index.method_class(node).is_some_and(|class| {
        generated.heads.contains(&class)
            || !generated.modules.contains(&class.0) && !generated.parts.contains(&class)
    })
}

/// The classes a generation mixin's loop drives (see [`Generated`]); `None` when the project
/// has no such mixin.
pub(super) fn generated_classes(index: &ProjectIndex) -> Option<Generated> {
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
    let modules: FxHashSet<usize> = out.iter().map(|class| class.0).collect();
    let classes_of =
        |module: usize| (0..index.modules()[module].classes.len()).map(move |c| (module, c));
    // Sibling heads: model classes of those modules the loop does not decode and nothing there
    // holds, holding what a decoded model holds.
    let held_anywhere = parts_held(index, modules.iter().flat_map(|&m| classes_of(m)));
    let decoded_parts = parts_held(index, out.iter().copied());
    let heads: Vec<ClassId> = modules
        .iter()
        .flat_map(|&m| classes_of(m))
        .filter(|class| !out.contains(class) && !held_anywhere.contains(class))
        .filter(|&class| {
            names_a_task_model(index.class_name(class))
                && index.is_module_class(class.0, index.class_name(class))
        })
        .filter(|&class| {
            parts_held(index, [class])
                .iter()
                .any(|part| decoded_parts.contains(part))
        })
        .collect();
    let parts = parts_held(
        index,
        modules
            .iter()
            .flat_map(|&m| classes_of(m))
            .filter(|class| !heads.contains(class)),
    );
    let mut head_parts = parts_held(index, heads.iter().copied());
    head_parts.retain(|class| !parts.contains(class));
    head_parts.extend(heads);
    // Less the models the loop decodes eagerly: they cannot be compiled whole.
    let captured = out
        .into_iter()
        .filter(|&class| {
            index.find_up(class, |c| index.class_summary(c).compiles_whole) != Some(false)
        })
        .collect();
    Some(Generated {
        captured,
        parts,
        heads: head_parts,
        modules,
    })
}

/// The classes `holders` hold in attributes, and what those hold in turn.
fn parts_held(
    index: &ProjectIndex,
    holders: impl IntoIterator<Item = ClassId>,
) -> FxHashSet<ClassId> {
    let mut parts = FxHashSet::default();
    let mut pending: Vec<ClassId> = holders.into_iter().collect();
    while let Some(holder) = pending.pop() {
        for held in index.held_by(holder) {
            if parts.insert(held) {
                pending.push(held);
            }
        }
    }
    parts
}

/// Whether a class is named for a task as a model family's task models are
/// (`BartForSequenceClassification`, `T5ForConditionalGeneration`): a whole model, never a part
/// of another.
fn names_a_task_model(name: &str) -> bool {
    name.match_indices("For")
        .any(|(at, _)| at > 0 && name[at + 3..].starts_with(|c: char| c.is_ascii_uppercase()))
}
