//! Triangular factors and what is built on them, float64 over a batch of
//! matrices: `linalg.cholesky_ex` (dumped `Torch.cholesky_ex`; torch 2.x
//! removed `torch.cholesky`), `cholesky_inverse`, `cholesky_solve`,
//! `triangular_solve`, `linalg.lu_factor`, `lu_factor_ex` and `lu` (square,
//! pivoted as LAPACK's getrf, with torch's gradient), `lu_unpack`,
//! `lu_solve`, `matrix_exp`, and
//! Householder reflectors (`linalg.householder_product`, `orgqr`,
//! `ormqr`). The Cholesky factor is computed row by row with torch's
//! gradient (`L⁻ᴴ·Φ(Lᴴ·gL)·L⁻¹`, Φ the lower triangle symmetrized);
//! the rest are compositions of masks, products and [`super::linalg`]'s
//! inverse, so their gradients are autograd's. `matrix_exp` is the Taylor
//! series of `A/2^s` (‖A/2^s‖₁ ≤ 1/2, 18 terms: below float64's roundoff)
//! squared `s` times.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor};

use super::linalg::{info, inverse_of, square, Lu};
use super::math::{store, values};
use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::{operand, Ctx};
use crate::error::{Error, Result};
use crate::value::Value;

/// The lower Cholesky factor of one `n×n` matrix (row-major), or the order
/// of the first leading minor that is not positive-definite.
fn cholesky_of(a: &[f64], n: usize) -> std::result::Result<Vec<f64>, usize> {
    let mut l = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i * n + k] * l[j * n + k]).sum();
            if i == j {
                let d = a[i * n + i] - s;
                if d.is_nan() || d <= 0.0 {
                    return Err(i + 1);
                }
                l[i * n + i] = d.sqrt();
            } else {
                l[i * n + j] = (a[i * n + j] - s) / l[j * n + j];
            }
        }
    }
    Ok(l)
}

/// `n×n` masks: the lower triangle with the diagonal, or without it.
fn tril_mask(n: usize, strict: bool, like: &Tensor) -> Result<Tensor> {
    let m: Vec<f64> = (0..n * n).map(|k| f64::from(u8::from(if strict { k % n < k / n } else { k % n <= k / n }))).collect();
    Ok(Tensor::from_vec(m, (n, n), like.device())?.to_dtype(like.dtype())?)
}

/// The lower Cholesky factor, with torch's gradient.
struct Cholesky;

impl CustomOp1 for Cholesky {
    fn name(&self) -> &'static str {
        "cholesky"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let n = *layout.shape().dims().last().unwrap_or(&0);
        let v = values(storage, layout)?;
        let mut out = Vec::with_capacity(v.len());
        for m in v.chunks(n * n).filter(|_| n > 0) {
            out.extend(cholesky_of(m, n).map_err(|k| candle_core::Error::Msg(format!("cholesky: minor {k} is not positive-definite")))?);
        }
        Ok((store(storage, out), layout.shape().clone()))
    }

    fn bwd(&self, _arg: &Tensor, l: &Tensor, gl: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let n = *l.dims().last().unwrap_or(&0);
        let lower = |strict| tril_mask(n, strict, l).map_err(|e| candle_core::Error::Msg(e.to_string()));
        let x = l.t()?.contiguous()?.matmul(&gl.contiguous()?)?.broadcast_mul(&lower(false)?)?;
        let m = ((&x + x.broadcast_mul(&lower(true)?)?.t()?)? * 0.5)?;
        let l_inv = inverse_of(&l.contiguous()?, "cholesky").map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        Ok(Some(l_inv.t()?.contiguous()?.matmul(&m.contiguous()?)?.matmul(&l_inv)?))
    }
}

/// The factor of a positive-definite batch: lower, or its transpose with `upper`.
fn factor(x: &Tensor, upper: bool, what: &str) -> Result<Tensor> {
    let n = x.dims()[x.rank() - 1];
    if n > 0 {
        let v = x.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
        for (i, m) in v.chunks(n * n).enumerate() {
            if let Err(k) = cholesky_of(m, n) {
                return Err(Error::Arg(format!(
                    "{what}: matrix {i} of the batch is not positive-definite (its leading minor of order {k}; torch raises here)"
                )));
            }
        }
    }
    let l = x.apply_op1(Cholesky)?;
    Ok(if upper { l.t()?.contiguous()? } else { l })
}

