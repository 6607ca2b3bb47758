//! What a function's name says of when it runs: set-up that runs once (constructors, loading,
//! warm-up, capture, profiling, tear-down), training that never runs in an inference step, and
//! per-step work on the step's requests. The per-step search (`super::steps`) and the entries
//! read these names; only whole words count, in `snake_case` or `CamelCase` (and set-up done
//! again: `recapture`, `reload`).

/// First words of a name that start set-up (`init_weights`, `from_pretrained`) unless a later
/// word names per-step work (`init_forward_metadata`, `ForwardBatch.init_new`,
/// `init_prefill_positions`, a request's `init_from_prompt`).
const SET_UP_FIRST_WORDS: &[&str] = &["init", "from", "configure", "register"];

/// Words that name per-step work: the step itself, and the batch, requests and prompts it
/// takes in.
const STEP_WORDS: &[&str] = &[
    "forward", "step", "metadata", "replay", "batch", "decode", "extend", "sample", "verify",
    "new", "prefill", "request", "req", "prompt",
];

/// Words in a function's name that say it runs once, not every step, or only while no step
/// runs (`on_idle` housekeeping: leak checks, metrics, sleeping).
const SET_UP_WORDS: &[&str] = &[
    "idle",
    "warmup",
    "tune",
    "tuning",
    "autotune",
    "capture",
    "profile",
    "profiling",
    "dummy",
    "initialize",
    "setup",
    "load",
    "loading",
    "shutdown",
    "teardown",
    "destroy",
    "compile",
    "benchmark",
    "bench",
    "test",
    "tests",
    // Offline tooling: calibrating a quantisation, exporting a model (`torch.export`, ONNX).
    "calibrate",
    "calibration",
    "export",
];

/// Whether a function, by its qualified name inside its module, is set-up that runs once rather
/// than every step: constructors and what they nest, loading, warm-up, capture, profiling
/// (`__init__`, `Runner.load_weights`, `_dummy_run`, `capture_model`).
pub fn runs_once(qualname: &str) -> bool {
    is_set_up(qualname)
}

/// Whether a function's name says it is set-up or a measurement: `__init__`, `load_weights`,
/// `_dummy_run`, `capture_model`, `warmup`, `warm_up`, `profile_run`, an autotuner's
/// `_tune_workload`, a graph runner's `_create_graph`.
pub(super) fn is_set_up(qualname: &str) -> bool {
    // A function nested in set-up is set-up too (`_dummy_run.run_once`).
    qualname.split('.').any(is_set_up_name) || is_training_qualname(qualname)
}

/// Whether a function or a class it is nested in is named for training (see
/// [`is_training_name`]).
pub(super) fn is_training_qualname(qualname: &str) -> bool {
    qualname.split('.').any(is_training_name)
}

/// Whether a name says it trains rather than serves: training never runs in an inference
/// step. A word `train`, `training`, `trainer` or `pretraining`, in `snake_case` or
/// `CamelCase` (`Trainer.evaluation_loop`, `BertForPreTraining.forward`, `training_step`), or
/// a class named for a training loss (`SpectrogramLoss`, `ImageLoss`).
pub(super) fn is_training_name(name: &str) -> bool {
    let mut last = "";
    let training = any_camel_word(name, |word| {
        last = word;
        is_one_of(
            word,
            &["train", "training", "trainer", "trainers", "pretraining"],
        )
    });
    let is_class = name.starts_with(|c: char| c.is_ascii_uppercase());
    training || (is_class && last == "Loss")
}

/// Whether `found` holds for a word of a `snake_case` or `CamelCase` name (`ForPreTraining`:
/// `For`, `Pre`, `Training`; `HTTPServer`: `HTTPServer`), tried in order until it does.
/// Without allocating: this runs for every function a search reaches.
fn any_camel_word<'n>(name: &'n str, mut found: impl FnMut(&'n str) -> bool) -> bool {
    for word in name.split('_').filter(|w| !w.is_empty()) {
        let bytes = word.as_bytes();
        let mut start = 0;
        for i in 1..bytes.len() {
            if bytes[i].is_ascii_uppercase() && bytes[i - 1].is_ascii_lowercase() {
                if found(&word[start..i]) {
                    return true;
                }
                start = i;
            }
        }
        if found(&word[start..]) {
            return true;
        }
    }
    false
}

fn is_set_up_name(name: &str) -> bool {
    set_up_name(name).is_some()
}

/// How a name says it is set-up.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum SetUp {
    /// A word of the name says so (`load_weights`, `capture_model`, `__init__`).
    Named,
    /// Only its first word (`init_canvas`, `from_config`): set-up when called from set-up or
    /// from code that says nothing, but not when per-step work with requests calls it.
    FirstWord,
}

