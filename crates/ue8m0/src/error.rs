//! Typed errors shared by the CPU reference and the CUDA kernels.

use std::fmt;

/// Why a value is not a UE8M0 scale. The discriminants are the codes the GPU status word stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum InvalidReason {
    /// Sign bit set (`-0.0` included).
    Negative = 1,
    /// Exponent field 255: `inf` or NaN, the E8M0 NaN code (DeepGEMM does not reject this).
    NanCode = 2,
    /// Non-zero mantissa: not a power of two.
    NonZeroMantissa = 3,
}

impl InvalidReason {
    /// The reason for a status-word code, `None` for an unknown code.
    #[must_use]
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(Self::Negative),
            2 => Some(Self::NanCode),
            3 => Some(Self::NonZeroMantissa),
            _ => None,
        }
    }
}

impl fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Negative => "sign bit is set",
            Self::NanCode => "exponent is 255 (inf/NaN, the E8M0 NaN code)",
            Self::NonZeroMantissa => "mantissa is not zero",
        })
    }
}

/// The first value that is not a UE8M0 scale.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("scale at index {index} (bits {bits:#010x}) is not UE8M0: {reason}")]
pub struct ValidateError {
    /// Flat index of the element in the input.
    pub index: u64,
    /// Why it fails.
    pub reason: InvalidReason,
    /// Its raw bits.
    pub bits: u32,
}

/// Errors of [`crate::pack`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    /// Four scales go into one `i32`.
    #[error("cannot pack {len} scales: the count must be a multiple of 4")]
    Length {
        /// The length given.
        len: usize,
    },
    /// An input value is not a UE8M0 scale.
    #[error(transparent)]
    Invalid(#[from] ValidateError),
}

/// Shape and argument errors of the quantiser and the layout transform.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    /// A buffer does not hold the number of elements the shape needs.
    #[error("{what}: expected {expected} elements, got {got}")]
    Len {
        /// Which buffer.
        what: &'static str,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// Packed scale output needs UE8M0 rounding.
    #[error("packed UE8M0 scales need `use_ue8m0 = true`")]
    PackedNeedsUe8m0,
    /// A dimension is too large for the kernels' 32-bit row/column indices.
    #[error("{what} = {value} is too large")]
    TooLarge {
        /// Which dimension.
        what: &'static str,
        /// Its value.
        value: usize,
    },
}

/// Errors of the layout transform: a bad shape, or a scale that is not UE8M0.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Bad shape or buffer length.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// An active input value is not a UE8M0 scale.
    #[error(transparent)]
    Invalid(#[from] ValidateError),
}