/// `linalg.cholesky_ex(input, *, upper=False, check_errors=False)`: the
/// factor and `info`; a matrix that is not positive-definite leaves torch a
/// partial factor, which is a `skip` here.
fn cholesky_ex(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, dtype) = square(ctx, b, "input", "cholesky_ex")?;
    let l = factor(&x, b.bool("upper")?, "cholesky_ex").map_err(|e| match e {
        Error::Arg(m) => Error::Unsupported(format!("{m}: cholesky_ex's factor is then partial, as the device's kernel leaves it")),
        e => e,
    })?;
    Ok(vec![Value::Tensor(ctx.out(l, dtype)?), info(ctx, &x)?])
}

/// A factor argument as lower-triangular `L` (the upper one transposed):
/// its value the triangle, as LAPACK reads it; its gradient the whole
/// matrix's, as torch's `cholesky_inverse` and `cholesky_solve` backward
/// differentiate it (the two agree for a true factor, zero elsewhere).
fn lower_of(t: &Tensor, upper: bool) -> Result<Tensor> {
    let n = t.dims()[t.rank() - 1];
    let t = if upper { t.t()?.contiguous()? } else { t.clone() };
    let off_triangle = (t.detach().broadcast_mul(&tril_mask(n, false, &t)?)? - t.detach())?;
    Ok((t + off_triangle)?)
}

/// `cholesky_inverse(L, upper=False)`: `(L·Lᴴ)⁻¹`.
fn cholesky_inverse(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (l, dtype) = square(ctx, b, "input", "cholesky_inverse")?;
    let l = lower_of(&l, b.bool("upper")?)?;
    let a = l.matmul(&l.t()?.contiguous()?)?;
    Ok(vec![Value::Tensor(ctx.out(inverse_of(&a, "cholesky_inverse")?, dtype)?)])
}

/// `cholesky_solve(B, L, upper=False)`: `(L·Lᴴ)⁻¹·B`.
fn cholesky_solve(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (l, dtype) = square(ctx, b, "input2", "cholesky_solve")?;
    let rhs = operand(ctx, b.value("input"), dtype)?.contiguous()?;
    let l = lower_of(&l, b.bool("upper")?)?;
    let a = l.matmul(&l.t()?.contiguous()?)?;
    Ok(vec![Value::Tensor(ctx.out(inverse_of(&a, "cholesky_solve")?.broadcast_matmul(&rhs)?, dtype)?)])
}

/// `triangular_solve(b, A, upper=True, transpose=False, unitriangular=False)`:
/// the solution of `op(T)·X = b`, T the triangle of A (its diagonal ones
/// with `unitriangular`), and A's copy.
fn triangular_solve(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = square(ctx, b, "A", "triangular_solve")?;
    let rhs = operand(ctx, b.value("input"), dtype)?.contiguous()?;
    let n = a.dims()[a.rank() - 1];
    let (upper, unit) = (b.bool("upper")?, b.bool("unitriangular")?);
    let mask = tril_mask(n, unit, &a)?;
    let mask = if upper { mask.t()?.contiguous()? } else { mask };
    let mut t = a.broadcast_mul(&mask)?;
    if unit {
        t = t.broadcast_add(&Tensor::eye(n, a.dtype(), a.device())?)?;
    }
    if b.bool("transpose")? {
        t = t.t()?.contiguous()?;
    }
    let x = inverse_of(&t, "triangular_solve")?.broadcast_matmul(&rhs)?;
    Ok(vec![Value::Tensor(ctx.out(x, dtype)?), Value::Tensor(ctx.out(a, dtype)?)])
}

/// The permutation matrices of LAPACK's 1-based row swaps `pivots` (`[.., k]`) for `m` rows.
fn permutations(pivots: &[f64], k: usize, m: usize, like: &Tensor) -> Result<Tensor> {
    let count = pivots.len().checked_div(k).unwrap_or(0);
    let mut out = Vec::with_capacity(count * m * m);
    for swaps in pivots.chunks(k.max(1)).take(count) {
        let mut rows: Vec<usize> = (0..m).collect();
        for (i, &p) in swaps.iter().enumerate() {
            let p = p as usize;
            if p < 1 || p > m {
                return Err(Error::Arg(format!("lu: pivot {p} is out of range for {m} rows")));
            }
            rows.swap(i, p - 1);
        }
        // P with A = P·L·U: column j of P is the unit vector of the row that ended at j.
        let mut p = vec![0.0; m * m];
        for (j, &r) in rows.iter().enumerate() {
            p[r * m + j] = 1.0;
        }
        out.extend(p);
    }
    Ok(Tensor::from_vec(out, (count, m, m), like.device())?.to_dtype(like.dtype())?)
}