pub(super) fn set_up_name(name: &str) -> Option<SetUp> {
    if matches!(name, "__init__" | "__post_init__" | "__new__" | "__del__") {
        return Some(SetUp::Named);
    }
    // Without allocating: this runs for every function a search reaches.
    let is = is_one_of;
    let mut words = name.split('_').filter(|w| !w.is_empty());
    let first = words.next()?;
    let mut previous = first;
    let mut set_up = is_set_up_word(first);
    let mut step = is(first, STEP_WORDS);
    for word in words {
        set_up |= is_set_up_word(word)
            || (previous.eq_ignore_ascii_case("warm") || previous.eq_ignore_ascii_case("set"))
                && word.eq_ignore_ascii_case("up")
            // Making a graph is capturing one (`_create_graph`, `build_graphs`).
            || is(previous, &["create", "build", "make"]) && is(word, &["graph", "graphs"]);
        step |= is(word, STEP_WORDS);
        previous = word;
    }
    if set_up {
        Some(SetUp::Named)
    } else {
        (is(first, SET_UP_FIRST_WORDS) && !step).then_some(SetUp::FirstWord)
    }
}

/// Whether a word of a name is one of [`SET_UP_WORDS`], or set-up done again (`recapture`,
/// `reload`, `reinitialize`, `recompile`: graphs captured anew after a resize, weights
/// reloaded).
fn is_set_up_word(word: &str) -> bool {
    let again = word
        .get(..2)
        .filter(|re| re.eq_ignore_ascii_case("re"))
        .map(|_| &word[2..]);
    is_one_of(word, SET_UP_WORDS)
        || again.is_some_and(|rest| is_one_of(rest, &["capture", "load", "initialize", "compile"]))
}

/// Words that name the requests a step takes in, in the name of a function that works on them
/// (`add_request`, `_finish_prefills`, `get_new_batch_prefill`).
const REQUEST_WORDS: &[&str] = &["request", "req", "prefill", "prompt", "batch"];

/// Whether a name says the function works on the step's requests: a word of it, or the word
/// without a plural `s`, is one of [`REQUEST_WORDS`].
pub(super) fn is_request_name(name: &str) -> bool {
    name.split('_').filter(|w| !w.is_empty()).any(|word| {
        let singular = word.strip_suffix('s').unwrap_or(word);
        is_one_of(word, REQUEST_WORDS) || is_one_of(singular, REQUEST_WORDS)
    })
}

/// Whether a word of a name is one of `list`, ignoring case.
fn is_one_of(word: &str, list: &[&str]) -> bool {
    list.iter().any(|w| w.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_up_names() {
        for name in [
            "__init__",
            "Runner.load_weights",
            "GPUModelRunner._dummy_run",
            "CudaGraphRunner.capture",
            "capture_one_batch_size",
            "warmup",
            "Runner._warm_up",
            "profile_run",
            "initialize_kv_cache",
            "set_up_buffers",
            "BaseRunner._dummy_run.run_once",
            "ModelRunner.init_weight_updater",
            "Config.from_pretrained",
            "process_weights_after_loading",
            "_tune_workload",
            "install.tuning_forward",
            "Scheduler.on_idle",
            "ViTCudaGraphRunner._create_graph",
            "Runner.build_graphs",
            "CalibrationContext.calibrate",
            "HfExporter.export_for_generation",
            "Trainer.evaluation_loop",
            "FlavaForPreTraining.forward",
            "Model.training_step",
            "SpeechT5SpectrogramLoss.forward",
            "ModelRunner._recapture_elastic_cuda_graphs",
            "Worker.reload_weights",
            "_teardown_borrow_pool",
            "Communicator.destroy",
        ] {
            assert!(is_set_up(name), "{name}");
        }
        for name in [
            "execute_model",
            "Runner.forward_decode",
            "init_forward_metadata",
            "init_forward_metadata_replay_cuda_graph",
            "ForwardBatch.init_new",
            "RopeState.init_prefill_positions",
            "WatermarkState.init_from_prompt",
            "prepare_for_decode",
            "sample",
            "uploaded",
            "graph_create_stats",
            "Runner.replay_graph",
            "LossScaler.update",
            "compute_input_ce_loss",
            "Strainer.apply",
            "TrainedHead.forward",
            "Sampler.reset_state",
            "RequestQueue.retest_ready",
        ] {
            assert!(!is_set_up(name), "{name}");
        }
    }

    #[test]
    fn request_names() {
        for name in [
            "add_request",
            "_finish_prefills",
            "_get_new_batch_prefill_raw",
            "reqs",
        ] {
            assert!(is_request_name(name), "{name}");
        }
        for name in [
            "forward",
            "_compute_expert_location_metadata",
            "requested_x",
            "press",
        ] {
            assert!(!is_request_name(name), "{name}");
        }
        assert!(set_up_name("init_canvas") == Some(SetUp::FirstWord));
        assert!(set_up_name("init_weights_loading") == Some(SetUp::Named));
    }
}
