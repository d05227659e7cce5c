//! Little-endian element bytes to widened values, shared by the `.npy` and
//! `.pt` readers so that both decode every dtype the same way.

//! A complex element decodes to its two parts, real then imaginary: the
//! float pairs the replay computes complex tensors in.

use super::HostData;
use crate::dtype::TDType;
use half::{bf16, f16};

/// Values being decoded, in the [`HostData`] variant of their dtype.
pub(super) struct Decoder {
    dtype: TDType,
    data: HostData,
}

impl Decoder {
    /// Room for `capacity` elements; callers bound it by the file size first.
    pub(super) fn new(dtype: TDType, capacity: usize) -> Self {
        let data = match dtype {
            TDType::F16 | TDType::BF16 | TDType::F32 | TDType::F64 => HostData::F64(Vec::with_capacity(capacity)),
            TDType::C64 | TDType::C128 => HostData::F64(Vec::with_capacity(capacity.saturating_mul(2))),
            TDType::U64 => HostData::U64(Vec::with_capacity(capacity)),
            TDType::Bool => HostData::Bool(Vec::with_capacity(capacity)),
            _ => HostData::I64(Vec::with_capacity(capacity)),
        };
        Decoder { dtype, data }
    }

    /// Appends every whole element of `bytes` (a multiple of the item size),
    /// with the dtype decided once for the floating dtypes (the readers' hot
    /// loop: a dump's tensors are read through it).
    pub(super) fn extend(&mut self, bytes: &[u8]) {
        match (&mut self.data, self.dtype) {
            (HostData::F64(v), TDType::F32 | TDType::C64) => v.extend(bytes.chunks_exact(4).map(|e| f64::from(f32::from_le_bytes([e[0], e[1], e[2], e[3]])))),
            (HostData::F64(v), TDType::F64 | TDType::C128) => {
                v.extend(bytes.chunks_exact(8).map(|e| f64::from_le_bytes([e[0], e[1], e[2], e[3], e[4], e[5], e[6], e[7]])))
            }
            (HostData::F64(v), TDType::BF16) => v.extend(bytes.chunks_exact(2).map(|e| bf16::from_bits(u16::from_le_bytes([e[0], e[1]])).to_f64())),
            (HostData::F64(v), TDType::F16) => v.extend(bytes.chunks_exact(2).map(|e| f16::from_bits(u16::from_le_bytes([e[0], e[1]])).to_f64())),
            _ => {
                for element in bytes.chunks_exact(self.dtype.itemsize()) {
                    self.push(element);
                }
            }
        }
    }

    /// Appends one element stored in `b` (exactly one item's bytes).
    pub(super) fn push(&mut self, b: &[u8]) {
        let dtype = self.dtype;
        match &mut self.data {
            HostData::F64(v) => v.push(match dtype {
                TDType::F16 => f16::from_bits(u16::from_le_bytes(le(b))).to_f64(),
                TDType::BF16 => bf16::from_bits(u16::from_le_bytes(le(b))).to_f64(),
                TDType::F32 => f64::from(f32::from_le_bytes(le(b))),
                _ => f64::from_le_bytes(le(b)),
            }),
            HostData::I64(v) => v.push(match dtype {
                TDType::I8 => i64::from(i8::from_le_bytes(le(b))),
                TDType::I16 => i64::from(i16::from_le_bytes(le(b))),
                TDType::I32 => i64::from(i32::from_le_bytes(le(b))),
                TDType::U8 => i64::from(u8::from_le_bytes(le(b))),
                TDType::U16 => i64::from(u16::from_le_bytes(le(b))),
                TDType::U32 => i64::from(u32::from_le_bytes(le(b))),
                _ => i64::from_le_bytes(le(b)),
            }),
            HostData::U64(v) => v.push(u64::from_le_bytes(le(b))),
            HostData::Bool(v) => v.push(b.iter().any(|&x| x != 0)),
        }
    }

    /// The decoded values.
    pub(super) fn finish(self) -> HostData {
        self.data
    }
}

