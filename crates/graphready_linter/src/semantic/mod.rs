//! What the checker knows about the module it walks: the semantic model (scopes, bindings,
//! imports resolved to qualified names, classes) and, on top of it, the type inference that
//! tells device tensors, host tensors, NumPy arrays and host values apart.

mod annotations;
mod attributes;
mod bindings;
mod cache;
mod calls;
mod classes;
mod clauses;
mod env_flags;
mod facts;
mod fields;
mod host_functions;
mod host_memory;
mod masks;
mod model;
mod predicates;
mod prefill;
mod records;
mod scope;
mod syntax;
pub(crate) mod tensor_api;
mod types;

pub(crate) use env_flags::off_flags;
pub use facts::{AttributeType, CallReturn, ProjectFacts, PropertyRead};
pub(crate) use fields::field_declarations;
pub use host_memory::is_legacy_host_type;
pub use model::SemanticModel;
pub use prefill::{reads_extend_data, ModesRuledOut};
pub(crate) use records::record_declarations;
pub use syntax::{
    expr_host_named, is_cpu_device, is_cpu_move, keyword, keyword_true, none_comparison,
};
pub use types::{is_sequence, Ty};
