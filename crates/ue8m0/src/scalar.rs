//! Element-wise bit operations: UE8M0 rounding, packing, validation, FP8 E4M3 conversion.

use crate::error::{InvalidReason, ValidateError};

/// Bit pattern of `f32` +1.0, the UE8M0 code 127: the scale DeepGEMM uses as padding.
pub const ONE_BITS: u32 = 0x3F80_0000;

/// UE8M0 byte of the scale 1.0 (`2^(127-127)`).
pub const ONE_CODE: u8 = 127;

/// The canonical NaN every NVIDIA arithmetic instruction returns; the CPU reference writes it
/// wherever a NaN scale is stored so that CPU and GPU outputs are bit-identical.
pub const CANONICAL_NAN_BITS: u32 = 0x7FFF_FFFF;

/// Rounds `|x|` up to the next power of two, as DeepGEMM's `ceil_to_ue8m0`, on raw `f32` bits.
///
/// The result has sign 0, mantissa 0 and an exponent field in `[1, 254]`:
/// - `±0.0` and every subnormal give `2^-126` (exponent 0 is bumped to the clamp floor 1);
/// - a normal value with a zero mantissa is returned unchanged in magnitude (`2^-126`, `1.0`, `2^127`);
/// - `±inf` (exponent 255) and every NaN (exponent 255 + 1) clamp to `2^127`;
/// - a value above `2^127` (exponent 254 with a non-zero mantissa) also clamps to `2^127`, which is
///   then *below* the input: the clamp wins over the rounding.
#[inline]
#[must_use]
pub const fn ceil_to_ue8m0_bits(bits: u32) -> u32 {
    let abs = bits & 0x7FFF_FFFF;
    let exponent = (abs >> 23) + ((abs & 0x007F_FFFF) != 0) as u32;
    let clamped = if exponent < 1 {
        1
    } else if exponent > 254 {
        254
    } else {
        exponent
    };
    clamped << 23
}

/// [`ceil_to_ue8m0_bits`] on an `f32` value.
#[inline]
#[must_use]
pub fn ceil_to_ue8m0(x: f32) -> f32 {
    f32::from_bits(ceil_to_ue8m0_bits(x.to_bits()))
}

/// [`ceil_to_ue8m0`] over a slice, written into `out` (same length).
///
/// # Panics
/// If the two slices differ in length.
pub fn ceil_to_ue8m0_slice(x: &[f32], out: &mut [f32]) {
    assert_eq!(x.len(), out.len(), "ceil_to_ue8m0_slice: length mismatch");
    for (o, &v) in out.iter_mut().zip(x) {
        *o = ceil_to_ue8m0(v);
    }
}

/// Why an `f32` is not a UE8M0 scale, or `None` when it is one.
///
/// Checked on bits, in this order: sign bit set, exponent field 255 (`inf`/NaN: the E8M0 NaN code,
/// a rejection DeepGEMM does not make), non-zero mantissa. `+0.0` is accepted: its exponent field 0
/// is the valid code `2^-127`, exactly as DeepGEMM's `(bits & 0x807fffff) == 0` accepts it.
#[inline]
#[must_use]
pub const fn invalid_reason(bits: u32) -> Option<InvalidReason> {
    if bits >> 31 != 0 {
        Some(InvalidReason::Negative)
    } else if (bits >> 23) == 0xFF {
        Some(InvalidReason::NanCode)
    } else if bits & 0x007F_FFFF != 0 {
        Some(InvalidReason::NonZeroMantissa)
    } else {
        None
    }
}

/// Checks that every value is a UE8M0 scale (see [`invalid_reason`]).
///
/// # Errors
/// The first failing index and why it fails.
pub fn validate(sf: &[f32]) -> Result<(), ValidateError> {
    for (index, v) in sf.iter().enumerate() {
        if let Some(reason) = invalid_reason(v.to_bits()) {
            return Err(ValidateError {
                index: index as u64,
                reason,
                bits: v.to_bits(),
            });
        }
    }
    Ok(())
}

/// The UE8M0 byte of a scale: its exponent field. Meaningful only for values that pass
/// [`validate`]; for others it is the same byte `(bits >> 23).to(torch.uint8)` keeps.
#[inline]
#[must_use]
pub const fn exponent_byte(bits: u32) -> u8 {
    (bits >> 23) as u8
}

/// Packs four UE8M0 bytes into one `i32`, little-endian: byte `j` holds element `j`.
#[inline]
#[must_use]
pub const fn pack4(bytes: [u8; 4]) -> i32 {
    i32::from_le_bytes(bytes)
}

/// Packs fp32 UE8M0 scales four to an `i32`, like DeepGEMM's `pack_ue8m0_to_int`
/// (`(x_int >> 23).to(torch.uint8).view(torch.int)` on a little-endian machine), after validating.
///
/// # Errors
/// [`PackError::Length`] when the length is not a multiple of 4 (DeepGEMM asserts the same),
/// [`PackError::Invalid`] for the first value that is not a UE8M0 scale; nothing is packed then.
pub fn pack(sf: &[f32]) -> Result<Vec<i32>, crate::error::PackError> {
    if !sf.len().is_multiple_of(4) {
        return Err(crate::error::PackError::Length { len: sf.len() });
    }
    validate(sf)?;
    Ok(sf
        .chunks_exact(4)
        .map(|c| {
            pack4([
                exponent_byte(c[0].to_bits()),
                exponent_byte(c[1].to_bits()),
                exponent_byte(c[2].to_bits()),
                exponent_byte(c[3].to_bits()),
            ])
        })
        .collect())
}

