//! GPU benchmark: bandwidth of `ceil_to_ue8m0`, `pack`, `validate` and the fused quantisers against
//! a device-to-device copy moving the same number of bytes; also dumps inputs and outputs for the
//! PyTorch cross-check (`crates/ue8m0/bench/torch_ref.py`).
//!
//! Usage: `gpu_bench OUT_DIR` (writes `OUT_DIR/bench.json` and `OUT_DIR/xcheck/*.bin`).

#![allow(clippy::print_stdout, clippy::print_stderr, unsafe_code)]

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream};
use ue8m0::cuda::{Check, DeviceStatus, PackedLayout, Ue8m0Cuda};
use ue8m0::{Bf16, QuantShape, ScaleLayout};

const WARMUP: usize = 3;
const ITERS: usize = 20;

/// Mean milliseconds per call of `f`, timed with CUDA events.
fn time_ms(s: &Arc<CudaStream>, mut f: impl FnMut()) -> f64 {
    for _ in 0..WARMUP {
        f();
    }
    let ctx = s.context();
    let start = ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .unwrap();
    let stop = ctx
        .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .unwrap();
    start.record(s).unwrap();
    for _ in 0..ITERS {
        f();
    }
    stop.record(s).unwrap();
    stop.synchronize().unwrap();
    f64::from(start.elapsed_ms(&stop).unwrap()) / ITERS as f64
}

/// Copy of `bytes / 2` bytes: the same read + write traffic as an op moving `bytes` in total.
fn copy_ms(s: &Arc<CudaStream>, src: &CudaSlice<u8>, dst: &mut CudaSlice<u8>, bytes: usize) -> f64 {
    let half = bytes / 2;
    let a = src.slice(..half);
    let mut b = dst.slice_mut(..half);
    time_ms(s, || s.memcpy_dtod(&a, &mut b).unwrap())
}

struct Row {
    name: String,
    bytes: usize,
    ms: f64,
    copy_ms: f64,
}

fn random_bits(n: usize, seed: u64) -> Vec<u32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 17) as u32
        })
        .collect()
}

fn normalish(n: usize, seed: u64) -> Vec<f32> {
    random_bits(n, seed)
        .into_iter()
        .map(|b| {
            // Sum of uniforms ~ normal; scaled per 1024-element block to spread magnitudes.
            let u = (b & 0xFFFF) as f32 / 65536.0 + ((b >> 16) & 0xFFFF) as f32 / 65536.0 - 1.0;
            u * 2.0
        })
        .collect()
}

fn write_bin<T: Copy>(dir: &Path, name: &str, data: &[T]) {
    // SAFETY: plain-old-data slices viewed as bytes for a raw dump.
    let bytes = unsafe {
        std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data))
    };
    std::fs::write(dir.join(name), bytes).unwrap();
}

