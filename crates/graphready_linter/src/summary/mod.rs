//! What one module tells the project-wide analysis: its functions, classes, imports, the calls
//! each function makes, and the capture-relevant facts found in it (capture sites, markers,
//! compiled and graphed callables, graph replays).

pub(crate) mod builder;
mod constants;
mod types;

use crate::semantic::Ty;
pub use constants::{Const, ParamBlock, ParamTest};
use rustc_hash::FxHashMap;
pub use types::{Param, PathRoot, PathStep, TypePath, TypeRef};

/// A reference to a class or function as written at the use site.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ref {
    /// A name defined in this module, by its qualified name inside the module (`Foo`, `Foo.bar`).
    Local(String),
    /// A dotted name through an import (`pkg.layers.MLP`).
    Qualified(String),
}

/// What a call resolves to, before the project index is known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallTarget {
    /// A function or class by reference; calling a class instance means its `forward`.
    Function(Ref),
    /// `self.method()` / `cls.method()`, looked up in the class and its bases.
    SelfMethod { class: String, method: String },
    /// `super().method()`, looked up in the bases of the class.
    Super { class: String, method: String },
    /// A method of an instance whose class is known (`self.mlp(x)` is `forward`).
    InstanceMethod { class: Ref, method: String },
    /// A method of a value whose type the index computes (`forward_batch.attn_backend.init(..)`).
    Method { receiver: TypePath, method: String },
    /// Calling a value whose type the index computes: its `forward` or `__call__`.
    Invoke { receiver: TypePath },
    /// Calling what a call of the referenced function returns, at a position inside the
    /// returned tuples (`fn = make_fn(); fn(x)` has an empty path; `(a, b), c = make_fns()`
    /// gives `b` the path `[0, 1]`).
    Returned { function: Ref, path: Box<[u8]> },
}

impl CallTarget {
    /// What calling the element at `path` inside this target's value runs: for a call's
    /// result, the element of what the call returns (`None` for anything else).
    pub fn element(&self, path: &[u8]) -> Option<CallTarget> {
        let CallTarget::Returned {
            function,
            path: inner,
        } = self
        else {
            return None;
        };
        let mut full = inner.to_vec();
        full.extend_from_slice(path);
        Some(CallTarget::Returned {
            function: function.clone(),
            path: full.into_boxed_slice(),
        })
    }

    /// The name of the function or method called: `forward` for `self.mlp.forward(x)`,
    /// `helper` for `pkg.helper(x)`.
    pub fn method_name(&self) -> &str {
        match self {
            CallTarget::Function(Ref::Local(name) | Ref::Qualified(name))
            | CallTarget::Returned {
                function: Ref::Local(name) | Ref::Qualified(name),
                ..
            } => name
                .rsplit_once('.')
                .map_or(name.as_str(), |(_, last)| last),
            CallTarget::SelfMethod { method, .. }
            | CallTarget::Super { method, .. }
            | CallTarget::InstanceMethod { method, .. }
            | CallTarget::Method { method, .. } => method,
            CallTarget::Invoke { .. } => "forward",
        }
    }
}

#[derive(Debug, Clone)]
pub struct CallSite {
    pub target: CallTarget,
    /// Where the call starts in the module's source: phase 3 looks up what it returns by it.
    pub offset: u32,
    /// Made inside a `for` or `while` body: it runs once per iteration.
    pub in_loop: bool,
    /// The call looks like a run of a model (`x.forward(...)`, `self.model(...)`): the index
    /// decides whether it is one by what it resolves to (see [`FunctionSummary::runs_model`]).
    pub model_run: Option<ModelRun>,
    /// Made where the code handles a batch's prefill work (`if attn_metadata.num_prefills > 0:`,
    /// see `semantic::prefill`): outside a decode graph, even in a captured function.
    pub prefill: bool,
    /// What constant arguments decide here, for the few calls where there is something: see
    /// [`SiteConstants`].
    pub constants: Option<Box<SiteConstants>>,
    /// The arguments known to be device tensors at this call.
    pub tensor_args: Vec<ArgKey>,
    /// The other arguments with their types: host values (numbers, lists, arrays, tensors in
    /// host memory), and [`Ty::Unknown`](crate::semantic::Ty::Unknown) for the rest.
    pub other_args: Box<[(ArgKey, crate::semantic::Ty)]>,
    /// The call's splats (`*args`, `**kwargs`), if any.
    pub splat: Splat,
    /// Arguments that are the project's functions (or locals holding them): a callee that
    /// calls the parameter receiving one runs it (`_upad_input(q, k, unpad_fn)`).
    pub function_args: Box<[(ArgKey, Box<[CallTarget]>)]>,
    /// Arguments that are the caller's own parameters, as received (`grid_thw` passed on): what
    /// the caller's callers pass decides their type here too.
    pub param_args: Box<[(ArgKey, Box<str>)]>,
    /// Arguments whose type the index can compute (`self.metadata_buffers`, an annotated
    /// local): the classes the callee's unannotated parameters receive.
    pub typed_args: Box<[(ArgKey, TypePath)]>,
    /// Arguments of unknown type unpacked from another call's result (`embeds, mask =
    /// self.state.gather(batch)`, then `f(mask)`): that call's offset and the position, for
    /// what the index learns the call returns.
    pub unpacked_args: Box<[(ArgKey, u32, u8)]>,
}