/// One element stored in `b` (exactly one item's bytes) as `f32`, as
/// `tensor.float()` makes it: half types and `f32` exactly, `f64` and
/// integers rounded to nearest, bools as 0 or 1.
pub(super) fn to_f32(dtype: TDType, b: &[u8]) -> f32 {
    match dtype {
        TDType::F16 => f16::from_bits(u16::from_le_bytes(le(b))).to_f32(),
        TDType::BF16 => bf16::from_bits(u16::from_le_bytes(le(b))).to_f32(),
        TDType::F32 => f32::from_le_bytes(le(b)),
        TDType::F64 => f64::from_le_bytes(le(b)) as f32,
        TDType::I8 => f32::from(i8::from_le_bytes(le(b))),
        TDType::I16 => f32::from(i16::from_le_bytes(le(b))),
        TDType::I32 => i32::from_le_bytes(le(b)) as f32,
        TDType::U8 => f32::from(u8::from_le_bytes(le(b))),
        TDType::U16 => f32::from(u16::from_le_bytes(le(b))),
        TDType::U32 => u32::from_le_bytes(le(b)) as f32,
        TDType::U64 => u64::from_le_bytes(le(b)) as f32,
        TDType::Bool => f32::from(u8::from(b.iter().any(|&x| x != 0))),
        _ => i64::from_le_bytes(le(b)) as f32,
    }
}

/// Appends every whole element of `bytes` to `out` as [`to_f32`] makes
/// it, with the dtype decided once (the checkpoint reader's hot loop).
pub(super) fn extend_f32(dtype: TDType, bytes: &[u8], out: &mut Vec<f32>) {
    match dtype {
        TDType::BF16 => out.extend(bytes.chunks_exact(2).map(|e| bf16::from_bits(u16::from_le_bytes([e[0], e[1]])).to_f32())),
        TDType::F16 => out.extend(bytes.chunks_exact(2).map(|e| f16::from_bits(u16::from_le_bytes([e[0], e[1]])).to_f32())),
        TDType::F32 => out.extend(bytes.chunks_exact(4).map(|e| f32::from_le_bytes([e[0], e[1], e[2], e[3]]))),
        _ => out.extend(bytes.chunks_exact(dtype.itemsize()).map(|e| to_f32(dtype, e))),
    }
}

/// The first `N` bytes of `b` as an array (callers pass exactly `N`).
fn le<const N: usize>(b: &[u8]) -> [u8; N] {
    std::array::from_fn(|i| b.get(i).copied().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(dtype: TDType, bytes: &[u8]) -> HostData {
        let mut d = Decoder::new(dtype, 0);
        d.extend(bytes);
        d.finish()
    }

    #[test]
    fn half_types_widen_exactly() {
        // 0x3555 is the f16 nearest 1/3; 0x3eab the bf16 nearest 1/3.
        assert_eq!(decode(TDType::F16, &[0x55, 0x35]), HostData::F64(vec![0.333251953125]));
        assert_eq!(decode(TDType::BF16, &[0xab, 0x3e]), HostData::F64(vec![0.333984375]));
    }

    #[test]
    fn integers_keep_sign_and_range() {
        assert_eq!(decode(TDType::I8, &[0xff, 0x80]), HostData::I64(vec![-1, -128]));
        assert_eq!(decode(TDType::U32, &[0xff; 4]), HostData::I64(vec![4_294_967_295]));
        assert_eq!(decode(TDType::U64, &[0xff; 8]), HostData::U64(vec![u64::MAX]));
        assert_eq!(decode(TDType::Bool, &[0, 1, 2]), HostData::Bool(vec![false, true, true]));
    }

    #[test]
    fn to_f32_is_what_tensor_float_gives() {
        assert_eq!(f64::from(to_f32(TDType::BF16, &[0xab, 0x3e])), 0.333984375);
        assert_eq!(to_f32(TDType::F64, &(1.0f64 / 3.0).to_le_bytes()), 1.0f32 / 3.0);
        assert_eq!(to_f32(TDType::I64, &(-(1i64 << 40) - 1).to_le_bytes()), -1099511627776.0);
        assert_eq!(to_f32(TDType::I8, &[0x80]), -128.0);
        assert_eq!(to_f32(TDType::Bool, &[2]), 1.0);
        let mut out = vec![];
        extend_f32(TDType::BF16, &[0xab, 0x3e, 0x80, 0xbf, 7], &mut out);
        extend_f32(TDType::I16, &[0xff, 0xff], &mut out);
        assert_eq!(out, [to_f32(TDType::BF16, &[0xab, 0x3e]), -1.0, -1.0]);
    }

    #[test]
    fn complex_elements_decode_to_their_parts() {
        let bytes: Vec<u8> = [1.5f32, -2.0, 0.25, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(decode(TDType::C64, &bytes), HostData::F64(vec![1.5, -2.0, 0.25, 3.0]));
        let bytes: Vec<u8> = [0.1f64, -0.2].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(decode(TDType::C128, &bytes), HostData::F64(vec![0.1, -0.2]));
    }

    #[test]
    fn partial_trailing_element_is_ignored() {
        assert_eq!(decode(TDType::I16, &[1, 0, 7]), HostData::I64(vec![1]));
    }
}
