//! A window of a tensor read from a dump: the values at a range of
//! positions along some dimensions, every other dimension whole, and the
//! statistics msprobe records of a tensor (Max, Min, Mean, Norm).

use crate::io::{HostData, HostTensor};

/// The values of `v` (row-major, of `shape`) inside `ranges` (one
/// `start..end` per dimension).
fn gather<T: Copy>(v: &[T], shape: &[usize], ranges: &[(usize, usize)]) -> Vec<T> {
    let rank = shape.len();
    if rank == 0 {
        return v.to_vec();
    }
    let mut strides = vec![1usize; rank];
    for d in (0..rank - 1).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    let lens: Vec<usize> = ranges.iter().map(|&(a, b)| b - a).collect();
    let total: usize = lens.iter().product();
    let mut out = Vec::with_capacity(total);
    if total == 0 {
        return out;
    }
    let inner = lens[rank - 1];
    let mut index = vec![0usize; rank - 1];
    loop {
        let base: usize = index.iter().zip(ranges).zip(&strides).map(|((&i, &(a, _)), &s)| (a + i) * s).sum::<usize>() + ranges[rank - 1].0;
        out.extend_from_slice(&v[base..base + inner]);
        // The next position of the outer dimensions, last fastest.
        let mut d = rank - 1;
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            index[d] += 1;
            if index[d] < lens[d] {
                break;
            }
            index[d] = 0;
        }
    }
}

/// The window of `t` given as `(dimension, start, end)` per cut
/// dimension; the others whole.
pub fn window(t: &HostTensor, cuts: &[(usize, usize, usize)]) -> HostTensor {
    let mut ranges: Vec<(usize, usize)> = t.shape.iter().map(|&n| (0, n)).collect();
    for &(d, a, b) in cuts {
        ranges[d] = (a, b);
    }
    let shape: Vec<usize> = ranges.iter().map(|&(a, b)| b - a).collect();
    let data = match &t.data {
        HostData::F64(v) => HostData::F64(gather(v, &t.shape, &ranges)),
        HostData::I64(v) => HostData::I64(gather(v, &t.shape, &ranges)),
        HostData::U64(v) => HostData::U64(gather(v, &t.shape, &ranges)),
        HostData::Bool(v) => HostData::Bool(gather(v, &t.shape, &ranges)),
    };
    HostTensor { dtype: t.dtype, shape, data }
}

/// msprobe's statistics of a tensor: Max, Min, Mean and Norm (L2), NaN
/// when any value is NaN (as torch's reductions give), `None` for an empty
/// tensor.
pub fn stats(t: &HostTensor) -> Option<[f64; 4]> {
    let values: Vec<f64> = match &t.data {
        HostData::F64(v) => v.clone(),
        HostData::I64(v) => v.iter().map(|&x| x as f64).collect(),
        HostData::U64(v) => v.iter().map(|&x| x as f64).collect(),
        HostData::Bool(v) => v.iter().map(|&x| x as u8 as f64).collect(),
    };
    if values.is_empty() {
        return None;
    }
    if values.iter().any(|x| x.is_nan()) {
        return Some([f64::NAN; 4]);
    }
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    let norm = values.iter().map(|x| x * x).sum::<f64>().sqrt();
    Some([max, min, mean, norm])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::TDType;

    #[test]
    fn a_window_is_the_values_at_its_positions() {
        // t[i, j, k] = 100 i + 10 j + k, shape [2, 3, 4].
        let values: Vec<f64> = (0..2).flat_map(|i| (0..3).flat_map(move |j| (0..4).map(move |k| (100 * i + 10 * j + k) as f64))).collect();
        let t = HostTensor { dtype: TDType::F32, shape: vec![2, 3, 4], data: HostData::F64(values) };
        let w = window(&t, &[(0, 1, 2), (2, 1, 3)]);
        assert_eq!(w.shape, vec![1, 3, 2]);
        assert_eq!(w.data, HostData::F64(vec![101.0, 102.0, 111.0, 112.0, 121.0, 122.0]));
        assert_eq!(window(&t, &[]).data, t.data);
        let empty = window(&t, &[(1, 2, 2)]);
        assert_eq!((empty.shape, empty.data.len()), (vec![2, 0, 4], 0));
        assert_eq!(stats(&window(&t, &[(0, 0, 1), (1, 0, 1), (2, 0, 2)])), Some([1.0, 0.0, 0.5, 1.0]));
    }
}
