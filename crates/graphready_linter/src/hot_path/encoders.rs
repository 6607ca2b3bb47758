//! Encoders: modules a serving engine runs per request, outside its captured decoder step. A
//! vision or audio tower, a diffusion pipeline's text encoder or VAE, is run eagerly when a
//! request brings new media or a new prompt (vLLM and SGLang capture their language model's
//! decode; the encoder CUDA graphs some of them offer are explicit captures, followed as such).
//! Where the project's calls of an encoder cannot be followed (`text_encoder(**kwargs)` on a
//! component the loader built), its `forward` is no captured entry of its own: it runs on the
//! host path, like an encoder whose callers are all uncaptured. A class in a package of such
//! components that no model outside them holds (see [`is_standalone_component`]) is no entry
//! at all: its loader builds it on its own and the pipeline runs it once per request.

use super::index::{ClassId, NodeId, ProjectIndex};
use crate::util::camel_words;

/// Whether a function is a method of an encoder.
pub(super) fn is_encoder_method(index: &ProjectIndex, node: NodeId) -> bool {
    index
        .method_class(node)
        .is_some_and(|class| is_encoder(index, class))
}

/// The classes whose instances a class outside the packages of encoder components holds in an
/// attribute (`self.visual = VisionTransformer(...)`, the members of an `nn.ModuleList`): the
/// parts of a model an engine runs, rather than of a component its loader builds. A class named
/// for training (a loss holding its Hungarian matcher) holds no part of an inference model.
pub(super) fn held_classes(index: &ProjectIndex) -> rustc_hash::FxHashSet<ClassId> {
    let mut held = rustc_hash::FxHashSet::default();
    for (module, summary) in index.modules().iter().enumerate() {
        if summary.module.as_deref().is_some_and(in_component_package) {
            continue;
        }
        for (position, class) in summary.classes.iter().enumerate() {
            if !super::names::is_training_name(&class.name) {
                held.extend(index.held_by((module, position)));
            }
        }
    }
    held
}

/// Whether a class is an encoder by its name or its module (see [`names_an_encoder`]).
fn is_encoder(index: &ProjectIndex, class: ClassId) -> bool {
    names_an_encoder(
        index.class_name(class),
        index.modules()[class.0].module.as_deref(),
    )
}

/// Whether a class name (qualified inside its module) or its module's dotted name says it is an
/// encoder: a CamelCase word of the class name is `Encoder`, `Vision`, `Visual`, `Tower`,
/// `Autoencoder` or `Vae` (`SiglipVisionModel`, `Qwen3VLTextEncoder`, `AutoencoderKLWan`),
/// without `Decoder` (an encoder-decoder model holds the decoder the engine captures); or a
/// package of the module is `encoders` or `vaes` (`models.encoders.qwen2_5vl`, and the VAE
/// decoders in `models.vaes`, which run once per request as well).
fn names_an_encoder(class: &str, module: Option<&str>) -> bool {
    let words = camel_words(class.rsplit('.').next().unwrap_or(class));
    let says = |wanted: &[&str]| {
        words
            .iter()
            .any(|word| wanted.contains(&word.to_ascii_lowercase().as_str()))
    };
    let by_name = !says(&["decoder"])
        && says(&["encoder", "vision", "visual", "tower", "autoencoder", "vae"]);
    by_name || module.is_some_and(in_component_package)
}

/// Whether a module sits in a package of a pipeline's encoder components (`encoders`, `vaes`):
/// models a loader builds on their own, each run once per request.
fn in_component_package(module: &str) -> bool {
    module
        .split('.')
        .any(|part| matches!(part, "encoders" | "vaes"))
}

/// Whether a method belongs to a component a pipeline's loader builds on its own: a class in a
/// package of encoder components (see [`in_component_package`]) that no class outside those
/// packages holds in an attribute. Its `forward`, whether uncalled or called only by other such
/// components (a text encoder's inner model), runs once per request: neither a captured entry
/// nor a per-step one.
pub(super) fn is_standalone_component(
    index: &ProjectIndex,
    held: &rustc_hash::FxHashSet<ClassId>,
    node: NodeId,
) -> bool {
    index
        .module(node.module)
        .module
        .as_deref()
        .is_some_and(in_component_package)
        && index
            .method_class(node)
            .is_some_and(|class| !held.contains(&class))
}

#[cfg(test)]
mod tests {
    use super::names_an_encoder;

    #[test]
    fn encoders_by_class_name_words() {
        for name in [
            "SiglipVisionModel",
            "Qwen3VLTextEncoder",
            "AutoencoderKLWan",
            "Qwen2_5_VisionTransformer",
            "Outer.AudioTower",
        ] {
            assert!(names_an_encoder(name, Some("pkg.models.llm")), "{name}");
        }
        for name in [
            "Qwen2ForCausalLM",
            "VisionEncoderDecoderModel",
            "VisionaryModel",
            "WanTransformer3DModel",
            "Qwen2_5_VLForConditionalGeneration",
        ] {
            assert!(!names_an_encoder(name, Some("pkg.models.llm")), "{name}");
        }
    }

    #[test]
    fn encoders_by_package() {
        let model = "Qwen2_5_VLForConditionalGeneration";
        assert!(names_an_encoder(
            model,
            Some("runtime.models.encoders.qwen2_5vl")
        ));
        // A VAE's decoder runs once per request too.
        assert!(names_an_encoder(
            "WanDecoder",
            Some("runtime.models.vaes.wan")
        ));
        assert!(!names_an_encoder(
            model,
            Some("runtime.models.encoders_extra")
        ));
        assert!(!names_an_encoder(model, None));
    }
}
