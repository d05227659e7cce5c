//! Test support for the host kernels of two operands (convolution,
//! linear): the kernel against candle's own composite of the same op,
//! forward and both gradients, element by element.

use candle_core::{Tensor, Var};

/// A fixed, irregular sequence of `len` values scaled by `k`.
pub(super) fn data(len: usize, k: f64) -> Vec<f64> {
    (0..len).map(|i| ((i * 37 % 23) as f64 - 11.0) * k + (i as f64 * 0.1).sin()).collect()
}

/// Runs `kernel` and `composite` on the same float64 operands shaped `a`
/// and `b`, and asserts that their outputs and both gradients (under the
/// same output gradient) agree within 1e-12 of their largest magnitude;
/// `case` names the case in a failure.
pub(super) fn assert_agrees(case: &str, a: &[usize], b: &[usize], kernel: impl Fn(&Tensor, &Tensor) -> Tensor, composite: impl Fn(&Tensor, &Tensor) -> Tensor) {
    let dev = crate::device::host();
    let at = Tensor::from_vec(data(a.iter().product(), 0.3), a, &dev).unwrap();
    let bt = Tensor::from_vec(data(b.iter().product(), 0.2), b, &dev).unwrap();
    let var = |t: &Tensor| Var::from_tensor(t).unwrap();
    let (aa, ba, ab, bb) = (var(&at), var(&bt), var(&at), var(&bt));
    let ya = kernel(aa.as_tensor(), ba.as_tensor());
    let yb = composite(ab.as_tensor(), bb.as_tensor());
    assert_eq!(ya.dims(), yb.dims(), "{case}: output shapes");
    let g = Tensor::from_vec(data(ya.elem_count(), 1.1), ya.dims(), &dev).unwrap();
    let flat = |t: &Tensor| -> Vec<f64> { t.flatten_all().unwrap().to_vec1().unwrap() };
    let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
    let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
    let pairs = [
        ("output", flat(&ya), flat(&yb)),
        ("first operand's gradient", flat(ga.get(aa.as_tensor()).unwrap()), flat(gb.get(ab.as_tensor()).unwrap())),
        ("second operand's gradient", flat(ga.get(ba.as_tensor()).unwrap()), flat(gb.get(bb.as_tensor()).unwrap())),
    ];
    for (what, p, q) in pairs {
        let scale = q.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (i, (x, y)) in p.iter().zip(&q).enumerate() {
            assert!((x - y).abs() <= 1e-12 * scale, "{case}: {what}, element {i}: {x} vs {y}");
        }
    }
}
