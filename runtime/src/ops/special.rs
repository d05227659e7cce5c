//! Special functions (`torch.lgamma`, `digamma`, `polygamma`, `mvlgamma`,
//! `erfinv`, `i0`, `angle` of a real tensor, `igamma`, `igammac`) in
//! float64 with their derivatives, as torch defines them at their poles and edges
//! (`digamma(0)` is `-inf`, `digamma(-0.0)` `inf`, a negative integer NaN;
//! `erfinv(±1)` is `±inf`). One name each (`Torch.X`): the method and
//! in-place forms are derived ([`super::derive`]).

use candle_core::{CpuStorage, CustomOp1, Layout, Shape, Tensor};

use super::math::{binary, smooth, stepwise, store, values, Pointwise, Pointwise2};
use super::{float_of, one, Op};
use crate::bind::Bound;
use crate::ctx::{operand, Ctx};
use crate::error::{Error, Result};
use crate::value::Value;

/// Bernoulli numbers B₂ₖ, k = 1..7: the asymptotic series' coefficients.
const BERNOULLI: [f64; 7] = [1.0 / 6.0, -1.0 / 30.0, 1.0 / 42.0, -1.0 / 30.0, 5.0 / 66.0, -691.0 / 2730.0, 7.0 / 6.0];

/// Where the recurrences hand over to the asymptotic series: its seven
/// terms are then below float64's roundoff.
const ASYMPTOTIC_FROM: f64 = 10.0;

/// ψ(x), the derivative of lgamma: the recurrence ψ(x) = ψ(x + 1) - 1/x up
/// to 10, then the asymptotic series; the reflection for negative x.
pub(super) fn digamma(x: f64) -> f64 {
    if x.is_nan() || x == f64::NEG_INFINITY {
        return f64::NAN;
    }
    if x == 0.0 {
        return if x.is_sign_negative() { f64::INFINITY } else { f64::NEG_INFINITY };
    }
    if x < 0.0 {
        if x == x.floor() {
            return f64::NAN;
        }
        return digamma(1.0 - x) - std::f64::consts::PI / (std::f64::consts::PI * x).tan();
    }
    let (mut x, mut acc) = (x, 0.0);
    while x < ASYMPTOTIC_FROM {
        acc -= 1.0 / x;
        x += 1.0;
    }
    let inv2 = 1.0 / (x * x);
    let (mut power, mut series) = (inv2, 0.0);
    for (k, b) in BERNOULLI.iter().enumerate() {
        series += b / (2.0 * (k + 1) as f64) * power;
        power *= inv2;
    }
    acc + x.ln() - 0.5 / x - series
}

/// ψ⁽ⁿ⁾(x) for n ≥ 1: (-1)ⁿ⁺¹·n!·ζ(n + 1, x), the Hurwitz zeta summed term
/// by term up to 10 and its Euler–Maclaurin tail from there; `inf` at a
/// pole (0 or a negative integer).
fn polygamma_n(n: u32, x: f64) -> f64 {
    if n == 0 {
        return digamma(x);
    }
    if x.is_nan() {
        return f64::NAN;
    }
    if x <= 0.0 && x == x.floor() {
        return f64::INFINITY;
    }
    let s = n as i32 + 1;
    let (mut a, mut zeta) = (x, 0.0);
    while a < ASYMPTOTIC_FROM {
        zeta += a.powi(-s);
        a += 1.0;
    }
    // ∫ₐ^∞ t⁻ˢ dt + a⁻ˢ/2 + Σ B₂ₖ/(2k)!·s(s+1)…(s+2k-2)·a^(-s-2k+1).
    zeta += a.powi(1 - s) / (s - 1) as f64 + 0.5 * a.powi(-s);
    let (mut rising, mut factorial, mut power) = (s as f64, 2.0, a.powi(-s - 1));
    for (k, b) in BERNOULLI.iter().enumerate() {
        zeta += b / factorial * rising * power;
        let j = 2 * k as i32 + 2;
        rising *= (s + j - 1) as f64 * (s + j) as f64;
        factorial *= (j + 1) as f64 * (j + 2) as f64;
        power /= a * a;
    }
    let n_factorial: f64 = (1..=n).map(f64::from).product();
    let sign = if n % 2 == 1 { 1.0 } else { -1.0 };
    sign * n_factorial * zeta
}

/// erf⁻¹(y): Winitzki's approximation refined by Newton's method on erf,
/// or on erfc where |y| > 0.5 (1 - |y| is exact there, so the tail keeps
/// its relative precision).
pub(super) fn erfinv(y: f64) -> f64 {
    if y.is_nan() || y.abs() > 1.0 {
        return f64::NAN;
    }
    if y.abs() == 1.0 {
        return y * f64::INFINITY;
    }
    if y == 0.0 {
        return y;
    }
    let a = 0.147;
    let ln = (1.0 - y).ln() + (1.0 + y).ln();
    let t = 2.0 / (std::f64::consts::PI * a) + ln / 2.0;
    let mut x = ((t * t - ln / a).sqrt() - t).sqrt().copysign(y);
    let slope = |x: f64| 2.0 / std::f64::consts::PI.sqrt() * (-x * x).exp();
    for _ in 0..6 {
        let step = if y.abs() > 0.5 { -y.signum() * (libm::erfc(x.abs()) - (1.0 - y.abs())) / slope(x) } else { (libm::erf(x) - y) / slope(x) };
        if !step.is_finite() {
            break;
        }
        x -= step;
    }
    x
}