/// `P`, `L` (unit lower) and `U` of a packed LU factorization `[.., m, n]`.
fn unpack(lu: &Tensor, pivots: &[f64]) -> Result<(Tensor, Tensor, Tensor)> {
    let r = lu.rank();
    let (m, n) = (lu.dims()[r - 2], lu.dims()[r - 1]);
    let k = m.min(n);
    let lower: Vec<f64> = (0..m * k).map(|i| f64::from(u8::from(i % k < i / k))).collect();
    let upper: Vec<f64> = (0..k * n).map(|i| f64::from(u8::from(i % n >= i / n))).collect();
    let (lower, upper) =
        (Tensor::from_vec(lower, (m, k), lu.device())?.to_dtype(lu.dtype())?, Tensor::from_vec(upper, (k, n), lu.device())?.to_dtype(lu.dtype())?);
    let eye = Tensor::eye(m, lu.dtype(), lu.device())?.narrow(1, 0, k)?;
    let l = lu.narrow(r - 1, 0, k)?.broadcast_mul(&lower)?.broadcast_add(&eye)?;
    let u = lu.narrow(r - 2, 0, k)?.broadcast_mul(&upper)?;
    let batch = &lu.dims()[..r - 2];
    let p = permutations(pivots, k, m, lu)?.reshape([batch.to_vec(), vec![m, m]].concat())?;
    Ok((p, l, u))
}

/// `lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True)`:
/// `P`, `L`, `U` (empty tensors for the parts not unpacked, as torch's).
fn lu_unpack(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("LU_data")?;
    if !x.dtype.is_float() || x.rank() < 2 {
        return Err(Error::Arg(format!("lu_unpack: a floating point [.., m, n] LU_data expected, got {} {:?}", x.dtype.name(), x.dims())));
    }
    let lu = operand(ctx, b.value("LU_data"), x.dtype)?.contiguous()?;
    let (p, l, u) = unpack(&lu, &b.tensor("LU_pivots")?.to_f64_vec()?)?;
    let empty = Tensor::zeros(0, lu.dtype(), lu.device())?;
    let (data, pivots) = (b.bool("unpack_data")?, b.bool("unpack_pivots")?);
    let pick = |on: bool, t: Tensor| if on { t } else { empty.clone() };
    Ok(vec![
        Value::Tensor(ctx.out(pick(pivots, p), x.dtype)?),
        Value::Tensor(ctx.out(pick(data, l), x.dtype)?),
        Value::Tensor(ctx.out(pick(data, u), x.dtype)?),
    ])
}

/// `lu_solve(b, LU_data, LU_pivots)`: the solution of `P·L·U·X = b`.
fn lu_solve(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (lu, dtype) = square(ctx, b, "LU_data", "lu_solve")?;
    let rhs = operand(ctx, b.value("input"), dtype)?.contiguous()?;
    let (p, l, u) = unpack(&lu, &b.tensor("LU_pivots")?.to_f64_vec()?)?;
    let a = p.matmul(&l)?.matmul(&u)?;
    Ok(vec![Value::Tensor(ctx.out(inverse_of(&a, "lu_solve")?.broadcast_matmul(&rhs)?, dtype)?)])
}

