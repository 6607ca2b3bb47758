//! graphready's static analysis: finds CUDA-graph capture hazards in Python/PyTorch source.
//!
//! Data flow: source → parse ([`ruff_python_parser`]) → one visitor ([`checker::Checker`]) that
//! keeps the semantic model and dispatches to the rules → raw findings → suppressions → located
//! [`Diagnostic`]s. This crate never prints.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod checker;
mod hot_path;
mod noqa;
pub mod project;
pub mod registry;
mod rules;
mod semantic;
pub mod settings;
mod summary;
mod util;
mod violation;

pub use graphready_diagnostics::{Diagnostic, Location, Reach, Severity, Span};
pub use hot_path::{runs_once, HotPathSettings};
pub use registry::{Rule, RuleSet};
pub use settings::Settings;

use ruff_source_file::LineIndex;
use ruff_text_size::{TextRange, TextSize};

/// The code of the diagnostic for a file that could not be read or parsed.
pub const UNREADABLE_CODE: &str = "GR000";

/// The code of the diagnostic for a suppression comment that suppresses nothing
/// ([`project::Options::unused_suppressions`]).
pub const UNUSED_SUPPRESSION_CODE: &str = "GR001";

/// Where a file sits in its project, for relative imports.
#[derive(Debug, Clone, Default)]
pub struct ModuleInfo {
    /// Dotted module name (`pkg.sub.mod`), when the file is inside a package.
    pub name: Option<String>,
    /// Whether the file is a package's `__init__.py`.
    pub is_package: bool,
}

/// Cheap first filter: a file that never mentions `torch` cannot hold a PyTorch hazard.
pub fn mentions_torch(source: &[u8]) -> bool {
    memchr::memmem::find(source, b"torch").is_some()
}

/// Return types of functions in other modules, by qualified name (`pkg.mod.helper`).
pub(crate) type ExternalReturns = rustc_hash::FxHashMap<String, semantic::Ty>;
/// The positions' types of the tuples other modules' functions return, by qualified name.
pub(crate) type ExternalTupleReturns = rustc_hash::FxHashMap<String, Box<[semantic::Ty]>>;

/// The findings of one file and what the project-wide analysis needs from it.
#[derive(Debug, Default)]
pub(crate) struct FileAnalysis {
    pub diagnostics: Vec<Diagnostic>,
    /// Findings that a suppression comment silenced, with the comment's reason.
    pub suppressed: Vec<SuppressedFinding>,
    pub summary: summary::ModuleSummary,
}

/// A finding silenced by a suppression comment on its line.
#[derive(Debug, Clone)]
pub(crate) struct SuppressedFinding {
    pub diagnostic: Diagnostic,
    pub reason: Option<String>,
}

/// The settings of one file: its configuration's, with the file's own rule set (per-file
/// ignores folded in).
#[derive(Clone, Copy)]
pub(crate) struct FileSettings<'s> {
    pub settings: &'s Settings,
    pub rules: RuleSet,
}

/// Checks one file's source on its own.
pub fn check(
    source: &str,
    path: &str,
    module: &ModuleInfo,
    settings: &Settings,
) -> Vec<Diagnostic> {
    let settings = FileSettings {
        settings,
        rules: settings.rules,
    };
    analyze(
        source,
        path,
        module,
        &settings,
        semantic::ProjectFacts::default(),
        None,
        true,
    )
    .diagnostics
}

/// Checks one file, with the return types of other modules' functions when they are known.
///
/// With `only`, the bodies of the module's functions and methods outside it (by qualified name
/// inside the module) are skipped: a re-check of the functions whose findings can be reported.
/// The summary is then partial. Without `summarise`, the summary is left empty (a re-check,
/// whose first summary stands).
pub(crate) fn analyze(
    source: &str,
    path: &str,
    module: &ModuleInfo,
    settings: &FileSettings,
    facts: semantic::ProjectFacts,
    only: Option<&rustc_hash::FxHashSet<String>>,
    summarise: bool,
) -> FileAnalysis {
    let parsed = match ruff_python_parser::parse_module(source) {
        Ok(parsed) => parsed,
        Err(error) => {
            let range = error.location;
            let message = format!("file could not be parsed: {}", error.error);
            return FileAnalysis {
                diagnostics: vec![unreadable(source, path, range, message)],
                suppressed: Vec::new(),
                summary: summary::ModuleSummary {
                    path: path.to_string(),
                    module: module.name.clone(),
                    ..summary::ModuleSummary::default()
                },
            };
        }
    };

    let analysis = checker::Checker::new(
        settings.settings,
        settings.rules,
        source,
        module.name.as_deref(),
        module.is_package,
        facts,
    )
    .only(only)
    .summarise(summarise)
    .other_platform(other_platform(
        module.name.as_deref().unwrap_or_else(|| {
            // Outside a package, the file's own name: the folders above it are the user's.
            path.rsplit(['/', '\\']).next().unwrap_or(path)
        }),
        settings.settings.platforms,
    ))
    .run(parsed.syntax());
    let mut summary = analysis.summary;
    summary.path = path.to_string();
    let (diagnostics, suppressed) = locate(source, path, &analysis.lines, analysis.diagnostics);
    FileAnalysis {
        diagnostics,
        suppressed,
        summary,
    }
}

