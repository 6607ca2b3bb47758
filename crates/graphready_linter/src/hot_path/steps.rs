//! The per-step host path found from the code itself: the functions that run the model or
//! replay a graph outside any capture (seeds), the functions that call them on every step
//! (found upward through the call graph), and the loops that drive them. What these reach runs
//! on every step outside the graph: metadata preparation, sampling, stop checks, schedulers.
//!
//! Set-up that runs once (constructors, loading, warm-up, capture, profiling) and measuring
//! harnesses (tests, benchmarks, examples) are neither seeds nor callers: they also run the model,
//! but not every step.

use super::index::{NodeId, ProjectIndex};
use super::names::{is_request_name, set_up_name, SetUp};
pub(super) use super::names::{is_set_up, is_training_name, is_training_qualname};
use super::Entry;
use crate::summary::{CallTarget, EntryReason, ModuleSummary};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// How many callers the upward search visits at most.
const MAX_CALLERS: usize = 4096;

/// How many calls deep [`ProjectIndex::model_runs`] follows calls that look like model runs
/// into the project's functions (wrappers of wrappers of the model).
const MODEL_RUN_DEPTH: u8 = 3;

/// Whether a module is a measuring harness or an example rather than the engine: in a package
/// `tests`, `benchmarks`, `examples` (or similar), or named `test_*`, `*_test`, `bench*`; or
/// start-up tuning, which times candidates in a loop before serving: a package `warmup`, or a
/// module whose name has a word `warmup`, `autotune`, `autotuner` or `tuning`; or offline
/// conversion, which runs the model once to trace it: a package `export` or `exporters`; or
/// training: a package `loss` or `losses`. Judged on the dotted module name, so that the
/// folders above the project do not count.
pub(super) fn is_harness_module(module: &str) -> bool {
    module.split('.').enumerate().any(|(i, part)| {
        let last = i == module.split('.').count() - 1;
        matches!(
            part,
            "test"
                | "tests"
                | "testing"
                | "benchmark"
                | "benchmarks"
                | "bench"
                | "examples"
                | "warmup"
                | "export"
                | "exporters"
                | "loss"
                | "losses"
        ) || (last
            && (part.starts_with("test_")
                || part.ends_with("_test")
                || part == "conftest"
                || part.starts_with("bench")
                || part
                    .split('_')
                    .any(|word| matches!(word, "warmup" | "autotune" | "autotuner" | "tuning"))))
    })
}

/// Whether a module is a measuring harness (see [`is_harness_module`]), or a template other
/// code is generated from, which runs nothing either; a file outside any package is judged by
/// its name.
pub(super) fn is_harness_summary(summary: &ModuleSummary) -> bool {
    if summary.template {
        return true;
    }
    match &summary.module {
        Some(name) => is_harness_module(name),
        None => {
            let file = summary
                .path
                .rsplit(['/', '\\'])
                .next()
                .unwrap_or(&summary.path);
            is_harness_module(file.strip_suffix(".py").unwrap_or(file))
        }
    }
}

