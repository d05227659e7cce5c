//! Tensors made from numbers alone: torch's signal windows
//! (`hann_window`, `hamming_window`, `blackman_window`, `bartlett_window`,
//! `kaiser_window`), `torch.range` (both ends included), and the index
//! pairs of a triangle (`tril_indices`, `triu_indices`), `scalar_tensor`. The windows'
//! values are computed in float64 and rounded once to the result's dtype.

use super::create::points;
use super::special::bessel_i;
use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The points of a window of `window_length` (`periodic`: one longer, its
/// last point dropped, as torch's windows for spectral analysis), as
/// `f(n, N - 1)` for n < window_length with N the symmetric length.
fn window(ctx: &Ctx, b: &Bound, what: &str, f: impl Fn(f64, f64) -> f64) -> Result<Vec<Value>> {
    let length = b.int("window_length")?;
    if length < 0 {
        return Err(Error::Arg(format!("{what}: window_length must be non-negative, got {length}")));
    }
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::F32);
    if !dtype.is_float() {
        return Err(Error::Unsupported(format!("{what} into {}", dtype.name())));
    }
    let length = length as usize;
    let symmetric = if b.bool("periodic")? { length + 1 } else { length };
    let values = match length {
        0 => vec![],
        1 => vec![1.0],
        _ => (0..length).map(|n| f(n as f64, (symmetric - 1) as f64)).collect(),
    };
    points(ctx, values, dtype)
}

/// A cosine window `Σₖ aₖ·cos(2πkn/(N-1))`, coefficients from k = 0.
fn cosines(coefficients: &[f64], n: f64, last: f64) -> f64 {
    let phase = 2.0 * std::f64::consts::PI * n / last;
    coefficients.iter().enumerate().map(|(k, a)| a * (k as f64 * phase).cos()).sum()
}

fn hann(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    window(ctx, b, "hann_window", |n, last| cosines(&[0.5, -0.5], n, last))
}

fn hamming(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (alpha, beta) = (b.float("alpha")?, b.float("beta")?);
    window(ctx, b, "hamming_window", |n, last| cosines(&[alpha, -beta], n, last))
}

fn blackman(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    window(ctx, b, "blackman_window", |n, last| cosines(&[0.42, -0.5, 0.08], n, last))
}

fn bartlett(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    window(ctx, b, "bartlett_window", |n, last| 1.0 - (2.0 * n / last - 1.0).abs())
}

/// `I₀(β·√(1 - ((n - m)/m)²)) / I₀(β)`, m = (N - 1)/2.
fn kaiser(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let beta = b.float("beta")?;
    window(ctx, b, "kaiser_window", |n, last| {
        let m = last / 2.0;
        let r = (n - m) / m;
        bessel_i(0, beta * (1.0 - r * r).max(0.0).sqrt()) / bessel_i(0, beta)
    })
}

/// `torch.range(start, end, step=1)`: `start + i·step` up to and including
/// `end`, float32 unless `dtype` says.
fn range(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (start, end, step) = (b.float("start")?, b.float("end")?, b.float("step")?);
    if step == 0.0 || (end - start) * step < 0.0 {
        return Err(Error::Arg(format!("range: the step {step} does not lead from {start} to {end}")));
    }
    let n = ((end - start) / step).floor() + 1.0;
    if !(n <= usize::MAX as f64) {
        return Err(Error::Arg(format!("range: {n} elements")));
    }
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::F32);
    let values: Vec<f64> = (0..n as usize).map(|i| start + i as f64 * step).collect();
    ctx.fits(&[values.len()])?;
    let len = values.len();
    one(T::from_f64(values, &[len], dtype, ctx.compute, &ctx.device)?)
}

/// The `[2, N]` row and column indices of the lower (`upper`: upper)
/// triangle of a `row × col` matrix, diagonal `offset` included, row by row.
fn triangle(ctx: &Ctx, b: &Bound, upper: bool) -> Result<Vec<Value>> {
    let (rows, cols, offset) = (b.int("row")?, b.int("col")?, b.int("offset")?);
    if rows < 0 || cols < 0 {
        return Err(Error::Arg(format!("tril_indices/triu_indices: negative size {rows} x {cols}")));
    }
    ctx.fits(&[rows as usize, cols as usize])?;
    let (mut r, mut c) = (vec![], vec![]);
    for i in 0..rows {
        for j in 0..cols {
            if (upper && j - i >= offset) || (!upper && j - i <= offset) {
                r.push(i as f64);
                c.push(j as f64);
            }
        }
    }
    let n = r.len();
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::I64);
    one(T::from_f64([r, c].concat(), &[2, n], dtype, ctx.compute, &ctx.device)?)
}

/// `scalar_tensor(s, *, dtype=None)`: a 0-d tensor, float32 unless `dtype` says.
fn scalar_tensor(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = b.opt_dtype("dtype")?.unwrap_or(TDType::F32);
    one(T::from_f64(vec![b.float("s")?], &[], dtype, ctx.compute, &ctx.device)?)
}

/// A creation entry without a gradient.
const fn made(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, standard: Standard) -> Op {
    Op { names, sig, forward, backward: false, standard, random: false, facts: &[] }
}

/// The window, range and triangle-index entries.
pub static OPS: &[Op] = &[
    made(&["Torch.hann_window"], "window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False", hann, Standard::Accuracy),
    made(
        &["Torch.hamming_window"],
        "window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None, requires_grad=False",
        hamming,
        Standard::Accuracy,
    ),
    made(
        &["Torch.blackman_window"],
        "window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False",
        blackman,
        Standard::Accuracy,
    ),
    made(
        &["Torch.bartlett_window"],
        "window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False",
        bartlett,
        Standard::Accuracy,
    ),
    made(
        &["Torch.kaiser_window"],
        "window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None, requires_grad=False",
        kaiser,
        Standard::Accuracy,
    ),
    made(&["Torch.range"], "start, end, step=1, *, out=None, dtype=None, layout=None, device=None, requires_grad=False", range, Standard::Accuracy),
    made(&["Torch.scalar_tensor"], "s, *, dtype=None, layout=None, device=None, pin_memory=None", scalar_tensor, Standard::Exact),
    made(&["Torch.tril_indices"], "row, col, offset=0, *, dtype=None, device=None, layout=None", |c, b| triangle(c, b, false), Standard::Exact),
    made(&["Torch.triu_indices"], "row, col, offset=0, *, dtype=None, device=None, layout=None", |c, b| triangle(c, b, true), Standard::Exact),
];
