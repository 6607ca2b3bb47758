//! The facts other modules contribute (see [`crate::semantic::ProjectFacts`]), as the rules
//! consume them: helpers that return a capture flag, and helpers that return an uninitialised
//! buffer.

use crate::checker::Checker;
use crate::registry::Rule;
use crate::semantic::{ProjectFacts, Ty};
use crate::settings::Settings;
use rustc_hash::{FxHashMap, FxHashSet};

/// The codes a module's check reports, with other modules' facts known.
fn codes(source: &str, known: ProjectFacts) -> Vec<&'static str> {
    let settings = Settings::default();
    let parsed = ruff_python_parser::parse_module(source).expect("a module");
    let checker = Checker::new(
        &settings,
        settings.rules,
        source,
        Some("pkg.m"),
        false,
        known,
    );
    let analysis = checker.run(parsed.syntax());
    analysis
        .diagnostics
        .iter()
        .map(|raw| raw.rule.code())
        .collect()
}

#[test]
fn an_imported_capture_flag_helper_guards() {
    let source = "\
import torch
from pkg.utils import is_tracing

def step(x: torch.Tensor):
    if not is_tracing(x) and (x == 0).all():
        return x
    return x
";
    assert_eq!(codes(source, ProjectFacts::default()), vec!["GR104"]);
    let external: FxHashMap<String, Ty> =
        std::iter::once(("pkg.utils.is_tracing".to_string(), Ty::CaptureFlag)).collect();
    let known = ProjectFacts {
        returns: Some(&external),
        ..ProjectFacts::default()
    };
    assert!(codes(source, known).is_empty());
}

#[test]
fn an_imported_allocation_helper_is_followed_into_the_caller() {
    let source = "\
import torch
from pkg.quant import create_output_scale

def quant(x, masked_m):
    out_scale = create_output_scale(x.shape, x.device, 128)
    silu_and_mul_masked_post_quant(x, out_scale, masked_m)
    return out_scale
";
    assert!(codes(source, ProjectFacts::default()).is_empty());
    let helpers: FxHashSet<String> =
        std::iter::once("pkg.quant.create_output_scale".to_string()).collect();
    let known = ProjectFacts {
        uninitialized_buffers: Some(&helpers),
        ..ProjectFacts::default()
    };
    assert_eq!(
        codes(source, known),
        vec![Rule::UninitializedPartialWrite.code()]
    );
}

#[test]
fn an_imported_module_class_makes_its_calls_tensors() {
    // Real-world shape (vLLM's Chameleon): the logits come from a project module imported from
    // another file, then a host list of token ids indexes them.
    let source = "\
import torch
from pkg.layers import LogitsProcessor

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.logits_processor = LogitsProcessor()
        self.image_tokens = sorted([3, 1, 2])

    def compute_logits(self, hidden):
        logits = self.logits_processor(hidden)
        logits[:, self.image_tokens] = 0.0
        return logits
";
    assert!(codes(source, ProjectFacts::default()).is_empty());
    let modules: FxHashSet<String> =
        std::iter::once("pkg.layers.LogitsProcessor".to_string()).collect();
    let known = ProjectFacts {
        module_classes: Some(&modules),
        ..ProjectFacts::default()
    };
    assert_eq!(
        codes(source, known),
        vec![Rule::HostIndexOnDeviceTensor.code()]
    );
}
