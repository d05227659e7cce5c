//! What the singular values determine, which is unique where the singular
//! vectors are not: `linalg.svdvals`, `nuclear_norm`, `linalg.matrix_norm`
//! (every `ord`), `linalg.cond`, `linalg.matrix_rank`. The values come from
//! a one-sided Jacobi SVD in float64 (column rotations until every pair is
//! orthogonal to roundoff); their gradient is `U·diag(g)·Vᵀ` over the
//! singular pairs, as torch's for distinct singular values. `linalg.svd`
//! and `pinv` stay out: their vectors' signs (and the pseudo-inverse's
//! gradient) are not given by the values alone.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor, D};

use super::linalg::inverse_of;
use super::math::{store, values};
use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, operand, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::Value;

/// Jacobi sweeps before giving up (each sweep squares the off-diagonal's size near convergence).
const SWEEPS: usize = 60;

/// The thin SVD of an `m×n` matrix (row-major): `(σ descending, U m×k, V n×k)`, k = min(m, n).
fn jacobi_svd(a: &[f64], m: usize, n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    if m < n {
        let t: Vec<f64> = (0..n * m).map(|i| a[(i % m) * n + i / m]).collect();
        let (s, u, v) = jacobi_svd(&t, n, m);
        return (s, v, u);
    }
    // Columns of W = A·V, rotated in place; V accumulates the rotations.
    let mut w: Vec<Vec<f64>> = (0..n).map(|j| (0..m).map(|i| a[i * n + j]).collect()).collect();
    let mut v: Vec<Vec<f64>> = (0..n).map(|j| (0..n).map(|i| f64::from(u8::from(i == j))).collect()).collect();
    let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
    for _ in 0..SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                let (alpha, beta, gamma) = (dot(&w[p], &w[p]), dot(&w[q], &w[q]), dot(&w[p], &w[q]));
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for cols in [&mut w, &mut v] {
                    let (lo, hi) = cols.split_at_mut(q);
                    for (x, y) in lo[p].iter_mut().zip(hi[0].iter_mut()) {
                        let (xp, yq) = (*x, *y);
                        *x = c * xp - s * yq;
                        *y = s * xp + c * yq;
                    }
                }
            }
        }
        if !rotated {
            break;
        }
    }
    let mut order: Vec<(f64, usize)> = w.iter().enumerate().map(|(j, col)| (dot(col, col).sqrt(), j)).collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (mut sigma, mut u, mut vs) = (Vec::with_capacity(n), vec![0.0; m * n], vec![0.0; n * n]);
    for (k, &(s, j)) in order.iter().enumerate() {
        sigma.push(s);
        for i in 0..m {
            u[i * n + k] = if s > 0.0 { w[j][i] / s } else { 0.0 };
        }
        for i in 0..n {
            vs[i * n + k] = v[j][i];
        }
    }
    (sigma, u, vs)
}

/// The singular values of each `[.., m, n]` matrix, with their gradient.
struct SingularValues;

impl CustomOp1 for SingularValues {
    fn name(&self) -> &'static str {
        "svdvals"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let dims = layout.shape().dims();
        let (m, n) = (dims[dims.len() - 2], dims[dims.len() - 1]);
        let v = values(storage, layout)?;
        let mut out = vec![];
        for a in v.chunks((m * n).max(1)).take(v.len().checked_div(m * n).unwrap_or(0)) {
            out.extend(jacobi_svd(a, m, n).0);
        }
        let shape = [&dims[..dims.len() - 2], &[m.min(n)]].concat();
        Ok((store(storage, out), Shape::from(shape)))
    }

    fn bwd(&self, arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let dims = arg.dims().to_vec();
        let (m, n) = (dims[dims.len() - 2], dims[dims.len() - 1]);
        let k = m.min(n);
        let a = arg.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
        let g = grad_res.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
        let mut out = Vec::with_capacity(a.len());
        for (mat, gs) in a.chunks((m * n).max(1)).zip(g.chunks(k.max(1))) {
            let (_, u, v) = jacobi_svd(mat, m, n);
            let (uk, vk) = (if m >= n { n } else { m }, if m >= n { n } else { m });
            for i in 0..m {
                for j in 0..n {
                    out.push((0..k).map(|l| u[i * uk + l] * gs[l] * v[j * vk + l]).sum::<f64>());
                }
            }
        }
        Tensor::from_vec(out, dims, arg.device())?.to_dtype(arg.dtype()).map(Some)
    }
}