/// The modified Bessel function I₀ or I₁ (`order`) by its power series:
/// Σ (x/2)^(2k+order) / (k!·(k+order)!), every term positive.
pub(super) fn bessel_i(order: u32, x: f64) -> f64 {
    let half = x / 2.0;
    let q = half * half;
    let mut term = if order == 0 { 1.0 } else { half };
    let mut sum = term;
    let mut k = 0.0;
    while term > sum * 1e-17 && sum.is_finite() {
        k += 1.0;
        term *= q / (k * (k + order as f64));
        sum += term;
    }
    sum
}

/// ψ⁽ⁿ⁾ as an op: polygamma of a fixed order, its derivative the next order.
struct Polygamma(u32);

impl CustomOp1 for Polygamma {
    fn name(&self) -> &'static str {
        "polygamma"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let v = values(storage, layout)?;
        Ok((store(storage, v.into_iter().map(|x| polygamma_n(self.0, x)).collect()), layout.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let slope = arg.contiguous()?.apply_op1_no_bwd(&Polygamma(self.0 + 1))?;
        Ok(Some((grad_res * slope)?))
    }
}

/// The regularized lower incomplete gamma function P(a, x) (`igamma`),
/// or its complement Q(a, x) = 1 - P (`igammac`) when `upper`: the series
/// below `x = a + 1`, the continued fraction (modified Lentz) above, each
/// summed to float64's roundoff; torch's values at the edges (NaN for a
/// negative argument, `a = 0` as the limit for `x > 0`, infinities).
fn incomplete_gamma(a: f64, x: f64, upper: bool) -> f64 {
    let flip = |lower: f64| if upper { 1.0 - lower } else { lower };
    if x.is_nan() || a.is_nan() || x < 0.0 || a < 0.0 {
        return f64::NAN;
    }
    if a == 0.0 {
        return if x > 0.0 { flip(1.0) } else { f64::NAN };
    }
    if x == 0.0 {
        return flip(0.0);
    }
    if a.is_infinite() {
        return if x.is_infinite() { f64::NAN } else { flip(0.0) };
    }
    if x.is_infinite() {
        return flip(1.0);
    }
    let log_prefactor = a * x.ln() - x - libm::lgamma(a);
    if x < a + 1.0 {
        // P = e^{-x} x^a / Γ(a + 1) · Σ x^n / ((a + 1)…(a + n)).
        let (mut term, mut sum, mut n) = (1.0 / a, 1.0 / a, a);
        while term.abs() > sum.abs() * f64::EPSILON / 4.0 {
            n += 1.0;
            term *= x / n;
            sum += term;
        }
        flip(sum * log_prefactor.exp())
    } else {
        // Q = e^{-x} x^a / Γ(a) · 1/(x + 1 - a - 1·(1 - a)/(x + 3 - a - ...)).
        let tiny = 1e-300;
        let mut b = x + 1.0 - a;
        let (mut c, mut d) = (1.0 / tiny, 1.0 / b);
        let mut h = d;
        for i in 1..10_000 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            d = if d.abs() < tiny { tiny } else { d };
            c = b + an / c;
            c = if c.abs() < tiny { tiny } else { c };
            d = 1.0 / d;
            let delta = d * c;
            h *= delta;
            if (delta - 1.0).abs() < f64::EPSILON / 4.0 {
                break;
            }
        }
        let q = log_prefactor.exp() * h;
        if upper {
            q
        } else {
            1.0 - q
        }
    }
}

/// ∂P(a, x)/∂x = e^{-x} x^{a-1} / Γ(a), the only derivative torch defines.
fn igamma_dx(a: f64, x: f64) -> f64 {
    ((a - 1.0) * x.ln() - x - libm::lgamma(a)).exp()
}

/// The input as a float operand (integers promote to float32), contiguous.
fn float_input(ctx: &Ctx, b: &Bound) -> Result<(Tensor, crate::dtype::TDType)> {
    let dtype = float_of(b.tensor("input")?.dtype);
    Ok((operand(ctx, b.value("input"), dtype)?.contiguous()?, dtype))
}

/// An elementwise function of the input (integers promoted to float32) with its derivative.
pub(super) fn pointwise(ctx: &Ctx, b: &Bound, f: fn(f64) -> f64, df: fn(f64) -> f64) -> Result<Vec<Value>> {
    let (t, dtype) = float_input(ctx, b)?;
    one(ctx.out(t.apply_op1(Pointwise { f, df: Some(df) })?, dtype)?)
}