impl ProjectIndex<'_> {
    /// Whether a function runs once rather than every step: set-up (constructors, loading,
    /// warm-up, capture) or a measuring harness. Searches do not descend into it.
    pub(super) fn runs_once(&self, node: NodeId) -> bool {
        is_set_up(&self.function(node).qualname)
            || self.is_harness(node.module)
            || self.is_memoized(node)
            || self.is_pipeline_stage(node)
    }

    /// `preprocess`, `_forward` or `postprocess` of a class that has (or inherits) all three:
    /// an inference pipeline's stages (the protocol of transformers' `Pipeline`), which run once
    /// per input: before the model, the model run (with what `_forward` does around it), after
    /// it. A generation loop that `_forward` hands on to (`generate`) is a step driver of its
    /// own; the model's `forward` stays captured.
    fn is_pipeline_stage(&self, node: NodeId) -> bool {
        let function = self.function(node);
        let Some(name) = function.qualname.rsplit_once('.').map(|(_, name)| name) else {
            return false;
        };
        if !matches!(name, "preprocess" | "_forward" | "postprocess") {
            return false;
        }
        self.method_class(node).is_some_and(|class| {
            ["preprocess", "_forward", "postprocess"]
                .iter()
                .all(|stage| self.method_in_class(class, stage).is_some())
        })
    }

    /// Whether a call from `caller` enters code that runs once ([`Self::runs_once`]), but for
    /// set-up by the first word of its name alone (`init_canvas`) called by a function working on
    /// the step's requests (`add_request`, `_finish_prefills`): that runs each time requests
    /// start, which is every step. A model's `forward` calling its lazy `init_*` still runs it
    /// once.
    pub(super) fn runs_once_from(&self, caller: NodeId, callee: NodeId) -> bool {
        self.runs_once(callee)
            && !(self.set_up_by_first_word(callee)
                && self
                    .function(caller)
                    .qualname
                    .rsplit('.')
                    .next()
                    .is_some_and(|name| is_request_name(name) && set_up_name(name).is_none()))
    }

    /// Whether a function runs once whoever calls it: [`Self::runs_once`], less set-up by the
    /// first word of its name alone (see [`Self::runs_once_from`]).
    pub(super) fn runs_once_always(&self, node: NodeId) -> bool {
        self.runs_once(node) && !self.set_up_by_first_word(node)
    }

    /// Set-up only by the first word of its name (`init_canvas`), not a harness, not memoised.
    fn set_up_by_first_word(&self, node: NodeId) -> bool {
        let qualname = &self.function(node).qualname;
        is_set_up(qualname)
            && qualname
                .split('.')
                .all(|part| set_up_name(part) != Some(SetUp::Named))
            && !self.is_harness(node.module)
            && !self.is_memoized(node)
    }

    /// A memoised function (`@functools.lru_cache(...)`, `@functools.cache`): its body runs
    /// once per distinct argument, in the warm-up that precedes any capture, like a lazily made
    /// cache.
    fn is_memoized(&self, node: NodeId) -> bool {
        self.function(node).decorators.iter().any(|decorator| {
            matches!(decorator, crate::summary::Ref::Qualified(q)
                if matches!(q.as_str(), "functools.lru_cache" | "functools.cache"))
        })
    }

    /// Whether a function is a library's public API: a module-level function or a method of a
    /// module-level class, no name starting with `_` (but `__call__`), not set-up, not a harness.
    pub(super) fn is_public_api(&self, node: NodeId) -> bool {
        let qualname = &self.function(node).qualname;
        let parts: Vec<&str> = qualname.split('.').collect();
        let public = |part: &&str| !part.starts_with('_') || *part == "__call__";
        let shape = match parts.as_slice() {
            [_] => true,
            [class, _] => self.class_named(node.module, class).is_some(),
            _ => false,
        };
        shape && parts.iter().all(public) && !self.runs_once(node)
    }

    /// Whether a function may seed or carry the per-step path: not set-up, not a harness, not a
    /// method of an `nn.Module` (a model running its submodules is the model, not a driver),
    /// nor of an encoder (see [`super::encoders`]: an adapter running an image encoder does
    /// so once per request, as does the pipeline stage that calls it).
    fn may_drive_steps(&self, node: NodeId) -> bool {
        let function = self.function(node);
        if self.runs_once(node) {
            return false;
        }
        match function.qualname.rsplit_once('.') {
            Some((class, _)) => {
                !self.derives_from_module(node.module, class)
                    && !super::encoders::is_encoder_method(self, node)
            }
            None => true,
        }
    }

    /// Whether a function calls a decode loop that runs until the sequences finish
    /// (`generate` dispatching to `_sample`): it runs once per generation, above the steps, even
    /// where it also runs the model itself (the encoder, the prompt).
    fn calls_decode_loop(&self, node: NodeId) -> bool {
        self.resolved_sites(node)
            .iter()
            .flatten()
            .any(|&callee| callee != node && self.model_runs(callee).until_done)
    }
}

/// How a function runs a model outside any capture.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ModelRuns {
    /// Outside loops: the function is a step, or called by one.
    pub once: bool,
    /// Inside a loop: the function drives the steps.
    pub in_loop: bool,
    /// Inside a `while` loop: a decode loop that runs until the sequences finish.
    pub until_done: bool,
}

