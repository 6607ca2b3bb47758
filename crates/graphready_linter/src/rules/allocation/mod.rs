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

#[cfg(test)]
mod tests {
    use super::rules::per_step_allocation::PerStepAllocation;
    use super::{LIKE_FACTORIES, NEW_METHODS, SIZED_FACTORIES};
    use crate::violation::{Calls, Violation};

    /// GR401's call gate names every allocating call its check judges: a factory added to the
    /// lists above and not to the gate would never reach the check.
    #[test]
    fn per_step_allocation_gate_covers_the_factories() {
        let Calls::Named { names, .. } = PerStepAllocation::CALLS else {
            panic!("GR401 is gated by call names");
        };
        let mut expected: Vec<&str> = SIZED_FACTORIES
            .iter()
            .chain(LIKE_FACTORIES)
            .chain(NEW_METHODS)
            .copied()
            .chain(["clone"])
            .collect();
        let mut gate = names.to_vec();
        expected.sort_unstable();
        gate.sort_unstable();
        assert_eq!(gate, expected);
    }
}
