//! The device status word that validation kernels accumulate into.

#![allow(unsafe_code)]

use std::sync::Arc;

use cudarc::driver::{result, CudaSlice, CudaStream, DevicePtr, DriverError};

use crate::error::InvalidReason;

/// What a status word recorded: how many values failed, the smallest failing index and its reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusReport {
    /// Invalid values counted since the last reset (summed over every check that wrote here).
    pub failures: u64,
    /// Smallest flat input index that failed (over all checks that wrote here).
    pub first_index: u64,
    /// Why that value failed.
    pub reason: InvalidReason,
}

/// A deferred check found invalid scales.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("deferred check: {} invalid scale value(s); first at index {}: {}", .0.failures, .0.first_index, .0.reason)]
pub struct DeferredError(pub StatusReport);

/// Two `u64` in device memory: failure count and the encoded first failure. Kernels only add to it
/// with atomics (legal inside graph capture, no host sync); the host reads it when it chooses.
#[derive(Debug)]
pub struct DeviceStatus {
    buf: CudaSlice<u64>,
}

impl DeviceStatus {
    /// A zeroed (clean) status word.
    ///
    /// # Errors
    /// Allocation failure.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Self, DriverError> {
        Ok(Self {
            buf: stream.alloc_zeros::<u64>(2)?,
        })
    }

    pub(crate) fn device_ptr(&self, stream: &CudaStream) -> u64 {
        let (ptr, _guard) = self.buf.device_ptr(stream);
        ptr
    }

    /// Enqueues a reset to clean (a memset: legal inside capture, where it becomes a graph node).
    ///
    /// # Errors
    /// Driver failure.
    pub fn reset(&self, stream: &CudaStream) -> Result<(), DriverError> {
        let ptr = self.device_ptr(stream);
        // SAFETY: `ptr` is this status word's own 16-byte allocation.
        unsafe { result::memset_d8_async(ptr, 0, 16, stream.cu_stream()) }
    }

    /// Synchronises `stream` and reads the word: `None` when clean. Must not be called while the
    /// stream captures (it syncs).
    ///
    /// # Errors
    /// Driver failure (including an error from an earlier kernel on the stream).
    pub fn read(&self, stream: &Arc<CudaStream>) -> Result<Option<StatusReport>, DriverError> {
        let words = stream.clone_dtoh(&self.buf)?;
        stream.synchronize()?;
        Ok(decode(words[0], words[1]))
    }

    /// [`read`](Self::read) as a `Result`: `Err(DeferredError)` when failures were recorded.
    ///
    /// # Errors
    /// The recorded failures, or a driver failure (as `CudaError::Driver`).
    pub fn check(&self, stream: &Arc<CudaStream>) -> Result<(), super::CudaError> {
        match self.read(stream)? {
            None => Ok(()),
            Some(report) => Err(DeferredError(report).into()),
        }
    }

    /// [`check`](Self::check), then reset.
    ///
    /// # Errors
    /// As [`check`](Self::check).
    pub fn take(&self, stream: &Arc<CudaStream>) -> Result<(), super::CudaError> {
        let outcome = self.check(stream);
        self.reset(stream)?;
        stream.synchronize()?;
        outcome
    }
}

fn decode(count: u64, enc: u64) -> Option<StatusReport> {
    if count == 0 && enc == 0 {
        return None;
    }
    let key = !enc;
    Some(StatusReport {
        failures: count,
        first_index: key >> 2,
        // A code the kernels never write would mean a corrupted word; report it as a mantissa error
        // rather than lose the failure.
        reason: InvalidReason::from_code((key & 3) as u8).unwrap_or(InvalidReason::NonZeroMantissa),
    })
}
