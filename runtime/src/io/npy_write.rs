//! The one `.npy` writer: a tensor's values as NumPy 1.0 format, so that
//! the scripts (`np.load`) and the runtime ([`super::read_npy`]) both read
//! them. A minimized call's sliced tensors are written with it
//! ([`crate::minimize`]).

use std::io::Write;
use std::path::Path;

use super::{HostData, HostTensor};
use crate::atomic::{write_atomic_with, WriteError, WriteOptions};
use crate::dtype::TDType;

/// The NumPy description a tensor of `dtype` holding `data` is written
/// in: the dtype's own where NumPy has it, float32 for bfloat16 (which
/// NumPy lacks: every bfloat16 value is a float32 value), 64-bit integers
/// for every integer dtype (the values, exactly).
fn descr(dtype: TDType, data: &HostData) -> &'static str {
    match data {
        HostData::F64(_) => match dtype {
            TDType::F16 => "<f2",
            TDType::F64 => "<f8",
            _ => "<f4",
        },
        HostData::I64(_) => "<i8",
        HostData::U64(_) => "<u8",
        HostData::Bool(_) => "|b1",
    }
}

/// The header: magic, version 1.0, and the dict padded with spaces to a
/// multiple of 64 bytes, as `np.save` writes it.
fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims = match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    let unpadded = 10 + dict.len() + 1;
    dict.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

/// Writes `t` to `path` as a `.npy` file (atomically: a temporary sibling
/// renamed), floats in [`descr`]'s dtype: each value is one of the dtype's,
/// so nothing is rounded.
pub fn write_npy(path: &Path, t: &HostTensor) -> Result<(), WriteError> {
    let d = descr(t.dtype, &t.data);
    let head = header(d, &t.shape);
    write_atomic_with(path, WriteOptions::GENERATED, &mut |w: &mut dyn Write| {
        let mut w = std::io::BufWriter::new(w);
        w.write_all(&head)?;
        match &t.data {
            HostData::F64(v) => match d {
                "<f2" => v.iter().try_for_each(|&x| w.write_all(&half::f16::from_f64(x).to_le_bytes()))?,
                "<f8" => v.iter().try_for_each(|&x| w.write_all(&x.to_le_bytes()))?,
                _ => v.iter().try_for_each(|&x| w.write_all(&(x as f32).to_le_bytes()))?,
            },
            HostData::I64(v) => v.iter().try_for_each(|&x| w.write_all(&x.to_le_bytes()))?,
            HostData::U64(v) => v.iter().try_for_each(|&x| w.write_all(&x.to_le_bytes()))?,
            HostData::Bool(v) => v.iter().try_for_each(|&x| w.write_all(&[x as u8]))?,
        }
        w.flush()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::read_npy;

    #[test]
    fn what_is_written_reads_back_exactly_with_a_64_byte_header() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            HostTensor { dtype: TDType::F32, shape: vec![2, 3], data: HostData::F64(vec![0.1f32 as f64, -2.5, 3.0, f64::INFINITY, 1e-40f32 as f64, 0.0]) },
            HostTensor { dtype: TDType::F16, shape: vec![3], data: HostData::F64(vec![0.0999755859375, -65504.0, 5.960464477539063e-8]) },
            HostTensor { dtype: TDType::F64, shape: vec![], data: HostData::F64(vec![0.1]) },
            HostTensor { dtype: TDType::I32, shape: vec![2], data: HostData::I64(vec![-7, 1 << 40]) },
            HostTensor { dtype: TDType::Bool, shape: vec![1, 2], data: HostData::Bool(vec![true, false]) },
        ];
        for (i, t) in cases.iter().enumerate() {
            let path = dir.path().join(format!("{i}.npy"));
            write_npy(&path, t).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let header_len = 10 + u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
            assert_eq!(header_len % 64, 0, "{i}");
            let back = read_npy(&path).unwrap();
            assert_eq!((&back.shape, &back.data), (&t.shape, &t.data), "{i}");
        }
        // bfloat16 is written as float32, the same values.
        let bf = HostTensor { dtype: TDType::BF16, shape: vec![2], data: HostData::F64(vec![1.0078125, -3.0]) };
        let path = dir.path().join("bf.npy");
        write_npy(&path, &bf).unwrap();
        let back = read_npy(&path).unwrap();
        assert_eq!((back.dtype, back.data), (TDType::F32, bf.data));
    }
}
