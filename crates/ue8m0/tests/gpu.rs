//! GPU tests: CUDA kernels bit-exact against the CPU reference, capture and replay, deferred checks,
//! masked rows. Every test is `#[ignore]`: run on a machine with a GPU through
//! `scripts/gpu/ue8m0.sh` (`--ignored --test-threads=1`).

#![cfg(feature = "cuda")]
#![allow(clippy::print_stdout, clippy::print_stderr, unsafe_code)]

use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream, DeviceRepr};
use ue8m0::cuda::{Check, CudaError, DeviceStatus, PackedLayout, Ue8m0Cuda};
use ue8m0::layout::SfShape;
use ue8m0::{
    ceil_to_ue8m0, f32_to_e4m3, pack, quantize, transform_mn_major_tma_packed, Bf16, InvalidReason,
    QuantConfig, QuantInput, QuantShape, ScaleLayout, Scales,
};

struct Gpu {
    stream: Arc<CudaStream>,
    k: Ue8m0Cuda,
}

fn gpu() -> std::sync::MutexGuard<'static, Gpu> {
    static GPU: OnceLock<Mutex<Gpu>> = OnceLock::new();
    GPU.get_or_init(|| {
        let ctx = CudaContext::new(0).expect("CUDA context");
        // One stream; cudarc's cross-stream event waits are illegal inside capture.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().expect("stream");
        let t = std::time::Instant::now();
        let k = Ue8m0Cuda::new(stream.clone()).expect("compile kernels");
        println!("NVRTC compile + load: {:.2?}", t.elapsed());
        Mutex::new(Gpu { stream, k })
    })
    .lock()
    .unwrap_or_else(|e| e.into_inner())
}

fn up<T: DeviceRepr + Clone>(s: &Arc<CudaStream>, v: &[T]) -> CudaSlice<T> {
    s.clone_htod(v).expect("htod")
}

fn down<T: DeviceRepr + Clone + Default>(s: &Arc<CudaStream>, d: &CudaSlice<T>) -> Vec<T> {
    s.clone_dtoh(d).expect("dtoh")
}