/// Inverse of [`pack`]: each byte `e` becomes the `f32` with bits `e << 23` (DeepGEMM's
/// `unpack_ue8m0_from_int`). Byte 0 gives `+0.0`, byte 255 gives `+inf`.
#[must_use]
pub fn unpack(packed: &[i32]) -> Vec<f32> {
    packed
        .iter()
        .flat_map(|p| p.to_le_bytes())
        .map(|b| f32::from_bits(u32::from(b) << 23))
        .collect()
}

/// Largest finite FP8 E4M3 (`fn` variant) magnitude.
pub const E4M3_MAX: f32 = 448.0;
/// FP8 E4M3 code of +448.
pub const E4M3_MAX_CODE: u8 = 0x7E;
/// FP8 E4M3 NaN code (the only one this conversion emits).
pub const E4M3_NAN_CODE: u8 = 0x7F;

/// Converts an `f32` to FP8 E4M3 (`float8_e4m3fn`) the way CUDA's
/// `__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)` and the PTX instruction
/// `cvt.rn.satfinite.e4m3x2.f32` do: round to nearest, ties to even; magnitudes above 448 and
/// infinities saturate to ±448; NaN becomes `0x7F` (sign dropped); the sign of zero and of values
/// that underflow to zero is kept (`-0.0` gives `0x80`).
///
/// Differs from PyTorch's `.to(torch.float8_e4m3fn)` only where that one is not saturating:
/// torch turns `|x| >= 464` and `±inf` into NaN (`0x7F | sign`).
#[inline]
#[must_use]
pub fn f32_to_e4m3(x: f32) -> u8 {
    let bits = x.to_bits();
    let sign = ((bits >> 24) & 0x80) as u8;
    let abs_bits = bits & 0x7FFF_FFFF;
    if abs_bits > 0x7F80_0000 {
        return E4M3_NAN_CODE;
    }
    let abs = f32::from_bits(abs_bits);
    if abs >= E4M3_MAX {
        return sign | E4M3_MAX_CODE;
    }
    // Below 2^-6 the result is subnormal: a count of 2^-9 steps. Scaling by 2^9 is exact.
    if abs_bits < (127 - 6) << 23 {
        let steps = (abs * 512.0).round_ties_even() as u8; // 0..=8; 8 is 2^-6, the first normal
        return sign | steps;
    }
    // Normal: drop 20 mantissa bits with round-to-nearest-even; a carry moves into the exponent.
    let lsb = (abs_bits >> 20) & 1;
    let rounded = abs_bits + 0x7FFFF + lsb;
    let code = (rounded >> 20) - ((127 - 7) << 3);
    sign | code as u8
}

/// Decodes an FP8 E4M3 (`fn`) code to `f32` (exact).
#[must_use]
pub fn e4m3_to_f32(code: u8) -> f32 {
    let sign = if code & 0x80 != 0 { -1.0f32 } else { 1.0 };
    let exponent = i32::from((code >> 3) & 0xF);
    let mantissa = f32::from(code & 0x7);
    if exponent == 0xF && code & 0x7 == 0x7 {
        return f32::NAN;
    }
    if exponent == 0 {
        sign * mantissa * (2.0f32).powi(-9)
    } else {
        sign * (1.0 + mantissa / 8.0) * (2.0f32).powi(exponent - 7)
    }
}

/// A bfloat16 value as its raw bits (what `torch.bfloat16` stores).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(pub u16);

impl Bf16 {
    /// The exact `f32` value.
    #[inline]
    #[must_use]
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }

    /// Rounds an `f32` to the nearest bfloat16 (ties to even; NaN stays NaN).
    #[must_use]
    pub fn from_f32(x: f32) -> Self {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) as u16) | 0x0040);
        }
        let lsb = (bits >> 16) & 1;
        Bf16(((bits + 0x7FFF + lsb) >> 16) as u16)
    }
}

/// Element types the quantiser reads: `f32` and [`Bf16`].
pub trait QuantInput: Copy + Send + Sync + 'static {
    /// The exact `f32` value.
    fn to_f32(self) -> f32;
    /// Bits of `|x|` widened to `f32`: a NaN-propagating maximum is an integer maximum on these.
    fn abs_f32_bits(self) -> u32;
}

impl QuantInput for f32 {
    #[inline]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline]
    fn abs_f32_bits(self) -> u32 {
        self.to_bits() & 0x7FFF_FFFF
    }
}

impl QuantInput for Bf16 {
    #[inline]
    fn to_f32(self) -> f32 {
        Bf16::to_f32(self)
    }
    #[inline]
    fn abs_f32_bits(self) -> u32 {
        (u32::from(self.0) << 16) & 0x7FFF_FFFF
    }
}
