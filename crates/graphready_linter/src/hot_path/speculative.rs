//! Speculative decoding, which engines ship off by default. Where code runs on the main path and
//! on a speculative one alike (attention metadata that both the runner and a drafter build), a
//! chain through the drafter tells a reader that the hazard needs speculative decoding when it
//! does not. The searches therefore start from the entries outside speculative code first and
//! take the speculative ones only for what those leave unreached: reach is the same, the chains
//! show the default path where there is one.

use super::index::{NodeId, ProjectIndex};
use super::Entry;
use crate::util::camel_words;

/// Whether a function belongs to speculative decoding by its module (a `spec_decode` or
/// `speculative` package, an `eagle`, `medusa`, `mtp` or `draft` module) or by its name: a
/// CamelCase word of its class (`Draft`, `Drafter`, `Proposer`, `Eagle`, `Eagle3`, `Medusa`,
/// `Mtp`, `MTP`, `Predictor` of `MultiTokenPredictor`, `Assisted` or `Assistant` of a
/// library's assisted generation) or a word of the function's own name (`draft`, `propose`,
/// `drafter`, `speculative`, `assisted`: transformers' `_assisted_decoding`).
pub(super) fn is_speculative(index: &ProjectIndex, node: NodeId) -> bool {
    let module = index.module(node.module).module.as_deref().unwrap_or("");
    let by_module = module.split('.').any(|part| {
        matches!(part, "spec_decode" | "speculative")
            || part
                .split('_')
                .any(|word| matches!(word, "eagle" | "eagle3" | "medusa" | "mtp" | "draft"))
    });
    if by_module {
        return true;
    }
    let qualname = &index.function(node).qualname;
    let mut parts = qualname.rsplit('.');
    let function = parts.next().unwrap_or(qualname);
    let by_function = function.split('_').any(|word| {
        matches!(
            word,
            "draft" | "drafter" | "propose" | "proposer" | "speculative" | "assisted"
        )
    });
    by_function
        || parts.any(|class| {
            camel_words(class).iter().any(|word| {
                matches!(
                    word.to_ascii_lowercase().as_str(),
                    "draft"
                        | "drafter"
                        | "proposer"
                        | "eagle"
                        | "eagle3"
                        | "medusa"
                        | "mtp"
                        | "predictor"
                        | "assisted"
                        | "assistant"
                )
            })
        })
}

/// Splits entries into those outside speculative code and the speculative ones, each in its
/// order.
pub(super) fn partition(index: &ProjectIndex, entries: Vec<Entry>) -> (Vec<Entry>, Vec<Entry>) {
    entries
        .into_iter()
        .partition(|entry| !is_speculative(index, entry.node))
}
