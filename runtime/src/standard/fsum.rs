//! Python's `math.fsum`: the exactly rounded sum. Means in the standards
//! are `fsum(x) / n` in both languages, so they agree to the bit whatever
//! order NumPy would have summed in.
//!
//! The sum of ordinary values is accumulated exactly in fixed point (a
//! superaccumulator: 32-bit digits from 2^-1074 up, each value added into
//! three of them) and rounded once, half to even: the same number CPython's
//! Shewchuk partials give (the correctly rounded sum is unique), at a few
//! operations a value instead of a pass over the partials. A non-finite
//! value, or one of 2^970 or more (where CPython's partials can overflow on
//! the way), hands the exact sum so far and the rest to CPython's algorithm
//! ([`shewchuk`]).

/// Digits of the superaccumulator: bit 0 is 2^-1074, the largest finite
/// double's top bit is bit 2097, and the carries of 2^31 values reach a
/// few digits above.
const DIGITS: usize = 70;
/// Values added between carry propagations (each moves a digit by under 2^32).
const CARRY_EVERY: u32 = 1 << 30;
/// Values at or above this take CPython's algorithm (2^970).
const LARGE: f64 = 9.9792015476736e291;

/// The exact sum of the values added so far, in base-2^32 digits from
/// 2^-1074 up (each an i64 that carries are propagated out of).
struct Exact {
    digits: [i64; DIGITS],
    pending: u32,
}

impl Exact {
    fn new() -> Exact {
        Exact { digits: [0; DIGITS], pending: 0 }
    }

    /// Adds a finite `v` below [`LARGE`].
    fn add(&mut self, v: f64) {
        let bits = v.to_bits();
        let exponent = ((bits >> 52) & 0x7ff) as u32;
        let fraction = bits & ((1 << 52) - 1);
        // v = ±m·2^(p-1074).
        let (m, p) = if exponent == 0 { (fraction, 0) } else { (fraction | 1 << 52, exponent - 1) };
        // m·2^s (s < 32) is under 2^85: its low 64 bits and the rest.
        let s = p % 32;
        let low = m << s;
        let high = if s == 0 { 0 } else { m >> (64 - s) };
        let (d0, d1, d2) = ((low & 0xffff_ffff) as i64, (low >> 32) as i64, high as i64);
        // p ≤ 2045, so k ≤ 63 (the mask says so to the bounds checks).
        let k = ((p / 32) & 63) as usize;
        if bits >> 63 == 1 {
            self.digits[k] -= d0;
            self.digits[k + 1] -= d1;
            self.digits[k + 2] -= d2;
        } else {
            self.digits[k] += d0;
            self.digits[k + 1] += d1;
            self.digits[k + 2] += d2;
        }
        self.pending += 1;
        if self.pending == CARRY_EVERY {
            self.carry();
        }
    }

    /// Every digit but the top one into [0, 2^32).
    fn carry(&mut self) {
        for i in 0..DIGITS - 1 {
            let c = self.digits[i] >> 32;
            self.digits[i] -= c << 32;
            self.digits[i + 1] += c;
        }
        self.pending = 0;
    }

    /// The exact sum as non-overlapping doubles, lowest first (each digit
    /// is exactly a double): the partials CPython's algorithm goes on from.
    fn partials(mut self) -> Vec<f64> {
        self.carry();
        self.digits.iter().enumerate().filter(|(_, &d)| d != 0).map(|(i, &d)| d as f64 * pow2(32 * i as i32 - 1074)).collect()
    }