impl ProjectIndex<'_> {
    /// How a function runs a model: calls that look like a run (`x.forward(...)`,
    /// `self.model(...)`) and resolve to nothing of the project, to a method of a class that is
    /// or may be an `nn.Module`, or to a function that itself runs a model once or replays a
    /// graph (a graph wrapper's `__call__`). A call that resolves only to other functions (a
    /// pipeline stage's `forward` whose loop runs the model every timestep, `super().forward(...)`
    /// of a stage that runs none) runs that function once, and what it does decides how often:
    /// a router calling the denoising stage runs it once per request, not every step.
    pub(super) fn model_runs(&self, node: NodeId) -> ModelRuns {
        self.model_runs_within(node, MODEL_RUN_DEPTH)
    }

    fn model_runs_within(&self, node: NodeId, depth: u8) -> ModelRuns {
        let function = self.function(node);
        let mut runs = ModelRuns {
            once: function.runs_model,
            in_loop: function.runs_model_in_loop,
            until_done: function.runs_model_until_done,
        };
        if function.calls.iter().all(|site| site.model_run.is_none()) {
            return runs;
        }
        for (site, targets) in function.calls.iter().zip(self.resolved_sites(node)) {
            let Some(run) = site.model_run else {
                continue;
            };
            let runs_model = |&target: &NodeId| {
                self.is_model_method(target)
                    || depth > 0
                        && (self.function(target).replays_graph
                            || self.model_runs_within(target, depth - 1).once)
            };
            if !targets.is_empty() && !targets.iter().any(runs_model) {
                continue;
            }
            let (once, in_loop, until_done) = run.flags();
            runs.once |= once;
            runs.in_loop |= in_loop;
            runs.until_done |= until_done;
        }
        runs
    }

    /// Whether a function is a method of a class that is or may be an `nn.Module`.
    fn is_model_method(&self, node: NodeId) -> bool {
        self.function(node)
            .class
            .as_deref()
            .is_some_and(|class| self.is_module_class(node.module, class))
    }
}

/// What the code shows of the per-step host path.
#[derive(Default)]
pub(super) struct Steps {
    /// Functions that run every step, whole.
    pub entries: Vec<Entry>,
    /// Functions whose loops drive the steps: only their loop bodies run every step.
    pub drivers: Vec<NodeId>,
}

/// The per-step host path found from the code. Seeds run the model (once per call) or replay a
/// graph; the upward search follows their callers up to the first loop that calls them every
/// iteration (a driver: its loop bodies and what they call run every step) or to callers nobody
/// calls (run every step whole). A function that runs the model inside a loop is a driver
/// itself (a decode loop): what it does outside the loop runs once per call, not per step.
/// Call sites by the name they call (see [`sites_by_name`]).
pub(super) type SitesByName<'s> = FxHashMap<&'s str, Vec<(NodeId, usize)>>;

/// Call sites by the name they call, so that the callers of a function are found without
/// resolving every call of the project.
pub(super) fn sites_by_name<'s>(index: &ProjectIndex<'s>) -> SitesByName<'s> {
    let mut by_name: SitesByName<'s> = FxHashMap::default();
    for node in index.nodes() {
        for (site, call) in index.function(node).calls.iter().enumerate() {
            by_name
                .entry(call.target.method_name())
                .or_default()
                .push((node, site));
        }
    }
    by_name
}

pub(super) fn find(
    index: &ProjectIndex,
    captured: &FxHashMap<NodeId, Option<NodeId>>,
    by_name: &SitesByName,
) -> Steps {
    let mut steps = Steps::default();
    let mut queue = VecDeque::new();
    let mut seen = FxHashSet::default();
    for node in index.nodes() {
        let function = index.function(node);
        let runs = index.model_runs(node);
        let seeds = runs.in_loop || runs.once || function.replays_graph;
        if !seeds || captured.contains_key(&node) || !index.may_drive_steps(node) {
            continue;
        }
        if !runs.in_loop && index.calls_decode_loop(node) {
            continue;
        }
        if runs.in_loop {
            seen.insert(node);
            steps.drivers.push(node);
            loop_entries(index, node, &mut steps.entries);
        } else {
            let reason = if function.replays_graph {
                EntryReason::Replay
            } else {
                EntryReason::RunsModel
            };
            seen.insert(node);
            steps.entries.push(Entry {
                node,
                reason,
                via: None,
            });
            queue.push_back(node);
        }
    }
    if queue.is_empty() {
        return steps;
    }
    // Whether each caller met may drive the steps: a common name (`forward`) has thousands of
    // call sites, and the answer splits names and walks class hierarchies.
    let mut drives: FxHashMap<NodeId, bool> = FxHashMap::default();
    while let Some(callee) = queue.pop_front() {
        if seen.len() > MAX_CALLERS {
            break;
        }
        let qualname = &index.function(callee).qualname;
        let name = qualname.rsplit('.').next().unwrap_or(qualname);
        let Some(sites) = by_name.get(name) else {
            continue;
        };
        for &(caller, site) in sites {
            if seen.contains(&caller) || captured.contains_key(&caller) {
                continue;
            }
            let call = &index.function(caller).calls[site];
            if !*drives
                .entry(caller)
                .or_insert_with(|| index.may_drive_steps(caller))
                || forwards_own_call(&index.function(caller).qualname, &call.target)
                || !index.resolve(caller.module, &call.target).contains(&callee)
            {
                continue;
            }
            let runs_in_loop = index.model_runs(caller).in_loop;
            if !runs_in_loop && index.calls_decode_loop(caller) {
                continue;
            }
            seen.insert(caller);
            if call.in_loop || runs_in_loop {
                // A loop that drives the step (or a decode loop calling the seed once before it
                // starts): only the loop bodies run every step.
                steps.drivers.push(caller);
                loop_entries(index, caller, &mut steps.entries);
            } else {
                steps.entries.push(Entry {
                    node: caller,
                    reason: EntryReason::StepCaller,
                    via: Some(callee),
                });
                queue.push_back(caller);
            }
        }
    }
    steps
}

