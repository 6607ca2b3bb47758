//! The typed project model, in process, on a small multi-module engine
//! (resources/test/projects/typed): a dataclass batch whose fields are read through a parameter
//! annotation, a backend base class with two subclasses reached through an attribute typed by a
//! forward reference (class hierarchy analysis, template methods), a decorated rotary forward, a
//! runner that replays and samples, a scheduler loop that drives it, an attention layer whose
//! implementation class its backend returns (`type[...]`) or one made in a function from it, a
//! generation mixin dispatching by method name to its decode loop, penalizers held in a dict
//! comprehension, processors appended to a `list` subclass, an attention function held in a
//! local, kernels passed around as values (tuples, globals, a called parameter), a batch
//! property whose read copies to the host, a sampler a state's hook returns in a tuple that the
//! runner unpacks into its fields, a vision tower only uncaptured code calls, an audio tower held
//! through a nested attribute (a submodule, never a captured model of its own), and the set-up and
//! harness code that must stay out of the default scope, with an eager break of a breakable graph,
//! experts whose class their layer imports inside its constructor, and a language model of a class
//! nothing says, whose methods are guessed by name on the host path only, and an adaptor run
//! through the encoder that holds it.

use graphready_linter::project::{self, Options, Scope, SourceFile};
use graphready_linter::{HotPathSettings, RuleSet, Settings};
use std::path::{Path, PathBuf};

fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("resources/test/projects/typed")
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            python_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "py") {
            out.push(path);
        }
    }
}

/// (path relative to the project, line, code, reach, chain) of every finding.
fn check(scope: Scope) -> Vec<(String, u32, String, String, Vec<String>)> {
    check_project(&project_dir(), "engine", scope)
}

/// [`check`] for the files of `root/package`.
fn check_project(
    root: &Path,
    package: &str,
    scope: Scope,
) -> Vec<(String, u32, String, String, Vec<String>)> {
    let settings = Settings::default();
    let hot_path = HotPathSettings::default();
    let options = Options::new(std::slice::from_ref(&settings), &hot_path, scope);
    let prefix = format!("{}/", root.display());
    run(root, package, &options)
        .diagnostics()
        .into_iter()
        .map(|d| {
            (
                d.path.trim_start_matches(&prefix).to_string(),
                d.span.start.line,
                d.code,
                d.reach.as_str().to_string(),
                d.chain.into_iter().map(|link| link.function).collect(),
            )
        })
        .collect()
}

/// A run over the files of `root/package`.
fn run(root: &Path, package: &str, options: &Options) -> project::ProjectReport {
    let mut files = Vec::new();
    python_files(&root.join(package), &mut files);
    project::check(options, |found| {
        for path in &files {
            found(SourceFile {
                path: path.clone(),
                settings: 0,
                ignored: RuleSet::empty(),
            });
        }
    })
}

fn finding(
    path: &str,
    line: u32,
    code: &str,
    reach: &str,
    chain: &[&str],
) -> (String, u32, String, String, Vec<String>) {
    (
        path.to_string(),
        line,
        code.to_string(),
        reach.to_string(),
        chain.iter().map(|s| (*s).to_string()).collect(),
    )
}

