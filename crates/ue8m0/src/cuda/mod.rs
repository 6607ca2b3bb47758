//! CUDA kernels (feature `cuda`), bit-identical to the CPU reference.
//!
//! Kernels are compiled from `kernels.cu` with NVRTC when [`Ue8m0Cuda::new`] runs; CUDA is loaded
//! dynamically, so building needs no toolkit.
//!
//! # Capture safety
//! Nothing here allocates, synchronises or copies to the host on a stream that is capturing
//! (`cuStreamIsCapturing`), and no kernel asserts or traps: invalid input only increments a status
//! word in device memory, with atomics, which is legal inside a CUDA graph.
//!
//! - [`Check::Eager`] outside capture: the call validates, synchronises and returns
//!   [`CudaError::Invalid`] on a bad scale (the host sync is the price of an immediate answer).
//! - [`Check::Eager`] while the stream captures: the validation is recorded into the graph and
//!   accumulates into the context's *capture status* ([`Ue8m0Cuda::capture_status`]), read after
//!   replay; nothing is skipped, nothing syncs.
//! - [`Check::Deferred`]: validation accumulates into a caller-owned [`DeviceStatus`] (eager or
//!   captured); the host reads it when it chooses, typically after a graph replay.
//!
//! cudarc's multi-stream event tracking waits on events recorded outside the capture, which a
//! capturing stream refuses: call `CudaContext::disable_event_tracking` before allocating buffers
//! that a captured graph will use (cudarc's own capture test does the same).

// cudarc kernel launches and raw driver calls are `unsafe` by signature; each use below passes
// pointers of live buffers whose lengths were checked against the shape first.
#![allow(unsafe_code)]

mod status;

use std::sync::{Arc, Mutex};

use cudarc::driver::{
    result, sys, CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr,
    DriverError, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc;

pub use status::{DeferredError, DeviceStatus, StatusReport};

use crate::error::{ShapeError, ValidateError};
use crate::layout::{check_len, SfShape};
use crate::quant::QuantShape;
use crate::scalar::{Bf16, QuantInput};

const SOURCE: &str = include_str!("kernels.cu");
const THREADS: u32 = 256;

// SAFETY: `Bf16` is `repr(transparent)` over `u16`, a plain 2-byte value with no invalid bits.
unsafe impl DeviceRepr for Bf16 {}

/// Errors of the CUDA path.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    /// A CUDA driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    /// NVRTC could not compile the kernels.
    #[error("NVRTC: {0}")]
    Compile(String),
    /// The device lacks the FP8 conversion instruction (compute capability 8.9 or newer needed).
    #[error("compute capability {0}.{1} is too old: FP8 conversion needs 8.9 or newer")]
    Arch(i32, i32),
    /// Bad shape or buffer length.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// Eager validation failed: the first bad value and how many there were.
    #[error("{error} ({failures} invalid value(s) in total)")]
    Invalid {
        /// The first invalid value.
        error: ValidateError,
        /// How many values failed.
        failures: u64,
    },
    /// A deferred status word reported failures.
    #[error(transparent)]
    Deferred(#[from] DeferredError),
}

/// How a validating operation reports invalid scales.
#[derive(Clone, Copy, Debug)]
pub enum Check<'a> {
    /// Outside capture: synchronise and return [`CudaError::Invalid`]. While capturing: record the
    /// check into the graph, accumulating into [`Ue8m0Cuda::capture_status`]; never sync.
    Eager,
    /// Accumulate into this status word; never sync.
    Deferred(&'a DeviceStatus),
}

/// Where the fused quantiser writes packed UE8M0 scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PackedLayout {
    /// `[rows, ceil(groups / 4)]` row-major `int32`.
    RowMajor,
    /// DeepGEMM's MN-major TMA-aligned layout, per batch.
    MnMajorTma,
}

/// Input element types of the quantiser on the device.
pub trait DeviceInput: QuantInput + DeviceRepr {
    /// Row of the kernel table: 0 for bf16, 1 for f32.
    const KERNEL_INDEX: usize;
    /// Elements per 16-byte vector.
    const PER_16B: usize;
}
impl DeviceInput for Bf16 {
    const KERNEL_INDEX: usize = 0;
    const PER_16B: usize = 8;
}
impl DeviceInput for f32 {
    const KERNEL_INDEX: usize = 1;
    const PER_16B: usize = 4;
}