/// Where a call that looks like a run of a model is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelRun {
    /// Outside loops: once per call of the function.
    Once,
    /// Inside a `for` body: the function's own loop (speculative drafts, timesteps).
    InLoop,
    /// Inside a `while` body: a decode loop that runs until the sequences finish.
    UntilDone,
}

impl ModelRun {
    /// What the run says of its function, as [`FunctionSummary::runs_model`],
    /// [`FunctionSummary::runs_model_in_loop`] and [`FunctionSummary::runs_model_until_done`].
    pub fn flags(self) -> (bool, bool, bool) {
        match self {
            ModelRun::Once => (true, false, false),
            ModelRun::InLoop => (false, true, false),
            ModelRun::UntilDone => (false, true, true),
        }
    }
}

/// The literals a call passes and the tests of its caller's parameters it is made under (see
/// `hot_path::constants`).
#[derive(Debug, Clone, Default)]
pub struct SiteConstants {
    /// Arguments that are literals, switches off as shipped (`False`) or devices naming the
    /// host (`"cpu"`).
    pub args: Box<[(ArgKey, Const)]>,
    /// Tests of the caller's own parameters that hold wherever this call is made (`if check:`
    /// around it).
    pub requires: Box<[(Box<str>, ParamTest)]>,
}

/// How a call splats its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Splat {
    #[default]
    None,
    /// `*args` only: the positions after it are not known; every keyword is written out.
    Positional,
    /// The caller's own variadic keyword parameter passed on (`f(q, **kwargs)` in
    /// `def g(q, **kwargs)`), and no `*args`: the callee's parameters it may fill are those
    /// the caller's callers name.
    OwnKwargs,
    /// Any other mapping splatted (`**options`), maybe beside `*args`.
    Mapping,
}

impl CallSite {
    /// Whether a splat hides which parameter receives what.
    pub fn opaque(&self) -> bool {
        self.splat != Splat::None
    }

    /// The literals the call passes (see [`SiteConstants::args`]).
    pub fn const_args(&self) -> &[(ArgKey, Const)] {
        self.constants.as_deref().map_or(&[], |c| &c.args)
    }

    /// The tests of the caller's parameters that hold wherever this call is made.
    pub fn requires(&self) -> &[(Box<str>, ParamTest)] {
        self.constants.as_deref().map_or(&[], |c| &c.requires)
    }
}

/// An argument of a call: by position, or by keyword.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ArgKey {
    Position(usize),
    Keyword(Box<str>),
}

/// Why a function is an entry point or an eager break, as found in source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Marker {
    /// `# graphready: captured` on the `def` line.
    Captured,
    /// `# graphready: eager` on the `def` line, or a known break decorator (`@no_graph`).
    Eager,
    /// `# graphready: step` on the `def` line.
    Step,
    /// `@torch.compile(mode="reduce-overhead" | "max-autotune")`.
    Compiled,
}

