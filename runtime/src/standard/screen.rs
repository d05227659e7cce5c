//! The systematic view's common case decided by one plain float64 pass.
//!
//! The view ([`super::rules`]) sums four series exactly (`fsum`): a few
//! nanoseconds an element, a fifth of a GPT-2 linear's replay, and every
//! row of a random-data step goes through it. Nearly every row ends at its
//! first test (the common relative error `ρ` within the dtype's epsilons).
//! Plain recursive sums with their error bounds (Higham: `|ŝ - s| ≤
//! γₙ₋₁·Σ|vᵢ|`) decide that test, and the one before it, whenever the
//! bounds keep the decision away from its threshold; only then is the
//! decision taken here, and it is the one the exact sums would take. Every
//! other row (within the bounds of a threshold, or with a systematic error
//! to report) goes through the exact sums, unchanged.

/// What the float64 pass decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Screen {
    /// The exact view finds no systematic error: too few elements carry
    /// the fit, or `|ρ|` is within the epsilons.
    Quiet,
    /// Not decided here: the exact sums decide.
    Unsure,
}

/// Sums beyond this (or not finite) are left to the exact sums, whose
/// partials do not overflow.
const HUGE: f64 = 1e300;
/// Sums below this are left to them too (quotients of subnormal sums).
const TINY: f64 = 1e-280;

/// The plain float64 sums of the pairs `(d, x)` (error and bench, in
/// units of each element's bound), added in order; a pass that also does
/// other work over the elements (the rounding bound's) feeds them itself.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Sums {
    n: u64,
    den: f64,
    quartic: f64,
    dx: f64,
    dx_abs: f64,
}

impl Sums {
    /// Adds one pair.
    #[inline]
    pub fn add(&mut self, d: f64, x: f64) {
        let x2 = x * x;
        let p = d * x;
        self.n += 1;
        self.den += x2;
        self.quartic += x2 * x2;
        self.dx += p;
        self.dx_abs += p.abs();
    }

    /// Adds the pairs another pass summed (a stretch of the same series:
    /// the error bounds below hold for the sums in any order).
    pub fn merge(&mut self, other: &Sums) {
        self.n += other.n;
        self.den += other.den;
        self.quartic += other.quartic;
        self.dx += other.dx;
        self.dx_abs += other.dx_abs;
    }

    /// `Quiet` only where the exact view's tests `(Σx²)²/Σx⁴ ≥
    /// min_elements` and `|Σd·x / Σx²| > epsilon` come out as here,
    /// whatever rounding the plain sums made.
    pub fn decide(&self, min_elements: f64, epsilon: f64) -> Screen {
        let Sums { n, den, quartic, dx, dx_abs } = *self;
        // Every term is computed as the exact view computes it; only the sums
        // differ. Relative slack: γₙ for each sum (n·2⁻⁵³ with room to spare;
        // in any order of addition, each term goes through at most n - 1 of
        // them), and a few roundings of the quotients made from them.
        let slack = (n as f64 + 4.0) * f64::EPSILON + 1e-12;
        if den == 0.0 {
            // Non-negative terms sum to 0 only when all are 0: the exact sum is 0 too.
            return Screen::Quiet;
        }
        let sums = [den, quartic, dx_abs];
        if sums.iter().any(|s| !s.is_finite() || *s > HUGE) || den < TINY || quartic < TINY || !dx.is_finite() {
            return Screen::Unsure;
        }
        let effective = den * den / quartic;
        if effective * (1.0 + 4.0 * slack) < min_elements {
            return Screen::Quiet;
        }
        if effective * (1.0 - 4.0 * slack) < min_elements {
            return Screen::Unsure;
        }
        // |ρ| at most (|Σ̂| + slack·Σ|d·x|) / (Σ̂x²·(1 - slack)), and a rounding more.
        let rho_most = (dx.abs() + slack * dx_abs) / (den * (1.0 - slack)) * (1.0 + 4.0 * f64::EPSILON);
        if rho_most < epsilon {
            Screen::Quiet
        } else {
            Screen::Unsure
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Screens the systematic view of the pairs `(d, x)` ([`Sums::decide`]).
    fn screen(pairs: impl Iterator<Item = (f64, f64)>, min_elements: f64, epsilon: f64) -> Screen {
        let mut sums = Sums::default();
        for (d, x) in pairs {
            sums.add(d, x);
        }
        sums.decide(min_elements, epsilon)
    }

    /// The exact view's two first tests, with exactly rounded sums.
    fn exact_quiet(pairs: &[(f64, f64)], min_elements: f64, epsilon: f64) -> bool {
        let fsum = |v: Vec<f64>| super::super::fsum::fsum(v);
        let den = fsum(pairs.iter().map(|&(_, x)| x * x).collect());
        let quartic = fsum(pairs.iter().map(|&(_, x)| (x * x) * (x * x)).collect());
        if !(den > 0.0 && den.is_finite() && den * den / quartic >= min_elements) {
            return true;
        }
        let rho = fsum(pairs.iter().map(|&(d, x)| d * x).collect()) / den;
        rho.abs() <= epsilon
    }

    fn pseudo(i: u64) -> f64 {
        // A fixed sequence in [-1, 1).
        let z = i.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((z >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }

    /// Wherever the screen says Quiet, the exact sums agree; rows of plain
    /// rounding noise are decided here, and a real common error is not.
    #[test]
    fn quiet_only_where_the_exact_sums_are_quiet() {
        let epsilon = 3.0 * f64::powi(2.0, -23);
        let mut decided = 0;
        for case in 0..400u64 {
            let n = 1 + (case * 37 % 3000) as usize;
            // A common relative error near the threshold in about half the cases.
            let rho = epsilon * (pseudo(case * 7919) * 2.0);
            // x = bench / bound: about 1/(k·u) for a float32 result, give or take.
            let scale = f64::powi(2.0, 16 + (case % 12) as i32);
            let pairs: Vec<(f64, f64)> = (0..n)
                .map(|i| {
                    let x = pseudo(case << 20 | i as u64) * scale;
                    // Noise of a few units of the bound plus the common error.
                    (pseudo((case << 20 | i as u64) ^ 0xabcdef) * 0.5 + rho * x, x)
                })
                .collect();
            let min = 8.0;
            if screen(pairs.iter().copied(), min, epsilon) == Screen::Quiet {
                decided += 1;
                assert!(exact_quiet(&pairs, min, epsilon), "case {case}: the screen is quiet where the exact sums are not");
            }
        }
        assert!(decided > 100 && decided < 400, "the screen decided {decided} of 400");
        // Elements all at one sign of a large common error: never quiet.
        let pairs: Vec<(f64, f64)> = (0..1000).map(|i| (0.01 * (1.0 + i as f64), 1.0 + i as f64)).collect();
        assert_eq!(screen(pairs.iter().copied(), 8.0, epsilon), Screen::Unsure);
        // Too few carrying elements: one large x among tiny ones.
        let mut few: Vec<(f64, f64)> = (0..100).map(|_| (0.0, 1e-3)).collect();
        few.push((5.0, 1e3));
        assert_eq!(screen(few.iter().copied(), 8.0, epsilon), Screen::Quiet);
        assert!(exact_quiet(&few, 8.0, epsilon));
        // No pairs at all.
        assert_eq!(screen(std::iter::empty(), 8.0, epsilon), Screen::Quiet);
    }
}