/// Device buffer filled with a byte pattern (0xFF: NaN in fp32, fp8 and bf16) so that any element a
/// kernel forgets to write shows up.
fn poisoned<T: DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    s: &Arc<CudaStream>,
    len: usize,
) -> CudaSlice<T> {
    let mut d = s.alloc_zeros::<T>(len).expect("alloc");
    let ptr = cudarc::driver::DevicePtrMut::device_ptr_mut(&mut d, s).0;
    unsafe {
        cudarc::driver::result::memset_d8_async(
            ptr,
            0xFF,
            len * std::mem::size_of::<T>(),
            s.cu_stream(),
        )
        .expect("memset");
    }
    d
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f32_bits(&mut self) -> f32 {
        f32::from_bits(self.next() as u32)
    }
    fn normal_ish(&mut self) -> f32 {
        let u = (self.next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
        let scale = [1e-6f32, 1e-3, 1.0, 30.0, 1e4, 3e5][(self.next() % 6) as usize];
        u * scale
    }
}

fn edge_f32() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::from_bits(1),
        f32::from_bits(0x0040_0000),
        f32::from_bits(0x007F_FFFF),
        f32::from_bits(0x0080_0000),
        1.0,
        -1.0,
        1.5,
        448.0,
        464.0,
        f32::MAX,
        -f32::MAX,
        f32::from_bits(0x7F00_0000),
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7F80_0001),
        1e-30,
        -1e-30,
    ];
    for e in 0..255u32 {
        v.push(f32::from_bits(e << 23));
        v.push(f32::from_bits(e << 23 | 1));
        v.push(f32::from_bits(0x8000_0000 | e << 23 | 0x40_0000));
    }
    v
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
#[ignore = "needs NVRTC (libnvrtc.so.13 on the library path); no GPU"]
fn nvrtc_compiles_kernels() {
    let ptx = ue8m0::cuda::compile("compute_90").expect("NVRTC");
    let text = ptx.to_src();
    assert!(text.contains("cvt.rn.satfinite.e4m3x2.f32"));
    assert!(!text.contains("trap"), "no device asserts or traps");
    println!("NVRTC: {} bytes of PTX", text.len());
    if let Some(path) = std::env::var_os("UE8M0_PTX_OUT") {
        std::fs::write(path, &text).expect("write PTX");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_ceil_pack_validate_bit_exact() {
    let g = gpu();
    let s = &g.stream;
    let mut rng = Rng(0x1234_5678_9abc);
    let mut x = edge_f32();
    x.extend((0..(1 << 22) + 3).map(|_| rng.f32_bits()));
    // ceil_to_ue8m0, vector path and (offset by one element) scalar path.
    let dx = up(s, &x);
    let mut dout = s.alloc_zeros::<f32>(x.len()).unwrap();
    g.k.ceil_to_ue8m0(&dx, &mut dout).unwrap();
    let cpu: Vec<f32> = x.iter().map(|&v| ceil_to_ue8m0(v)).collect();
    assert_eq!(bits(&down(s, &dout)), bits(&cpu), "ceil (vector path)");
    let mut dout2 = s.alloc_zeros::<f32>(x.len() - 1).unwrap();
    g.k.ceil_to_ue8m0(&dx.slice(1..), &mut dout2.slice_mut(..))
        .unwrap();
    assert_eq!(
        bits(&down(s, &dout2)),
        bits(&cpu[1..]),
        "ceil (unaligned path)"
    );
    println!(
        "ceil_to_ue8m0: {} values bit-exact (aligned and unaligned)",
        x.len()
    );

    // pack + validate of valid scales.
    let n = cpu.len() / 4 * 4;
    let sf = &cpu[..n];
    let dsf = up(s, sf);
    let mut dp = s.alloc_zeros::<i32>(n / 4).unwrap();
    g.k.pack(&dsf, &mut dp, Check::Eager).unwrap();
    assert_eq!(down(s, &dp), pack(sf).unwrap(), "pack");
    let mut dp2 = s.alloc_zeros::<i32>(n / 4 - 1).unwrap();
    g.k.pack(&dsf.slice(4..), &mut dp2.slice_mut(..), Check::Eager)
        .unwrap();
    assert_eq!(down(s, &dp2), pack(&sf[4..]).unwrap(), "pack (offset view)");
    g.k.validate(&dsf, Check::Eager).unwrap();
    g.k.validate(&dsf.slice(3..), Check::Eager).unwrap();
    println!("pack/validate: {} valid scales bit-exact, accepted", n);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_e4m3_conversion_exhaustive() {
    let g = gpu();
    let s = &g.stream;
    const CHUNK: usize = 1 << 28;
    let mut d = s.alloc_zeros::<u8>(CHUNK).unwrap();
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let mut mismatches = 0u64;
    for c in 0..(1usize << 32) / CHUNK {
        let base = (c * CHUNK) as u32;
        g.k.convert_e4m3_range(base, &mut d).unwrap();
        let got = down(s, &d);
        let per = CHUNK / threads;
        mismatches += std::thread::scope(|sc| {
            let handles: Vec<_> = got
                .chunks(per)
                .enumerate()
                .map(|(t, part)| {
                    sc.spawn(move || {
                        let mut bad = 0u64;
                        for (i, &code) in part.iter().enumerate() {
                            let b = base.wrapping_add((t * per + i) as u32);
                            if code != f32_to_e4m3(f32::from_bits(b)) {
                                if bad < 3 {
                                    eprintln!(
                                        "e4m3 mismatch at {b:#010x}: gpu {code:#04x}, cpu {:#04x}",
                                        f32_to_e4m3(f32::from_bits(b))
                                    );
                                }
                                bad += 1;
                            }
                        }
                        bad
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        });
    }
    assert_eq!(mismatches, 0);
    println!(
        "FP8 E4M3 conversion: all 2^32 f32 inputs bit-exact (cvt.rn.satfinite.e4m3x2.f32 vs CPU)"
    );
}

fn quant_input<T: QuantInput>(
    rows: usize,
    k: usize,
    rng: &mut Rng,
    conv: impl Fn(f32) -> T,
) -> Vec<T> {
    let edges = edge_f32();
    (0..rows * k)
        .map(|i| {
            let r = rng.next();
            // Mostly ordinary values, some rows of zeros, sprinkled special values.
            let row = i / k;
            let v = if row % 7 == 3 {
                0.0
            } else if r.is_multiple_of(97) {
                edges[(r >> 8) as usize % edges.len()]
            } else {
                rng.normal_ish()
            };
            conv(v)
        })
        .collect()
}

fn check_quant<T: QuantInput + ue8m0::cuda::DeviceInput + Clone + Default>(
    g: &Gpu,
    x: &[T],
    shape: QuantShape,
    masked: Option<&[i32]>,
    offset: usize,
) {
    let s = &g.stream;
    let mut host = vec![T::default(); offset];
    host.extend_from_slice(x);
    let dx_full = up(s, &host);
    let dx = dx_full.slice(offset..);
    let dmask = masked.map(|m| up(s, m));
    let n = shape.len();
    for (layout, ue) in [
        (ScaleLayout::F32, false),
        (ScaleLayout::F32, true),
        (ScaleLayout::PackedRowMajor, true),
        (ScaleLayout::PackedMnMajorTma, true),
    ] {
        let cpu = quantize(
            x,
            shape,
            masked,
            QuantConfig {
                use_ue8m0: ue,
                layout,
            },
        )
        .unwrap();
        let mut dq = poisoned::<u8>(s, n + offset);
        let scale_len = shape.scale_len(layout);
        let (q, scales_bits) = match layout {
            ScaleLayout::F32 => {
                let mut ds = poisoned::<f32>(s, scale_len);
                g.k.quantize_f32_scales(
                    &dx,
                    shape,
                    dmask.as_ref(),
                    ue,
                    &mut dq.slice_mut(offset..),
                    &mut ds,
                )
                .unwrap();
                (down(s, &dq), bits(&down(s, &ds)))
            }
            _ => {
                let mut ds = poisoned::<i32>(s, scale_len);
                let pl = if layout == ScaleLayout::PackedRowMajor {
                    PackedLayout::RowMajor
                } else {
                    PackedLayout::MnMajorTma
                };
                g.k.quantize_packed(
                    &dx,
                    shape,
                    dmask.as_ref(),
                    pl,
                    &mut dq.slice_mut(offset..),
                    &mut ds,
                )
                .unwrap();
                (
                    down(s, &dq),
                    down(s, &ds).iter().map(|&v| v as u32).collect(),
                )
            }
        };
        let cpu_scales: Vec<u32> = match &cpu.scales {
            Scales::F32(v) => bits(v),
            Scales::Packed(v) => v.iter().map(|&w| w as u32).collect(),
        };
        let first_q = q[offset..].iter().zip(&cpu.fp8).position(|(a, b)| a != b);
        assert!(
            first_q.is_none(),
            "{shape:?} {layout:?} ue8m0={ue} offset={offset}: fp8 differs at {first_q:?}"
        );
        let first_s = scales_bits
            .iter()
            .zip(&cpu_scales)
            .position(|(a, b)| a != b);
        assert!(
            first_s.is_none(),
            "{shape:?} {layout:?} ue8m0={ue}: scales differ at {first_s:?}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_quantize_bit_exact() {
    let g = gpu();
    let mut rng = Rng(42);
    let shapes = [
        (1, 1, 1),
        (1, 3, 100),
        (1, 5, 128),
        (1, 7, 300),
        (1, 9, 640),
        (1, 33, 7168),
        (1, 130, 2048),
        (3, 6, 1000),
        (1, 4, 4100),
    ];
    let mut cases = 0;
    for &(batches, m, k) in &shapes {
        let shape = QuantShape { batches, m, k };
        let xf = quant_input(shape.rows(), k, &mut rng, |v| v);
        let xb = quant_input(shape.rows(), k, &mut rng, Bf16::from_f32);
        for offset in [0, 1] {
            check_quant(&g, &xf, shape, None, offset);
            check_quant(&g, &xb, shape, None, offset);
            cases += 2;
        }
        let masked: Vec<i32> = (0..batches)
            .map(|b| [m as i32 / 2, 0, m as i32 + 5][b % 3])
            .collect();
        check_quant(&g, &xb, shape, Some(&masked), 0);
        check_quant(&g, &xf, shape, Some(&masked), 0);
        cases += 2;
    }
    println!("quantize: {cases} (shape, dtype, alignment, mask) cases x 4 scale layouts bit-exact vs CPU");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_transform_bit_exact_and_masked_never_garbage() {
    let g = gpu();
    let s = &g.stream;
    let mut rng = Rng(7);
    for &(batches, mn, sf_k) in &[(1, 1, 1), (1, 5, 3), (2, 7, 6), (4, 129, 56), (3, 1000, 13)] {
        let shape = SfShape { batches, mn, sf_k };
        let sf: Vec<f32> = (0..shape.input_len())
            .map(|_| ceil_to_ue8m0(rng.normal_ish()))
            .collect();
        let dsf = up(s, &sf);
        let mut dout = poisoned::<i32>(s, shape.packed_len());
        g.k.transform_mn_major_tma_packed(&dsf, shape, None, &mut dout, Check::Eager)
            .unwrap();
        assert_eq!(
            down(s, &dout),
            transform_mn_major_tma_packed(&sf, shape, None).unwrap(),
            "{shape:?}"
        );
        // Masked: garbage (NaN, negative) in inactive rows is ignored and replaced by 1.0.
        let masked: Vec<i32> = (0..batches)
            .map(|b| [mn as i32 / 2, 0, -3, mn as i32 + 1][b % 4])
            .collect();
        let mut garbage = sf.clone();
        for b in 0..batches {
            let active = masked[b].clamp(0, mn as i32) as usize;
            for r in active..mn {
                for k in 0..sf_k {
                    garbage[(b * mn + r) * sf_k + k] = f32::from_bits(0xFFC0_0000 | k as u32);
                }
            }
        }
        let dg = up(s, &garbage);
        let dm = up(s, &masked);
        let mut dout = poisoned::<i32>(s, shape.packed_len());
        g.k.transform_mn_major_tma_packed(&dg, shape, Some(&dm), &mut dout, Check::Eager)
            .unwrap();
        assert_eq!(
            down(s, &dout),
            transform_mn_major_tma_packed(&garbage, shape, Some(&masked)).unwrap(),
            "masked {shape:?}"
        );
    }
    println!("transform_mn_major_tma_packed: bit-exact vs CPU; masked rows (NaN garbage, poisoned output) written as 1.0, not validated");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_malformed_input_caught_eagerly_context_stays_usable() {
    let g = gpu();
    let s = &g.stream;
    for (bad, reason) in [
        (0.3f32, InvalidReason::NonZeroMantissa),
        (-1.0, InvalidReason::Negative),
        (f32::INFINITY, InvalidReason::NanCode),
        (f32::NAN, InvalidReason::NanCode),
    ] {
        let mut sf = vec![1.0f32; 4096];
        for i in [3001usize, 777, 4000] {
            sf[i] = bad;
        }
        let cpu_err = ue8m0::validate(&sf).unwrap_err();
        let d = up(s, &sf);
        let mut out = s.alloc_zeros::<i32>(1024).unwrap();
        let err = g.k.pack(&d, &mut out, Check::Eager).unwrap_err();
        let CudaError::Invalid { error, failures } = err else {
            panic!("{err}")
        };
        assert_eq!(error, cpu_err);
        assert_eq!((error.index, error.reason, failures), (777, reason, 3));
        let err = g.k.validate(&d, Check::Eager).unwrap_err();
        assert!(matches!(err, CudaError::Invalid { error, failures: 3 } if error == cpu_err));
        println!("eager: {bad:e} -> {err}");
    }
    // The context is healthy: the next kernel runs and returns correct data.
    let x: Vec<f32> = (0..10_000).map(|i| i as f32 * 0.37).collect();
    let dx = up(s, &x);
    let mut dy = s.alloc_zeros::<f32>(x.len()).unwrap();
    g.k.ceil_to_ue8m0(&dx, &mut dy).unwrap();
    s.synchronize().unwrap();
    let want: Vec<f32> = x.iter().map(|&v| ceil_to_ue8m0(v)).collect();
    assert_eq!(bits(&down(s, &dy)), bits(&want));
    println!("context healthy after malformed input: next kernel correct");
}

fn begin(s: &Arc<CudaStream>) {
    s.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
        .expect("begin capture");
}

fn end(s: &Arc<CudaStream>) -> cudarc::driver::CudaGraph {
    s.end_capture(sys::CUgraphInstantiate_flags(0))
        .expect("end capture (a sync inside would have invalidated it)")
        .expect("graph")
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_capture_replay_bit_exact_and_recomputes() {
    let g = gpu();
    let s = &g.stream;
    let shape = QuantShape {
        batches: 1,
        m: 512,
        k: 7168,
    };
    let sf_shape = shape.sf_shape();
    let mut rng = Rng(99);
    let x1: Vec<Bf16> = quant_input(shape.rows(), shape.k, &mut rng, Bf16::from_f32);
    let x2: Vec<Bf16> = quant_input(shape.rows(), shape.k, &mut rng, Bf16::from_f32);
    let mut dx = up(s, &x1);
    let mut dq = s.alloc_zeros::<u8>(shape.len()).unwrap();
    let mut dsf = s
        .alloc_zeros::<f32>(shape.scale_len(ScaleLayout::F32))
        .unwrap();
    let mut dpacked = s.alloc_zeros::<i32>(sf_shape.packed_len()).unwrap();
    let mut dq2 = s.alloc_zeros::<u8>(shape.len()).unwrap();
    let mut dfused = s.alloc_zeros::<i32>(sf_shape.packed_len()).unwrap();
    let status = DeviceStatus::new(s).unwrap();

    // Eager reference on x1.
    let run = |dx: &CudaSlice<Bf16>,
               dq: &mut CudaSlice<u8>,
               dsf: &mut CudaSlice<f32>,
               dpacked: &mut CudaSlice<i32>,
               dq2: &mut CudaSlice<u8>,
               dfused: &mut CudaSlice<i32>,
               check: Check<'_>| {
        g.k.quantize_f32_scales(dx, shape, None, true, dq, dsf)
            .unwrap();
        g.k.transform_mn_major_tma_packed(dsf, sf_shape, None, dpacked, check)
            .unwrap();
        g.k.quantize_packed(dx, shape, None, PackedLayout::MnMajorTma, dq2, dfused)
            .unwrap();
    };
    run(
        &dx,
        &mut dq,
        &mut dsf,
        &mut dpacked,
        &mut dq2,
        &mut dfused,
        Check::Eager,
    );
    let eager1 = (
        down(s, &dq),
        down(s, &dpacked),
        down(s, &dq2),
        down(s, &dfused),
    );
    assert_eq!(
        eager1.1, eager1.3,
        "quantise -> transform equals the fused MN-major quantiser"
    );

    // Capture: reset status, quantise, pack into the MN-major layout with a deferred check.
    for buf in [&mut dq, &mut dq2] {
        s.memset_zeros(buf).unwrap();
    }
    s.memset_zeros(&mut dpacked).unwrap();
    s.memset_zeros(&mut dfused).unwrap();
    s.synchronize().unwrap();
    begin(s);
    assert!(g.k.is_capturing().unwrap());
    status.reset(s).unwrap();
    run(
        &dx,
        &mut dq,
        &mut dsf,
        &mut dpacked,
        &mut dq2,
        &mut dfused,
        Check::Deferred(&status),
    );
    let graph = end(s);
    graph.launch().unwrap();
    s.synchronize().unwrap();
    status.check(s).unwrap();
    let replay1 = (
        down(s, &dq),
        down(s, &dpacked),
        down(s, &dq2),
        down(s, &dfused),
    );
    assert!(replay1 == eager1, "replay differs from eager");
    println!("capture+replay (quantise + MN-major pack + deferred validate + fused quantise-pack): bit-exact vs eager, status clean");

    // Mutate the static input, replay: outputs change and match eager on the new input.
    s.memcpy_htod(&x2, &mut dx).unwrap();
    graph.launch().unwrap();
    s.synchronize().unwrap();
    status.check(s).unwrap();
    let replay2 = (
        down(s, &dq),
        down(s, &dpacked),
        down(s, &dq2),
        down(s, &dfused),
    );
    assert!(
        replay2.0 != replay1.0 && replay2.1 != replay1.1,
        "replay did not recompute"
    );
    let cpu2 = quantize(
        &x2,
        shape,
        None,
        QuantConfig {
            use_ue8m0: true,
            layout: ScaleLayout::PackedMnMajorTma,
        },
    )
    .unwrap();
    assert_eq!(replay2.2, cpu2.fp8);
    assert_eq!(Scales::Packed(replay2.3.clone()), cpu2.scales);
    run(
        &dx,
        &mut dq,
        &mut dsf,
        &mut dpacked,
        &mut dq2,
        &mut dfused,
        Check::Eager,
    );
    let eager2 = (
        down(s, &dq),
        down(s, &dpacked),
        down(s, &dq2),
        down(s, &dfused),
    );
    assert!(
        replay2 == eager2,
        "replay after mutation differs from eager"
    );
    println!("replay after mutating the static input: output changed, bit-exact vs eager and CPU on the new input");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_deferred_check_catches_malformed_input_during_replay() {
    let g = gpu();
    let s = &g.stream;
    let n = 1 << 16;
    let good = vec![2f32.powi(-3); n];
    let mut dsf = up(s, &good);
    let mut dout = s.alloc_zeros::<i32>(n / 4).unwrap();
    let status = DeviceStatus::new(s).unwrap();
    g.k.capture_status().take(s).unwrap();

    // Graph A: deferred status word, reset inside the graph. Graph B: Check::Eager while capturing,
    // which must not sync and lands in the sticky capture status.
    begin(s);
    status.reset(s).unwrap();
    g.k.pack(&dsf, &mut dout, Check::Deferred(&status)).unwrap();
    let graph_a = end(s);
    begin(s);
    g.k.validate(&dsf, Check::Eager).unwrap();
    let graph_b = end(s);

    graph_a.launch().unwrap();
    graph_b.launch().unwrap();
    s.synchronize().unwrap();
    status.check(s).unwrap();
    g.k.capture_status().take(s).unwrap();

    let mut bad = good.clone();
    bad[40_000] = -0.5;
    bad[12_345] = 0.3;
    bad[50_000] = f32::NAN;
    let cpu_err = ue8m0::validate(&bad).unwrap_err();
    s.memcpy_htod(&bad, &mut dsf).unwrap();
    graph_a.launch().unwrap();
    graph_b.launch().unwrap();
    s.synchronize().unwrap();
    let report = status.read(s).unwrap().expect("deferred check must report");
    assert_eq!(
        (report.failures, report.first_index, report.reason),
        (3, cpu_err.index, cpu_err.reason)
    );
    println!(
        "deferred check after replay: {}",
        status.check(s).unwrap_err()
    );
    let sticky = g.k.capture_status().take(s).unwrap_err();
    println!("eager check recorded during capture, after replay: {sticky}");
    assert!(matches!(sticky, CudaError::Deferred(e) if e.0.first_index == 12_345));
    g.k.capture_status().take(s).unwrap();

    // Restore valid input: the graph's own reset clears the status on the next replay.
    s.memcpy_htod(&good, &mut dsf).unwrap();
    graph_a.launch().unwrap();
    s.synchronize().unwrap();
    status.check(s).unwrap();
    assert_eq!(down(s, &dout), pack(&good).unwrap());
    // Context healthy: an eager call afterwards works and still validates.
    g.k.pack(&dsf, &mut dout, Check::Eager).unwrap();
    println!(
        "after malformed replays: status clean on valid input, eager calls work, context healthy"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_masked_quantize_in_graph_follows_device_masked_m() {
    let g = gpu();
    let s = &g.stream;
    let shape = QuantShape {
        batches: 4,
        m: 96,
        k: 1536,
    };
    let mut rng = Rng(2024);
    // Outputs start poisoned with 0xFF; every byte must be rewritten on each replay.
    let x: Vec<Bf16> = (0..shape.len())
        .map(|_| Bf16::from_f32(rng.normal_ish()))
        .collect();
    let dx = up(s, &x);
    let mut dmask = up(s, &[96i32, 10, 0, 50]);
    let mut dq = poisoned::<u8>(s, shape.len());
    let mut dsf = poisoned::<i32>(s, shape.scale_len(ScaleLayout::PackedMnMajorTma));
    begin(s);
    g.k.quantize_packed(
        &dx,
        shape,
        Some(&dmask),
        PackedLayout::MnMajorTma,
        &mut dq,
        &mut dsf,
    )
    .unwrap();
    let graph = end(s);
    let cfg = QuantConfig {
        use_ue8m0: true,
        layout: ScaleLayout::PackedMnMajorTma,
    };
    for mask in [[96i32, 10, 0, 50], [3, 96, 200, -1]] {
        s.memcpy_htod(&mask, &mut dmask).unwrap();
        graph.launch().unwrap();
        s.synchronize().unwrap();
        let cpu = quantize(&x, shape, Some(&mask), cfg).unwrap();
        assert_eq!(down(s, &dq), cpu.fp8, "mask {mask:?}: fp8");
        assert_eq!(
            Scales::Packed(down(s, &dsf)),
            cpu.scales,
            "mask {mask:?}: scales"
        );
    }
    println!("masked quantise in a graph: masked_m read on the device at replay; inactive rows zero/1.0 over a 0xFF-poisoned buffer, bit-exact vs CPU");
}