struct Kernels {
    ceil: CudaFunction,
    pack: CudaFunction,
    validate: CudaFunction,
    transform: CudaFunction,
    cvt_range: CudaFunction,
    // [input bf16/f32][vec][layout f32/row/mn]
    quant: [[[CudaFunction; 3]; 2]; 2],
}

/// The compiled kernels bound to one stream, with the status words of eager checks.
pub struct Ue8m0Cuda {
    stream: Arc<CudaStream>,
    k: Kernels,
    // Held across reset -> launch -> read so that eager checks from several host threads sharing
    // this object do not mix their counts.
    scratch: Mutex<DeviceStatus>,
    capture: DeviceStatus,
    max_blocks: u32,
    // Resident blocks of each quantiser on the whole device: its grid never exceeds one wave, so
    // no partial last wave runs at reduced occupancy.
    quant_blocks: [[[u32; 3]; 2]; 2],
}

fn dptr<T>(buf: &impl DevicePtr<T>, stream: &CudaStream) -> u64 {
    // The guard only records/awaits cudarc's tracking events; launches below are stream-ordered.
    let (ptr, _guard) = buf.device_ptr(stream);
    ptr
}

fn dptr_mut<T>(buf: &mut impl DevicePtrMut<T>, stream: &CudaStream) -> u64 {
    let (ptr, _guard) = buf.device_ptr_mut(stream);
    ptr
}

fn aligned(ptrs: &[u64], bytes: u64) -> bool {
    ptrs.iter().all(|p| p % bytes == 0)
}

fn u32_dim(what: &'static str, value: usize) -> Result<u32, ShapeError> {
    u32::try_from(value).map_err(|_| ShapeError::TooLarge { what, value })
}

/// Compiles the kernels to PTX for a virtual architecture such as `"compute_90"` (needs only
/// NVRTC, no GPU).
///
/// # Errors
/// NVRTC failure, with its log.
pub fn compile(arch: &'static str) -> Result<nvrtc::Ptx, CudaError> {
    let opts = nvrtc::CompileOptions {
        arch: Some(arch),
        // IEEE float semantics: the CPU reference relies on correctly rounded mul/rcp, no FTZ.
        ftz: Some(false),
        prec_div: Some(true),
        fmad: Some(false),
        options: vec!["-std=c++17".into()],
        ..Default::default()
    };
    nvrtc::compile_ptx_with_opts(SOURCE, opts).map_err(|e| CudaError::Compile(format!("{e:?}")))
}

impl Ue8m0Cuda {
    /// Compiles the kernels for the stream's device and allocates two status words.
    ///
    /// # Errors
    /// NVRTC or driver failures, or a device older than compute capability 8.9.
    pub fn new(stream: Arc<CudaStream>) -> Result<Self, CudaError> {
        let ctx = stream.context().clone();
        let (major, minor) = ctx.compute_capability()?;
        if (major, minor) < (8, 9) {
            return Err(CudaError::Arch(major, minor));
        }
        // The kernels use nothing past sm_89's FP8 conversion; newer devices JIT the sm_90 PTX.
        let arch = if (major, minor) == (8, 9) {
            "compute_89"
        } else {
            "compute_90"
        };
        let module = ctx.load_module(compile(arch)?)?;
        let f = |name: &str| module.load_function(name);
        let quant_for = |input: &str| -> Result<[[CudaFunction; 3]; 2], DriverError> {
            let by_layout = |vec: &str| -> Result<[CudaFunction; 3], DriverError> {
                Ok([
                    f(&format!("ue8m0_quant_{input}_{vec}_f32"))?,
                    f(&format!("ue8m0_quant_{input}_{vec}_row"))?,
                    f(&format!("ue8m0_quant_{input}_{vec}_mn"))?,
                ])
            };
            Ok([by_layout("any")?, by_layout("vec")?])
        };
        let quant = [quant_for("bf16")?, quant_for("f32")?];
        let k = Kernels {
            ceil: f("ue8m0_ceil")?,
            pack: f("ue8m0_pack")?,
            validate: f("ue8m0_validate")?,
            transform: f("ue8m0_transform_mn_major")?,
            cvt_range: f("ue8m0_cvt_e4m3_range")?,
            quant,
        };
        let sms =
            ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let sms = u32::try_from(sms).unwrap_or(1).max(1);
        let max_blocks = sms * 8;
        let mut quant_blocks = [[[max_blocks; 3]; 2]; 2];
        for (fns, blocks) in k
            .quant
            .iter()
            .flatten()
            .zip(quant_blocks.iter_mut().flatten())
        {
            for (func, b) in fns.iter().zip(blocks.iter_mut()) {
                let per_sm =
                    func.occupancy_max_active_blocks_per_multiprocessor(THREADS, 0, None)?;
                *b = (sms * per_sm).clamp(1, max_blocks);
            }
        }
        let scratch = DeviceStatus::new(&stream)?;
        let capture = DeviceStatus::new(&stream)?;
        stream.synchronize()?;
        Ok(Self {
            stream,
            k,
            scratch: Mutex::new(scratch),
            capture,
            max_blocks,
            quant_blocks,
        })
    }