/// `Q = H₁·…·H_k` of the reflectors `Hᵢ = I - τᵢ·vᵢ·vᵢᵀ` packed in `a`
/// (`[.., m, n]`: vᵢ is column i below the diagonal, 1 on it), applied to
/// `c` (`[.., m, p]`) from the left: `H₁(H₂(…(H_k·c)))`.
fn reflect(a: &Tensor, tau: &Tensor, c: &Tensor) -> Result<Tensor> {
    let r = a.rank();
    let (m, n) = (a.dims()[r - 2], a.dims()[r - 1]);
    let k = tau.dims()[tau.rank() - 1];
    if k > n || n > m {
        return Err(Error::Arg(format!("householder_product: {k} reflectors for a {m}x{n} input (k <= n <= m)")));
    }
    let strict: Vec<f64> = (0..m * n).map(|i| f64::from(u8::from(i % n < i / n))).collect();
    let strict = Tensor::from_vec(strict, (m, n), a.device())?.to_dtype(a.dtype())?;
    let v = a.broadcast_mul(&strict)?.broadcast_add(&Tensor::eye(m, a.dtype(), a.device())?.narrow(1, 0, n)?)?;
    let mut q = c.clone();
    for i in (0..k).rev() {
        let vi = v.narrow(r - 1, i, 1)?.contiguous()?;
        let ti = tau.narrow(tau.rank() - 1, i, 1)?.unsqueeze(tau.rank())?;
        let proj = vi.t()?.contiguous()?.broadcast_matmul(&q)?;
        q = q.broadcast_sub(&vi.broadcast_mul(&ti)?.broadcast_matmul(&proj)?)?;
    }
    Ok(q)
}

/// `linalg.householder_product(A, tau)` (`orgqr`): the first n columns of Q.
fn householder_product(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() || x.rank() < 2 {
        return Err(Error::Arg(format!("householder_product: a floating point [.., m, n] input expected, got {} {:?}", x.dtype.name(), x.dims())));
    }
    let a = operand(ctx, b.value("input"), x.dtype)?.contiguous()?;
    let tau = operand(ctx, b.value("tau"), x.dtype)?;
    let r = a.rank();
    let (m, n) = (a.dims()[r - 2], a.dims()[r - 1]);
    let eye = Tensor::eye(m, a.dtype(), a.device())?.narrow(1, 0, n)?.contiguous()?;
    Ok(vec![Value::Tensor(ctx.out(reflect(&a, &tau, &eye)?, x.dtype)?)])
}

/// `ormqr(input, tau, other, left=True, transpose=False)`: `op(Q)·C` or
/// `C·op(Q)`, Q the whole m×m product of the reflectors.
fn ormqr(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() || x.rank() < 2 {
        return Err(Error::Arg(format!("ormqr: a floating point [.., m, n] input expected, got {} {:?}", x.dtype.name(), x.dims())));
    }
    let a = operand(ctx, b.value("input"), x.dtype)?.contiguous()?;
    let (tau, c) = (operand(ctx, b.value("tau"), x.dtype)?, operand(ctx, b.value("other"), x.dtype)?.contiguous()?);
    let m = a.dims()[a.rank() - 2];
    let q = reflect(&a, &tau, &Tensor::eye(m, a.dtype(), a.device())?)?;
    let q = if b.bool("transpose")? { q.t()?.contiguous()? } else { q };
    let out = if b.bool("left")? { q.broadcast_matmul(&c)? } else { c.broadcast_matmul(&q)? };
    Ok(vec![Value::Tensor(ctx.out(out, x.dtype)?)])
}

/// The packed LU factor of each square matrix (LAPACK's getrf), with
/// torch's gradient `P·L⁻ᴴ·(tril(Lᴴ·gL, -1) + triu(gU·Uᴴ))·U⁻ᴴ`.
struct LuFactor;

impl CustomOp1 for LuFactor {
    fn name(&self) -> &'static str {
        "lu_factor"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let n = *layout.shape().dims().last().unwrap_or(&0);
        let v = values(storage, layout)?;
        let out: Vec<f64> = v.chunks((n * n).max(1)).filter(|_| n > 0).flat_map(|m| Lu::of(m, n).lu).collect();
        Ok((store(storage, out), layout.shape().clone()))
    }

    fn bwd(&self, arg: &Tensor, lu: &Tensor, g: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let fail = |e: Error| candle_core::Error::Msg(e.to_string());
        let n = *lu.dims().last().unwrap_or(&0);
        let (strict, lower) = (tril_mask(n, true, lu).map_err(fail)?, tril_mask(n, false, lu).map_err(fail)?);
        let upper = (lower.ones_like()? - &strict)?;
        let eye = Tensor::eye(n, lu.dtype(), lu.device())?;
        let l = lu.broadcast_mul(&strict)?.broadcast_add(&eye)?;
        let u = lu.broadcast_mul(&upper)?;
        let (gl, gu) = (g.broadcast_mul(&strict)?, g.broadcast_mul(&upper)?);
        let phi = (l.t()?.contiguous()?.matmul(&gl.contiguous()?)?.broadcast_mul(&strict)?
            + gu.contiguous()?.matmul(&u.t()?.contiguous()?)?.broadcast_mul(&upper)?)?;
        let (l_inv, u_inv) = (inverse_of(&l.contiguous()?, "lu_factor").map_err(fail)?, inverse_of(&u.contiguous()?, "lu_factor").map_err(fail)?);
        let inner = l_inv.t()?.contiguous()?.matmul(&phi)?.matmul(&u_inv.t()?.contiguous()?)?;
        let p = permutations_of(arg).map_err(fail)?;
        Ok(Some(p.matmul(&inner)?))
    }
}

