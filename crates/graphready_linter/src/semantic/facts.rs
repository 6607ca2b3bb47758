//! What the project tells one file's analysis: the facts phases 1 and 2 learned about the other
//! modules (their returns, the types their callers pass, the host data their classes declare).

use super::types::Ty;
use rustc_hash::FxHashMap;

/// What the project analysis knows about other modules before this module's walk: the return
/// types of their functions by qualified name, and which parameters of this module's functions
/// receive device tensors at their call sites. (This module's own returns are learned during
/// the walk, callees first.)
#[derive(Debug, Default, Clone, Copy)]
pub struct ProjectFacts<'a> {
    pub returns: Option<&'a FxHashMap<String, Ty>>,
    /// The positions' types of the tuples other modules' functions return, by qualified name.
    pub tuple_returns: Option<&'a FxHashMap<String, Box<[Ty]>>>,
    /// Function qualified name inside the module → parameters that receive device tensors.
    pub param_types: Option<&'a FxHashMap<String, Vec<(String, Ty)>>>,
    /// Other modules' functions whose every return is a buffer from `torch.empty` and friends
    /// that nothing wrote (GR404 follows it through the caller), by qualified name.
    pub uninitialized_buffers: Option<&'a rustc_hash::FxHashSet<String>>,
    /// What this module's own functions return, from phase 1: a phase-3 check that skips a
    /// function nothing reaches by a call (a property) still knows its return.
    pub own_returns: Option<&'a FxHashMap<String, Ty>>,
    /// This module's own functions that keep host data on the host, from phase 1 (see
    /// `super::host_functions`), for a phase-3 check that skips them.
    pub own_host_preserving: Option<&'a rustc_hash::FxHashSet<String>>,
    /// Other modules' functions that keep host data on the host, by qualified name: given host
    /// tensors, they return host tensors.
    pub host_preserving: Option<&'a rustc_hash::FxHashSet<String>>,
    /// The project's `nn.Module` subclasses by qualified name: constructing one makes a module,
    /// whose calls return tensors.
    pub module_classes: Option<&'a rustc_hash::FxHashSet<String>>,
    /// Function qualified name inside the module → the properties its parameters' reads run
    /// that wait for the device.
    pub property_reads: Option<&'a FxHashMap<String, Vec<PropertyRead>>>,
    /// Input fields the project's processors keep on the host (see `super::fields`).
    pub host_fields: Option<&'a rustc_hash::FxHashSet<String>>,
    /// Environment flags the project declares off by default (see `super::env_flags`).
    pub off_flags: Option<&'a rustc_hash::FxHashSet<String>>,
    /// The project's media record classes and, as `Class.name`, their declared names (see
    /// `super::records`).
    pub records: Option<&'a rustc_hash::FxHashSet<String>>,
    /// Function qualified name inside the module → `(parameter, field, type)` for the host-data
    /// fields its class-typed parameters carry.
    pub attribute_types: Option<&'a FxHashMap<String, Vec<AttributeType>>>,
    /// What this module's method calls return where the project resolved every method they may
    /// run and all return host data, by the call's start offset (see [`CallReturn`]).
    pub call_returns: Option<&'a FxHashMap<u32, CallReturn>>,
}

/// What a method call returns when every method it may run returns host data: a host tensor
/// (`mrope_model.get_mrope_input_positions(...)`, each model's `torch.from_numpy(...)`), or a
/// tuple with host tensors at some positions (`self.buffers.get_buf(i)`; [`Ty::Unknown`]
/// elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallReturn {
    Value(Ty),
    Tuple(Box<[Ty]>),
}

/// A host-data field a class-typed parameter carries: `input_batch.num_scheduled_tokens` with
/// `InputBatch` annotating `num_scheduled_tokens: np.ndarray`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeType {
    pub receiver: String,
    pub field: String,
    pub ty: Ty,
}

/// A read of a property that waits for the device: `batch.seq_lens_cpu`, where `batch` is an
/// instance of a class whose `seq_lens_cpu` property copies a device tensor to the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyRead {
    /// The parameter read (`batch`, or `self`).
    pub receiver: String,
    pub attribute: String,
    /// The property, qualified inside its module (`ForwardBatch.seq_lens_cpu`).
    pub property: String,
    /// The code of the sync in the property's body.
    pub code: &'static str,
}