#[test]
fn typed_receivers_hierarchy_decorators_and_the_step_loop_are_followed() {
    assert_eq!(
        check(Scope::Hot),
        vec![
            // A class made in a function from the class object the backend returns
            // (`class CountingImpl(base):`; the base class's method says nothing, its override
            // does) is an implementation too.
            // An adaptor its model's encoder holds and the model runs through the encoder
            // (`self.encoder.adaptor(x, lens)`) when embedding audio, outside the graph: a module
            // called, so no captured model of its own; run per step on the host path.
            finding(
                "engine/adaptor.py",
                11,
                "GR109",
                "stall",
                &["AudioAdaptor.forward"],
            ),
            // A backend's prefill work runs outside the decode graph: after `if
            // batch.num_prefills == 0: return ...`, under `is_mixed()`, under a local flag made
            // of prefill tests, and in what those branches call. A fill the graph would freeze
            // (line 16) is no hazard there. SGLang's `is_extend()` holds for captured verify
            // batches too: its branch stays captured.
            finding(
                "engine/attention/chunked.py",
                17,
                "GR105",
                "stall",
                &["Model.forward", "ChunkedBackend.forward"],
            ),
            finding(
                "engine/attention/chunked.py",
                29,
                "GR101",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode"
                ],
            ),
            finding(
                "engine/attention/chunked.py",
                41,
                "GR101",
                "stall",
                &[
                    "Model.forward",
                    "ChunkedBackend.forward",
                    "ChunkedBackend._prefill"
                ],
            ),
            finding(
                "engine/attention/chunked.py",
                46,
                "GR102",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._prefill_tail"
                ],
            ),
            finding(
                "engine/attention/chunked.py",
                49,
                "GR201",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._embed_images"
                ],
            ),
            // A function named for prefill work, called from captured code.
            finding(
                "engine/attention/chunked.py",
                52,
                "GR103",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend.plan_chunked_prefill"
                ],
            ),
            // After `if not forward_mode.is_extend_or_draft_extend_or_mixed(): return`, extend
            // modes alone: prefill work.
            finding(
                "engine/attention/chunked.py",
                58,
                "GR102",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._shard"
                ],
            ),
            finding(
                "engine/attention/chunked.py",
                64,
                "GR102",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._pool"
                ],
            ),
            // Under a flag that says the batch has some kind of prefill (`has_mixed_prefill`).
            finding(
                "engine/attention/chunked.py",
                71,
                "GR101",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._mixed"
                ],
            ),
            // Under a test that the batch brings media (`contains_image_inputs()`).
            finding(
                "engine/attention/chunked.py",
                76,
                "GR102",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._images"
                ],
            ),
            // What runs before the batch's extend data is read runs in decode too; the read
            // and what follows it, only for extend batches.
            finding(
                "engine/attention/chunked.py",
                81,
                "GR101",
                "capture",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._lengths"
                ],
            ),
            finding(
                "engine/attention/chunked.py",
                83,
                "GR105",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._lengths"
                ],
            ),
            finding(
                "engine/attention/chunked.py",
                84,
                "GR102",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._lengths"
                ],
            ),
            // A draft model's extend is captured; a function named for extend work does it
            // (eagerly) wherever it is called.
            finding(
                "engine/attention/chunked.py",
                93,
                "GR102",
                "capture",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._other_parts",
                    "ChunkedBackend.forward_draft_extend"
                ],
            ),
            finding(
                "engine/attention/chunked.py",
                96,
                "GR102",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "ChunkedBackend.forward_decode",
                    "ChunkedBackend._other_parts",
                    "ChunkedBackend.gather_cache_for_extend"
                ],
            ),
            finding(
                "engine/attention/counting.py",
                16,
                "GR104",
                "capture",
                &[
                    "AttentionLayer.forward",
                    "run_attention",
                    "make_counting_impl.CountingImpl.forward"
                ],
            ),
            // A backend without the base's capture set-up runs eagerly: a stall, with the chain
            // that captures its caller.
            finding(
                "engine/attention/eager.py",
                14,
                "GR105",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "EagerBackend.forward_decode"
                ],
            ),
            // The runner prepares metadata through the base class its constructor was given.
            finding(
                "engine/attention/flash.py",
                10,
                "GR101",
                "stall",
                &[
                    "Scheduler.run",
                    "ModelRunner.forward",
                    "FlashBackend.init_forward_metadata"
                ],
            ),
            // `batch.attn_backend` (a dataclass field typed by a forward reference), the base
            // class's template method, and the subclass's override.
            finding(
                "engine/attention/flash.py",
                17,
                "GR104",
                "capture",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "FlashBackend.forward_decode"
                ],
            ),
            // The layer's implementation class comes from its backend's `type[...]` return and
            // is constructed in `__init__`; the layer itself comes back from a registry inside a
            // tuple (`_, layer = layer_context(name)`).
            finding(
                "engine/attention/impls.py",
                13,
                "GR105",
                "capture",
                &[
                    "AttentionLayer.forward",
                    "run_attention",
                    "PagedImpl.forward"
                ],
            ),
            // The bound method the updater's constructor stored shadows its placeholder `update`.
            finding(
                "engine/attention/indices.py",
                21,
                "GR101",
                "stall",
                &[
                    "Scheduler.run",
                    "ModelRunner.forward",
                    "FlashBackend.init_forward_metadata",
                    "IndicesUpdater.update_sliding_window"
                ],
            ),
            // The default an attention registry falls back to, held in an annotated local.
            finding(
                "engine/attention/interface.py",
                11,
                "GR104",
                "capture",
                &["SelfAttention.forward", "eager_attention"],
            ),
            // Kernels passed around as values: a helper's tuple, module globals assigned under
            // `global`, a nested tuple unpacked by the caller, and a parameter the callee calls.
            finding(
                "engine/attention/kernels.py",
                16,
                "GR101",
                "capture",
                &["PaddedAttention.forward", "_unpad"],
            ),
            // Extend data read unguarded (`None` in decode): extend work, outside the graph.
            finding(
                "engine/attention/triton.py",
                15,
                "GR105",
                "stall",
                &[
                    "Model.forward",
                    "AttentionBackend.forward",
                    "TritonBackend.forward_decode"
                ],
            ),
            // The decode loop `generate` reaches through its table of method names runs until the
            // sequences finish: its body runs every step, `generate`'s own check once per call.
            // A field some processor keeps on the host and another does not: it may be on the
            // device. `image_grid_thw` (line 11), which `vision.py` keeps on the host, is not
            // reported, though the processor is in another module.
            // A state's hook returns the sampler the runner then samples with: a tuple
            // unpacked into two fields, from a method annotated `tuple[Any, Any] | None` whose
            // override returns the instance. The state itself comes from a factory that builds
            // whichever class the loaded module's `get_state_cls()` returns (a class object,
            // from a method found in every module class that defines it).
            // A backbone its tokenizer builds in a helper method, run per request outside the
            // graph: the field's call is followed, so the backbone is no outermost model.
            finding(
                "engine/backbone.py",
                10,
                "GR101",
                "stall",
                &["Navit.forward"],
            ),
            // A resampler the subclass's override builds (`-> nn.Module` in the base, `.to()`
            // on the instance), called per request: the same.
            finding(
                "engine/backbone.py",
                43,
                "GR101",
                "stall",
                &["Resampler.forward"],
            ),
            // A closure sees its enclosing function's names as they are when it runs: the host
            // tensor set after its `def` (nothing at line 14); the device tensor it reads syncs.
            finding(
                "engine/closures.py",
                17,
                "GR101",
                "capture",
                &["RoundLayer.forward", "RoundLayer.forward.device_round"],
            ),
            // A denoising loop runs the model every timestep: only its body runs every step.
            // The router calling the stage's `forward` runs no model (see the cold list).
            finding(
                "engine/denoise.py",
                18,
                "GR104",
                "stall",
                &["DenoiseStage.forward"],
            ),
            // A call through the dispatch base class runs the naive override; the batched one
            // exists only on an XPU (see the cold list).
            finding(
                "engine/dispatch.py",
                23,
                "GR105",
                "capture",
                &["DispatchedMoE.forward", "NaivePrepareFinalize.prepare"],
            ),
            // A docstring that says a parameter is on CPU (nothing at line 17); one that says
            // "on CPU or GPU" says nothing.
            finding(
                "engine/documented.py",
                18,
                "GR101",
                "capture",
                &["TileProjector.forward"]
            ),
            finding(
                "engine/drafting.py",
                26,
                "GR101",
                "stall",
                &[
                    "DraftRunner.run",
                    "DraftSampler.__call__",
                    "DraftSlots.fill_slots"
                ],
            ),
            // Line 19 reads the kept grid through a tuple splatted into its method: not reported.
            // Nor line 24: a second splat's elements are not the first tuple's again.
            // An encoder whose callers the index cannot see runs per request on the host path,
            // not in a graph of its own (the tower `options.py`'s captured model calls stays
            // captured).
            finding(
                "engine/encoder.py",
                13,
                "GR102",
                "stall",
                &["VisionEncoder.forward"],
            ),
            // Images come with a prompt: the branch on `pixel_values` is prefill work.
            finding(
                "engine/encoder.py",
                34,
                "GR102",
                "stall",
                &["CaptionModel.forward"],
            ),
            // A media mask's `is not None` is a prefill test, for the operands after it as for
            // the branches it opens; a device mask alone is read in the graph.
            finding(
                "engine/encoder.py",
                65,
                "GR104",
                "stall",
                &["MixedExperts.forward"],
            ),
            finding(
                "engine/encoder.py",
                68,
                "GR105",
                "stall",
                &["MixedExperts.forward"],
            ),
            finding(
                "engine/encoder.py",
                70,
                "GR104",
                "capture",
                &["MixedExperts.forward"],
            ),
            // So is a batch's media field (`batch.mm_token_modalities is not None`); a module's
            // own attribute (`self.vision_gate`) is configuration, its branch captured.
            finding(
                "engine/encoder.py",
                83,
                "GR201",
                "stall",
                &["GatedExperts.forward"],
            ),
            finding(
                "engine/encoder.py",
                86,
                "GR201",
                "capture",
                &["GatedExperts.forward"],
            ),
            // A part from the encoder components' package that a model outside it holds runs
            // with that model.
            finding(
                "engine/encoders/text.py",
                29,
                "GR104",
                "capture",
                &["PatchModel.forward", "PatchEmbed.forward"],
            ),
            // Experts whose class their layer imports inside `__init__`: captured through the
            // layer that holds them.
            finding(
                "engine/experts.py",
                9,
                "GR201",
                "capture",
                &["MoE.forward", "QuantExperts.forward"],
            ),
            // A decorator that wraps `forward` and calls the original keeps it reached; one that
            // replaces it with a dispatcher falling back to it does not (line 41: see the cold
            // list).
            finding(
                "engine/experts_dispatch.py",
                48,
                "GR201",
                "capture",
                &["SparseBlock.forward", "TimedExperts.forward"],
            ),
            // Submodules a layer builds from a class it picks, or through a factory indexing a
            // module's table of classes: the attention of a vision stack its model runs per
            // request runs on the host path; the MLPs are captured under the model's layers,
            // which it loops over with `zip`.
            finding(
                "engine/factories.py",
                13,
                "GR101",
                "stall",
                &["EagerAttention.forward"],
            ),
            finding(
                "engine/factories.py",
                18,
                "GR101",
                "stall",
                &["SdpaAttention.forward"],
            ),
            finding(
                "engine/factories.py",
                30,
                "GR101",
                "capture",
                &[
                    "FactoryModel.forward",
                    "FactoryLayer.forward",
                    "GatedMlp.forward"
                ],
            ),
            finding(
                "engine/factories.py",
                35,
                "GR101",
                "capture",
                &[
                    "FactoryModel.forward",
                    "FactoryLayer.forward",
                    "Fp8Mlp.forward"
                ],
            ),
            // The encoder a model builds is captured; the filterbank only the feature extractor
            // builds (lazily) runs on the host as it prepares a request (line 13: not reported).
            finding(
                "engine/features.py",
                34,
                "GR101",
                "capture",
                &["AudioModel.forward", "AudioEncoder.forward"],
            ),
            // A scheduler waiting on the event it recorded after copying the step's tokens to
            // pinned memory (line 24): a fence, not reported outside capture. The whole-device
            // synchronise after it stalls the step; those that time a step (lines 29, 32) do
            // not count.
            finding(
                "engine/fences.py",
                25,
                "GR107",
                "stall",
                &[
                    "OverlapScheduler.event_loop",
                    "OverlapScheduler.process_result"
                ],
            ),
            // A batch whose forward mode is neither idle nor decode (`if is_idle(): ... elif
            // is_decode(): ... else:`, or after `if is_decode_or_idle(): return ...`) extends:
            // eagerly.
            finding(
                "engine/forward_modes.py",
                15,
                "GR105",
                "stall",
                &["ModeAttention.forward"],
            ),
            finding(
                "engine/forward_modes.py",
                22,
                "GR105",
                "stall",
                &["ModeNorm.forward"],
            ),
            // A stage that prepares rotary tables through a configuration helper calling the
            // rotary embedding it is handed (`rotary_emb.forward(ids)`: a layer, not the
            // model): only the loop running the model every timestep runs every step.
            finding(
                "engine/freqs.py",
                32,
                "GR104",
                "stall",
                &["RotaryStage.forward"],
            ),
            finding(
                "engine/generation.py",
                29,
                "GR104",
                "stall",
                &["Generator._greedy", "Generator.finished"],
            ),
            // Metadata built once per batch size: the builder that stores under the size runs
            // in the warm-up (nothing at line 14); a method storing nothing runs every step.
            finding(
                "engine/graph_metadata.py",
                18,
                "GR101",
                "stall",
                &["GraphMetadata.init_replay", "GraphMetadata._note"],
            ),
            // A tower only an unreached `get_image_feature` runs: that call says the grid is on
            // the host (nothing at line 13); the pixels are on the device.
            finding(
                "engine/host_grids.py",
                14,
                "GR101",
                "stall",
                &["GridTower.forward"],
            ),
            // The same with the tower in a module of its own (nothing at line 17).
            finding(
                "engine/host_grids_tower.py",
                13,
                "GR101",
                "stall",
                &["PatchTower.forward"],
            ),
            // A head module built by the constructor, which nothing reaches, defined in another
            // module: the file is typed again with the project's module classes.
            // Nothing in `engine/grids.py`: the grid its model passes as a list is made a host
            // tensor, and the rows its helper unpacks from it are host data.
            finding(
                "engine/logits.py",
                17,
                "GR302",
                "stall",
                &["LogitsComputer.compute_logits"],
            ),
            // A batch that no CUDA graph runs (`if batch_info.use_cuda_graph: return ...`) runs
            // eagerly.
            finding(
                "engine/lora.py",
                12,
                "GR105",
                "stall",
                &["LoraLayer.forward"],
            ),
            // After `if mask is None: mask = torch.ones(n)`, the mask is the caller's or a host
            // one: it may live on the device.
            finding(
                "engine/lora.py",
                21,
                "GR105",
                "capture",
                &["ScaledLora.forward"],
            ),
            // After `if not metadata.extend_return_logprob: return ...`, only an extend batch
            // asking for its prompt's logprobs runs the rest: eagerly.
            finding(
                "engine/lora.py",
                29,
                "GR102",
                "stall",
                &["LogprobHead.forward"],
            ),
            // Nothing in `engine/media_state.py`: the mask `MediaLM.embed_ids` receives is
            // unpacked from what a base class's `gather` returns, which returns what the
            // runner's `gather` (another module) returns, a pinned host tensor; so its
            // `.sum().item()` (line 17) reads host memory, though `is_multimodal` is annotated
            // `torch.Tensor | None`.
            // Annotated `torch.LongTensor` and passed a device tensor: a size read on the host.
            // `frame_times` (line 22) is annotated `torch.Tensor`, but its caller passes a
            // schedule made in host memory: nothing is reported there.
            // `media_positions` (line 13) is annotated so too, but its only caller passes a row of
            // a host list: the call site wins again, and nothing is reported there. Nor in
            // `frame_count` (line 26), whose caller passes on its own host parameter, nor in
            // `last_frame` (line 34), which passes its host parameter on to itself.
            // `attention/npu_backend.py` serves a device without CUDA graphs: not reported.
            finding(
                "engine/media.py",
                18,
                "GR109",
                "stall",
                &["Scheduler.run", "Scheduler.media", "token_positions"],
            ),
            // A media item's attributes its `__getattr__` serves from the processor's outputs
            // are host data: the tower's reads of the grid (lines 27-28) and the model's read of
            // the sizes (line 47), also read from the dictionary itself (line 50), wait for
            // nothing; the pixels are on the device.
            finding(
                "engine/media_items.py",
                30,
                "GR105",
                "stall",
                &["GridVisionTower.forward"],
            ),
            // A media processor's data is host data: the rope index it hands a grid to reads it
            // without a sync (line 11 is no finding); the transport helper's test leaves device
            // tensors after it, whatever the processor passed.
            // Encoder outputs handed over in a dict and a speech model's `input_features` come
            // with the prompt: what they guard runs eagerly, once per request.
            finding(
                "engine/media_outputs.py",
                19,
                "GR101",
                "stall",
                &["OmniChatLM.forward"],
            ),
            finding(
                "engine/media_outputs.py",
                22,
                "GR101",
                "stall",
                &["OmniChatLM.forward"],
            ),
            finding(
                "engine/media_outputs.py",
                25,
                "GR101",
                "stall",
                &["OmniChatLM.forward"],
            ),
            finding(
                "engine/media_outputs.py",
                27,
                "GR101",
                "capture",
                &["OmniChatLM.forward"],
            ),
            finding(
                "engine/media_processor.py",
                17,
                "GR103",
                "stall",
                &[
                    "MediaScheduler.run",
                    "VideoProcessor.get_mm_data",
                    "transport"
                ],
            ),
            // A host list behind a property of an attribute's class: the property is read, not
            // called, so the default scope's second pass skips its body and keeps its return.
            finding(
                "engine/model.py",
                24,
                "GR302",
                "capture",
                &["Model.forward"],
            ),
            // Reported where the code runs: the generated module, not the template its header
            // names (`modular_tiles.py`, see the cold list).
            finding(
                "engine/modeling_tiles.py",
                11,
                "GR101",
                "capture",
                &["TileCounter.forward"],
            ),
            // A step the scheduler's own loop and a mode's loop (a mixin in another module) both
            // call every iteration: shown under the class's own loop.
            finding(
                "engine/modes.py",
                19,
                "GR102",
                "stall",
                &["ModeScheduler.event_loop", "ModeScheduler.process_result"],
            ),
            // Layers run through custom operators: `torch.ops.engine.<name>(...)` runs the
            // function registered under the name, called directly or through a field holding
            // the operator a method picked.
            finding(
                "engine/ops.py",
                46,
                "GR201",
                "capture",
                &[
                    "RoutedExperts.forward",
                    "_routed_experts",
                    "RoutedExperts.forward_impl",
                ],
            ),
            finding(
                "engine/ops.py",
                69,
                "GR201",
                "capture",
                &[
                    "SharedExperts.forward",
                    "_shared_experts",
                    "SharedExperts.shared_impl",
                ],
            ),
            // A private method one class of the project defines, called on a module a lookup
            // returns: the call runs it, inside the graph.
            finding(
                "engine/ops.py",
                81,
                "GR201",
                "capture",
                &[
                    "PlannedExperts.forward",
                    "_planned_experts",
                    "RowPlanner._plan_rows",
                ],
            ),
            // Every call gives `gather_pages` and `mask_rows` what their fallbacks compute
            // (lines 16 and 22: see the cold list); one call leaves out `pool`'s. A `None` that
            // selects a path (`scale`) stays open.
            finding(
                "engine/optional_args.py",
                28,
                "GR101",
                "capture",
                &["PagedMixer.forward", "pool"],
            ),
            finding(
                "engine/optional_args.py",
                35,
                "GR101",
                "capture",
                &["PagedMixer.forward", "scaled"],
            ),
            // Both calls of the wrapper handing `full` on give it (line 53: see the cold list);
            // the other wrapper's call leaves it out.
            finding(
                "engine/optional_args.py",
                61,
                "GR101",
                "capture",
                &[
                    "MaskedDenoiser.forward",
                    "MaskedDenoiser.pooled_masks",
                    "pooled_mask",
                ],
            ),
            // Arguments handed on in a dict (`self.tower(**options)`): the grid one model makes
            // on the host reaches `grid` as a host tensor, but the other model rebinds its dict
            // (`options, _ = ...`) before the call, so not every caller says `grid` is on the
            // host: its read is reported, as is the read of the device pixels.
            finding(
                "engine/options.py",
                12,
                "GR102",
                "capture",
                &["OptionsModel.forward", "OptionsTower.forward"],
            ),
            finding(
                "engine/options.py",
                13,
                "GR101",
                "capture",
                &["OptionsModel.forward", "OptionsTower.forward"],
            ),
            // A padding helper every per-step call asks for host memory (`device="cpu"`) makes
            // no upload (line 11 is no finding at all, nor is a local bound to `"cpu"`, line
            // 26); the other helper's callers disagree.
            finding(
                "engine/padding.py",
                19,
                "GR301",
                "stall",
                &["output_tokens", "pad_ids"],
            ),
            // A page allocator's checks behind a debug switch, bound to a local and handed to a
            // kernel wrapper, never run as shipped (line 13 is in the cold list, line 28 is no
            // finding at all); the read after them does, every step.
            finding(
                "engine/page_checks.py",
                30,
                "GR105",
                "stall",
                &["PageScheduler.run", "PageAllocator.free"],
            ),
            // Penalizers built by a dict comprehension from the classes given, read through
            // `.values()`: each one's `apply` runs every step.
            finding(
                "engine/penalties.py",
                23,
                "GR202",
                "stall",
                &[
                    "Orchestrator.apply",
                    "Penalizer.apply",
                    "MinTokensPenalizer._apply"
                ],
            ),
            // A `list` subclass calling each processor in turn holds what is appended to it.
            // The batch's class annotates `num_scheduled` as a NumPy array (line 13 is not
            // reported, nor line 28, in an override whose parameter the overridden method
            // annotates); `seq_lens` is a tensor. Line 16's helper from another module, given
            // host lengths, returns host lengths: its `.tolist()` is not reported.
            finding("engine/plans.py", 14, "GR101", "stall", &["plan_step"]),
            // engine/segments.py: `_plan`'s two `.tolist()` read host lengths, passed through
            // `plan(*args, **kwargs)` as slices, a dtype conversion and locals holding them,
            // past a clause that binds `kv_lens` to a device tensor and returns: not reported.
            finding(
                "engine/processors.py",
                14,
                "GR102",
                "stall",
                &[
                    "sample_step",
                    "ProcessorList.__call__",
                    "NGramBlocker.__call__"
                ],
            ),
            finding(
                "engine/processors.py",
                15,
                "GR302",
                "stall",
                &[
                    "sample_step",
                    "ProcessorList.__call__",
                    "NGramBlocker.__call__"
                ],
            ),
            // A memoised method's tuple local: the lengths it holds stay on the host (nothing at
            // line 37), also in the file's second visit; the inverse permutation of its host
            // indices indexes the device tensor, an upload.
            finding(
                "engine/rope_cache.py",
                39,
                "GR302",
                "stall",
                &["RopeTower.forward"]
            ),
            // The decorator's wrapper runs on every call of the rotary forward.
            finding(
                "engine/rotary.py",
                12,
                "GR104",
                "capture",
                &[
                    "Model.forward",
                    "RotaryEmbedding.forward",
                    "dynamic_rope_update.wrapper"
                ],
            ),
            // A dataclass's property that copies its device lengths to the host, read in the
            // runner's forward: the read is the sync. The runner's own lazily made copy lasts
            // (line 26), and a property that reads metadata (line 24) costs nothing.
            finding(
                "engine/runner.py",
                23,
                "GR103",
                "stall",
                &["Scheduler.run", "ModelRunner.forward"],
            ),
            // Sampling and the stop check run in the scheduler's loop, every step.
            finding(
                "engine/runner.py",
                33,
                "GR101",
                "stall",
                &["Scheduler.run", "ModelRunner.sample"],
            ),
            finding(
                "engine/runner.py",
                60,
                "GR104",
                "stall",
                &["Scheduler.run", "Scheduler.stopped"],
            ),
            // Annotated `bool`, passed a device tensor by the loop: the call site wins.
            finding(
                "engine/runner.py",
                66,
                "GR104",
                "stall",
                &["Scheduler.run", "Scheduler.has_unfinished"],
            ),
            // In the driving loop itself, though the file is checked again in the second pass.
            finding("engine/runner.py", 81, "GR101", "stall", &["Scheduler.run"],),
            finding(
                "engine/runner.py",
                86,
                "GR102",
                "stall",
                &["Scheduler.run", "Scheduler.media"],
            ),
            // `init_*` is set-up, but not when a later word names the step's requests.
            finding(
                "engine/runner.py",
                93,
                "GR105",
                "stall",
                &["Scheduler.run", "Scheduler.init_request"],
            ),
            // `init_*` called by per-step work with requests (`add_requests`) runs every step.
            finding(
                "engine/runner.py",
                100,
                "GR101",
                "stall",
                &[
                    "Scheduler.run",
                    "Scheduler.add_requests",
                    "Scheduler.init_slots"
                ],
            ),
            // Helpers every call passes `.tolist()` of a grid: their branches for a tensor
            // (lines 11 and 16) never run. The one a device tensor reaches syncs there.
            finding(
                "engine/sizes.py",
                22,
                "GR102",
                "stall",
                &["SizedTower.forward", "tensor_rows"],
            ),
            finding(
                "engine/sizes.py",
                28,
                "GR103",
                "stall",
                &["SizedTower.forward"]
            ),
            // A host scalar written into one element of a 1-D buffer (line 19); into a row of a
            // 3-D buffer (line 17) it is a fill, no copy. The buffers' ranks come from a
            // constructor the step never reaches, which the second visit of the file skips.
            // Nothing in `counts` (line 39): one caller passes a host tensor, the other a value
            // of a type nothing says.
            finding(
                "engine/slots.py",
                19,
                "GR303",
                "stall",
                &["SlotRunner.step", "SlotStates.reset"],
            ),
            // A module forward that only uncaptured code calls (a vision tower run per request
            // through a callback table) runs on the host path: its syncs are reported there, and
            // the pinned allocation (line 19), illegal only while capturing, is not.
            // A guess by name (a language model of a class nothing says) is followed on the
            // host path, not inside the graph: the runner's call of every model's
            // `embed_tokens` reaches this one; the speech model's captured forward does not.
            // A test's stand-in defining `embed_tokens` (engine/tests) is no candidate.
            finding(
                "engine/speech_lm.py",
                34,
                "GR101",
                "stall",
                &["EmbedRunner.run", "ImageTextModel.embed_tokens"],
            ),
            // The stage that runs the model is a step of its own; the stage base's `__call__`,
            // which dispatches to every stage's `forward`, is no step for that (see the cold list).
            finding(
                "engine/stages.py",
                23,
                "GR105",
                "stall",
                &["GenerateStage.forward"]
            ),
            // The switch a caller turns on (`fast=True`); the check no caller turns on, the
            // output no caller passes and the capture-time branch only set-up takes are not
            // reached (see the cold list).
            finding(
                "engine/switches.py",
                24,
                "GR101",
                "capture",
                &["KernelLayer.forward", "run_kernel"],
            ),
            // The switch a caller turns on through another function's `**kwargs`.
            finding(
                "engine/switches.py",
                38,
                "GR104",
                "capture",
                &["KernelLayer.forward", "run_wrapped", "_run_checked"],
            ),
            // The mode no caller sets (`"auto"`) is not `"decode"`: that branch runs; the block
            // count no caller gives (`-1 > 0`) and the mode no caller asks for do not.
            finding(
                "engine/switches.py",
                51,
                "GR101",
                "capture",
                &["KernelLayer.forward", "plan_blocks"],
            ),
            finding(
                "engine/tower.py",
                17,
                "GR102",
                "stall",
                &["VisionTower.forward"],
            ),
            // A module its model sets on a module it holds (`self.encoders.audio`), called per
            // request through the same table: on the host path like the vision tower. The
            // speech encoder, called only in an eager block, is neither captured nor an entry.
            // (The splits by the sizes read are captured-only: eager code runs any shape.)
            finding(
                "engine/tower.py",
                25,
                "GR102",
                "stall",
                &["AudioTower.forward"],
            ),
            // A score read from what another module's method returns on the device; the id
            // read beside it comes from host buffers the same way, and is not reported.
            finding(
                "engine/transfer.py",
                21,
                "GR101",
                "stall",
                &["TransferWorker.run", "TransferQueue.pop"],
            ),
            // The host ids another module's constructor makes (`device = "cpu"`) are read
            // through an annotated parameter without a sync, and through `first_id`'s
            // unannotated one, which its call site passes the metadata buffers; the device
            // scores are not.
            finding(
                "engine/transfer.py",
                24,
                "GR101",
                "stall",
                &[
                    "TransferWorker.run",
                    "TransferQueue.pop",
                    "TransferQueue.gate"
                ],
            ),
            // A fallback every captured call skips (`if metadata is None: metadata = ...`,
            // the metadata the capture region's call passes, handed on by the captured
            // function): it runs, and what it calls runs, for the callers that leave the
            // argument out, outside the graph.
            finding(
                "engine/vision_graph.py",
                14,
                "GR101",
                "stall",
                &["PatchTower.forward_graphed", "PatchEncoder.forward"],
            ),
            finding(
                "engine/vision_graph.py",
                18,
                "GR101",
                "stall",
                &[
                    "PatchTower.forward_graphed",
                    "PatchEncoder.forward",
                    "PatchEncoder.prepare_metadata"
                ],
            ),
            // A `None` that turns a setting off is no fallback: what runs under it is captured.
            finding(
                "engine/vision_graph.py",
                40,
                "GR101",
                "capture",
                &["PatchTower.forward_graphed", "scale_patches"],
            ),
            // An abstract base's method that a subclass a CUDA engine builds inherits. Its
            // sibling `WrapperBase.update` is overridden by every such subclass (the other serves
            // the CPU), so nothing reaches it.
            finding(
                "engine/wrappers.py",
                34,
                "GR101",
                "capture",
                &["Adapted.forward", "PlannerBase.plan"],
            ),
        ]
    );
}