    /// The stream every operation is enqueued on.
    #[must_use]
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Whether the stream is capturing a graph right now (`cuStreamIsCapturing`).
    ///
    /// # Errors
    /// Driver failure (an invalidated capture reports as an error).
    pub fn is_capturing(&self) -> Result<bool, CudaError> {
        let status = self.stream.capture_status()?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    /// The status word that [`Check::Eager`] checks accumulate into while capturing. Sticky: read
    /// it with [`DeviceStatus::take`] after replay (or record [`DeviceStatus::reset`] into the graph).
    #[must_use]
    pub fn capture_status(&self) -> &DeviceStatus {
        &self.capture
    }

    fn grid(&self, work_items: u64) -> LaunchConfig {
        let blocks = work_items
            .div_ceil(u64::from(THREADS))
            .clamp(1, u64::from(self.max_blocks));
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// `out[i] = ceil_to_ue8m0(x[i])`. Never validates (every input has an output).
    ///
    /// # Errors
    /// Length mismatch or driver failure.
    pub fn ceil_to_ue8m0(
        &self,
        x: &impl DevicePtr<f32>,
        out: &mut impl DevicePtrMut<f32>,
    ) -> Result<(), CudaError> {
        check_len("out", x.len(), out.len())?;
        let n = x.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let (xp, op) = (dptr(x, &self.stream), dptr_mut(out, &self.stream));
        let vec = i32::from(aligned(&[xp, op], 16));
        let cfg = self.grid(n.div_ceil(4 * 4));
        unsafe {
            self.stream
                .launch_builder(&self.k.ceil)
                .arg(&xp)
                .arg(&op)
                .arg(&n)
                .arg(&vec)
                .launch(cfg)?;
        }
        Ok(())
    }

    /// Packs fp32 UE8M0 scales four to an `int32` (`pack_ue8m0_to_int`), validating each one.
    /// The output is always fully written; for invalid inputs it holds their exponent bytes.
    ///
    /// # Errors
    /// Length not a multiple of 4 or mismatched, an eager validation failure, or driver failure.
    pub fn pack(
        &self,
        sf: &impl DevicePtr<f32>,
        out: &mut impl DevicePtrMut<i32>,
        check: Check<'_>,
    ) -> Result<(), CudaError> {
        if !sf.len().is_multiple_of(4) {
            return Err(ShapeError::Len {
                what: "sf (multiple of 4)",
                expected: sf.len().next_multiple_of(4),
                got: sf.len(),
            }
            .into());
        }
        check_len("out", sf.len() / 4, out.len())?;
        let words = out.len() as u64;
        let (sp, op) = (dptr(sf, &self.stream), dptr_mut(out, &self.stream));
        self.checked(check, sp, |status| {
            if words == 0 {
                return Ok(());
            }
            let vec = i32::from(aligned(&[sp], 16));
            let cfg = self.grid(words.div_ceil(4));
            unsafe {
                self.stream
                    .launch_builder(&self.k.pack)
                    .arg(&sp)
                    .arg(&op)
                    .arg(&words)
                    .arg(&vec)
                    .arg(&status)
                    .launch(cfg)?;
            }
            Ok(())
        })
    }

    /// Bit-level validation of fp32 scales (see [`crate::invalid_reason`]).
    ///
    /// # Errors
    /// An eager validation failure, or driver failure.
    pub fn validate(&self, sf: &impl DevicePtr<f32>, check: Check<'_>) -> Result<(), CudaError> {
        let n = sf.len() as u64;
        let sp = dptr(sf, &self.stream);
        self.checked(check, sp, |status| {
            if n == 0 {
                return Ok(());
            }
            let vec = i32::from(aligned(&[sp], 16));
            let cfg = self.grid(n.div_ceil(16));
            unsafe {
                self.stream
                    .launch_builder(&self.k.validate)
                    .arg(&sp)
                    .arg(&n)
                    .arg(&vec)
                    .arg(&status)
                    .launch(cfg)?;
            }
            Ok(())
        })
    }

    /// DeepGEMM's MN-major TMA-aligned packed layout of fp32 UE8M0 scales (see [`crate::layout`]),
    /// validating every active value. With `masked_m` (device, one `i32` per batch), rows at or past
    /// it are written as 1.0 and neither read nor validated.
    ///
    /// # Errors
    /// Shape mismatch, an eager validation failure, or driver failure.
    pub fn transform_mn_major_tma_packed(
        &self,
        sf: &impl DevicePtr<f32>,
        shape: SfShape,
        masked_m: Option<&CudaSlice<i32>>,
        out: &mut impl DevicePtrMut<i32>,
        check: Check<'_>,
    ) -> Result<(), CudaError> {
        check_len("sf", shape.input_len(), sf.len())?;
        check_len("out", shape.packed_len(), out.len())?;
        if let Some(mm) = masked_m {
            check_len("masked_m", shape.batches, mm.len())?;
        }
        let batches = u32_dim("batches", shape.batches)?;
        // The kernel rounds both up to multiples of 4 in 32 bits.
        u32_dim("mn", shape.tma_mn())?;
        u32_dim("sf_k", shape.sf_k.next_multiple_of(4))?;
        let (mn, sf_k) = (shape.mn as u32, shape.sf_k as u32);
        let sp = dptr(sf, &self.stream);
        let op = dptr_mut(out, &self.stream);
        let mp = masked_m.map_or(0u64, |m| dptr(m, &self.stream));
        let total = shape.packed_len() as u64;
        self.checked(check, sp, |status| {
            if total == 0 {
                return Ok(());
            }
            unsafe {
                self.stream
                    .launch_builder(&self.k.transform)
                    .arg(&sp)
                    .arg(&op)
                    .arg(&batches)
                    .arg(&mn)
                    .arg(&sf_k)
                    .arg(&mp)
                    .arg(&status)
                    .launch(self.grid(total))?;
            }
            Ok(())
        })
    }

    /// Fused per-token-group quantisation with fp32 scales (`[rows, groups]`), optionally rounded
    /// to UE8M0. Same semantics as [`crate::quantize`] with [`crate::ScaleLayout::F32`].
    ///
    /// # Errors
    /// Shape mismatch or driver failure.
    pub fn quantize_f32_scales<T: DeviceInput>(
        &self,
        x: &impl DevicePtr<T>,
        shape: QuantShape,
        masked_m: Option<&CudaSlice<i32>>,
        use_ue8m0: bool,
        q: &mut impl DevicePtrMut<u8>,
        scales: &mut impl DevicePtrMut<f32>,
    ) -> Result<(), CudaError> {
        check_len(
            "scales",
            shape.scale_len(crate::ScaleLayout::F32),
            scales.len(),
        )?;
        let sp = dptr_mut(scales, &self.stream);
        self.quantize_raw(x, shape, masked_m, use_ue8m0, 0, q, sp)
    }

    /// Fused per-token-group quantisation with UE8M0 scales packed in one pass (DeepGEMM's
    /// `per_token_cast_to_fp8(x, use_ue8m0=True, use_packed_ue8m0=True)`, or with
    /// [`PackedLayout::MnMajorTma`] directly in the layout the GEMM reads).
    ///
    /// # Errors
    /// Shape mismatch or driver failure.
    pub fn quantize_packed<T: DeviceInput>(
        &self,
        x: &impl DevicePtr<T>,
        shape: QuantShape,
        masked_m: Option<&CudaSlice<i32>>,
        layout: PackedLayout,
        q: &mut impl DevicePtrMut<u8>,
        scales: &mut impl DevicePtrMut<i32>,
    ) -> Result<(), CudaError> {
        let (cpu_layout, index) = match layout {
            PackedLayout::RowMajor => (crate::ScaleLayout::PackedRowMajor, 1),
            PackedLayout::MnMajorTma => (crate::ScaleLayout::PackedMnMajorTma, 2),
        };
        check_len("scales", shape.scale_len(cpu_layout), scales.len())?;
        let sp = dptr_mut(scales, &self.stream);
        self.quantize_raw(x, shape, masked_m, true, index, q, sp)
    }

    #[allow(clippy::too_many_arguments)]
    fn quantize_raw<T: DeviceInput>(
        &self,
        x: &impl DevicePtr<T>,
        shape: QuantShape,
        masked_m: Option<&CudaSlice<i32>>,
        use_ue8m0: bool,
        layout: usize,
        q: &mut impl DevicePtrMut<u8>,
        scales_ptr: u64,
    ) -> Result<(), CudaError> {
        check_len("x", shape.len(), x.len())?;
        check_len("q", shape.len(), q.len())?;
        if let Some(mm) = masked_m {
            check_len("masked_m", shape.batches, mm.len())?;
        }
        let batches = u32_dim("batches", shape.batches)?;
        // The kernel rounds m up to 4 and k up to 512 in 32 bits.
        u32_dim("m", shape.m.next_multiple_of(4))?;
        u32_dim("k", shape.k.next_multiple_of(512))?;
        let (m, k) = (shape.m as u32, shape.k as u32);
        let units = (shape.rows() * shape.packed_groups()) as u64;
        let pad_rows = (shape.m.next_multiple_of(4) - shape.m) as u64;
        if units == 0 && (layout != 2 || pad_rows == 0) {
            return Ok(());
        }
        let xp = dptr(x, &self.stream);
        let qp = dptr_mut(q, &self.stream);
        let mp = masked_m.map_or(0u64, |mm| dptr(mm, &self.stream));
        let vec = shape.k.is_multiple_of(T::PER_16B)
            && aligned(&[xp], 16)
            && aligned(&[qp], T::PER_16B as u64);
        let func = &self.k.quant[T::KERNEL_INDEX][usize::from(vec)][layout];
        let use_ue8m0 = i32::from(use_ue8m0);
        // One warp per unit of 512 columns; 8 warps per block; at most one wave of resident blocks.
        let mut cfg = self.grid(units.max(1) * 32);
        cfg.grid_dim.0 = cfg
            .grid_dim
            .0
            .min(self.quant_blocks[T::KERNEL_INDEX][usize::from(vec)][layout]);
        unsafe {
            self.stream
                .launch_builder(func)
                .arg(&xp)
                .arg(&qp)
                .arg(&scales_ptr)
                .arg(&mp)
                .arg(&batches)
                .arg(&m)
                .arg(&k)
                .arg(&use_ue8m0)
                .launch(cfg)?;
        }
        Ok(())
    }

    /// Test helper: `out[i]` = the device's FP8 E4M3 conversion of the `f32` with bits `base + i`.
    ///
    /// # Errors
    /// Driver failure.
    pub fn convert_e4m3_range(&self, base: u32, out: &mut CudaSlice<u8>) -> Result<(), CudaError> {
        let n = u32_dim("out", out.len())?;
        let op = dptr_mut(out, &self.stream);
        unsafe {
            self.stream
                .launch_builder(&self.k.cvt_range)
                .arg(&base)
                .arg(&op)
                .arg(&n)
                .launch(self.grid(u64::from(n).div_ceil(2)))?;
        }
        Ok(())
    }

    /// Runs a validating launch under `check`.
    fn checked(
        &self,
        check: Check<'_>,
        input_ptr: u64,
        launch: impl FnOnce(u64) -> Result<(), CudaError>,
    ) -> Result<(), CudaError> {
        match check {
            Check::Deferred(status) => launch(status.device_ptr(&self.stream)),
            Check::Eager if self.is_capturing()? => launch(self.capture.device_ptr(&self.stream)),
            Check::Eager => {
                let scratch = self.scratch.lock().unwrap_or_else(|e| e.into_inner());
                scratch.reset(&self.stream)?;
                launch(scratch.device_ptr(&self.stream))?;
                let Some(report) = scratch.read(&self.stream)? else {
                    return Ok(());
                };
                let mut bits = [0u32; 1];
                unsafe {
                    result::memcpy_dtoh_async(
                        &mut bits,
                        input_ptr + 4 * report.first_index,
                        self.stream.cu_stream(),
                    )?;
                }
                self.stream.synchronize()?;
                Err(CudaError::Invalid {
                    error: ValidateError {
                        index: report.first_index,
                        reason: report.reason,
                        bits: bits[0],
                    },
                    failures: report.failures,
                })
            }
        }
    }
}
