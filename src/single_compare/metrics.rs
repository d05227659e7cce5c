//! msprobe's figures for one pair of equally shaped arrays
//! (`SingleComparator.compare_arrays`), in one pass over the elements.
//!
//! The arithmetic is msprobe's, in float32 when both arrays are floats of
//! at most 32 bits (what NumPy does with SingleSave's `<f4` files; float16
//! and bfloat16 are widened exactly) and in float64 otherwise: `|a-b|`,
//! `|a-b| / max(|a|,|b|)`, and "within" as `|a-b| <= t * max(|a|,|b|)` with
//! the threshold `t` in that precision. Non-finite values differ on
//! purpose (msprobe counts NaN against a number as relative error 0): two
//! equal values (NaN and NaN included) are a match with error 0, and a
//! mismatch involving a NaN or an infinity has absolute and relative error
//! +inf and is within no threshold.

use std::borrow::Cow;
use std::ops::{Div, Mul, Sub};

use runtime::io::HostData;

/// The figures of one compared pair (msprobe's columns 7 to 12).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    /// 相同元素百分比(%): equal elements / all × 100.
    pub same_percent: f64,
    /// 首个不匹配元素索引: the first flat (C-order) index that differs.
    pub first_mismatch: Option<u64>,
    /// 最大绝对误差, in the compute precision, widened.
    pub max_abs: f64,
    /// 最大相对误差, in the compute precision, widened.
    pub max_rel: f64,
    /// 误差在千分之一内元素占比(%).
    pub within_thousandth: f64,
    /// 误差在百分之一内元素占比(%).
    pub within_hundredth: f64,
}

/// The values of one array as float64 (every stored value exactly, except
/// integers beyond 2^53 and bools, which become 0 and 1).
fn widened(data: &HostData) -> Cow<'_, [f64]> {
    match data {
        HostData::F64(v) => Cow::Borrowed(v),
        HostData::I64(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        HostData::U64(v) => Cow::Owned(v.iter().map(|&x| x as f64).collect()),
        HostData::Bool(v) => Cow::Owned(v.iter().map(|&x| f64::from(u8::from(x))).collect()),
    }
}

/// Compares `a` and `b` (the same number of elements, at least one), in
/// float32 when `single` is set, else in float64.
pub fn compare(a: &HostData, b: &HostData, single: bool) -> Metrics {
    let (a, b) = (widened(a), widened(b));
    if single {
        pass(a.iter().map(|&x| x as f32), b.iter().map(|&x| x as f32))
    } else {
        pass(a.iter().copied(), b.iter().copied())
    }
}

/// The compute precision: f32 or f64.
trait Float: Copy + PartialOrd + Sub<Output = Self> + Div<Output = Self> + Mul<Output = Self> {
    const ZERO: Self;
    const INFINITY: Self;
    /// 0.001 and 0.01 in this precision.
    const THOUSANDTH: Self;
    const HUNDREDTH: Self;
    fn abs(self) -> Self;
    fn is_nan(self) -> bool;
    fn is_finite(self) -> bool;
    fn widen(self) -> f64;
}

macro_rules! float {
    ($t:ty) => {
        impl Float for $t {
            const ZERO: Self = 0.0;
            const INFINITY: Self = <$t>::INFINITY;
            const THOUSANDTH: Self = 0.001;
            const HUNDREDTH: Self = 0.01;
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            fn widen(self) -> f64 {
                f64::from(self)
            }
        }
    };
}
float!(f32);
float!(f64);

fn pass<T: Float>(a: impl Iterator<Item = T>, b: impl Iterator<Item = T>) -> Metrics {
    let (mut n, mut same, mut thousandth, mut hundredth) = (0u64, 0u64, 0u64, 0u64);
    let (mut first, mut max_abs, mut max_rel) = (None, T::ZERO, T::ZERO);
    for (x, y) in a.zip(b) {
        n += 1;
        if x == y || (x.is_nan() && y.is_nan()) {
            same += 1;
            thousandth += 1;
            hundredth += 1;
            continue;
        }
        first.get_or_insert(n - 1);
        if !x.is_finite() || !y.is_finite() {
            max_abs = T::INFINITY;
            max_rel = T::INFINITY;
            continue;
        }
        let diff = (x - y).abs();
        let scale = if x.abs() > y.abs() { x.abs() } else { y.abs() };
        let rel = diff / scale;
        if diff > max_abs {
            max_abs = diff;
        }
        if rel > max_rel {
            max_rel = rel;
        }
        thousandth += u64::from(diff <= T::THOUSANDTH * scale);
        hundredth += u64::from(diff <= T::HUNDREDTH * scale);
    }
    let percent = |k: u64| k as f64 / n as f64 * 100.0;
    Metrics {
        same_percent: percent(same),
        first_mismatch: first,
        max_abs: max_abs.widen(),
        max_rel: max_rel.widen(),
        within_thousandth: percent(thousandth),
        within_hundredth: percent(hundredth),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: &[f64]) -> HostData {
        HostData::F64(v.to_vec())
    }

    #[test]
    fn float32_figures_match_numpy() {
        // numpy (float32): a=[1, 2, 3, 4], b=[1, 2.001, 3.1, 4]
        let m = compare(&f(&[1.0, 2.0, 3.0, 4.0]), &f(&[1.0, f64::from(2.001f32), f64::from(3.1f32), 4.0]), true);
        assert_eq!(m.same_percent, 50.0);
        assert_eq!(m.first_mismatch, Some(1));
        assert_eq!(m.max_abs, f64::from(3.1f32 - 3.0f32));
        assert_eq!(m.max_rel, f64::from((3.1f32 - 3.0f32) / 3.1f32));
        // |2.001-2| = 0.000999928 <= 0.001*2.001 (within a thousandth); 0.1 is within neither.
        assert_eq!((m.within_thousandth, m.within_hundredth), (75.0, 75.0));
    }

    #[test]
    fn non_finite_values_match_themselves_and_mismatch_infinitely() {
        let m = compare(&f(&[f64::NAN, f64::INFINITY, 0.0, 1.0]), &f(&[f64::NAN, f64::INFINITY, -0.0, 1.0]), true);
        assert_eq!((m.same_percent, m.first_mismatch, m.max_abs, m.max_rel, m.within_hundredth), (100.0, None, 0.0, 0.0, 100.0));
        let m = compare(&f(&[1.0, f64::NAN, 2.0]), &f(&[1.0, 5.0, 2.0]), false);
        assert_eq!((m.first_mismatch, m.max_abs, m.max_rel), (Some(1), f64::INFINITY, f64::INFINITY));
        assert_eq!(m.within_thousandth, 2.0 / 3.0 * 100.0);
    }

    #[test]
    fn integers_and_bools_compare_in_float64() {
        let m = compare(&HostData::I64(vec![0, 10, -4]), &HostData::I64(vec![0, 11, -4]), false);
        assert_eq!((m.max_abs, m.max_rel, m.first_mismatch), (1.0, 1.0 / 11.0, Some(1)));
        let m = compare(&HostData::Bool(vec![true, false]), &HostData::Bool(vec![true, true]), false);
        assert_eq!((m.same_percent, m.max_abs, m.max_rel), (50.0, 1.0, 1.0));
    }
}