#[derive(Debug, Clone, Default)]
pub struct FunctionSummary {
    /// Qualified inside the module: `Class.method`, `outer.inner`, `func`.
    pub qualname: String,
    pub class: Option<String>,
    pub line: u32,
    pub markers: Vec<Marker>,
    pub calls: Vec<CallSite>,
    /// Modules invoked where the code never runs captured and its syncs are deliberate (an
    /// eager block, `if not torch.cuda.is_current_stream_capturing():`): reach does not flow
    /// through them, but the module is called, so it is no outermost model of its own.
    pub guarded_invocations: Vec<CallTarget>,
    /// Classes constructed where the code does not run every step (a lazily built module: `if
    /// self._filterbank is None: fb = FilterbankFeatures(...)`): who builds a class.
    pub guarded_constructions: Vec<Ref>,
    /// Classes constructed only on a device without CUDA graphs (`if current_platform.is_xpu():
    /// return BatchedPrepareAndFinalize(...)`, or anywhere in a module for one): a class nothing
    /// else constructs has no instance on a CUDA GPU (see `hot_path::platforms`).
    pub platform_constructions: Vec<Ref>,
    /// Calls made inside `with torch.cuda.graph(...)` blocks of this function: capture sites.
    pub captured_calls: Vec<CallSite>,
    /// Line ranges (inclusive) of `with torch.cuda.graph(...)` bodies in this function.
    pub capture_blocks: Vec<(u32, u32)>,
    /// Calls `.replay()` of a graph: a per-step function outside the graph.
    pub replays_graph: bool,
    /// Runs a model outside any capture block and outside loops: `x.forward(...)`,
    /// `self.model(...)`, `self(...)`, `model_forward(...)`, where the call resolves to no
    /// function of the project. A call that does resolve carries [`CallSite::model_run`]
    /// instead, and runs a model only if one of its targets is a module's method or itself
    /// runs a model or replays a graph (see `hot_path::steps::model_runs`).
    pub runs_model: bool,
    /// Runs a model inside a `for` or `while` body: a decode loop.
    pub runs_model_in_loop: bool,
    /// Runs a model inside a `while` body: a decode loop that runs until the sequences finish,
    /// so that whoever calls the function is above the steps (a `for` over a fixed count is
    /// the step's own inner loop: speculative drafts).
    pub runs_model_until_done: bool,
    /// Line ranges (inclusive) of the function's outermost loops.
    pub loops: Vec<(u32, u32)>,
    /// Line ranges (inclusive) of the code that handles a batch's prefill work: it runs outside
    /// a decode graph, even in a captured function.
    pub prefill_blocks: Vec<(u32, u32)>,
    /// Line ranges that run only when a test of a parameter passes (`if check:`).
    pub param_blocks: Vec<ParamBlock>,
    pub returns: Ty,
    /// The type of each position of the tuples the function returns on every path, when one
    /// says where a tensor lives (`-> (should_split, counts_cpu, mode)`).
    pub tuple_returns: Option<Box<[Ty]>>,
    /// The offset of the call whose result the function's one `return` returns (`return
    /// self.encoder_runner.gather_mm_embeddings(...)`): the function returns what that call's
    /// callees return.
    pub forwards: Option<u32>,
    /// The parameters in order (`self` included for methods).
    pub params: Vec<Param>,
    /// The class the return annotation names, when it names one.
    pub return_annotation: Option<TypeRef>,
    /// The type paths of the returned values (the elements of a returned tuple), read when
    /// the return annotation names no project class.
    pub return_paths: Vec<TypePath>,
    /// Parameters read where a tensor's value would be taken on the host (truth tests,
    /// `int()`/`float()`/`bool()`, formatting, indices): a device tensor passed to one of them
    /// changes the function's findings.
    pub judged_params: Vec<String>,
    /// Every return is a buffer from `torch.empty` and friends that nothing wrote.
    pub returns_uninitialized: bool,
    /// Keeps host data on the host (see `semantic::host_functions`).
    pub host_preserving: bool,
    /// A module-level class decorator that replaces its class's `forward` with a dispatcher
    /// (see `builder::dispatch`): the class's own `forward` runs only when a setting selects it.
    pub dispatches_forward: bool,
    /// The decorators' callables (`@dynamic_rope_update`, `@cache(...)`'s `cache`).
    pub decorators: Vec<Ref>,
    /// The project's functions its returns may hold, as call targets, each at its position
    /// inside the returned tuples (empty: the value returned itself): a caller that calls the
    /// result, or the element it unpacks, runs them.
    pub returned_functions: Vec<(Box<[u8]>, CallTarget)>,
    /// Parameters the body calls: the functions passed to them run.
    pub called_params: Vec<String>,
    /// A `@property`: reading the attribute runs the body.
    pub property: bool,
    /// Takes `*args` and `**kwargs`: what surplus positions and unknown keywords a call may
    /// pass.
    pub variadic: (bool, bool),
    /// The code of the first sync-family finding in the body outside any guard (`GR103` for a
    /// `.to("cpu")`): running the function waits for the device.
    pub host_sync: Option<&'static str>,
}

