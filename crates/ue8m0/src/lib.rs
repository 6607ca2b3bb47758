//! UE8M0 / FP8 E4M3 scale-factor helpers with DeepGEMM's semantics.
//!
//! UE8M0 (OCP MX E8M0) is an exponent-only byte, `2^(e - 127)`; DeepGEMM packs four into an
//! `int32`. This crate has a CPU reference that always builds ([`ceil_to_ue8m0`], [`pack`],
//! [`unpack`], [`validate`], [`quantize`], [`layout::transform_mn_major_tma_packed`]) and, behind
//! the `cuda` feature, NVRTC-compiled kernels ([`cuda`]) that give bit-identical results, validate
//! without host syncs inside CUDA graph capture, and never use device asserts.
//!
//! See `README.md` for the semantics of edge values and the measured figures.

#![warn(missing_docs)]

pub mod error;
pub mod layout;
pub mod quant;
pub mod scalar;

#[cfg(feature = "cuda")]
pub mod cuda;

pub use error::{InvalidReason, LayoutError, PackError, ShapeError, ValidateError};
pub use layout::{transform_mn_major_tma_packed, SfShape};
pub use quant::{quantize, QuantConfig, QuantShape, Quantized, ScaleLayout, Scales, GROUP};
pub use scalar::{
    ceil_to_ue8m0, ceil_to_ue8m0_bits, ceil_to_ue8m0_slice, e4m3_to_f32, f32_to_e4m3,
    invalid_reason, pack, unpack, validate, Bf16, QuantInput,
};
