//! Encoders: modules a serving engine runs per request, outside its captured decoder step. A
//! vision or audio tower, a diffusion pipeline's text encoder or VAE, is run eagerly when a
//! request brings new media or a new prompt (vLLM and SGLang capture their language model's
//! decode; the encoder CUDA graphs some of them offer are explicit captures, followed as such).
//! Where the project's calls of an encoder cannot be followed (`text_encoder(**kwargs)` on a
//! component the loader built), its `forward` is no captured entry of its own: it runs on the
//! host path, like an encoder whose callers are all uncaptured.

use super::index::{ClassId, NodeId, ProjectIndex};
use crate::util::camel_words;

/// Whether a function is a method of an encoder.
pub(super) fn is_encoder_method(index: &ProjectIndex, node: NodeId) -> bool {
    index
        .method_class(node)
        .is_some_and(|class| is_encoder(index, class))
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
    by_name
        || module.is_some_and(|module| {
            module
                .split('.')
                .any(|part| matches!(part, "encoders" | "vaes"))
        })
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