/// The permutation matrices `P` (A = P·L·U) of each square matrix of `a`.
fn permutations_of(a: &Tensor) -> Result<Tensor> {
    let n = *a.dims().last().unwrap_or(&0);
    let v = a.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let pivots: Vec<f64> = v.chunks((n * n).max(1)).filter(|_| n > 0).flat_map(|m| Lu::of(m, n).swaps.into_iter().map(|p| (p + 1) as f64)).collect();
    Ok(permutations(&pivots, n, n, a)?.reshape(a.dims())?)
}

/// The square batch, its packed factor (differentiable) and LAPACK's
/// 1-based int32 pivots; `pivot=False` (CUDA's unpivoted LU) and
/// rectangular matrices are `skip`s.
fn lu_parts(ctx: &Ctx, b: &Bound, name: &str, what: &str) -> Result<(Tensor, crate::dtype::TDType, Tensor, Value)> {
    let x = b.tensor(name)?;
    if x.rank() >= 2 && x.dims()[x.rank() - 1] != x.dims()[x.rank() - 2] {
        return Err(Error::Unsupported(format!("{what} of a rectangular matrix {:?} is not replayed", x.dims())));
    }
    if !b.bool("pivot")? {
        return Err(Error::Unsupported(format!("{what} without pivoting (CUDA's) is not replayed")));
    }
    let (a, dtype) = square(ctx, b, name, what)?;
    let n = a.dims()[a.rank() - 1];
    let v = a.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let pivots: Vec<f64> = v.chunks((n * n).max(1)).filter(|_| n > 0).flat_map(|m| Lu::of(m, n).swaps.into_iter().map(|p| (p + 1) as f64)).collect();
    let pivot_shape = [&a.dims()[..a.rank() - 2], &[n]].concat();
    let pivots = Value::Tensor(ctx.out(Tensor::from_vec(pivots, pivot_shape, a.device())?, crate::dtype::TDType::I32)?);
    let lu = a.apply_op1(LuFactor)?;
    Ok((a, dtype, lu, pivots))
}

/// `linalg.lu_factor(A, *, pivot=True)`: the packed factor and the pivots.
fn lu_factor(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (_, dtype, lu, pivots) = lu_parts(ctx, b, "A", "lu_factor")?;
    Ok(vec![Value::Tensor(ctx.out(lu, dtype)?), pivots])
}

/// `linalg.lu_factor_ex(A, *, pivot=True, check_errors=False)`: and `info`,
/// the 1-based first zero pivot of each matrix (0 where there is none).
fn lu_factor_ex(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    lu_with_info(ctx, b, "A", "lu_factor_ex")
}

/// The packed factor, the pivots and `info`.
fn lu_with_info(ctx: &Ctx, b: &Bound, name: &str, what: &str) -> Result<Vec<Value>> {
    let (a, dtype, lu, pivots) = lu_parts(ctx, b, name, what)?;
    let n = a.dims()[a.rank() - 1];
    let packed = lu.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let infos: Vec<f64> =
        packed.chunks((n * n).max(1)).filter(|_| n > 0).map(|m| (0..n).find(|&k| m[k * n + k] == 0.0).map_or(0.0, |k| (k + 1) as f64)).collect();
    let batch = &a.dims()[..a.rank() - 2];
    let info = Value::Tensor(ctx.out(Tensor::from_vec(infos, batch, a.device())?, crate::dtype::TDType::I32)?);
    Ok(vec![Value::Tensor(ctx.out(lu, dtype)?), pivots, info])
}

