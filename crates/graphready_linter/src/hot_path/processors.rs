//! Modules a processor runs. A `transformers` processor or feature extractor prepares a
//! request's inputs on the host before the engine batches them (vLLM's Cohere ASR feature
//! extractor builds a `FilterbankFeatures` module and runs it on the raw audio): a module class
//! that only such classes construct is not a model the engine captures, so its `forward` is no
//! default entry point.

use super::constants::last_name;
use super::index::{ClassId, NodeId, ProjectIndex};
use crate::summary::{CallTarget, FunctionSummary, Ref};
use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHashSet};

/// The `transformers` bases of processors, feature extractors and image or video processors.
const PROCESSING_BASES: &[&str] = &[
    "ProcessorMixin",
    "FeatureExtractionMixin",
    "SequenceFeatureExtractor",
    "ImageProcessingMixin",
    "BaseImageProcessor",
    "BaseImageProcessorFast",
    "BaseVideoProcessor",
];

/// Of `classes`, those that some processor's method constructs and nothing else does.
pub(super) fn processor_built(
    index: &ProjectIndex,
    classes: &FxHashSet<ClassId>,
) -> FxHashSet<ClassId> {
    let nodes: Vec<NodeId> = index.nodes().collect();
    let mut processors: FxHashMap<ClassId, bool> = FxHashMap::default();
    let mut is_processor_method = |node: NodeId| {
        index.method_class(node).is_some_and(|owner| {
            *processors
                .entry(owner)
                .or_insert_with(|| is_processor(index, owner))
        })
    };
    // What the processors' methods construct.
    let by_processors: Vec<NodeId> = nodes
        .iter()
        .copied()
        .filter(|&node| is_processor_method(node))
        .collect();
    let mut built: FxHashSet<ClassId> = by_processors
        .iter()
        .flat_map(|&node| constructed(index, node, classes, None, true))
        .collect();
    if built.is_empty() {
        return built;
    }
    let processor_nodes: FxHashSet<NodeId> = by_processors.into_iter().collect();
    // Less what anything else constructs.
    less_built_elsewhere(index, nodes, &mut built, &processor_nodes, true);
    built
}

/// Removes from `classes` those that a function of `nodes` outside `skip` constructs (with
/// `platform`, also in code for devices without CUDA graphs; see [`constructed`]).
pub(super) fn less_built_elsewhere(
    index: &ProjectIndex,
    nodes: Vec<NodeId>,
    classes: &mut FxHashSet<ClassId>,
    skip: &FxHashSet<NodeId>,
    platform: bool,
) {
    let names: FxHashSet<&str> = classes
        .iter()
        .map(|&class| last_name(&index.class_summary(class).name))
        .collect();
    let elsewhere: Vec<ClassId> = nodes
        .into_par_iter()
        .filter(|node| !skip.contains(node))
        .flat_map_iter(|node| constructed(index, node, classes, Some(&names), platform))
        .collect();
    for class in elsewhere {
        classes.remove(&class);
    }
}

/// The classes of `classes` a function constructs (in code that runs every step or not; with
/// `platform`, also in code for devices without CUDA graphs), by calls whose name is one of
/// `names` when given.
fn constructed(
    index: &ProjectIndex,
    node: NodeId,
    classes: &FxHashSet<ClassId>,
    names: Option<&FxHashSet<&str>>,
    platform: bool,
) -> Vec<ClassId> {
    let function: &FunctionSummary = index.function(node);
    function
        .calls
        .iter()
        .chain(&function.captured_calls)
        .filter_map(|site| match &site.target {
            CallTarget::Function(reference) => Some(reference),
            _ => None,
        })
        .chain(&function.guarded_constructions)
        .chain(
            platform
                .then_some(&function.platform_constructions)
                .into_iter()
                .flatten(),
        )
        .filter(|reference| {
            let (Ref::Local(name) | Ref::Qualified(name)) = reference;
            names.is_none_or(|names| names.contains(last_name(name)))
        })
        .filter_map(|reference| index.class_of(node.module, reference))
        .filter(|class| classes.contains(class))
        .collect()
}

/// Whether a class derives from a processing base of `transformers`, or is an engine's own
/// input processor: a plain class (no `nn.Module`) named `...Processor` that is no logits
/// processor (`Step3VisionProcessor` composing its image transforms).
fn is_processor(index: &ProjectIndex, class: ClassId) -> bool {
    let qualname = &index.class_summary(class).name;
    let name = last_name(qualname);
    if name.ends_with("Processor")
        && !name.contains("Logits")
        && !index.derives_from_module(class.0, qualname)
    {
        return true;
    }
    index.lineage(class, 16).into_iter().any(|class| {
        index
            .class_summary(class)
            .bases
            .iter()
            .any(|base| match base {
                Ref::Local(name) | Ref::Qualified(name) => {
                    PROCESSING_BASES.contains(&last_name(name))
                }
            })
    })
}

/// Whether a class is a processor ([`is_processor`]) of a request's media: a `transformers`
/// processing class, or one whose name or a base's names images, video, audio or multimodal
/// inputs (`MiMoV2Processor` extending `BaseMultimodalProcessor`), unlike a scheduler's
/// `BatchResultProcessor`, which works on a step's device outputs.
pub(super) fn is_media_processor(index: &ProjectIndex, class: ClassId) -> bool {
    const MEDIA: &[&str] = &[
        "Multimodal",
        "MultiModal",
        "Image",
        "Video",
        "Audio",
        "Vision",
    ];
    is_processor(index, class)
        && index.lineage(class, 16).into_iter().any(|class| {
            let summary = index.class_summary(class);
            let names_media = |name: &str| MEDIA.iter().any(|word| name.contains(word));
            names_media(last_name(&summary.name))
                || summary.bases.iter().any(|base| match base {
                    Ref::Local(name) | Ref::Qualified(name) => {
                        names_media(last_name(name)) || PROCESSING_BASES.contains(&last_name(name))
                    }
                })
        })
}
