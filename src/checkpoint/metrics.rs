//! msprobe's four checkpoint metrics (`l2`, `cos`, `numel`, `shape`) of
//! one parameter, from its `float32` values with `float64` sums, so that
//! an untouched parameter gets exactly `l2 = 0.0` and `cos = 1.0`.

/// The metrics of one parameter; `None` is JSON `null`.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    /// `‖a − b‖₂`; `None` when the shapes differ.
    pub l2: Option<f64>,
    /// `a·b / (‖a‖‖b‖)` in [-1, 1], 1 when both are zero; `None` when the
    /// shapes differ or exactly one norm is zero.
    pub cos: Option<f64>,
    /// Element counts: one when equal, else both.
    pub numel: Pair<usize>,
    /// Shapes: one when equal, else both.
    pub shape: Pair<Vec<usize>>,
}

/// One value when both sides agree, else the two.
#[derive(Debug, Clone, PartialEq)]
pub enum Pair<T> {
    /// Both sides have this.
    Same(T),
    /// Bench, then compared.
    Differ(T, T),
}

impl<T: PartialEq> Pair<T> {
    fn of(a: T, b: T) -> Pair<T> {
        if a == b {
            Pair::Same(a)
        } else {
            Pair::Differ(a, b)
        }
    }
}

/// The metrics of `a` (shape `sa`) against `b` (shape `sb`).
pub fn metrics(sa: &[usize], a: &[f32], sb: &[usize], b: &[f32]) -> Metrics {
    let numel = Pair::of(a.len(), b.len());
    let shape = Pair::of(sa.to_vec(), sb.to_vec());
    if sa != sb || a.len() != b.len() {
        return Metrics { l2: None, cos: None, numel, shape };
    }
    let (mut d2, mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        d2 += (x - y) * (x - y);
        ab += x * y;
        aa += x * x;
        bb += y * y;
    }
    // sqrt(s * s) == s exactly, so identical tensors give exactly 1.
    let cos = match (aa == 0.0, bb == 0.0) {
        (true, true) => Some(1.0),
        (true, false) | (false, true) => None,
        _ => Some((ab / (aa * bb).sqrt()).clamp(-1.0, 1.0)),
    };
    Metrics { l2: Some(d2.sqrt()), cos, numel, shape }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msprobe_cases() {
        let v = [0.1f32, -2.5, 3.75, 1e-3];
        let same = metrics(&[4], &v, &[4], &v);
        assert_eq!((same.l2, same.cos, &same.numel), (Some(0.0), Some(1.0), &Pair::Same(4)));
        let m = metrics(&[2], &[3.0, 0.0], &[2], &[0.0, 4.0]);
        assert_eq!((m.l2, m.cos), (Some(5.0), Some(0.0)));
        let m = metrics(&[2], &[1.0, 1.0], &[2], &[-2.0, -2.0]);
        assert_eq!((m.l2, m.cos), (Some(18f64.sqrt()), Some(-1.0)));
        assert_eq!(metrics(&[2], &[0.0; 2], &[2], &[0.0; 2]).cos, Some(1.0));
        assert_eq!(metrics(&[2], &[0.0; 2], &[2], &[1.0; 2]).cos, None);
        let m = metrics(&[2, 2], &[1.0; 4], &[4], &[1.0; 4]);
        assert_eq!((m.l2, m.cos, m.numel, m.shape), (None, None, Pair::Same(4), Pair::Differ(vec![2, 2], vec![4])));
        assert!(metrics(&[1], &[f32::NAN], &[1], &[1.0]).l2.is_some_and(f64::is_nan));
    }
}