/// `linalg.lu(A, *, pivot=True)`: `P`, `L` (unit lower) and `U`.
fn lu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype, lu, _) = lu_parts(ctx, b, "A", "lu")?;
    let n = a.dims()[a.rank() - 1];
    let strict = tril_mask(n, true, &lu)?;
    let upper = (tril_mask(n, false, &lu)?.ones_like()? - &strict)?;
    let l = lu.broadcast_mul(&strict)?.broadcast_add(&Tensor::eye(n, lu.dtype(), lu.device())?)?;
    let u = lu.broadcast_mul(&upper)?;
    Ok(vec![Value::Tensor(ctx.out(permutations_of(&a)?, dtype)?), Value::Tensor(ctx.out(l, dtype)?), Value::Tensor(ctx.out(u, dtype)?)])
}

/// `Tensor.lu(pivot=True, get_infos=False)` (the old `torch.lu`): the packed
/// factor and the pivots, and `info` with `get_infos`.
fn tensor_lu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.bool("get_infos")? {
        return lu_with_info(ctx, b, "input", "lu");
    }
    let (_, dtype, lu, pivots) = lu_parts(ctx, b, "input", "lu")?;
    Ok(vec![Value::Tensor(ctx.out(lu, dtype)?), pivots])
}

/// The Taylor terms that put the series below float64's roundoff for ‖X‖₁ ≤ 1/2.
const TAYLOR_TERMS: usize = 18;

/// `matrix_exp(A)`: scaling and squaring of the Taylor series.
fn matrix_exp(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = square(ctx, b, "input", "matrix_exp")?;
    let n = a.dims()[a.rank() - 1];
    // The largest 1-norm (column sums of |A|) over the batch.
    let norm = if n == 0 { 0.0 } else { a.abs()?.sum_keepdim(a.rank() - 2)?.flatten_all()?.max(0)?.to_dtype(DType::F64)?.to_scalar::<f64>()? };
    if !norm.is_finite() {
        return Err(Error::Unsupported("matrix_exp of a matrix with an infinite or NaN element".into()));
    }
    let s = if norm > 0.5 { (norm / 0.5).log2().ceil() as i32 } else { 0 };
    let x = (&a / 2f64.powi(s))?;
    let eye = Tensor::eye(n, a.dtype(), a.device())?.broadcast_as(a.dims())?.contiguous()?;
    let (mut sum, mut term) = (eye.clone(), eye);
    for k in 1..=TAYLOR_TERMS {
        term = (term.matmul(&x)? / k as f64)?;
        sum = (sum + &term)?;
    }
    for _ in 0..s {
        sum = sum.matmul(&sum)?;
    }
    Ok(vec![Value::Tensor(ctx.out(sum, dtype)?)])
}

/// The entry of one of these functions.
const fn entry(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts: &[] }
}

/// The factor entries.
pub static OPS: &[Op] = &[
    entry(&["Torch.cholesky_ex"], "input, *, upper=False, check_errors=False, out=None", cholesky_ex),
    entry(&["Torch.cholesky_inverse"], "input, upper=False, *, out=None", cholesky_inverse),
    entry(&["Torch.cholesky_solve"], "input, input2, upper=False, *, out=None", cholesky_solve),
    entry(&["Torch.triangular_solve"], "input, A, upper=True, transpose=False, unitriangular=False, *, out=None", triangular_solve),
    entry(&["Torch.lu_unpack"], "LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None", lu_unpack),
    entry(&["Torch.lu_solve"], "input, LU_data, LU_pivots, *, out=None", lu_solve),
    entry(&["Torch.matrix_exp"], "input", matrix_exp),
    entry(&["Torch.lu_factor"], "A, *, pivot=True, out=None", lu_factor),
    entry(&["Torch.lu_factor_ex"], "A, *, pivot=True, check_errors=False, out=None", lu_factor_ex),
    entry(&["Torch.lu"], "A, *, pivot=True, out=None", lu),
    entry(&["Tensor.lu"], "input, pivot=True, get_infos=False", tensor_lu),
    entry(&["Torch.householder_product", "Torch.orgqr"], "input, tau, *, out=None", householder_product),
    entry(&["Torch.ormqr"], "input, tau, other, left=True, transpose=False, *, out=None", ormqr),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cholesky_of_a_known_matrix_and_a_refusal() {
        let l = cholesky_of(&[4.0, 2.0, 2.0, 5.0], 2).unwrap();
        assert_eq!(l, vec![2.0, 0.0, 1.0, 2.0]);
        assert_eq!(cholesky_of(&[1.0, 2.0, 2.0, 1.0], 2), Err(2));
    }
}
