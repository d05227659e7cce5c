//! MindSpore's Bessel functions (`mindspore.ops.bessel_*`, dumped
//! `Functional.bessel_*`) in float64: J₀, J₁, Y₀, Y₁ from libm (fdlibm's
//! rational approximations); I₀, I₁ by their power series
//! ([`super::special::bessel_i`]) and, past |x| = 700 where eˣ overflows,
//! the scaled forms by Hankel's asymptotic series; K₀, K₁ by the integral
//! ∫₀^∞ e^(−x·cosh t) cosh(νt) dt, whose trapezoid sums converge
//! exponentially. Each with its derivative (the recurrences
//! J₀' = −J₁, J₁' = J₀ − J₁/x, ...), so the gradients are the functions'.
//! Cases: tests/agreement/cases.py, against MindSpore.

use super::math::smooth;
use super::special::{bessel_i, pointwise};
use super::Op;

/// e^(−|x|)·I_ν(x) for ν = 0 or 1 (odd in x for ν = 1).
fn scaled_i(order: u32, x: f64) -> f64 {
    let a = x.abs();
    let v = if a <= 700.0 {
        bessel_i(order, a) * (-a).exp()
    } else {
        // Hankel: e^(−x) I_ν(x) ~ (2πx)^(−1/2) Σ (−1)^k a_k(ν) / x^k.
        let mu = 4.0 * f64::from(order * order);
        let (mut term, mut sum) = (1.0, 1.0);
        for k in 1..30 {
            let odd = f64::from(2 * k - 1);
            term *= -(mu - odd * odd) / (f64::from(k) * 8.0 * a);
            sum += term;
        }
        sum / (2.0 * std::f64::consts::PI * a).sqrt()
    };
    if order == 1 {
        v.copysign(x)
    } else {
        v
    }
}

fn i1(x: f64) -> f64 {
    bessel_i(1, x.abs()).copysign(x)
}

/// e^(x·scaled)·K_ν(x), x > 0: the trapezoid sum of the integrand
/// e^(−x(cosh t − 1))·cosh(νt), times e^(−x) unless `scaled`.
fn bessel_k(order: u32, x: f64, scaled: bool) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::INFINITY;
    }
    let h: f64 = 0.05;
    let mut sum = 0.5;
    let mut k: f64 = 1.0;
    loop {
        let t = k * h;
        let e = (-x * (t.cosh() - 1.0)).exp() * (f64::from(order) * t).cosh();
        sum += e;
        if e < sum * 1e-18 {
            break;
        }
        k += 1.0;
    }
    let v = sum * h;
    if scaled {
        v
    } else {
        v * (-x).exp()
    }
}

fn k0(x: f64) -> f64 {
    bessel_k(0, x, false)
}

fn k1(x: f64) -> f64 {
    bessel_k(1, x, false)
}

fn k0e(x: f64) -> f64 {
    bessel_k(0, x, true)
}

fn k1e(x: f64) -> f64 {
    bessel_k(1, x, true)
}

/// The sign of x, 0 at 0 (where `f64::signum` gives 1): the scaled forms' e^(−|x|) has slope 0 there.
fn sign(x: f64) -> f64 {
    if x == 0.0 {
        0.0
    } else {
        x.signum()
    }
}

/// f(x)/x at 0 is its limit there: J₁(x)/x and I₁(x)/x tend to 1/2.
fn over_x(f: fn(f64) -> f64, x: f64) -> f64 {
    if x == 0.0 {
        0.5
    } else {
        f(x) / x
    }
}

/// The entries.
pub static OPS: &[Op] = &[
    smooth(&["MS.Functional.bessel_j0"], "input", |c, b| pointwise(c, b, libm::j0, |x| -libm::j1(x))),
    smooth(&["MS.Functional.bessel_j1"], "input", |c, b| pointwise(c, b, libm::j1, |x| libm::j0(x) - over_x(libm::j1, x))),
    smooth(&["MS.Functional.bessel_y0"], "input", |c, b| pointwise(c, b, libm::y0, |x| -libm::y1(x))),
    smooth(&["MS.Functional.bessel_y1"], "input", |c, b| pointwise(c, b, libm::y1, |x| libm::y0(x) - libm::y1(x) / x)),
    smooth(&["MS.Functional.bessel_i0"], "input", |c, b| pointwise(c, b, |x| bessel_i(0, x.abs()), i1)),
    smooth(&["MS.Functional.bessel_i1"], "input", |c, b| pointwise(c, b, i1, |x| bessel_i(0, x.abs()) - over_x(i1, x))),
    smooth(&["MS.Functional.bessel_i0e"], "input", |c, b| pointwise(c, b, |x| scaled_i(0, x), |x| scaled_i(1, x) - sign(x) * scaled_i(0, x))),
    smooth(&["MS.Functional.bessel_i1e"], "input", |c, b| {
        pointwise(c, b, |x| scaled_i(1, x), |x| scaled_i(0, x) - sign(x) * scaled_i(1, x) - over_x(|y| scaled_i(1, y), x))
    }),
    smooth(&["MS.Functional.bessel_k0"], "input", |c, b| pointwise(c, b, k0, |x| -k1(x))),
    smooth(&["MS.Functional.bessel_k1"], "input", |c, b| pointwise(c, b, k1, |x| -k0(x) - k1(x) / x)),
    smooth(&["MS.Functional.bessel_k0e"], "input", |c, b| pointwise(c, b, k0e, |x| k0e(x) - k1e(x))),
    smooth(&["MS.Functional.bessel_k1e"], "input", |c, b| pointwise(c, b, k1e, |x| k1e(x) - k0e(x) - k1e(x) / x)),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: f64, want: f64) -> bool {
        ((got - want) / want).abs() < 2e-14
    }

    /// The scaled I₀ and I₁ on both sides of |x| = 700, where the power
    /// series gives way to Hankel's, and K₀, K₁ (plain and scaled) by
    /// their integral, against mpmath's values to 20 digits.
    #[test]
    fn bessel_values_match_mpmath() {
        let scaled = [
            (0, 650.0, 0.015650815436407735),
            (0, 800.0, 0.014106945005869185),
            (1, 650.0, 0.01563877171005083),
            (1, 800.0, 0.014098125406526997),
            (1, 1e5, 0.0012615615301218171),
        ];
        for (order, x, want) in scaled {
            assert!(close(scaled_i(order, x), want), "i{order}e({x}) = {}, mpmath {want}", scaled_i(order, x));
            assert_eq!(scaled_i(order, -x), if order == 0 { scaled_i(0, x) } else { -scaled_i(1, x) });
        }
        let k = [
            (0, 0.01, 4.721244730161095, 4.768694028544462),
            (0, 3.0, 0.03473950438627925, 0.6977615980438517),
            (1, 3.0, 0.040156431128194184, 0.8065634801287869),
            (1, 60.0, 1.4256320265171043e-27, 0.16280823094404426),
        ];
        for (order, x, plain, scaled) in k {
            assert!(close(bessel_k(order, x, false), plain), "k{order}({x}) = {}", bessel_k(order, x, false));
            assert!(close(bessel_k(order, x, true), scaled), "k{order}e({x}) = {}", bessel_k(order, x, true));
        }
    }
}