fn main() {
    let out_dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "/tmp/ue8m0".into());
    let out_dir = Path::new(&out_dir);
    std::fs::create_dir_all(out_dir.join("xcheck")).unwrap();
    let ctx = CudaContext::new(0).unwrap();
    unsafe { ctx.disable_event_tracking() };
    let s = ctx.new_stream().unwrap();
    let k = Ue8m0Cuda::new(s.clone()).unwrap();
    println!("device: {}", ctx.name().unwrap());

    let mut rows: Vec<Row> = Vec::new();
    let copy_cap = 3usize << 30;
    let csrc = s.alloc_zeros::<u8>(copy_cap).unwrap();
    let mut cdst = s.alloc_zeros::<u8>(copy_cap).unwrap();

    // Element-wise ops on 2^28 fp32 values (1 GiB).
    let n = 1usize << 28;
    let sf_in: Vec<f32> = random_bits(n, 3)
        .into_iter()
        .map(|b| f32::from_bits(b & 0x7FFF_FFFF))
        .collect();
    let dx = s.clone_htod(&sf_in).unwrap();
    let mut dceil = s.alloc_zeros::<f32>(n).unwrap();
    let ms = time_ms(&s, || k.ceil_to_ue8m0(&dx, &mut dceil).unwrap());
    rows.push(Row {
        name: "ceil_to_ue8m0 f32".into(),
        bytes: 8 * n,
        ms,
        copy_ms: copy_ms(&s, &csrc, &mut cdst, 8 * n),
    });

    let status = DeviceStatus::new(&s).unwrap();
    let mut dpacked = s.alloc_zeros::<i32>(n / 4).unwrap();
    let ms = time_ms(&s, || {
        k.pack(&dceil, &mut dpacked, Check::Deferred(&status))
            .unwrap()
    });
    status.check(&s).unwrap();
    rows.push(Row {
        name: "pack (+validate, deferred)".into(),
        bytes: 5 * n,
        ms,
        copy_ms: copy_ms(&s, &csrc, &mut cdst, 5 * n),
    });
    let ms = time_ms(&s, || k.pack(&dceil, &mut dpacked, Check::Eager).unwrap());
    rows.push(Row {
        name: "pack (+validate, eager: sync+readback)".into(),
        bytes: 5 * n,
        ms,
        copy_ms: copy_ms(&s, &csrc, &mut cdst, 5 * n),
    });
    let ms = time_ms(&s, || k.validate(&dceil, Check::Deferred(&status)).unwrap());
    rows.push(Row {
        name: "validate (deferred)".into(),
        bytes: 4 * n,
        ms,
        copy_ms: copy_ms(&s, &csrc, &mut cdst, 4 * n),
    });
    status.check(&s).unwrap();
    drop((dx, dceil, dpacked));

    // Fused per-token-group quantisation, DeepSeek-V3 hidden size.
    let (m, kk) = (16384usize, 7168usize);
    let shape = QuantShape {
        batches: 1,
        m,
        k: kk,
    };
    let xb: Vec<Bf16> = normalish(m * kk, 5)
        .into_iter()
        .map(Bf16::from_f32)
        .collect();
    let dxb = s.clone_htod(&xb).unwrap();
    let mut dq = s.alloc_zeros::<u8>(m * kk).unwrap();
    let row_words = shape.scale_len(ScaleLayout::PackedRowMajor);
    let mn_words = shape.scale_len(ScaleLayout::PackedMnMajorTma);
    let mut dsp = s.alloc_zeros::<i32>(row_words.max(mn_words)).unwrap();
    let bytes = 2 * m * kk + m * kk + 4 * row_words;
    let ms = time_ms(&s, || {
        k.quantize_packed(
            &dxb,
            shape,
            None,
            PackedLayout::RowMajor,
            &mut dq,
            &mut dsp.slice_mut(..row_words),
        )
        .unwrap()
    });
    let cms = copy_ms(&s, &csrc, &mut cdst, bytes);
    rows.push(Row {
        name: format!("quantise+pack bf16 {m}x{kk}, packed row-major"),
        bytes,
        ms,
        copy_ms: cms,
    });
    let bytes_mn = 2 * m * kk + m * kk + 4 * mn_words;
    let ms = time_ms(&s, || {
        k.quantize_packed(
            &dxb,
            shape,
            None,
            PackedLayout::MnMajorTma,
            &mut dq,
            &mut dsp.slice_mut(..mn_words),
        )
        .unwrap()
    });
    rows.push(Row {
        name: format!("quantise+pack bf16 {m}x{kk}, MN-major TMA"),
        bytes: bytes_mn,
        ms,
        copy_ms: cms,
    });
    let mut dsf = s
        .alloc_zeros::<f32>(shape.scale_len(ScaleLayout::F32))
        .unwrap();
    let bytes_f32 = 2 * m * kk + m * kk + 4 * shape.scale_len(ScaleLayout::F32);
    let ms = time_ms(&s, || {
        k.quantize_f32_scales(&dxb, shape, None, true, &mut dq, &mut dsf)
            .unwrap()
    });
    rows.push(Row {
        name: format!("quantise bf16 {m}x{kk}, fp32 UE8M0 scales"),
        bytes: bytes_f32,
        ms,
        copy_ms: cms,
    });
    drop(dxb);
    let mf = 8192usize;
    let shape_f = QuantShape {
        batches: 1,
        m: mf,
        k: kk,
    };
    let xf = normalish(mf * kk, 9);
    let dxf = s.clone_htod(&xf).unwrap();
    let rw = shape_f.scale_len(ScaleLayout::PackedRowMajor);
    let bytes = 4 * mf * kk + mf * kk + 4 * rw;
    let ms = time_ms(&s, || {
        k.quantize_packed(
            &dxf,
            shape_f,
            None,
            PackedLayout::RowMajor,
            &mut dq.slice_mut(..mf * kk),
            &mut dsp.slice_mut(..rw),
        )
        .unwrap()
    });
    rows.push(Row {
        name: format!("quantise+pack f32 {mf}x{kk}, packed row-major"),
        bytes,
        ms,
        copy_ms: copy_ms(&s, &csrc, &mut cdst, bytes),
    });
    drop(dxf);

    // Table and JSON.
    println!(
        "\n{:<48} {:>12} {:>10} {:>10} {:>10} {:>8}",
        "op", "bytes", "ms", "GB/s", "copy GB/s", "vs copy"
    );
    let mut json = String::from("[\n");
    for (i, r) in rows.iter().enumerate() {
        let gbs = r.bytes as f64 / r.ms / 1e6;
        let cgbs = r.bytes as f64 / r.copy_ms / 1e6;
        println!(
            "{:<48} {:>12} {:>10.4} {:>10.0} {:>10.0} {:>7.1}%",
            r.name,
            r.bytes,
            r.ms,
            gbs,
            cgbs,
            100.0 * gbs / cgbs
        );
        let _ = writeln!(
            json,
            "  {{\"name\": \"{}\", \"bytes\": {}, \"ms\": {}, \"copy_ms\": {}}}{}",
            r.name,
            r.bytes,
            r.ms,
            r.copy_ms,
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    json.push(']');
    std::fs::write(out_dir.join("bench.json"), json).unwrap();

    // Cross-check dumps: bf16 input with zero rows, tiny rows and NaN rows; our outputs.
    let xdir = out_dir.join("xcheck");
    let (m, kk) = (1024usize, 7168usize);
    let shape = QuantShape {
        batches: 1,
        m,
        k: kk,
    };
    let mut x = normalish(m * kk, 11);
    for c in 0..kk {
        x[5 * kk + c] = 0.0; // zero row: amax floor
        x[6 * kk + c] *= 1e-7; // tiny row
        x[7 * kk + c] *= 3e4;
    }
    x[9 * kk + 300] = f32::NAN; // NaN group (rows >= 9 are "nan rows" in the report)
    x[10 * kk + 7000] = f32::NAN;
    let xb: Vec<Bf16> = x.into_iter().map(Bf16::from_f32).collect();
    let dxb = s.clone_htod(&xb).unwrap();
    let mut dq = s.alloc_zeros::<u8>(m * kk).unwrap();
    let rw = shape.scale_len(ScaleLayout::PackedRowMajor);
    let mw = shape.scale_len(ScaleLayout::PackedMnMajorTma);
    let mut drow = s.alloc_zeros::<i32>(rw).unwrap();
    let mut dmn = s.alloc_zeros::<i32>(mw).unwrap();
    let mut dsf = s
        .alloc_zeros::<f32>(shape.scale_len(ScaleLayout::F32))
        .unwrap();
    write_bin(&xdir, "x_bf16.bin", &xb);
    k.quantize_packed(
        &dxb,
        shape,
        None,
        PackedLayout::RowMajor,
        &mut dq,
        &mut drow,
    )
    .unwrap();
    write_bin(&xdir, "q_packed_row.bin", &s.clone_dtoh(&dq).unwrap());
    write_bin(&xdir, "sf_packed_row.bin", &s.clone_dtoh(&drow).unwrap());
    k.quantize_packed(
        &dxb,
        shape,
        None,
        PackedLayout::MnMajorTma,
        &mut dq,
        &mut dmn,
    )
    .unwrap();
    write_bin(&xdir, "sf_packed_mn.bin", &s.clone_dtoh(&dmn).unwrap());
    k.quantize_f32_scales(&dxb, shape, None, false, &mut dq, &mut dsf)
        .unwrap();
    write_bin(&xdir, "q_f32sf.bin", &s.clone_dtoh(&dq).unwrap());
    write_bin(&xdir, "sf_f32.bin", &s.clone_dtoh(&dsf).unwrap());
    let mut cin: Vec<f32> = random_bits(1 << 20, 13)
        .into_iter()
        .map(f32::from_bits)
        .collect();
    cin.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MAX,
        f32::from_bits(1),
    ]);
    let dcin = s.clone_htod(&cin).unwrap();
    let mut dcout = s.alloc_zeros::<f32>(cin.len()).unwrap();
    k.ceil_to_ue8m0(&dcin, &mut dcout).unwrap();
    write_bin(&xdir, "ceil_in.bin", &cin);
    write_bin(&xdir, "ceil_out.bin", &s.clone_dtoh(&dcout).unwrap());
    println!("cross-check dumps written to {}", xdir.display());
}
