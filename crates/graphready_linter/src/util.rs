//! Small syntactic helpers shared by the checker, the guards and the summary builder.

use crate::settings::Platforms;
use ruff_python_ast::Expr;

/// The last name of a callee or decorator: `no_graph` in `@x.no_graph` and `@no_graph()`.
/// Whether a function is read as an attribute: `@property`, `@cached_property`,
/// `@functools.cached_property`.
pub(crate) fn is_property(function: &ruff_python_ast::StmtFunctionDef) -> bool {
    function.decorator_list.iter().any(|decorator| {
        last_segment(&decorator.expression)
            .is_some_and(|name| matches!(name, "property" | "cached_property"))
    })
}

pub(crate) fn last_segment(expr: &Expr) -> Option<&str> {
    match expr {
        Expr::Name(name) => Some(name.id.as_str()),
        Expr::Attribute(attribute) => Some(attribute.attr.id.as_str()),
        Expr::Call(call) => last_segment(&call.func),
        _ => None,
    }
}

/// Devices without CUDA graphs, as platform tests, device types and module names call them
/// (`is_xpu()`, `x.device.type == "mps"`, `hardware_backend/npu`); each use adds its own (the
/// host `cpu`, the `meta` device, `neuron` platforms, `mlx` and `ascend` packages).
pub(crate) const NO_CUDA_GRAPH_DEVICES: [&str; 5] = ["npu", "xpu", "tpu", "hpu", "mps"];

/// Whether the words of a name (a module's dotted parts and their `_` words, or a class name's
/// CamelCase words) say it serves a device without CUDA graphs: a word is one of
/// [`NO_CUDA_GRAPH_DEVICES`] or another word [`names_other_device`] knows, or `cpu` or `amx`
/// (Intel's CPU matrix extensions) where no word says the name moves data between the host and
/// a GPU (`offload`, `offloading`, `swap`, `gpu`, `cuda`, `host`, `pinned`); or, unless ROCm is
/// a target, one that names AMD's GPUs (see [`names_rocm`]).
pub(crate) fn other_platform_words<'w>(
    words: impl Iterator<Item = &'w str> + Clone,
    platforms: Platforms,
) -> bool {
    let mut cpu = false;
    for word in words.clone() {
        let word = word.to_ascii_lowercase();
        if names_other_device(&word, platforms) {
            return true;
        }
        cpu |= matches!(word.as_str(), "cpu" | "amx");
    }
    cpu && !words.into_iter().any(|word| {
        matches!(
            word.to_ascii_lowercase().as_str(),
            "offload" | "offloading" | "swap" | "gpu" | "cuda" | "host" | "pinned"
        )
    })
}

/// Whether a class name says it serves a device without CUDA graphs: its CamelCase words do
/// (see [`other_platform_words`]), or, unless ROCm is a target, it spells `ROCm` (whose
/// CamelCase splits: `ROCmAiterMLABackend`).
pub(crate) fn other_platform_class(name: &str, platforms: Platforms) -> bool {
    other_platform_words(camel_words(name).into_iter(), platforms)
        || (!platforms.rocm && name.to_ascii_lowercase().contains("rocm"))
}

/// Whether the `_` words of a function's name name a device without CUDA graphs, the host
/// aside (`forward_xpu`, `forward_npu`, `_apply_mlx`, and `forward_hip` unless ROCm is a
/// target): a platform's implementation, which its op dispatches to only there. `cpu` does not
/// count: `copy_to_cpu` and `seq_lens_cpu` serve a GPU.
pub(crate) fn other_device_function(name: &str, platforms: Platforms) -> bool {
    name.split('_')
        .any(|word| names_other_device(&word.to_ascii_lowercase(), platforms))
}

/// Whether a lowercase word names a device (or a framework for one) without CUDA graphs, the
/// host aside: one of [`NO_CUDA_GRAPH_DEVICES`], `mlx`, `ascend`, `neuron`, `mindspore`,
/// Cambricon's `mlu` and `camb`, MetaX's `maca`, Moore Threads' `musa`, Enflame's `gcu`, or
/// `dlinfer` (LMDeploy's backend for those devices); or AMD's GPUs unless ROCm is a target.
fn names_other_device(word: &str, platforms: Platforms) -> bool {
    matches!(
        word,
        "mlx"
            | "ascend"
            | "neuron"
            | "mindspore"
            | "mlu"
            | "camb"
            | "cambricon"
            | "maca"
            | "musa"
            | "gcu"
            | "dlinfer"
    ) || NO_CUDA_GRAPH_DEVICES.contains(&word)
        || (!platforms.rocm && names_rocm(word))
}

/// Whether a lowercase word names AMD's GPUs or their software: `rocm`, `hip`, `amd`, `aiter`
/// (AMD's AI tensor engine), or a GPU architecture `gfx` and digits (`gfx942`, `gfx95`).
fn names_rocm(word: &str) -> bool {
    matches!(word, "rocm" | "hip" | "amd" | "aiter")
        || word
            .strip_prefix("gfx")
            .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
}

/// The CamelCase words of a class name: `VisionIntelXPUAttention` is `Vision`, `Intel`, `XPU`,
/// `Attention`; digits stay with the word before them.
pub(crate) fn camel_words(name: &str) -> Vec<&str> {
    let bytes = name.as_bytes();
    let mut words = Vec::new();
    let mut start = 0;
    for i in 1..bytes.len() {
        let (before, here) = (bytes[i - 1], bytes[i]);
        let next_lower = bytes.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        let boundary = here == b'_'
            || before == b'_'
            || (here.is_ascii_uppercase()
                && (before.is_ascii_lowercase()
                    || before.is_ascii_digit()
                    || (before.is_ascii_uppercase() && next_lower)));
        if boundary {
            if start < i {
                words.push(&name[start..i]);
            }
            start = i;
        }
    }
    words.push(&name[start..]);
    words.retain(|word| !word.is_empty() && *word != "_");
    words
}