/// The input fields a file declares, kept on the host and not (see `semantic::fields`), when it
/// declares any; read before the project's files are checked.
pub(crate) fn field_declarations(bytes: &[u8]) -> Option<(Vec<String>, Vec<String>)> {
    if memchr::memmem::find(bytes, b"keep_on_cpu").is_none()
        && memchr::memmem::find(bytes, b"FieldConfig").is_none()
    {
        return None;
    }
    let source = std::str::from_utf8(bytes).ok()?;
    let parsed = ruff_python_parser::parse_module(source).ok()?;
    let declarations = semantic::field_declarations(parsed.syntax());
    let owned =
        |fields: &rustc_hash::FxHashSet<&str>| fields.iter().map(|f| (*f).to_string()).collect();
    Some((owned(&declarations.kept), owned(&declarations.on_device)))
}

/// The media record classes a file declares (see `semantic::records`), when it defines a
/// `__getattr__`; read before the project's files are checked.
pub(crate) fn record_declarations(bytes: &[u8]) -> Option<Vec<String>> {
    memchr::memmem::find(bytes, b"def __getattr__")?;
    let source = std::str::from_utf8(bytes).ok()?;
    let parsed = ruff_python_parser::parse_module(source).ok()?;
    let records = semantic::record_declarations(parsed.syntax());
    (!records.is_empty()).then_some(records)
}

/// The environment flags a file declares off by default (see `semantic::env_flags`), when it
/// keeps a registry of them; read before the project's files are checked.
pub(crate) fn env_flag_declarations(bytes: &[u8]) -> Option<Vec<String>> {
    let find = |needle: &[u8]| memchr::memmem::find(bytes, needle).is_some();
    // `EnvBool(False)`, a setting without a default (`X = EnvStr(None)`), or vLLM's readers.
    // A file is parsed for them only when it may hold one: the scan runs before any check.
    let declares = find(b"EnvBool(")
        || find(b"lambda: bool(")
        || find(b"= Env") && (find(b"(None") || find(b"default=None"));
    if !declares {
        return None;
    }
    let source = std::str::from_utf8(bytes).ok()?;
    let parsed = ruff_python_parser::parse_module(source).ok()?;
    Some(semantic::off_flags(parsed.syntax()))
}

/// Whether a module's dotted name (or, outside a package, its file name) says it serves a
/// device without CUDA graphs: a package or a word of the module's name is `npu`, `xpu`, `tpu`,
/// `hpu`, `mps`, `mlx`, `ascend`, `neuron` or another such device or backend
/// (`srt.hardware_backend.npu.attention...`, `punica_xpu`, `tpu_model_runner`,
/// `backends.dlinfer.camb`; see `util::other_platform_words`), or names the CPU as the device
/// that computes: `cpu` or `amx` (Intel's CPU matrix extensions) in a module that says nothing
/// of moving data between the host and a GPU (`cpu_attn`, `mla.cpu_mla`,
/// `worker.cpu_model_runner`, `intel_amx_backend`). `kv_offload.cpu.manager`, `cpu_gpu_buffer`
/// and `swap_to_cpu` serve a GPU engine: a word `offload`, `swap`, `gpu`, `cuda`, `host` or
/// `pinned` keeps them. Folders above the package are the user's and do not count.
fn other_platform(module: &str, platforms: settings::Platforms) -> bool {
    util::other_platform_words(
        module
            .strip_suffix(".py")
            .unwrap_or(module)
            .split(['.', '_', '-']),
        platforms,
    )
}

/// Locates the raw findings in the source and applies the suppression comments: the findings
/// reported, and those a comment silenced (with its reason).
fn locate(
    source: &str,
    path: &str,
    index: &LineIndex,
    raw: Vec<checker::RawDiagnostic>,
) -> (Vec<Diagnostic>, Vec<SuppressedFinding>) {
    if raw.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let mut diagnostics = Vec::with_capacity(raw.len());
    let mut suppressed: Vec<SuppressedFinding> = Vec::new();
    for raw in raw {
        let line = index.line_index(raw.range.start());
        let text = line_text(index, source, line.get());
        let comment = noqa::parse_line(text).filter(|c| c.covers(raw.rule.code()));
        let diagnostic = Diagnostic {
            code: raw.rule.code().to_string(),
            name: raw.rule.name().to_string(),
            severity: raw.rule.severity(),
            reach: Reach::Unknown,
            path: path.to_string(),
            span: span(index, source, raw.range),
            function: raw.function,
            chain: Vec::new(),
            message: raw.message,
            fix: raw.fix,
            url: Some(graphready_diagnostics::rule_url(raw.rule.code())),
            offsets: (raw.range.start().to_u32(), raw.range.end().to_u32()),
            captured_only: raw.captured_only,
        };
        match comment {
            None => diagnostics.push(diagnostic),
            Some(comment) => suppressed.push(SuppressedFinding {
                diagnostic,
                reason: comment.reason.map(str::to_string),
            }),
        }
    }
    diagnostics.dedup_by(|a, b| a.code == b.code && a.offsets == b.offsets);
    suppressed.dedup_by(|a, b| {
        a.diagnostic.code == b.diagnostic.code && a.diagnostic.offsets == b.diagnostic.offsets
    });
    (diagnostics, suppressed)
}

