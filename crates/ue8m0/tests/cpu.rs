//! CPU reference against plain scalar models written independently of the implementation:
//! powers of two searched in `f64`, FP8 by nearest-value search over the code table, the layout by
//! DeepGEMM's torch steps (pad, view as int32, transpose).

#![allow(clippy::needless_range_loop)] // index arithmetic mirrors the tensor shapes

use proptest::prelude::*;
use ue8m0::layout::SfShape;
use ue8m0::scalar::{CANONICAL_NAN_BITS, ONE_BITS};
use ue8m0::{
    ceil_to_ue8m0, ceil_to_ue8m0_bits, e4m3_to_f32, f32_to_e4m3, pack, quantize,
    transform_mn_major_tma_packed, unpack, validate, Bf16, InvalidReason, LayoutError, PackError,
    QuantConfig, QuantShape, ScaleLayout, Scales, GROUP,
};

const TWO_M126: f32 = 1.175_494_4e-38; // 2^-126
const TWO_127: f32 = 1.701_411_8e38; // 2^127

// ---------------------------------------------------------------------------------------------
// Models

fn ceil_model(x: f32) -> f32 {
    if !x.is_finite() {
        return TWO_127;
    }
    let a = f64::from(x).abs();
    let mut p = f64::from(TWO_M126);
    while p < a && p < f64::from(TWO_127) {
        p *= 2.0;
    }
    p.min(f64::from(TWO_127)) as f32
}

/// Nearest E4M3 code by search; ties go to the even code; saturating; NaN -> 0x7F.
fn e4m3_model(x: f32) -> u8 {
    if x.is_nan() {
        return 0x7F;
    }
    let a = f64::from(x).abs();
    let sign = if x.is_sign_negative() { 0x80 } else { 0 };
    if a >= 448.0 {
        return sign | 0x7E;
    }
    let mut best = 0u8;
    let mut best_err = f64::INFINITY;
    for code in 0u8..=0x7E {
        let v = f64::from(e4m3_to_f32(code));
        let err = (v - a).abs();
        if err < best_err || (err == best_err && code % 2 == 0) {
            best = code;
            best_err = err;
        }
    }
    sign | best
}

/// DeepGEMM's `per_token_cast_to_fp8` chain, one torch step at a time, for f32 values.
fn quantize_model(x: &[f32], rows: usize, k: usize, use_ue8m0: bool) -> (Vec<u8>, Vec<f32>) {
    let padded = k.div_ceil(GROUP) * GROUP;
    let groups = padded / GROUP;
    let mut q = vec![0u8; rows * k];
    let mut sf = vec![0f32; rows * groups];
    for r in 0..rows {
        let mut xp = vec![0f32; padded];
        xp[..k].copy_from_slice(&x[r * k..(r + 1) * k]);
        for g in 0..groups {
            let chunk = &xp[g * GROUP..(g + 1) * GROUP];
            let amax = if chunk.iter().any(|v| v.is_nan()) {
                f32::NAN
            } else {
                chunk.iter().fold(0f32, |m, v| m.max(v.abs()))
            };
            let amax = if amax.is_nan() { amax } else { amax.max(1e-4) };
            let mut s = amax * (1.0f32 / 448.0);
            if s.is_nan() {
                s = f32::from_bits(CANONICAL_NAN_BITS);
            }
            if use_ue8m0 {
                s = ceil_model(s);
            }
            sf[r * groups + g] = s;
            let inv = 1.0f32 / s;
            for c in g * GROUP..((g + 1) * GROUP).min(k) {
                q[r * k + c] = e4m3_model(xp[c] * inv);
            }
        }
    }
    (q, sf)
}

