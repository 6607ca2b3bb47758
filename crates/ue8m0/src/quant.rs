//! Per-token-group FP8 E4M3 quantisation (DeepGEMM's `per_token_cast_to_fp8`), fused with scale
//! rounding and packing.
//!
//! For each row and each group of [`GROUP`] consecutive columns (the last group may be short: K is
//! padded with zeros as DeepGEMM pads it, and the padding is not stored):
//! ```text
//! amax  = max |x|            (NaN if any element is NaN)
//! amax  = max(amax, 1e-4)    (NaN stays NaN)
//! sf    = amax * fl(1/448)   (torch on CUDA computes `amax / 448.0` as this product)
//! sf    = ceil_to_ue8m0(sf)  (when `use_ue8m0`)
//! q     = e4m3(x * fl(1/sf)) (`x * (1.0 / sf)`: torch takes the reciprocal, then multiplies)
//! ```
//! Every step is one correctly rounded `f32` operation, so the result is bit-exact with the PyTorch
//! chain on CUDA for finite inputs, and with the CUDA kernels of this crate for all inputs. The FP8
//! conversion saturates (see [`crate::f32_to_e4m3`]); a NaN scale is stored as `0x7FFFFFFF`.

use crate::error::ShapeError;
use crate::layout::{active_rows, check_len, SfShape};
use crate::scalar::{
    ceil_to_ue8m0_bits, exponent_byte, f32_to_e4m3, pack4, QuantInput, CANONICAL_NAN_BITS,
    ONE_BITS, ONE_CODE,
};

/// Columns that share one scale.
pub const GROUP: usize = 128;
/// Floor of the group maximum (`.clamp(1e-4)`), as `f32`.
pub const AMAX_FLOOR: f32 = 1e-4;
/// `fl(1 / 448)`: torch on CUDA divides by a Python scalar by multiplying with its `f32` reciprocal.
pub const INV_E4M3_MAX: f32 = 1.0 / 448.0;

/// Where and how the scales are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScaleLayout {
    /// fp32 scales, row-major `[rows, groups]` (DeepGEMM `use_packed_ue8m0=False`).
    F32,
    /// Packed UE8M0, row-major `[rows, ceil(groups / 4)]` `int32` (DeepGEMM `use_packed_ue8m0=True`;
    /// DeepGEMM requires `groups % 4 == 0`, here missing bytes are 0 as in the layout transform).
    PackedRowMajor,
    /// Packed UE8M0 in the MN-major TMA-aligned layout of [`crate::layout`], per batch.
    PackedMnMajorTma,
}

/// Quantiser options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QuantConfig {
    /// Round each scale up to a power of two (`ceil_to_ue8m0`).
    pub use_ue8m0: bool,
    /// Scale output layout; the packed ones need `use_ue8m0`.
    pub layout: ScaleLayout,
}

/// Input shape `[batches, m, k]`, row-major. A plain 2-D input has `batches == 1`; the masked
/// variant has one batch per expert/group with `m` = the padded maximum rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QuantShape {
    /// Batches (experts); 1 for 2-D input.
    pub batches: usize,
    /// Rows per batch.
    pub m: usize,
    /// Columns.
    pub k: usize,
}

impl QuantShape {
    /// Scale groups per row: `ceil(k / 128)`.
    #[must_use]
    pub fn groups(&self) -> usize {
        self.k.div_ceil(GROUP)
    }

    /// Packed `int32` words per row: `ceil(groups / 4)`.
    #[must_use]
    pub fn packed_groups(&self) -> usize {
        self.groups().div_ceil(4)
    }

    /// All rows.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.batches * self.m
    }

    /// Input elements (= FP8 output bytes).
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows() * self.k
    }

    /// Whether there is no element.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The scale matrix as a layout-transform shape.
    #[must_use]
    pub fn sf_shape(&self) -> SfShape {
        SfShape {
            batches: self.batches,
            mn: self.m,
            sf_k: self.groups(),
        }
    }

    /// Elements of the scale output (`f32` or `int32`) for a layout.
    #[must_use]
    pub fn scale_len(&self, layout: ScaleLayout) -> usize {
        match layout {
            ScaleLayout::F32 => self.rows() * self.groups(),
            ScaleLayout::PackedRowMajor => self.rows() * self.packed_groups(),
            ScaleLayout::PackedMnMajorTma => self.sf_shape().packed_len(),
        }
    }
}

/// Scales produced by [`quantize`].
#[derive(Clone, Debug, PartialEq)]
pub enum Scales {
    /// [`ScaleLayout::F32`].
    F32(Vec<f32>),
    /// One of the packed layouts.
    Packed(Vec<i32>),
}

/// Output of [`quantize`].
#[derive(Clone, Debug, PartialEq)]
pub struct Quantized {
    /// FP8 E4M3 codes, `[batches, m, k]` row-major (no K padding).
    pub fp8: Vec<u8>,
    /// Scales in the requested layout.
    pub scales: Scales,
}