    /// The sum rounded to the nearest double, ties to even.
    fn round(mut self) -> f64 {
        self.carry();
        let negative = self.digits[DIGITS - 1] < 0;
        if negative {
            self.digits.iter_mut().for_each(|d| *d = -*d);
            self.carry();
        }
        let Some(top) = self.digits.iter().rposition(|&d| d != 0) else { return 0.0 };
        let high = 32 * top as u32 + 31 - (self.digits[top] as u32).leading_zeros();
        let sign = if negative { -1.0 } else { 1.0 };
        if high < 53 {
            // Below 2^-1021: a multiple of 2^-1074 under 2^53, exact.
            let m = self.digits[0] as u64 | (self.digits[1] as u64) << 32;
            return sign * (m as f64 * f64::from_bits(1));
        }
        let mut mantissa = self.bits(high - 52, 53);
        let half = self.bits(high - 53, 1) == 1;
        let sticky = (0..high - 53).any(|b| self.bits(b, 1) == 1);
        let mut high = high;
        if half && (sticky || mantissa & 1 == 1) {
            mantissa += 1;
            if mantissa == 1 << 53 {
                mantissa >>= 1;
                high += 1;
            }
        }
        let biased = u64::from(high) - 51;
        if biased >= 0x7ff {
            return sign * f64::INFINITY;
        }
        sign * f64::from_bits(biased << 52 | (mantissa & ((1 << 52) - 1)))
    }

    /// `count` (at most 64) bits from bit `low` up.
    fn bits(&self, low: u32, count: u32) -> u64 {
        (0..count).fold(0u64, |acc, i| {
            let b = low + i;
            acc | (((self.digits[(b / 32) as usize] as u64 >> (b % 32)) & 1) << i)
        })
    }
}

/// 2^e for e from -1074 (the smallest subnormal) to 1023; infinity above.
fn pow2(e: i32) -> f64 {
    match e {
        1024.. => f64::INFINITY,
        -1022.. => f64::from_bits(((e + 1023) as u64) << 52),
        _ => f64::from_bits(1 << (e + 1074).max(0)),
    }
}

/// The correctly rounded sum of `values`, as CPython's `math.fsum` gives it.
pub(super) fn fsum(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut exact = Exact::new();
    let mut values = values.into_iter();
    while let Some(v) = values.next() {
        if !v.is_finite() || v.abs() >= LARGE {
            return shewchuk(exact.partials(), std::iter::once(v).chain(values));
        }
        exact.add(v);
    }
    exact.round()
}

/// The correctly rounded sum of `partials` then `values` (Shewchuk's
/// partials, with CPython's final half-even correction), CPython's
/// algorithm step for step. Where CPython raises `OverflowError` (finite
/// values whose sum overflows), this gives +inf, as the Python mirror's
/// `_std_fsum` does when it catches that error.
fn shewchuk(mut partials: Vec<f64>, values: impl Iterator<Item = f64>) -> f64 {
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
        assert!(fsum([f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert_eq!(fsum([1e300, 1e300, -1e300, 0.5]), 1e300);
    }

    /// The superaccumulator rounds to the same double as CPython's
    /// partials: sums that cancel, mix magnitudes, round at a tie (to even
    /// and away from it), are subnormal, or take the large-value path.
    #[test]
    fn the_superaccumulator_is_cpythons_algorithm() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let ulp = f64::EPSILON;
        let mut cases: Vec<Vec<f64>> = vec![
            vec![1.0, ulp / 2.0],
            vec![1.0 + ulp, ulp / 2.0],
            vec![1.0, ulp / 2.0, 1e-300],
            vec![-1.0, -ulp / 2.0],
            vec![f64::from_bits(1), f64::from_bits(3), -f64::from_bits(2)],
            vec![f64::MIN_POSITIVE, -f64::from_bits(1)],
            vec![1e200, 1e-200, -1e200],
            vec![2.0f64.powi(100), -1.0, 2.0f64.powi(-1000)],
            vec![1e308, -1e308, 1e-308, 3.0],
            vec![0.0, -0.0],
        ];
        for n in [3, 17, 1000] {
            for _ in 0..300 {
                let v: Vec<f64> = (0..n)
                    .map(|_| {
                        let r = next();
                        let mantissa = (r >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                        mantissa * 2f64.powi((r % 64) as i32 - 32) * if r % 7 == 0 { 1e-300 } else { 1.0 }
                    })
                    .collect();
                let total: f64 = v.iter().sum();
                let mut cancelling = v.clone();
                cancelling.push(-total);
                cases.push(v);
                cases.push(cancelling);
            }
        }
        for v in &cases {
            let (got, want) = (fsum(v.iter().copied()), super::shewchuk(vec![], v.iter().copied()));
            assert_eq!(got.to_bits(), want.to_bits(), "{v:?}: {got:e} vs {want:e}");
        }
    }
}
