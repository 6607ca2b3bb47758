//! GR4xx: allocations in the step and memory that is read before anything wrote it.

mod buffers;
pub mod rules;

/// What the allocation rules remember about the function being visited.
#[derive(Debug, Default)]
pub struct State<'a> {
    /// GR404: buffers allocated without initialisation, and what happened to them.
    pub buffers: Vec<buffers::Buffer<'a>>,
    /// GR404: whether every `return` so far hands out a fresh, unwritten allocation (`None`
    /// before the first): such a function is an allocation helper for its callers.
    pub returns_fresh: Option<bool>,
}

/// `torch.<factory>` functions that allocate a fresh tensor from a size.
pub const SIZED_FACTORIES: &[&str] = &[
    "empty",
    "zeros",
    "ones",
    "full",
    "arange",
    "empty_strided",
    "rand",
    "randn",
    "randint",
    "eye",
    "linspace",
];

/// `torch.<factory>_like` functions.
pub const LIKE_FACTORIES: &[&str] = &["empty_like", "zeros_like", "ones_like", "full_like"];

/// Tensor methods that allocate a fresh tensor.
pub const NEW_METHODS: &[&str] = &["new_empty", "new_zeros", "new_ones", "new_full"];