/// `get_mn_major_tma_aligned_packed_ue8m0_tensor_torch_impl`, step by step, as flat storage.
fn layout_model(sf: &[f32], b: usize, mn: usize, k: usize) -> Vec<i32> {
    let aligned_mn = mn.div_ceil(4) * 4;
    let aligned_k = k.div_ceil(4) * 4;
    let mut padded = vec![0u8; b * aligned_mn * aligned_k];
    for bi in 0..b {
        for m in 0..mn {
            for kk in 0..k {
                let bits = sf[(bi * mn + m) * k + kk].to_bits() as i32;
                padded[(bi * aligned_mn + m) * aligned_k + kk] = (bits >> 23) as u8;
            }
        }
    }
    let words = aligned_k / 4;
    let as_int = |bi: usize, m: usize, w: usize| {
        let o = (bi * aligned_mn + m) * aligned_k + 4 * w;
        i32::from_le_bytes([padded[o], padded[o + 1], padded[o + 2], padded[o + 3]])
    };
    let mut out = vec![0i32; b * words * aligned_mn];
    for bi in 0..b {
        for w in 0..words {
            for m in 0..aligned_mn {
                out[(bi * words + w) * aligned_mn + m] = as_int(bi, m, w);
            }
        }
    }
    out
}

// Random f32 bit patterns biased towards interesting exponents.
fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        (0u32..2, 0u32..256, prop_oneof![Just(0u32), any::<u32>()])
            .prop_map(|(s, e, m)| f32::from_bits(s << 31 | e << 23 | (m & 0x7F_FFFF))),
        (-600f32..600f32),
        (-1e-2f32..1e-2f32),
    ]
}

// ---------------------------------------------------------------------------------------------
// ceil_to_ue8m0

#[test]
fn ceil_edge_cases() {
    let cases: &[(f32, f32)] = &[
        (0.0, TWO_M126),
        (-0.0, TWO_M126),
        (f32::from_bits(1), TWO_M126),           // smallest subnormal
        (f32::from_bits(0x0040_0000), TWO_M126), // 2^-127, subnormal
        (f32::from_bits(0x007F_FFFF), TWO_M126), // largest subnormal
        (TWO_M126, TWO_M126),
        (f32::from_bits(0x0080_0001), f32::from_bits(0x0100_0000)),
        (1.0, 1.0),
        (1.000_000_1, 2.0),
        (-3.0, 4.0),
        (0.75, 1.0),
        (448.0, 512.0),
        (TWO_127, TWO_127),
        (f32::MAX, TWO_127), // clamp wins over rounding
        (f32::INFINITY, TWO_127),
        (f32::NEG_INFINITY, TWO_127),
        (f32::NAN, TWO_127),
        (-f32::NAN, TWO_127),
    ];
    for &(x, want) in cases {
        assert_eq!(
            ceil_to_ue8m0(x).to_bits(),
            want.to_bits(),
            "ceil_to_ue8m0({x:e} = {:#010x})",
            x.to_bits()
        );
    }
}