#[test]
fn set_up_weight_loading_and_harnesses_are_reported_only_with_scope_all() {
    let all = check(Scope::All);
    let cold: Vec<(&str, u32)> = all
        .iter()
        .filter(|f| f.3 == "unknown")
        .map(|f| (f.0.as_str(), f.1))
        .collect();
    assert_eq!(
        cold,
        vec![
            // Returned beside the kernels, at a position nothing unpacks and calls.
            ("engine/attention/kernels.py", 26),
            // Memoised (`@functools.lru_cache`): once per size, in the warm-up.
            ("engine/attention/kernels.py", 44),
            // The property's own copy: its reads are reported where they happen (the property
            // is read, not called, so nothing reaches it).
            ("engine/batch.py", 26),
            // An eager break of a breakable graph (`@eager_on_graph`).
            ("engine/breakable.py", 20),
            // Once per request: a stage before the denoising loop running the image encoder.
            ("engine/conditioning.py", 23),
            // Once per request: after the denoising loop, which a router runs through a stage's
            // `forward`, and a stage extending a base stage that runs no model.
            ("engine/denoise.py", 21),
            ("engine/denoise.py", 33),
            // A class built only on an XPU, a device without CUDA graphs: no instance exists
            // on a CUDA GPU, so the call through its base class never runs its override.
            ("engine/dispatch.py", 29),
            // Once per request: a pipeline's text encoder its loader builds on its own, and the
            // inner model it holds.
            ("engine/encoders/text.py", 12),
            // An experts loop a decorator's dispatcher runs only when a setting selects it.
            ("engine/experts_dispatch.py", 41),
            // The filterbank module only a feature extractor builds, and the transform module
            // only an engine's own image processor builds.
            ("engine/features.py", 13),
            ("engine/features.py", 48),
            // Once per request, before the loop: the helper runs the rotary embedding it is
            // handed, not the model.
            ("engine/freqs.py", 13),
            ("engine/freqs.py", 25),
            ("engine/generation.py", 15),
            // Built once per batch size, by a method storing under the size.
            ("engine/graph_metadata.py", 14),
            // A model method only the engine's callback table runs: nothing reaches it.
            ("engine/host_grids.py", 25),
            ("engine/host_grids_model.py", 18),
            // A template other code is generated from: nothing imports it.
            ("engine/modular_tiles.py", 10),
            // A public method the project defines once, called on a module a lookup returns:
            // some library object's method of that name may be what runs, so the graph search
            // does not follow the guess.
            ("engine/ops.py", 86),
            // Fallbacks no call takes: every call gives the argument they compute (a wrapper's
            // calls give what it hands on).
            ("engine/optional_args.py", 16),
            ("engine/optional_args.py", 22),
            ("engine/optional_args.py", 53),
            // A check whose switch the caller passes from a debug switch: off as shipped.
            ("engine/page_checks.py", 13),
            // Called only under a guard its body makes false (a buffer put back in float32).
            // An override the call's arguments do not fit (`apply(self, x, None)` cannot run
            // the experts' `apply`, which needs the routing too).
            ("engine/quant.py", 25),
            ("engine/quant.py", 26),
            ("engine/rotary.py", 29),
            ("engine/runner.py", 43),
            ("engine/runner.py", 53),
            // Idle housekeeping (`on_idle`): no step runs meanwhile.
            ("engine/runner.py", 104),
            ("engine/runner.py", 108),
            // An HTTP handler: its awaited `client.forward(request)` is no model run.
            ("engine/server.py", 11),
            // A `transformers` model nothing builds running its own inner model: the model at
            // work, no step the engine drives.
            ("engine/speech_head.py", 18),
            // A stage after the steps: the base's `__call__` running its `forward` is the
            // object's call protocol, no step.
            ("engine/stages.py", 29),
            // Branches no call in the project takes: `if check:` and `if out is not None:` with
            // every call leaving the defaults, `if in_capture:` passed `True` only by set-up.
            ("engine/switches.py", 12),
            ("engine/switches.py", 19),
            // Passed on through `**kwargs` by a function no caller gives `check=` to.
            ("engine/switches.py", 35),
            // Compared with numbers and names no caller gives: `block_num > 0` with `-1`,
            // `mode == "prefill"` with `"auto"`.
            ("engine/switches.py", 45),
            ("engine/switches.py", 48),
            ("engine/switches.py", 69),
            // The same in a conditional expression (`x.max().item() if in_capture else ...`).
            ("engine/switches.py", 74),
            // A flag named for capture, handed on by a wrapper that receives it: `False` per
            // step by its name.
            ("engine/switches.py", 93),
            // `isinstance(indices, list) or ...` with no caller passing `indices`: `None` is
            // neither.
            ("engine/switches.py", 104),
            ("engine/tests/test_runner.py", 12),
            ("engine/tests/test_runner.py", 13),
            // A speech encoder invoked only in an eager block (`with gpu_sync_allowed():`).
            ("engine/tower.py", 30),
            // Training and offline tooling: a matcher only a loss module runs, the loss, a
            // model made for pretraining, a trainer's evaluation loop and a quantisation's
            // calibration all run models, but never in an inference step.
            ("engine/training.py", 12),
            ("engine/training.py", 21),
            ("engine/training.py", 35),
            ("engine/training.py", 46),
            ("engine/training.py", 52),
            // An inference pipeline's stages run once per input: `preprocess`, the model run
            // in `_forward` with what it does around it, `postprocess`.
            ("engine/training.py", 63),
            ("engine/training.py", 67),
            ("engine/training.py", 71),
            // An abstract base's method every subclass a CUDA engine can build overrides.
            ("engine/wrappers.py", 13),
            // Nothing in engine/unfinished.py: what follows an unconditional `raise` never runs.
        ]
    );
}