/// The device a platform test names: `xpu` for `current_platform.is_xpu()`, `_is_xpu` or
/// `platform.is_xpu`, `cuda_alike` for `is_cuda_alike()`.
pub(crate) fn platform_tested(test: &Expr) -> Option<&str> {
    let callee = match test {
        Expr::Call(call) if call.arguments.is_empty() => &*call.func,
        other => other,
    };
    let name = match callee {
        Expr::Name(name) => name.id.as_str(),
        Expr::Attribute(attribute) => attribute.attr.as_str(),
        _ => return None,
    };
    name.trim_start_matches('_').strip_prefix("is_")
}

/// A platform test for a device other than a targeted GPU: `current_platform.is_xpu()`,
/// `is_npu()`, a module flag `_is_cpu`, `platform.is_tpu`, and `is_rocm()` or `_is_hip` unless
/// ROCm is a target. Code under it never runs where CUDA graphs are captured (a CPU tensor's
/// `x.is_cpu` says the same of the data).
pub(crate) fn is_other_platform(test: &Expr, platforms: Platforms) -> bool {
    platform_tested(test).is_some_and(|device| {
        matches!(device, "cpu" | "neuron")
            || NO_CUDA_GRAPH_DEVICES.contains(&device)
            || (!platforms.rocm && matches!(device, "rocm" | "hip"))
    })
}

/// A debug switch: a name or attribute that says `debug`, `diagnostic` or `verbose` (`DEBUG`,
/// `self.debug_mode`, `envs.SGLANG_DEBUG_MEMORY_POOL`), its `.get()`, a call without arguments
/// of a function whose name says it (`diagnostics_enabled()`), or an environment variable read
/// whose key says it (`get_bool_env_var("SGLANG_DEBUG_MEMORY_POOL")`, `os.getenv("MY_DEBUG")`).
pub(crate) fn is_debug_switch(test: &Expr) -> bool {
    fn says_debug(name: &str) -> bool {
        let says = |word: &[u8]| {
            name.as_bytes()
                .windows(word.len())
                .any(|window| window.eq_ignore_ascii_case(word))
        };
        says(b"debug") || says(b"diagnostic") || says(b"verbose")
    }
    match test {
        Expr::Name(name) => says_debug(name.id.as_str()),
        Expr::Attribute(attribute) => says_debug(attribute.attr.as_str()),
        Expr::Call(call) => match (&*call.func, call.arguments.args.first()) {
            (Expr::Attribute(attribute), None)
                if matches!(attribute.attr.as_str(), "get" | "value") =>
            {
                is_debug_switch(&attribute.value)
            }
            (func @ (Expr::Name(_) | Expr::Attribute(_)), None)
                if call.arguments.keywords.is_empty() =>
            {
                last_segment(func).is_some_and(says_debug)
            }
            (func, Some(Expr::StringLiteral(key))) => {
                let reads_env = last_segment(func).is_some_and(|name| {
                    name.to_ascii_lowercase().contains("env")
                        || (name == "get"
                            && matches!(func, Expr::Attribute(a)
                                if last_segment(&a.value) == Some("environ")))
                });
                reads_env && says_debug(key.value.to_str())
            }
            _ => false,
        },
        _ => false,
    }
}

#[cfg(test)]
mod platform_tests {
    use super::{camel_words, names_rocm, other_device_function, other_platform_class, Platforms};

    #[test]
    fn camel_case_words() {
        assert_eq!(
            camel_words("VisionIntelXPUAttention"),
            ["Vision", "Intel", "XPU", "Attention"]
        );
        assert_eq!(camel_words("CPUAttentionMetadataBuilder")[0], "CPU");
        assert_eq!(camel_words("Qwen2VLModel"), ["Qwen2", "VL", "Model"]);
        assert_eq!(camel_words("NPU_Graph"), ["NPU", "Graph"]);
    }

    #[test]
    fn class_names_of_other_platforms() {
        let cuda = Platforms { rocm: false };
        let rocm = Platforms::default();
        for name in [
            "VisionIntelXPUAttention",
            "AscendAttentionBackend",
            "CPUAttentionMetadataBuilder",
            "IntelAMXAttnBackend",
            "TPUModelRunner",
        ] {
            assert!(other_platform_class(name, cuda), "{name}");
            assert!(other_platform_class(name, rocm), "{name}");
        }
        for name in ["ROCmAiterMLABackend", "AiterAttnBackend", "HipGraphRunner"] {
            assert!(other_platform_class(name, cuda), "{name}");
            assert!(!other_platform_class(name, rocm), "{name}");
        }
        for name in [
            "CpuGpuBuffer",
            "CPUOffloadingManager",
            "FlashAttentionBackend",
            "HostPinnedCpuPool",
            "Mixtral",
            "Compute",
            "ChipWaiter",
        ] {
            assert!(!other_platform_class(name, cuda), "{name}");
        }
    }

    #[test]
    fn rocm_words() {
        for word in ["rocm", "hip", "amd", "aiter", "gfx942", "gfx95"] {
            assert!(names_rocm(word), "{word}");
        }
        for word in ["gfx", "gfxs", "chip", "waiter", "amdahl"] {
            assert!(!names_rocm(word), "{word}");
        }
        let cuda = Platforms { rocm: false };
        assert!(other_device_function("forward_hip", cuda));
        assert!(!other_device_function("forward_hip", Platforms::default()));
        assert!(!other_device_function("forward_cuda", cuda));
    }
}
