//! DeepGEMM's MN-major, TMA-aligned, packed UE8M0 scale layout
//! (`get_mn_major_tma_aligned_packed_ue8m0_tensor`).
//!
//! Input: fp32 UE8M0 scales `[batches, mn, sf_k]`, row-major. Output: the storage of an `int32`
//! tensor of shape `[batches, mn, ceil(sf_k / 4)]` with strides
//! `(packed_k * tma_mn, 1, tma_mn)`, where `tma_mn = align(mn, 4)` (16 bytes of `int32`).
//! Element `(b, m, kp)` lives at `b * packed_k * tma_mn + kp * tma_mn + m` and holds the UE8M0
//! bytes of `sf[b, m, 4kp .. 4kp + 4]`, little-endian. Bytes for `k >= sf_k` are 0, and so are the
//! alignment rows `mn..tma_mn` (DeepGEMM's torch fallback writes zeros there; its CUDA kernel leaves
//! them unwritten, outside the returned view).

use crate::error::{LayoutError, ShapeError, ValidateError};
use crate::scalar::{exponent_byte, invalid_reason, pack4, ONE_CODE};

/// `int32` elements per 16-byte TMA alignment unit.
pub const TMA_ALIGN_I32: usize = 4;

/// Shape of a batch of fp32 scale matrices `[batches, mn, sf_k]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SfShape {
    /// Number of matrices (experts / groups); 1 for a plain 2-D tensor.
    pub batches: usize,
    /// Rows (tokens, the M or N dimension).
    pub mn: usize,
    /// Scales per row (K / 128).
    pub sf_k: usize,
}

impl SfShape {
    /// `ceil(sf_k / 4)`: packed `int32` columns.
    #[must_use]
    pub fn packed_k(&self) -> usize {
        self.sf_k.div_ceil(4)
    }

    /// `mn` rounded up to a multiple of 4 (DeepGEMM's `get_tma_aligned_size(mn, 4)`).
    #[must_use]
    pub fn tma_mn(&self) -> usize {
        self.mn.div_ceil(TMA_ALIGN_I32) * TMA_ALIGN_I32
    }

    /// Elements of the fp32 input.
    #[must_use]
    pub fn input_len(&self) -> usize {
        self.batches * self.mn * self.sf_k
    }

    /// `int32` elements of the output storage (alignment rows included).
    #[must_use]
    pub fn packed_len(&self) -> usize {
        self.batches * self.packed_k() * self.tma_mn()
    }

    /// Flat index of output element `(b, m, kp)`.
    #[must_use]
    pub fn packed_index(&self, b: usize, m: usize, kp: usize) -> usize {
        (b * self.packed_k() + kp) * self.tma_mn() + m
    }
}

/// Active rows of batch `b`: `masked_m[b]` clamped to `[0, mn]`, or all rows without a mask.
#[must_use]
pub fn active_rows(masked_m: Option<&[i32]>, b: usize, mn: usize) -> usize {
    masked_m.map_or(mn, |mm| usize::try_from(mm[b].max(0)).unwrap_or(0).min(mn))
}

/// Packs fp32 UE8M0 scales into the MN-major TMA-aligned layout, validating every active value.
///
/// With `masked_m` (one entry per batch), rows at or past `masked_m[b]` are neither read nor
/// validated; they are written as the scale 1.0 (byte 127; padding bytes past `sf_k` stay 0), so
/// the output never carries garbage.
///
/// # Errors
/// A shape mismatch, or the first active input (in flat input order) that is not UE8M0.
pub fn transform_mn_major_tma_packed(
    sf: &[f32],
    shape: SfShape,
    masked_m: Option<&[i32]>,
) -> Result<Vec<i32>, LayoutError> {
    check_len("sf", shape.input_len(), sf.len())?;
    if let Some(mm) = masked_m {
        check_len("masked_m", shape.batches, mm.len())?;
    }
    let mut out = vec![0i32; shape.packed_len()];
    for b in 0..shape.batches {
        let active = active_rows(masked_m, b, shape.mn);
        for m in 0..shape.mn {
            let row = &sf[(b * shape.mn + m) * shape.sf_k..][..shape.sf_k];
            for kp in 0..shape.packed_k() {
                let mut bytes = [0u8; 4];
                for (j, byte) in bytes.iter_mut().enumerate() {
                    let k = kp * 4 + j;
                    if k >= shape.sf_k {
                        continue;
                    }
                    *byte = if m < active {
                        let bits = row[k].to_bits();
                        if let Some(reason) = invalid_reason(bits) {
                            return Err(ValidateError {
                                index: ((b * shape.mn + m) * shape.sf_k + k) as u64,
                                reason,
                                bits,
                            }
                            .into());
                        }
                        exponent_byte(bits)
                    } else {
                        ONE_CODE
                    };
                }
                out[shape.packed_index(b, m, kp)] = pack4(bytes);
            }
        }
    }
    Ok(out)
}

pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), ShapeError> {
    if expected == got {
        Ok(())
    } else {
        Err(ShapeError::Len {
            what,
            expected,
            got,
        })
    }
}
