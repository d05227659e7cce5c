//! Python's `math.fsum`, step for step: the exactly rounded sum. Means in
//! the standards are `fsum(x) / n` in both languages, so they agree to the
//! bit whatever order NumPy would have summed in.

/// The correctly rounded sum of `values` (Shewchuk's partials, with
/// CPython's final half-even correction). Where CPython raises
/// `OverflowError` (finite values whose sum overflows), this gives +inf,
/// as the Python mirror's `_std_fsum` does when it catches that error.
pub(super) fn fsum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut partials: Vec<f64> = Vec::new();
    let mut special = 0.0f64;
    for value in values {
        let mut x = value;
        let mut kept = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        partials.truncate(kept);
        if x != 0.0 {
            if !x.is_finite() {
                if value.is_finite() {
                    return f64::INFINITY;
                }
                special += value;
                partials.clear();
            } else {
                partials.push(x);
            }
        }
    }
    if special != 0.0 || special.is_nan() {
        return special;
    }
    let Some(mut hi) = partials.pop() else { return 0.0 };
    let mut lo = 0.0;
    while let Some(y) = partials.pop() {
        let x = hi;
        hi = x + y;
        lo = y - (hi - x);
        if lo != 0.0 {
            break;
        }
    }
    // Half-even rounding across partials: `lo` and the next partial pull the same way.
    if let Some(&next) = partials.last() {
        if (lo < 0.0 && next < 0.0) || (lo > 0.0 && next > 0.0) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::fsum;

    #[test]
    fn exactly_rounded() {
        // Values from Python's own fsum tests.
        assert_eq!(fsum([0.1; 10]), 1.0);
        assert_eq!(fsum([1e100, 1.0, -1e100, 1e-100, 1e50, -1.0, -1e50]), 1e-100);
        assert_eq!(fsum([2.0f64.powi(53), -0.5, -2.0f64.powi(-54)]), 2.0f64.powi(53) - 1.0);
        assert_eq!(fsum([1.0, 1e-16, 1e-16]), 1.0000000000000002);
        assert_eq!(fsum(std::iter::empty()), 0.0);
        assert_eq!(fsum([f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(fsum([1.0, f64::INFINITY, 2.0]), f64::INFINITY);
    }
}