#[derive(Debug, Clone, Default)]
pub struct ClassSummary {
    pub name: String,
    pub bases: Vec<Ref>,
    /// Bases that are values whose type the index computes: a class defined in a function
    /// deriving from a local that holds a class object (`class Builder(base):` after `base =
    /// backend.get_builder_cls()`, or a `type[X]` parameter).
    pub typed_bases: Vec<TypePath>,
    /// Whether a base is `torch.nn.Module` itself, or another package's class known to derive
    /// from it (a `transformers` model).
    pub direct_module: bool,
    /// Attributes holding instances of known classes: `self.mlp = MLP(...)`, and the members of
    /// `nn.ModuleList([...])` / `nn.Sequential(...)`.
    pub attributes: FxHashMap<String, Vec<Ref>>,
    /// Attributes whose type follows from an annotation or an assignment: `seq_lens:
    /// torch.Tensor` in a dataclass body, `self.runner = runner` with `runner: ModelRunner`,
    /// `self.backend = self._make_backend()`, `@property def x(self) -> T`.
    pub fields: Vec<(String, TypePath)>,
    /// Fields the class body annotates as host data (`num_scheduled_tokens: np.ndarray`,
    /// `req_ids: list[int]`), with their types.
    pub host_fields: Vec<(String, crate::semantic::Ty)>,
    /// Fields a method replaces with a host copy of themselves (see [`HostCopy`]).
    pub host_copies: Vec<HostCopy>,
    pub methods: Vec<String>,
    /// Methods that prepare CUDA-graph capture and that the class leaves to its subclasses:
    /// named for CUDA graphs, abstract or only raising `NotImplementedError`
    /// (`def init_cuda_graph_state(self, ...): raise NotImplementedError()`).
    pub capture_hooks: Vec<String>,
    /// A class decorator that compiles the model for graph capture (`@support_torch_compile`).
    pub compiled: bool,
    /// The project functions (or other packages' names) its class decorators call.
    pub decorators: Vec<Ref>,
    /// No instance of the class runs on a CUDA engine: it declares abstract methods (it cannot
    /// be instantiated), or its name or its module says it serves a device without CUDA graphs
    /// (`PunicaWrapperCPU`). Its methods run there only where a subclass inherits them.
    pub no_instance: bool,
    /// What the class body declares of compiling the model whole for graph capture
    /// (transformers' `_can_compile_fullgraph = False`, which keeps `generate()` from
    /// compiling the decode step): `None` where it says nothing.
    pub compiles_whole: Option<bool>,
}

/// A field a method of the class replaces with a host copy of itself: `self.next_token_ids =
/// async_d2h(self.next_token_ids)`, `self.output.logprobs = self.output.logprobs.to("cpu",
/// non_blocking=True)`. Readers of the field outside the class see host data once the class
/// has copied it (an overlapped scheduler reads a step's results after the copy's event).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCopy {
    /// The attribute of `self` holding the object whose field is replaced
    /// (`self.<holder>.<field> = ...`); `None` for the class's own field.
    pub holder: Option<String>,
    pub field: String,
    /// The function whose result replaces the field when that is all the module knows of it:
    /// the index decides by its return. `None` when the value is a move to the host.
    pub via: Option<Ref>,
    /// The field is a list copied element by element (`self.vals = [async_d2h(v) for v in
    /// self.vals]`): a list of host tensors.
    pub elements: bool,
}

/// Whether a method's name speaks of CUDA graphs (`init_cuda_graph_state`,
/// `build_for_cudagraph_capture`).
pub(crate) fn names_cuda_graphs(method: &str) -> bool {
    method.contains("cuda_graph") || method.contains("cudagraph")
}