/// Whether a call is `self.forward(...)` in a class's own `__call__`: the object's call
/// protocol, dispatched to every subclass's `forward`. That one subclass's forward runs the model
/// says nothing of how often the others run (a pipeline's stages run once per request, and only
/// their denoising loop every step), so the upward search does not climb through it: the
/// protocol's own callers decide.
fn forwards_own_call(caller: &str, target: &CallTarget) -> bool {
    caller.rsplit('.').next() == Some("__call__")
        && matches!(target, CallTarget::SelfMethod { method, .. } if method == "forward")
}

/// The loop each per-step function is shown under: of the loops that call it every iteration
/// (a scheduler's loop for each mode it serves in), the first found in the function's own
/// class, else in its own module, else anywhere. The loops an engine adds for optional modes
/// tend to live in mixins and modules of their own; the class's own loop is the one that runs
/// it under the defaults.
pub(super) fn driven_by(index: &ProjectIndex, entries: &[Entry]) -> FxHashMap<NodeId, NodeId> {
    let rank = |node: NodeId, driver: NodeId| {
        let class = |n: NodeId| index.function(n).class.as_deref();
        if node.module == driver.module && class(node).is_some() && class(node) == class(driver) {
            0
        } else if node.module == driver.module {
            1
        } else {
            2
        }
    };
    let mut chosen: FxHashMap<NodeId, NodeId> = FxHashMap::default();
    for entry in entries.iter().filter(|e| e.reason == EntryReason::StepLoop) {
        let Some(driver) = entry.via else {
            continue;
        };
        chosen
            .entry(entry.node)
            .and_modify(|current| {
                if rank(entry.node, driver) < rank(entry.node, *current) {
                    *current = driver;
                }
            })
            .or_insert(driver);
    }
    chosen
}

/// The functions a driver's loop bodies call: they run every step.
fn loop_entries(index: &ProjectIndex, driver: NodeId, entries: &mut Vec<Entry>) {
    let resolved = index.resolved_sites(driver);
    for (call, targets) in index.function(driver).calls.iter().zip(resolved) {
        if !call.in_loop {
            continue;
        }
        for &target in targets.iter() {
            entries.push(Entry {
                node: target,
                reason: EntryReason::StepLoop,
                via: Some(driver),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_modules() {
        for module in [
            "vllm.benchmarks.forward.capture",
            "pkg.tests.test_model",
            "deep_gemm.testing.bench",
            "test_model",
            "model_test",
            "examples.offline",
            "vllm.model_executor.warmup.kernel_warmup",
            "sglang.multimodal_gen.runtime.layers.attention.autotune",
            "pkg.moe_tuning",
            "transformers.exporters.utils",
            "transformers.loss.loss_rt_detr",
        ] {
            assert!(is_harness_module(module), "{module}");
        }
        for module in [
            "vllm.v1.worker.gpu_model_runner",
            "sglang.srt.latest",
            "attest",
            "pkg.fine_tuned_head",
            "pkg.exporting",
            "pkg.loss_scaling",
        ] {
            assert!(!is_harness_module(module), "{module}");
        }
    }
}