#[test]
fn ceil_exhaustive_upper_halves() {
    for hi in 0u32..=0xFFFF {
        for lo in [0u32, 1, 0x8000, 0xFFFF] {
            let x = f32::from_bits(hi << 16 | lo);
            assert_eq!(
                ceil_to_ue8m0(x).to_bits(),
                ceil_model(x).to_bits(),
                "{:#010x}",
                x.to_bits()
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn ceil_matches_model(x in any_f32()) {
        let got = ceil_to_ue8m0(x);
        prop_assert_eq!(got.to_bits(), ceil_model(x).to_bits());
        // Every output is a valid UE8M0 scale with exponent in [1, 254].
        prop_assert!(validate(&[got]).is_ok());
        let e = got.to_bits() >> 23;
        prop_assert!((1..=254).contains(&e));
    }

    #[test]
    fn e4m3_matches_model(x in any_f32()) {
        prop_assert_eq!(f32_to_e4m3(x), e4m3_model(x), "x = {:e} ({:#010x})", x, x.to_bits());
    }

    #[test]
    fn validate_matches_bit_rule(x in any_f32()) {
        let bits = x.to_bits();
        let ok = bits >> 31 == 0 && bits & 0x7F_FFFF == 0 && (bits >> 23) != 255;
        prop_assert_eq!(validate(&[x]).is_ok(), ok);
    }

    #[test]
    fn pack_unpack_round_trip(bytes in proptest::collection::vec(0u8..255, 0..64)) {
        let n = bytes.len() / 4 * 4;
        let sf: Vec<f32> = bytes[..n].iter().map(|&b| f32::from_bits(u32::from(b) << 23)).collect();
        let packed = pack(&sf).unwrap();
        prop_assert_eq!(packed.len(), n / 4);
        for (w, chunk) in packed.iter().zip(bytes[..n].chunks_exact(4)) {
            // (x_int >> 23).to(uint8).view(int32) on a little-endian machine.
            let want = i32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            prop_assert_eq!(*w, want);
        }
        let back = unpack(&packed);
        prop_assert_eq!(back.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                        sf.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
        prop_assert_eq!(pack(&back).unwrap(), packed);
    }

}

proptest! {
    // Each case quantises up to a few thousand values through the slow FP8 model.
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn quantize_matches_torch_chain(
        rows in 1usize..4,
        k in 1usize..700,
        use_ue8m0 in any::<bool>(),
        seed in any::<u64>(),
        specials in proptest::collection::vec((0usize..4096, any_f32()), 0..6),
    ) {
        let mut x = random_f32(rows * k, seed);
        for (i, v) in specials {
            let n = x.len();
            x[i % n] = v;
        }
        let (q_model, sf_model) = quantize_model(&x, rows, k, use_ue8m0);
        let shape = QuantShape { batches: 1, m: rows, k };
        let cfg = QuantConfig { use_ue8m0, layout: ScaleLayout::F32 };
        let out = quantize(&x, shape, None, cfg).unwrap();
        prop_assert_eq!(&out.fp8, &q_model);
        let Scales::F32(sf) = out.scales else { unreachable!() };
        prop_assert_eq!(bits(&sf), bits(&sf_model));
        if use_ue8m0 {
            // Fused packing equals packing the fp32 scales afterwards.
            let groups = shape.groups();
            let padded_sf: Vec<f32> = (0..rows).flat_map(|r| {
                let row = &sf[r * groups..(r + 1) * groups];
                let mut v = row.to_vec();
                v.resize(groups.next_multiple_of(4), 0.0);
                v
            }).collect();
            let cfg = QuantConfig { use_ue8m0, layout: ScaleLayout::PackedRowMajor };
            let Scales::Packed(p) = quantize(&x, shape, None, cfg).unwrap().scales else { unreachable!() };
            prop_assert_eq!(p, pack(&padded_sf).unwrap());
            let cfg = QuantConfig { use_ue8m0, layout: ScaleLayout::PackedMnMajorTma };
            let Scales::Packed(p) = quantize(&x, shape, None, cfg).unwrap().scales else { unreachable!() };
            prop_assert_eq!(p, layout_model(&sf, 1, rows, groups));
        }
    }

    #[test]
    fn bf16_input_matches_f32_of_same_values(k in 1usize..600, seed in any::<u64>()) {
        let xb: Vec<Bf16> = random_f32(2 * k, seed).into_iter().map(Bf16::from_f32).collect();
        let xf: Vec<f32> = xb.iter().map(|v| v.to_f32()).collect();
        let shape = QuantShape { batches: 1, m: 2, k };
        for layout in [ScaleLayout::F32, ScaleLayout::PackedRowMajor, ScaleLayout::PackedMnMajorTma] {
            let cfg = QuantConfig { use_ue8m0: true, layout };
            prop_assert_eq!(quantize(&xb, shape, None, cfg).unwrap(), quantize(&xf, shape, None, cfg).unwrap());
        }
    }

    #[test]
    fn layout_matches_torch_impl(b in 1usize..3, mn in 0usize..11, k in 0usize..11, seed in any::<u64>()) {
        let sf: Vec<f32> = random_f32(b * mn * k, seed).into_iter().map(ceil_to_ue8m0).collect();
        let shape = SfShape { batches: b, mn, sf_k: k };
        let got = transform_mn_major_tma_packed(&sf, shape, None).unwrap();
        prop_assert_eq!(got, layout_model(&sf, b, mn, k));
    }
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Deterministic normal-ish values with a spread of magnitudes.
fn random_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
            let scale = [1e-6f32, 1e-3, 1.0, 30.0, 1e4][(s % 5) as usize];
            u * scale
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// FP8 conversion

#[test]
fn e4m3_edge_cases() {
    let cases: &[(f32, u8)] = &[
        (0.0, 0x00),
        (-0.0, 0x80),
        (448.0, 0x7E),
        (-448.0, 0xFE),
        (464.0, 0x7E), // torch: NaN; satfinite: 448
        (1e30, 0x7E),
        (f32::INFINITY, 0x7E),
        (f32::NEG_INFINITY, 0xFE),
        (f32::NAN, 0x7F),
        (-f32::NAN, 0x7F),
        (1.0, 0x38),
        (-1.0, 0xB8),
        (2f32.powi(-9), 0x01),       // smallest subnormal
        (2f32.powi(-10), 0x00),      // tie between 0 and 2^-9 -> even (0)
        (-(2f32.powi(-10)), 0x80),   // underflow keeps the sign
        (1.5 * 2f32.powi(-9), 0x02), // tie between 1 and 2 -> even (2)
        (2f32.powi(-6), 0x08),       // smallest normal
        (1.0625, 0x38),              // tie 1.0 / 1.125 -> even (1.0)
        (1.1875, 0x3A),              // tie 1.125 / 1.25 -> even (1.25)
        (f32::from_bits(1), 0x00),
    ];
    for &(x, want) in cases {
        assert_eq!(f32_to_e4m3(x), want, "e4m3({x:e})");
    }
    // Every finite code decodes and re-encodes to itself.
    for code in 0u8..=255 {
        if code & 0x7F == 0x7F {
            continue;
        }
        assert_eq!(f32_to_e4m3(e4m3_to_f32(code)), code, "code {code:#04x}");
    }
}

/// All upper halves with the lower 16 bits at 0 (exact ties included), just above and just below.
#[test]
fn e4m3_exhaustive_upper_halves() {
    for hi in 0u32..=0xFFFF {
        for lo in [0u32, 1, 0x7FFF, 0x8000, 0xFFFF] {
            let x = f32::from_bits(hi << 16 | lo);
            assert_eq!(f32_to_e4m3(x), e4m3_model(x), "{:#010x}", x.to_bits());
        }
    }
}

/// All 2^32 inputs against the model (about a minute in release mode).
#[test]
#[ignore = "exhaustive, slow in debug builds; run with --release -- --ignored"]
fn e4m3_exhaustive_all_f32() {
    // The model is slow; compare against a table of the code boundaries instead, derived from it.
    let mut mids = Vec::new();
    for code in 0u8..0x7E {
        let a = f64::from(e4m3_to_f32(code));
        let b = f64::from(e4m3_to_f32(code + 1));
        mids.push(((a + b) / 2.0, code));
    }
    for bits in 0u32..=u32::MAX {
        let x = f32::from_bits(bits);
        let want = if x.is_nan() {
            0x7F
        } else {
            let a = f64::from(x).abs();
            let sign = if x.is_sign_negative() { 0x80 } else { 0 };
            let idx = mids.partition_point(|&(mid, _)| mid < a);
            let code = if idx < mids.len() && mids[idx].0 == a {
                let (_, lo) = mids[idx];
                if lo % 2 == 0 {
                    lo
                } else {
                    lo + 1
                }
            } else if idx >= mids.len() {
                0x7E
            } else {
                mids[idx].1
            };
            sign | code
        };
        assert_eq!(f32_to_e4m3(x), want, "{bits:#010x}");
    }
}

// ---------------------------------------------------------------------------------------------
// validate / pack

#[test]
fn validate_edge_cases() {
    let ok = [
        TWO_M126,
        1.0,
        TWO_127,
        0.0,
        f32::from_bits(ONE_BITS),
        2f32.powi(-100),
    ];
    assert_eq!(validate(&ok), Ok(()));
    let bad: &[(f32, InvalidReason)] = &[
        (-0.0, InvalidReason::Negative),
        (-1.0, InvalidReason::Negative),
        (-f32::NAN, InvalidReason::Negative),
        (f32::INFINITY, InvalidReason::NanCode),
        (f32::NAN, InvalidReason::NanCode),
        (1.5, InvalidReason::NonZeroMantissa),
        (f32::from_bits(0x0040_0000), InvalidReason::NonZeroMantissa), // 2^-127 as a subnormal
        (f32::from_bits(1), InvalidReason::NonZeroMantissa),
    ];
    for &(v, reason) in bad {
        let input = [1.0, 2.0, v, 0.5, v];
        let err = validate(&input).unwrap_err();
        assert_eq!(
            (err.index, err.reason, err.bits),
            (2, reason, v.to_bits()),
            "{v:e}"
        );
    }
}

#[test]
fn pack_rejects_bad_input_and_length() {
    assert_eq!(pack(&[1.0; 3]), Err(PackError::Length { len: 3 }));
    let err = pack(&[1.0, 1.0, 1.0, 0.3]).unwrap_err();
    assert!(
        matches!(err, PackError::Invalid(e) if e.index == 3 && e.reason == InvalidReason::NonZeroMantissa)
    );
    // Padding value 1.0 is valid and packs to 127.
    assert_eq!(pack(&[1.0; 4]).unwrap(), vec![i32::from_le_bytes([127; 4])]);
    // Byte 255 unpacks to +inf, which validation rejects: pack(unpack(x)) is not total.
    let inf = unpack(&[i32::from_le_bytes([255, 0, 0, 0])]);
    assert!(inf[0].is_infinite());
    assert!(matches!(pack(&inf), Err(PackError::Invalid(e)) if e.reason == InvalidReason::NanCode));
}

// ---------------------------------------------------------------------------------------------
// masked variants

#[test]
fn masked_rows_are_written_never_garbage_and_not_validated() {
    let (batches, m, k) = (3, 5, 300);
    // Inactive rows are full of NaN and negative garbage.
    let mut x = random_f32(batches * m * k, 7);
    let masked_m = [2i32, 0, 9]; // 9 > m clamps to m
    for b in 0..batches {
        for r in 0..m {
            if r >= masked_m[b].clamp(0, m as i32) as usize {
                for c in 0..k {
                    x[(b * m + r) * k + c] = f32::from_bits(0xFFC0_0000 | (c as u32));
                }
            }
        }
    }
    let shape = QuantShape { batches, m, k };
    for layout in [
        ScaleLayout::F32,
        ScaleLayout::PackedRowMajor,
        ScaleLayout::PackedMnMajorTma,
    ] {
        let cfg = QuantConfig {
            use_ue8m0: true,
            layout,
        };
        let out = quantize(&x, shape, Some(&masked_m), cfg).unwrap();
        let full = quantize(&x, shape, None, cfg).unwrap();
        let groups = shape.groups();
        for b in 0..batches {
            let active = masked_m[b].clamp(0, m as i32) as usize;
            for r in 0..m {
                let row = b * m + r;
                let q = &out.fp8[row * k..(row + 1) * k];
                if r >= active {
                    assert!(q.iter().all(|&v| v == 0), "masked row {b}/{r} fp8");
                } else {
                    assert_eq!(q, &full.fp8[row * k..(row + 1) * k]);
                }
                if let Scales::F32(sf) = &out.scales {
                    let s = &sf[row * groups..(row + 1) * groups];
                    if r >= active {
                        assert!(s.iter().all(|v| v.to_bits() == ONE_BITS));
                    }
                }
            }
        }
    }
    // Layout transform: garbage in masked rows is neither validated nor copied.
    let sf_shape = SfShape {
        batches,
        mn: m,
        sf_k: 6,
    };
    let mut sf = vec![0.3f32; sf_shape.input_len()]; // invalid everywhere
    for b in 0..batches {
        for r in 0..masked_m[b].clamp(0, m as i32) as usize {
            for kk in 0..6 {
                sf[(b * m + r) * 6 + kk] = 2f32.powi(kk as i32 - 3);
            }
        }
    }
    // Only masked rows hold garbage: it is neither validated nor copied.
    let out = transform_mn_major_tma_packed(&sf, sf_shape, Some(&masked_m)).unwrap();
    let mut expect_sf = sf.clone();
    for b in 0..batches {
        for r in masked_m[b].clamp(0, m as i32) as usize..m {
            for kk in 0..6 {
                expect_sf[(b * m + r) * 6 + kk] = 1.0;
            }
        }
    }
    assert_eq!(out, layout_model(&expect_sf, batches, m, 6));
    // One more active row in batch 0 exposes garbage at its first flat index.
    let err = transform_mn_major_tma_packed(&sf, sf_shape, Some(&[3, 0, 9])).unwrap_err();
    let LayoutError::Invalid(e) = err else {
        panic!("{err:?}")
    };
    assert_eq!((e.index, e.reason), (2 * 6, InvalidReason::NonZeroMantissa));
}

#[test]
fn packed_layout_needs_ue8m0() {
    let shape = QuantShape {
        batches: 1,
        m: 1,
        k: 128,
    };
    let cfg = QuantConfig {
        use_ue8m0: false,
        layout: ScaleLayout::PackedRowMajor,
    };
    assert!(quantize(&[0f32; 128], shape, None, cfg).is_err());
}

#[test]
fn quantize_edge_values() {
    // One group each: zeros (amax floor), a NaN, an inf, tiny values, and the max finite f32.
    let k = 128;
    let mut x = vec![0f32; 5 * k];
    x[k + 3] = f32::NAN;
    x[k + 4] = -2.0;
    x[2 * k + 1] = f32::NEG_INFINITY;
    x[2 * k + 2] = 1.0;
    x[3 * k] = 1e-30;
    x[3 * k + 1] = -1e-30;
    x[4 * k] = f32::MAX;
    x[4 * k + 1] = -f32::MAX;
    let shape = QuantShape {
        batches: 1,
        m: 5,
        k,
    };
    for use_ue8m0 in [false, true] {
        let cfg = QuantConfig {
            use_ue8m0,
            layout: ScaleLayout::F32,
        };
        let out = quantize(&x, shape, None, cfg).unwrap();
        let (q, sf) = quantize_model(&x, 5, k, use_ue8m0);
        assert_eq!(out.fp8, q);
        let Scales::F32(s) = &out.scales else {
            unreachable!()
        };
        assert_eq!(bits(s), bits(&sf));
        assert_eq!(out.fp8[k + 3], 0x7F, "NaN element");
        // f32::MAX ~ 2^128: 448 with an fp32 scale, 2^128 / 2^120 = 256 with a UE8M0 one.
        let max_code = if use_ue8m0 { 0x78 } else { 0x7E };
        assert_eq!(out.fp8[4 * k], max_code);
        assert_eq!(out.fp8[4 * k + 1], 0x80 | max_code);
        if use_ue8m0 {
            assert_eq!(s[0], ceil_to_ue8m0(1e-4 * (1.0 / 448.0)));
            assert_eq!(s[1].to_bits(), ceil_to_ue8m0_bits(CANONICAL_NAN_BITS));
            assert_eq!(out.fp8[2 * k + 1], 0xFE, "-inf saturates");
        } else {
            assert_eq!(s[1].to_bits(), CANONICAL_NAN_BITS);
            assert_eq!(out.fp8[2 * k + 1], 0x7F, "-inf * 0 is NaN");
        }
    }
}