/// Entry points named at a call: `make_graphed_callables(f, ...)`, `torch.compile(f, mode=...)`.
#[derive(Debug, Clone)]
pub struct CallableEntry {
    pub target: CallTarget,
    pub reason: EntryReason,
    /// Arguments the entry is called with that are device tensors (a `ProbeTarget`'s inputs).
    pub tensor_args: Vec<ArgKey>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryReason {
    CaptureSite,
    GraphedCallable,
    /// The step of a `graphready.ProbeTarget`: the probe captures it.
    ProbeStep,
    Compiled,
    Marker,
    Configured,
    ModuleForward,
    StepMarker,
    StepConfigured,
    Replay,
    /// Runs the model outside any capture (a driver of the step).
    RunsModel,
    /// Calls a per-step driver, not in a loop.
    StepCaller,
    /// Called in the loop that drives the step.
    StepLoop,
    /// Called where captured code handles a batch's prefill work, which runs outside the graph.
    PrefillBranch,
    /// Called where captured code computes an argument its captured callers all give (`if
    /// metadata is None:`): it runs for the other callers, outside the graph.
    FallbackBranch,
    /// A method of a class that implements none of its base's CUDA-graph capture hooks, called
    /// from captured code: it runs eagerly.
    Uncapturable,
    /// A public function of a library that has no entry point of its own.
    PublicApi,
}

impl EntryReason {
    pub const fn describe(self) -> &'static str {
        match self {
            EntryReason::CaptureSite => "called inside `with torch.cuda.graph(...)`",
            EntryReason::GraphedCallable => "passed to `torch.cuda.make_graphed_callables`",
            EntryReason::ProbeStep => {
                "the step of a `graphready.ProbeTarget`, which the probe captures"
            }
            EntryReason::Compiled => "compiled with `torch.compile(mode=\"reduce-overhead\")`",
            EntryReason::Marker => "marked `# graphready: captured`",
            EntryReason::Configured => "named in `entry-points`",
            EntryReason::ModuleForward => "`forward` of an `nn.Module` (default)",
            EntryReason::StepMarker => "marked `# graphready: step`",
            EntryReason::StepConfigured => "named in `step-entry-points`",
            EntryReason::Replay => "replays a CUDA graph every step",
            EntryReason::RunsModel => "runs the model outside the graph",
            EntryReason::StepCaller => "calls the code that runs the step",
            EntryReason::StepLoop => "called in the loop that drives the steps",
            EntryReason::PrefillBranch => {
                "called where captured code handles prefill work, which runs outside the graph"
            }
            EntryReason::FallbackBranch => {
                "called where captured code computes an argument every captured call gives, \
                 for the callers that leave it out, outside the graph"
            }
            EntryReason::Uncapturable => {
                "method of a class without its base's CUDA-graph capture hooks, which runs eagerly"
            }
            EntryReason::PublicApi => {
                "public function of a library without entry points (callers capture it)"
            }
        }
    }

    /// Explicit entries say how the code is really captured; their chains are preferred.
    pub const fn is_explicit(self) -> bool {
        !matches!(self, EntryReason::ModuleForward | EntryReason::PublicApi)
    }
}

#[derive(Debug, Clone, Default)]
pub struct ModuleSummary {
    /// The file as displayed.
    pub path: String,
    /// Dotted module name, when known.
    pub module: Option<String>,
    /// Module-level imports: bound name → qualified name (for re-exports).
    pub imports: FxHashMap<String, String>,
    pub functions: Vec<FunctionSummary>,
    pub classes: Vec<ClassSummary>,
    pub callable_entries: Vec<CallableEntry>,
    /// Qualified names of imported callables this module calls (for cross-module typing).
    pub imported_callees: rustc_hash::FxHashSet<String>,
    /// Instances of project classes put into containers whose type the index computes:
    /// `processors.append(NoRepeatNGramLogitsProcessor(...))` with `processors =
    /// LogitsProcessorList()`. What iterating or indexing such a container yields.
    pub container_appends: Vec<(TypePath, Ref)>,
    /// Module globals that hold the project's functions, by name: assigned at module level or
    /// under a `global` declaration (`_unpad_fn = _lazy_imports(...)`).
    pub global_functions: FxHashMap<String, Vec<CallTarget>>,
    /// Custom operators the module registers: operator name and function (see
    /// `builder::custom_ops`).
    pub custom_ops: Vec<(String, Ref)>,
    /// A template another module's code is generated from (see `project::file::template_of`):
    /// never imported, it runs nothing.
    pub template: bool,
}

/// An import under which a table keyed by qualified name must also answer (a re-export):
/// `module.name` stands for `qualified`.
pub struct ImportAlias<'s> {
    pub module: &'s str,
    pub name: &'s str,
    pub qualified: &'s str,
}

impl ImportAlias<'_> {
    /// `module.name`.
    pub fn alias(&self) -> String {
        format!("{}.{}", self.module, self.name)
    }
}

/// Every module-level import of the project.
pub fn import_aliases(summaries: &[ModuleSummary]) -> impl Iterator<Item = ImportAlias<'_>> {
    summaries.iter().flat_map(|summary| {
        summary.module.iter().flat_map(move |module| {
            summary
                .imports
                .iter()
                .map(move |(name, qualified)| ImportAlias {
                    module,
                    name,
                    qualified,
                })
        })
    })
}