/// The diagnostic for a file that could not be read, decoded or parsed.
pub(crate) fn unreadable(
    source: &str,
    path: &str,
    range: TextRange,
    message: String,
) -> Diagnostic {
    let index = LineIndex::from_source_text(source);
    let range = clamp(range, source);
    Diagnostic {
        code: UNREADABLE_CODE.to_string(),
        name: "unreadable-file".to_string(),
        severity: Severity::Error,
        reach: Reach::Unknown,
        path: path.to_string(),
        span: span(&index, source, range),
        function: None,
        chain: Vec::new(),
        message,
        fix: None,
        url: Some(graphready_diagnostics::rule_url(UNREADABLE_CODE)),
        offsets: (range.start().to_u32(), range.end().to_u32()),
        captured_only: false,
    }
}

fn clamp(range: TextRange, source: &str) -> TextRange {
    let len = TextSize::try_from(source.len()).unwrap_or(TextSize::new(u32::MAX));
    let start = range.start().min(len);
    let end = range.end().clamp(start, len);
    TextRange::new(start, end)
}

fn line_text<'s>(index: &LineIndex, source: &'s str, line: usize) -> &'s str {
    let Some(line) = ruff_source_file::OneIndexed::new(line) else {
        return "";
    };
    let range = index.line_range(line, source);
    source
        .get(range.start().to_usize()..range.end().to_usize())
        .unwrap_or("")
}

/// Where an offset lies, as findings give it: line and column, both from 1.
pub(crate) fn location(index: &LineIndex, source: &str, offset: TextSize) -> Location {
    let position = index.line_column(offset, source);
    Location {
        line: u32::try_from(position.line.get()).unwrap_or(u32::MAX),
        column: u32::try_from(position.column.get()).unwrap_or(u32::MAX),
    }
}

fn span(index: &LineIndex, source: &str, range: TextRange) -> Span {
    Span {
        start: location(index, source, range.start()),
        end: location(index, source, range.end()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_devices_without_cuda_graphs() {
        let (both, cuda) = (
            settings::Platforms::default(),
            settings::Platforms { rocm: false },
        );
        for module in [
            "sglang.srt.hardware_backend.npu.attention.ascend_backend",
            "vllm.lora.punica_wrapper.punica_xpu",
            "vllm.v1.worker.tpu_model_runner",
            "pkg.mlx.tp_worker",
            "xpu_ops.py",
            "vllm.v1.attention.backends.cpu_attn",
            "vllm.v1.attention.backends.mla.amx_mla",
            "vllm.models.deepseek_v4.cpu.model",
            "sglang.srt.layers.attention.intel_amx_backend",
            "sglang.srt.models.mindspore",
            "lmdeploy.pytorch.backends.dlinfer.attention",
            "lmdeploy.pytorch.backends.dlinfer.camb.op_backend",
            "pkg.maca.op_backend",
            "sglang.srt.hardware_backend.musa.attention.flashattention_backend",
            "pkg.mlu_ops",
        ] {
            assert!(other_platform(module, both), "{module}");
            assert!(other_platform(module, cuda), "{module}");
        }
        // AMD's GPUs, when ROCm is left out.
        for module in [
            "vllm.v1.attention.backends.mla.rocm_aiter_mla",
            "vllm.models.deepseek_v41.amd.model",
            "sglang.srt.layers.attention.aiter_backend",
            "pkg.gfx950_kernels",
        ] {
            assert!(other_platform(module, cuda), "{module}");
            assert!(!other_platform(module, both), "{module}");
        }
        for module in [
            "vllm.v1.kv_offload.cpu.manager",
            "vllm.v1.kv_offload.cpu.gpu_worker",
            "pkg.cpu_gpu_buffer",
            "pkg.swap_to_cpu",
            "pkg.examples",
            "vllm.v1.attention.backends.flash_attn",
            "pkg.input_processor",
            "pkg.snpu",
            "gpu_model_runner.py",
            "pkg.chip_layout",
            "pkg.camera_model",
            "pkg.macaron_net",
        ] {
            assert!(!other_platform(module, cuda), "{module}");
        }
    }

    /// A class scan reads method bodies before their local imports bind: the import must still
    /// count when the body is checked (answers memoised before it are stale).
    #[test]
    fn a_local_import_counts_in_a_method_scanned_earlier() {
        let source = "class Runner:\n    def step(self, a, b):\n        import torch\n\n        \
                      self.same = torch.equal(a, b)\n        return a\n";
        let codes: Vec<String> = check(
            source,
            "runner.py",
            &ModuleInfo::default(),
            &Settings::default(),
        )
        .into_iter()
        .map(|d| d.code)
        .collect();
        assert_eq!(codes, vec!["GR106".to_string()]);
    }
}