/// `polygamma(n, input)`.
fn polygamma(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let n = b.int("n")?;
    let n = u32::try_from(n).map_err(|_| Error::Arg(format!("polygamma: n must be a non-negative integer, got {n}")))?;
    let (t, dtype) = float_input(ctx, b)?;
    one(ctx.out(t.apply_op1(Polygamma(n))?, dtype)?)
}

/// `mvlgamma(input, p)`: Σᵢ lgamma(x - i/2) + p(p-1)/4·ln π; torch refuses
/// an element at or below (p - 1)/2.
fn mvlgamma(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let p = b.int("p")?;
    if p < 1 {
        return Err(Error::Arg(format!("mvlgamma: p must be at least 1, got {p}")));
    }
    let (t, dtype) = float_input(ctx, b)?;
    let least = (p - 1) as f64 / 2.0;
    if t.flatten_all()?.to_dtype(candle_core::DType::F64)?.to_vec1::<f64>()?.iter().any(|&x| !(x > least)) {
        return Err(Error::Arg(format!("mvlgamma: all elements must be greater than (p-1)/2 = {least}")));
    }
    let lgamma = || Pointwise { f: libm::lgamma, df: Some(digamma) };
    let mut sum = t.apply_op1(lgamma())?;
    for i in 1..p {
        sum = (sum + t.affine(1.0, -(i as f64) / 2.0)?.apply_op1(lgamma())?)?;
    }
    let constant = (p * (p - 1)) as f64 / 4.0 * std::f64::consts::PI.ln();
    one(ctx.out(sum.affine(1.0, constant)?, dtype)?)
}

/// The angle of a real number: π for a negative one, 0 otherwise, NaN kept.
fn angle(x: f64) -> f64 {
    if x < 0.0 {
        std::f64::consts::PI
    } else if x.is_nan() {
        x
    } else {
        0.0
    }
}

/// The special-function entries.
pub static OPS: &[Op] = &[
    smooth(&["Torch.igamma", "MS.Functional.igamma", "MS.Tensor.igamma"], "input, other", |c, b| {
        binary(c, b, Pointwise2 { f: |a, x| incomplete_gamma(a, x, false), da: None, db: Some(igamma_dx) })
    }),
    smooth(&["Torch.igammac", "MS.Functional.igammac", "MS.Tensor.igammac"], "input, other", |c, b| {
        binary(c, b, Pointwise2 { f: |a, x| incomplete_gamma(a, x, true), da: None, db: Some(|a, x| -igamma_dx(a, x)) })
    }),
    smooth(&["Torch.lgamma"], "input", |c, b| pointwise(c, b, libm::lgamma, digamma)),
    smooth(&["Torch.digamma", "MS.Functional.digamma", "MS.Tensor.digamma"], "input", |c, b| pointwise(c, b, digamma, |x| polygamma_n(1, x))),
    smooth(&["Torch.polygamma"], "n, input", polygamma),
    // The method takes the order after `self`.
    smooth(&["Tensor.polygamma"], "input, n", polygamma),
    smooth(&["Torch.mvlgamma"], "input, p", mvlgamma),
    smooth(&["Torch.erfinv", "MS.Functional.erfinv", "MS.Tensor.erfinv"], "input", |c, b| {
        pointwise(c, b, erfinv, |x| std::f64::consts::PI.sqrt() / 2.0 * (erfinv(x) * erfinv(x)).exp())
    }),
    smooth(&["Torch.i0"], "input", |c, b| pointwise(c, b, |x| bessel_i(0, x), |x| bessel_i(1, x.abs()).copysign(x))),
    // A real tensor's angle is a constant where defined: exact, a zero gradient.
    stepwise(&["Torch.angle", "MS.Functional.angle", "MS.Tensor.angle"], "input", |c, b| pointwise(c, b, angle, |_| 0.0)),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-13 * b.abs().max(1.0)
    }

    #[test]
    fn known_values() {
        // ψ(1) = -γ, ψ(1/2) = -γ - 2 ln 2, ψ'(1) = π²/6, ψ''(1) = -2ζ(3).
        let gamma = 0.577_215_664_901_532_9;
        assert!(close(digamma(1.0), -gamma));
        assert!(close(digamma(0.5), -gamma - 2.0 * std::f64::consts::LN_2));
        assert!(close(polygamma_n(1, 1.0), std::f64::consts::PI.powi(2) / 6.0));
        assert!(close(polygamma_n(2, 1.0), -2.0 * 1.202_056_903_159_594_2));
        assert!(close(erfinv(libm::erf(0.3)), 0.3) && close(erfinv(libm::erf(-2.5)), -2.5));
        assert!(close(bessel_i(0, 1.0), 1.266_065_877_752_008_4) && close(bessel_i(1, 1.0), 0.565_159_103_992_485));
        assert_eq!((digamma(0.0), digamma(-0.0)), (f64::NEG_INFINITY, f64::INFINITY));
        assert!(digamma(-2.0).is_nan() && erfinv(1.5).is_nan());
        assert_eq!(erfinv(-1.0), f64::NEG_INFINITY);
    }
}