/// The float `[.., m, n]` operand `name` and its dtype.
fn matrices(ctx: &Ctx, b: &Bound, name: &str, what: &str) -> Result<(Tensor, TDType)> {
    let x = b.tensor(name)?;
    if !x.dtype.is_float() || x.rank() < 2 {
        return Err(Error::Arg(format!("{what}: a floating point [.., m, n] input expected, got {} {:?}", x.dtype.name(), x.dims())));
    }
    Ok((operand(ctx, b.value(name), x.dtype)?.contiguous()?, x.dtype))
}

/// The input with the two `dim`s moved last (matrix_norm's and nuclear_norm's `dim`).
fn dims_last(t: &Tensor, dims: Option<Vec<i64>>) -> Result<(Tensor, [usize; 2])> {
    let r = t.rank();
    let pair = match dims {
        None => [r - 2, r - 1],
        Some(v) if v.len() == 2 => [dim(v[0], r)?, dim(v[1], r)?],
        Some(v) => return Err(Error::Arg(format!("matrix norm: dim must name two dims, got {v:?}"))),
    };
    if pair[0] == pair[1] {
        return Err(Error::Arg(format!("matrix norm: dim names dim {} twice", pair[0])));
    }
    let order: Vec<usize> = (0..r).filter(|d| !pair.contains(d)).chain(pair).collect();
    Ok((t.permute(order)?.contiguous()?, pair))
}

/// A reduced `[..]` result with the two matrix dims put back as size 1 when `keepdim`.
fn kept(t: Tensor, pair: [usize; 2], rank: usize, keepdim: bool) -> Result<Tensor> {
    if !keepdim {
        return Ok(t);
    }
    let mut shape = t.dims().to_vec();
    let (lo, hi) = (pair[0].min(pair[1]), pair[0].max(pair[1]));
    shape.insert(lo, 1);
    shape.insert(hi, 1);
    debug_assert_eq!(shape.len(), rank);
    Ok(t.reshape(shape)?)
}

/// A matrix norm of the `[.., m, n]` batch `a`: 'fro', 'nuc', ±2, ±1, ±inf.
fn norm_of(a: &Tensor, ord: &Value) -> Result<Tensor> {
    let r = a.rank();
    let abs = || a.abs();
    Ok(match ord {
        Value::Str(s) if s == "fro" => a.sqr()?.sum(D::Minus1)?.sum(D::Minus1)?.sqrt()?,
        Value::Str(s) if s == "nuc" => a.apply_op1(SingularValues)?.sum(D::Minus1)?,
        v => match v.as_f64() {
            Some(2.0) => a.apply_op1(SingularValues)?.narrow(r - 2, 0, 1)?.squeeze(r - 2)?,
            Some(-2.0) => {
                let s = a.apply_op1(SingularValues)?;
                let k = s.dims()[r - 2];
                s.narrow(r - 2, k - 1, 1)?.squeeze(r - 2)?
            }
            Some(1.0) => abs()?.sum(r - 2)?.max(D::Minus1)?,
            Some(-1.0) => abs()?.sum(r - 2)?.min(D::Minus1)?,
            Some(p) if p == f64::INFINITY => abs()?.sum(r - 1)?.max(D::Minus1)?,
            Some(p) if p == f64::NEG_INFINITY => abs()?.sum(r - 1)?.min(D::Minus1)?,
            _ => return Err(Error::Arg(format!("matrix_norm: ord must be 'fro', 'nuc', ±1, ±2 or ±inf, got {ord:?}"))),
        },
    })
}

/// `linalg.matrix_norm(A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None)`.
fn matrix_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = matrices(ctx, b, "A", "matrix_norm")?;
    let dtype = b.opt_dtype("dtype")?.unwrap_or(dtype);
    let (t, pair) = dims_last(&a, b.opt_ints("dim")?)?;
    one(ctx.out(kept(norm_of(&t, b.value("ord"))?, pair, a.rank(), b.bool("keepdim")?)?, dtype)?)
}

/// `nuclear_norm(input, dim=None, keepdim=False)`: the sum of the singular values.
fn nuclear_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = matrices(ctx, b, "input", "nuclear_norm")?;
    let (t, pair) = dims_last(&a, b.opt_ints("dim")?)?;
    one(ctx.out(kept(norm_of(&t, &Value::Str("nuc".into()))?, pair, a.rank(), b.bool("keepdim")?)?, dtype)?)
}

/// `linalg.svdvals(A)`: descending.
fn svdvals(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = matrices(ctx, b, "A", "svdvals")?;
    one(ctx.out(a.apply_op1(SingularValues)?, dtype)?)
}