/// The scale of a group from the bits of its `max |x|` (NaN-propagating), as `f32` bits.
#[inline]
#[must_use]
pub fn group_scale_bits(amax_abs_bits: u32, use_ue8m0: bool) -> u32 {
    let floor = AMAX_FLOOR.to_bits();
    // Non-negative floats order like their bits; NaN bits sort above inf and survive the clamp.
    let amax = f32::from_bits(amax_abs_bits.max(floor));
    let sf = amax * INV_E4M3_MAX;
    let sf_bits = if sf.is_nan() {
        CANONICAL_NAN_BITS
    } else {
        sf.to_bits()
    };
    if use_ue8m0 {
        ceil_to_ue8m0_bits(sf_bits)
    } else {
        sf_bits
    }
}

/// Quantises `x` (`[batches, m, k]`) per token and group of 128 columns.
///
/// With `masked_m` (one entry per batch, clamped to `[0, m]`), rows at or past `masked_m[b]` are not
/// read: their FP8 bytes are 0 and their scales 1.0 (byte 127 when packed).
///
/// # Errors
/// A length mismatch, or a packed layout without `use_ue8m0`.
pub fn quantize<T: QuantInput>(
    x: &[T],
    shape: QuantShape,
    masked_m: Option<&[i32]>,
    config: QuantConfig,
) -> Result<Quantized, ShapeError> {
    check_len("x", shape.len(), x.len())?;
    if let Some(mm) = masked_m {
        check_len("masked_m", shape.batches, mm.len())?;
    }
    if config.layout != ScaleLayout::F32 && !config.use_ue8m0 {
        return Err(ShapeError::PackedNeedsUe8m0);
    }
    let groups = shape.groups();
    let mut fp8 = vec![0u8; shape.len()];
    // Scale bits of every (row, group), then laid out at the end.
    let mut sf_bits = vec![0u32; shape.rows() * groups];
    for b in 0..shape.batches {
        let active = active_rows(masked_m, b, shape.m);
        for m in 0..shape.m {
            let row = b * shape.m + m;
            let sf_row = &mut sf_bits[row * groups..][..groups];
            if m >= active {
                sf_row.fill(ONE_BITS);
                continue;
            }
            let x_row = &x[row * shape.k..][..shape.k];
            let q_row = &mut fp8[row * shape.k..][..shape.k];
            for (g, sf) in sf_row.iter_mut().enumerate() {
                let cols = g * GROUP..((g + 1) * GROUP).min(shape.k);
                let amax = x_row[cols.clone()]
                    .iter()
                    .map(|v| v.abs_f32_bits())
                    .max()
                    .unwrap_or(0);
                *sf = group_scale_bits(amax, config.use_ue8m0);
                let inv = 1.0f32 / f32::from_bits(*sf);
                for c in cols {
                    q_row[c] = f32_to_e4m3(x_row[c].to_f32() * inv);
                }
            }
        }
    }
    let scales = match config.layout {
        ScaleLayout::F32 => Scales::F32(sf_bits.into_iter().map(f32::from_bits).collect()),
        ScaleLayout::PackedRowMajor => Scales::Packed(pack_rows(&sf_bits, shape)),
        ScaleLayout::PackedMnMajorTma => Scales::Packed(pack_mn_major(&sf_bits, shape)),
    };
    Ok(Quantized { fp8, scales })
}

/// Packs one row's scale bytes, four groups to a word; groups past the end give byte 0.
fn packed_word(sf_row: &[u32], kp: usize) -> i32 {
    let byte = |g: usize| sf_row.get(g).map_or(0, |&b| exponent_byte(b));
    pack4([
        byte(4 * kp),
        byte(4 * kp + 1),
        byte(4 * kp + 2),
        byte(4 * kp + 3),
    ])
}

fn pack_rows(sf_bits: &[u32], shape: QuantShape) -> Vec<i32> {
    let (groups, words) = (shape.groups(), shape.packed_groups());
    let mut out = vec![0i32; shape.rows() * words];
    for row in 0..shape.rows() {
        let sf_row = &sf_bits[row * groups..][..groups];
        for kp in 0..words {
            out[row * words + kp] = packed_word(sf_row, kp);
        }
    }
    out
}

fn pack_mn_major(sf_bits: &[u32], shape: QuantShape) -> Vec<i32> {
    let sf_shape = shape.sf_shape();
    let groups = shape.groups();
    let mut out = vec![0i32; sf_shape.packed_len()];
    for b in 0..shape.batches {
        for m in 0..shape.m {
            let sf_row = &sf_bits[(b * shape.m + m) * groups..][..groups];
            for kp in 0..shape.packed_groups() {
                out[sf_shape.packed_index(b, m, kp)] = packed_word(sf_row, kp);
            }
        }
    }
    out
}

/// The packed byte of a masked row's scale, for documentation and tests.
pub const MASKED_ROW_CODE: u8 = ONE_CODE;