#[test]
fn a_library_captures_only_the_models_its_generation_loop_decodes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("resources/test/projects");
    assert_eq!(
        check_project(&root, "generative", Scope::Hot),
        vec![
            // A block the generative model holds (not seen called: its `ModuleList` is run by
            // no resolved call) stays a part of a captured model.
            finding(
                "generative/models.py",
                19,
                "GR101",
                "capture",
                &["Block.forward"]
            ),
            finding(
                "generative/models.py",
                30,
                "GR101",
                "capture",
                &["CausalLM.forward"]
            ),
            // A model that declares it cannot be compiled whole is decoded eagerly.
            finding(
                "generative/models.py",
                37,
                "GR101",
                "stall",
                &["EagerLM.forward"]
            ),
            // A model no generation loop decodes, beside generative ones in its module (maybe
            // their part), runs eagerly, once per call; one in a module of its own
            // (`detector.py`) is no entry at all.
            finding(
                "generative/models.py",
                42,
                "GR101",
                "stall",
                &["Classifier.forward"]
            ),
            // Nor does a module only a training loss holds. A task model beside the causal LM,
            // wrapping its blocks (`CausalLMForSequenceClassification`), is no entry, nor is the
            // head only it holds.
            finding(
                "generative/models.py",
                47,
                "GR101",
                "stall",
                &["Matcher.forward"]
            ),
        ]
    );
}

#[test]
fn a_step_marked_by_hand_is_an_entry_not_a_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("resources/test/projects");
    assert_eq!(
        check_project(&root, "steps_only", Scope::Hot),
        vec![finding(
            "steps_only/app.py",
            8,
            "GR101",
            "stall",
            &["decode_step", "_read"],
        )]
    );
}

/// `--show-scope` names the classes only devices without CUDA graphs build: their methods are
/// not followed, and a user should see why.
#[test]
fn the_scope_names_classes_only_other_platforms_build() {
    let settings = Settings::default();
    let hot_path = HotPathSettings::default();
    let mut options = Options::new(std::slice::from_ref(&settings), &hot_path, Scope::Hot);
    options.show_scope = true;
    let prefix = format!("{}/", project_dir().display());
    let classes: Vec<(String, String)> = run(&project_dir(), "engine", &options)
        .scope
        .expect("a scope report")
        .platform_only
        .into_iter()
        .map(|class| {
            (
                class.path.trim_start_matches(&prefix).to_string(),
                class.class,
            )
        })
        .collect();
    assert_eq!(
        classes,
        vec![(
            "engine/dispatch.py".to_string(),
            "BatchedPrepareFinalize".to_string()
        )]
    );
}