/// `linalg.cond(A, p=None)`: σmax/σmin for None and ±2, else
/// `‖A‖_p·‖A⁻¹‖_p` of a square matrix.
fn cond(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = matrices(ctx, b, "A", "cond")?;
    let r = a.rank();
    let p = b.value("p");
    let two = matches!(p, Value::None) || p.as_f64().is_some_and(|v| v.abs() == 2.0);
    let out = if two {
        let s = a.apply_op1(SingularValues)?;
        let k = s.dims()[r - 2];
        let (hi, lo) = (s.narrow(r - 2, 0, 1)?.squeeze(r - 2)?, s.narrow(r - 2, k - 1, 1)?.squeeze(r - 2)?);
        if p.as_f64() == Some(-2.0) {
            (lo / hi)?
        } else {
            (hi / lo)?
        }
    } else {
        (norm_of(&a, p)? * norm_of(&inverse_of(&a, "cond")?, p)?)?
    };
    one(ctx.out(out, dtype)?)
}

/// `linalg.matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None)`:
/// the singular values above `max(atol, rtol·σmax)`, rtol by default
/// `eps(dtype)·max(m, n)` (with `tol`, the old spelling, an absolute one).
fn matrix_rank(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = matrices(ctx, b, "A", "matrix_rank")?;
    let r = a.rank();
    let (m, n) = (a.dims()[r - 2], a.dims()[r - 1]);
    let s = a.apply_op1_no_bwd(&SingularValues)?.to_dtype(DType::F64)?;
    let k = m.min(n);
    let eps = match dtype {
        TDType::F16 => 9.765625e-4,
        TDType::BF16 => 7.8125e-3,
        TDType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    };
    let number = |name: &str| -> Result<Option<f64>> { Ok(b.value(name).as_f64().or(if b.is_none(name) { None } else { Some(b.float(name)?) })) };
    let (atol, rtol) = match (number("tol")?, number("atol")?, number("rtol")?) {
        (Some(tol), _, _) => (tol, 0.0),
        (None, None, None) => (0.0, eps * m.max(n) as f64),
        (None, atol, rtol) => (atol.unwrap_or(0.0), rtol.unwrap_or(if atol.is_some_and(|a| a > 0.0) { 0.0 } else { eps * m.max(n) as f64 })),
    };
    let batch = &a.dims()[..r - 2];
    let values = if k == 0 { vec![] } else { s.flatten_all()?.to_vec1::<f64>()? };
    let ranks: Vec<f64> = values
        .chunks(k.max(1))
        .take(batch.iter().product())
        .map(|row| {
            let cut = atol.max(rtol * row.first().copied().unwrap_or(0.0));
            row.iter().filter(|&&v| v > cut).count() as f64
        })
        .collect();
    let ranks = if k == 0 { vec![0.0; batch.iter().product()] } else { ranks };
    one(ctx.out(Tensor::from_vec(ranks, batch, a.device())?, TDType::I64)?)
}

/// The entry of one of these functions.
const fn entry(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts: &[] }
}

/// The singular-value entries.
pub static OPS: &[Op] = &[
    entry(&["Torch.svdvals"], "A, *, driver=None, out=None", svdvals),
    entry(&["Torch.matrix_norm"], "A, ord='fro', dim=None, keepdim=False, *, dtype=None, out=None", matrix_norm),
    entry(&["Torch.nuclear_norm"], "input, dim=None, keepdim=False, *, out=None", nuclear_norm),
    entry(&["Torch.cond", "MS.Functional.cond"], "A, p=None, *, out=None", cond),
    Op {
        names: &["Torch.matrix_rank"],
        sig: "A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None",
        forward: matrix_rank,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jacobi_finds_known_singular_values() {
        // diag(3, 2) rotated: singular values 3 and 2, for the matrix and its transpose.
        let (c, s) = (0.6, 0.8);
        let a = [3.0 * c, -2.0 * s, 3.0 * s, 2.0 * c, 0.0, 0.0];
        let (sigma, _, _) = jacobi_svd(&a, 3, 2);
        assert!((sigma[0] - 3.0).abs() < 1e-14 && (sigma[1] - 2.0).abs() < 1e-14, "{sigma:?}");
        let t = [3.0 * c, 3.0 * s, 0.0, -2.0 * s, 2.0 * c, 0.0];
        let (sigma, _, _) = jacobi_svd(&t, 2, 3);
        assert!((sigma[0] - 3.0).abs() < 1e-14 && (sigma[1] - 2.0).abs() < 1e-14, "{sigma:?}");
    }
}
