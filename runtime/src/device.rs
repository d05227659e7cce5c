//! Where the runtime computes: the one place that names a candle device.
//!
//! Each side of a replay takes its device from [`for_side`] (through
//! [`crate::ctx::Ctx`]): values read from files are put on the side's
//! device, and host-side kernel results on their input's. The runtime's own kernels are candle
//! `CustomOp`s, which candle dispatches by the tensor's device (their
//! `cpu_fwd` is the host code; [`is_host`] picks a composite of candle ops
//! where a kernel has no other). The CPU is the only device built and
//! tested here: a CUDA tested side is a [`Kind`] variant, its arm in
//! [`for_side`], and its tests.

use candle_core::{CpuStorage, Device, Layout, Tensor, WithDType};

use crate::ctx::Side;

/// A device the runtime can run a side on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The host's CPU: the bench in float64, and the emulated device (the
    /// tested dtypes' rounding reproduced on the CPU).
    Cpu,
}

impl Kind {
    /// The candle device.
    pub fn device(self) -> Device {
        match self {
            Kind::Cpu => Device::Cpu,
        }
    }

    /// What a tested value computed on this device is called in a row's
    /// Message (`tested: emulated device in the dumped dtypes (...)`).
    pub fn tested_noun(self) -> &'static str {
        match self {
            Kind::Cpu => "emulated device",
        }
    }
}

/// The device `side` runs on.
pub fn for_side(side: Side) -> Kind {
    match side {
        Side::Bench | Side::Device => Kind::Cpu,
    }
}

/// The host: where values read from files, and the results of the
/// runtime's host-side kernels, are put first.
pub fn host() -> Device {
    Kind::Cpu.device()
}

/// Whether `t` is on the host, where the runtime's own kernels run.
pub fn is_host(t: &Tensor) -> bool {
    t.device().is_cpu()
}

/// The contiguous values of type `T` of a host storage: what the
/// runtime's own kernels compute on. An error naming `op` for another
/// dtype or a non-contiguous layout.
pub fn host_values<'a, T: WithDType>(op: &str, storage: &'a CpuStorage, layout: &Layout) -> candle_core::Result<&'a [T]> {
    let all = T::cpu_storage_as_slice(storage).map_err(|_| candle_core::Error::Msg(format!("{op}: operands of one float dtype expected")))?;
    let (start, end) = layout.contiguous_offsets().ok_or_else(|| candle_core::Error::Msg(format!("{op}: a non-contiguous input")))?;
    Ok(&all[start..end])
}

/// `f` of the contiguous values of type `T` of host tensors ([`host_values`]
/// of each), their storages borrowed while it runs: a kernel's backward
/// reads its operands this way. An error naming `op` for a tensor off the
/// host, of another dtype or not contiguous.
pub fn with_host_values<T: WithDType, R, const N: usize>(
    op: &str,
    tensors: [&Tensor; N],
    f: impl FnOnce([&[T]; N]) -> candle_core::Result<R>,
) -> candle_core::Result<R> {
    let guards = tensors.map(|t| t.storage_and_layout());
    let mut values: [&[T]; N] = [&[]; N];
    for (slot, (storage, layout)) in values.iter_mut().zip(&guards) {
        let candle_core::Storage::Cpu(s) = &**storage else { return Err(candle_core::Error::Msg(format!("{op}: host tensors expected"))) };
        *slot = host_values(op, s, layout)?;
    }
    f(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_run_on_the_host_cpu_in_this_build() {
        assert_eq!(for_side(Side::Bench), Kind::Cpu);
        assert_eq!(for_side(Side::Device), Kind::Cpu);
        let t = Tensor::new(1.0f64, &host()).unwrap();
        assert!(is_host(&t));
        assert_eq!(Kind::Cpu.tested_noun(), "emulated device");
    }
}
