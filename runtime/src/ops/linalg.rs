//! Square-matrix functions through an LU factorization with partial
//! pivoting, in float64 over every matrix of a batch `[.., n, n]`:
//! `det`, `slogdet`, `logdet`, `inverse` (`linalg.inv`, dumped `Torch.inv`,
//! and `inv_ex`), `matrix_power`, `linalg.solve_ex`. Gradients are the
//! closed forms torch uses: `d det = det·A⁻ᵀ` (zero where `A` is singular,
//! as torch 2.x computes it, not the cofactor matrix), `d log|det| = A⁻ᵀ`, `d A⁻¹ = -A⁻ᵀ·G·A⁻ᵀ`; powers and
//! solutions are products of those, differentiated by autograd. A singular
//! matrix where torch raises (`inverse`, `solve_ex`'s solution) is an
//! input error naming the matrix, as torch's message does.

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor};

use super::math::{store, values};
use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{operand, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::Value;

/// One matrix's LU factorization: `P·A = L·U` packed in `lu` (row-major,
/// L's unit diagonal implied), the row order `perm`, LAPACK's row swaps
/// (`swaps[k]`: the row swapped with row k, 0-based), the permutation's
/// sign, and whether a pivot column was all zeros.
pub(super) struct Lu {
    n: usize,
    pub(super) lu: Vec<f64>,
    perm: Vec<usize>,
    pub(super) swaps: Vec<usize>,
    sign: f64,
    pub(super) singular: bool,
}

impl Lu {
    /// The factorization with partial pivoting as LAPACK's getrf pivots:
    /// the first element of largest magnitude below the diagonal.
    pub(super) fn of(a: &[f64], n: usize) -> Lu {
        let (mut lu, mut perm, mut sign, mut singular) = (a.to_vec(), (0..n).collect::<Vec<_>>(), 1.0, false);
        let mut swaps = Vec::with_capacity(n);
        for k in 0..n {
            let p = (k..n).fold(k, |best, i| if lu[i * n + k].abs() > lu[best * n + k].abs() { i } else { best });
            swaps.push(p);
            if lu[p * n + k] == 0.0 {
                singular = true;
                continue;
            }
            if p != k {
                for c in 0..n {
                    lu.swap(p * n + c, k * n + c);
                }
                perm.swap(p, k);
                sign = -sign;
            }
            let pivot = lu[k * n + k];
            for i in k + 1..n {
                let f = lu[i * n + k] / pivot;
                lu[i * n + k] = f;
                if f != 0.0 {
                    for c in k + 1..n {
                        lu[i * n + c] -= f * lu[k * n + c];
                    }
                }
            }
        }
        Lu { n, lu, perm, swaps, sign, singular }
    }

    fn det(&self) -> f64 {
        (0..self.n).fold(self.sign, |d, i| d * self.lu[i * self.n + i])
    }

    /// `(sign, log|det|)`: `(0, -inf)` for a singular matrix.
    fn slogdet(&self) -> (f64, f64) {
        if self.singular {
            return (0.0, f64::NEG_INFINITY);
        }
        let n = self.n;
        (0..n).fold((self.sign, 0.0), |(s, l), i| {
            let u = self.lu[i * n + i];
            (s * u.signum(), l + u.abs().ln())
        })
    }

    /// A⁻¹ (row-major), solving for each column of the identity.
    fn inverse(&self) -> Vec<f64> {
        let n = self.n;
        let mut inv = vec![0.0; n * n];
        let mut x = vec![0.0; n];
        for col in 0..n {
            for i in 0..n {
                let row = &self.lu[i * n..i * n + i];
                let start = if self.perm[i] == col { 1.0 } else { 0.0 };
                x[i] = start - row.iter().zip(&x[..i]).map(|(l, v)| l * v).sum::<f64>();
            }
            for i in (0..n).rev() {
                let row = &self.lu[i * n + i + 1..(i + 1) * n];
                let s = x[i] - row.iter().zip(&x[i + 1..]).map(|(u, v)| u * v).sum::<f64>();
                x[i] = s / self.lu[i * n + i];
            }
            for i in 0..n {
                inv[i * n + col] = x[i];
            }
        }
        inv
    }
}

/// The matrices of a contiguous `[.., n, n]` storage, each as `f`
/// makes it into `per` values.
fn per_matrix(storage: &CpuStorage, layout: &Layout, per: usize, f: impl Fn(&[f64], usize) -> Vec<f64>) -> candle_core::Result<Vec<f64>> {
    let dims = layout.shape().dims();
    let n = dims[dims.len() - 1];
    let v = values(storage, layout)?;
    let count = if n == 0 { dims[..dims.len() - 2].iter().product() } else { v.len() / (n * n) };
    let mut out = Vec::with_capacity(count * per);
    for m in 0..count {
        out.extend(f(&v[m * n * n..(m + 1) * n * n], n));
    }
    Ok(out)
}

/// What one matrix yields: its determinant, log|det|, inverse, or `d det/dA`.
#[derive(Clone, Copy)]
enum Of {
    Det,
    LogAbsDet,
    Inverse,
    DetGrad,
}

impl CustomOp1 for Of {
    fn name(&self) -> &'static str {
        match self {
            Of::Det => "det",
            Of::LogAbsDet => "logabsdet",
            Of::Inverse => "inverse",
            Of::DetGrad => "det_grad",
        }
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let dims = layout.shape().dims();
        let matrix = |a: &[f64], n: usize| -> Vec<f64> {
            match self {
                Of::Det => vec![Lu::of(a, n).det()],
                Of::LogAbsDet => vec![Lu::of(a, n).slogdet().1],
                Of::Inverse => Lu::of(a, n).inverse(),
                Of::DetGrad => {
                    let lu = Lu::of(a, n);
                    if lu.singular {
                        return vec![0.0; n * n];
                    }
                    let (det, inv) = (lu.det(), lu.inverse());
                    (0..n * n).map(|k| det * inv[(k % n) * n + k / n]).collect()
                }
            }
        };
        let (per, shape) = match self {
            Of::Det | Of::LogAbsDet => (1, Shape::from(&dims[..dims.len() - 2])),
            Of::Inverse | Of::DetGrad => (dims[dims.len() - 1].pow(2), layout.shape().clone()),
        };
        Ok((store(storage, per_matrix(storage, layout, per, matrix)?), shape))
    }

    fn bwd(&self, arg: &Tensor, res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let per_matrix = |g: &Tensor| g.unsqueeze(g.rank())?.unsqueeze(g.rank() + 1);
        Ok(Some(match self {
            Of::Det => arg.contiguous()?.apply_op1_no_bwd(&Of::DetGrad)?.broadcast_mul(&per_matrix(grad_res)?)?,
            Of::LogAbsDet => arg.contiguous()?.apply_op1_no_bwd(&Of::Inverse)?.t()?.broadcast_mul(&per_matrix(grad_res)?)?,
            Of::Inverse => {
                let rt = res.t()?.contiguous()?;
                rt.matmul(&grad_res.contiguous()?)?.matmul(&rt)?.neg()?
            }
            Of::DetGrad => return Err(candle_core::Error::Msg("det's second derivative is not replayed".into())),
        }))
    }
}

/// The float `[.., n, n]` operand named `name`, contiguous, and its dtype.
pub(super) fn square(ctx: &Ctx, b: &Bound, name: &str, what: &str) -> Result<(Tensor, TDType)> {
    let x = b.tensor(name)?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("{what}: expected a floating point tensor as input, got {}", x.dtype.name())));
    }
    let d = x.dims();
    if d.len() < 2 || d[d.len() - 1] != d[d.len() - 2] {
        return Err(Error::Arg(format!("{what}: a batch of square matrices expected, got shape {d:?}")));
    }
    Ok((operand(ctx, b.value(name), x.dtype)?.contiguous()?, x.dtype))
}

/// The matrices of `x` (values, row-major) that are singular, by index.
fn first_singular(x: &Tensor) -> Result<Option<usize>> {
    let n = x.dims()[x.rank() - 1];
    if n == 0 {
        return Ok(None);
    }
    let v = x.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    Ok(v.chunks(n * n).position(|m| Lu::of(m, n).singular))
}

/// A⁻¹, or the input error torch raises for a singular matrix.
pub(super) fn inverse_of(x: &Tensor, what: &str) -> Result<Tensor> {
    if let Some(i) = first_singular(x)? {
        return Err(Error::Arg(format!("{what}: matrix {i} of the batch is singular, so it has no inverse (torch raises here)")));
    }
    Ok(x.apply_op1(Of::Inverse)?)
}

/// `det(A)`.
fn det(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, dtype) = square(ctx, b, "input", "det")?;
    one(ctx.out(x.apply_op1(Of::Det)?, dtype)?)
}

/// `slogdet(A)`: the sign (no gradient) and log|det|.
fn slogdet(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, dtype) = square(ctx, b, "input", "slogdet")?;
    let sign = x.apply_op1_no_bwd(&Of::Det)?.sign()?;
    Ok(vec![Value::Tensor(ctx.out(sign, dtype)?), Value::Tensor(ctx.out(x.apply_op1(Of::LogAbsDet)?, dtype)?)])
}

/// `logdet(A)`: log det, NaN where the determinant is negative.
fn logdet(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, dtype) = square(ctx, b, "input", "logdet")?;
    let negative = x.apply_op1_no_bwd(&Of::Det)?.lt(0.0)?;
    let log = x.apply_op1(Of::LogAbsDet)?;
    let nan = Tensor::full(f64::NAN, log.dims(), x.device())?.to_dtype(log.dtype())?;
    one(ctx.out(negative.where_cond(&nan, &log)?, dtype)?)
}

/// `inverse(A)` (`linalg.inv`).
fn inverse(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, dtype) = square(ctx, b, "input", "inverse")?;
    one(ctx.out(inverse_of(&x, "inverse")?, dtype)?)
}

/// The int32 `info` of the `_ex` forms: zeros (a singular matrix is an input error before).
pub(super) fn info(ctx: &Ctx, x: &Tensor) -> Result<Value> {
    let batch = &x.dims()[..x.rank() - 2];
    Ok(Value::Tensor(ctx.out(Tensor::zeros(batch, DType::F64, x.device())?, TDType::I32)?))
}

/// `linalg.inv_ex(A)`: the inverse and `info`.
fn inv_ex(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, dtype) = square(ctx, b, "input", "inv_ex")?;
    Ok(vec![Value::Tensor(ctx.out(inverse_of(&x, "inv_ex")?, dtype)?), info(ctx, &x)?])
}

/// `matrix_power(A, n)`: repeated squaring; a negative power through A⁻¹,
/// the zeroth the identity (no gradient).
fn matrix_power(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, dtype) = square(ctx, b, "input", "matrix_power")?;
    let n = b.int("n")?;
    let size = x.dims()[x.rank() - 1];
    if n == 0 {
        let eye = Tensor::eye(size, x.dtype(), x.device())?.broadcast_as(x.dims())?.contiguous()?;
        return one(ctx.out(eye, dtype)?);
    }
    let mut base = if n < 0 { inverse_of(&x, "matrix_power")? } else { x };
    let (mut k, mut acc): (u64, Option<Tensor>) = (n.unsigned_abs(), None);
    loop {
        if k & 1 == 1 {
            acc = Some(match acc {
                None => base.clone(),
                Some(a) => a.matmul(&base)?,
            });
        }
        k >>= 1;
        if k == 0 {
            break;
        }
        base = base.matmul(&base)?;
    }
    one(ctx.out(acc.expect("a nonzero power"), dtype)?)
}

/// `linalg.solve_ex(A, B, *, left=True)`: `A⁻¹·B` (`B·A⁻¹` when not
/// `left`), `B` a vector or a batch of vectors where its shape is `A`'s
/// without the last dimension; and `info`.
fn solve_ex(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (a, dtype) = square(ctx, b, "A", "solve_ex")?;
    let rhs = b.tensor("B")?;
    let rhs_t = operand(ctx, b.value("B"), dtype)?.contiguous()?;
    let inv = inverse_of(&a, "solve_ex")?;
    let vector = rhs.rank() == 1 || (rhs.rank() == a.rank() - 1 && rhs.dims() == &a.dims()[..a.rank() - 1]);
    let left = b.bool("left")?;
    let x = match (vector, left) {
        (true, true) => inv.broadcast_matmul(&rhs_t.unsqueeze(rhs_t.rank())?)?.squeeze(rhs_t.rank())?,
        (true, false) => rhs_t.unsqueeze(rhs_t.rank() - 1)?.broadcast_matmul(&inv)?.squeeze(rhs_t.rank() - 1)?,
        (false, true) => inv.broadcast_matmul(&rhs_t)?,
        (false, false) => rhs_t.broadcast_matmul(&inv)?,
    };
    let out_dtype = if rhs.dtype.is_float() { TDType::promote(dtype, rhs.dtype) } else { dtype };
    Ok(vec![Value::Tensor(ctx.out(x, out_dtype)?), info(ctx, &a)?])
}

/// `linalg.tensorsolve(A, B, dims=None)`: X of shape `A.shape[B.ndim:]`
/// with `tensordot(A, X, X.ndim) = B`, A's `dims` moved last first.
fn tensorsolve(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("A")?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("tensorsolve: a floating point A expected, got {}", x.dtype.name())));
    }
    let mut a = operand(ctx, b.value("A"), x.dtype)?;
    if let Some(dims) = b.opt_ints("dims")? {
        let moved: Vec<usize> = dims.iter().map(|&d| crate::ctx::dim(d, a.rank())).collect::<Result<_>>()?;
        let order: Vec<usize> = (0..a.rank()).filter(|d| !moved.contains(d)).chain(moved.iter().copied()).collect();
        a = a.permute(order)?.contiguous()?;
    }
    let rhs = b.tensor("B")?;
    let k = rhs.rank();
    if k > a.rank() || a.dims()[..k] != *rhs.dims() {
        return Err(Error::Arg(format!("tensorsolve: A of shape {:?} does not lead with B's shape {:?}", a.dims(), rhs.dims())));
    }
    let out_shape = a.dims()[k..].to_vec();
    let (rows, cols) = (rhs.t.elem_count(), out_shape.iter().product::<usize>());
    if rows != cols {
        return Err(Error::Arg(format!("tensorsolve: A reshaped to {rows}x{cols} is not square")));
    }
    let dtype = TDType::promote(x.dtype, rhs.dtype);
    let square = a.reshape((rows, cols))?.contiguous()?;
    let rhs_t = operand(ctx, b.value("B"), dtype)?.reshape((rows, 1))?;
    let solution = inverse_of(&square, "tensorsolve")?.matmul(&rhs_t)?.reshape(out_shape)?;
    one(ctx.out(solution, dtype)?)
}

/// The entry of one of these functions.
const fn entry(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts: &[] }
}

/// The square-matrix entries.
pub static OPS: &[Op] = &[
    entry(&["Torch.det"], "input", det),
    entry(&["Torch.slogdet"], "input", slogdet),
    entry(&["Torch.logdet", "MS.Functional.logdet", "MS.Tensor.logdet"], "input", logdet),
    entry(&["Torch.inverse", "Torch.inv"], "input, *, out=None", inverse),
    entry(&["Torch.inv_ex"], "input, *, check_errors=False, out=None", inv_ex),
    entry(&["Torch.matrix_power"], "input, n, *, out=None", matrix_power),
    entry(&["Torch.tensorsolve"], "A, B, dims=None, *, out=None", tensorsolve),
    entry(&["Torch.solve_ex"], "A, B, *, left=True, check_errors=False, out=None", solve_ex),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lu_determinant_and_inverse_of_known_matrices() {
        let a = [2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0];
        let lu = Lu::of(&a, 3);
        assert!((lu.det() - 18.0).abs() < 1e-12);
        let inv = lu.inverse();
        for i in 0..3 {
            for j in 0..3 {
                let v: f64 = (0..3).map(|k| a[i * 3 + k] * inv[k * 3 + j]).sum();
                assert!((v - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12, "A·A⁻¹[{i}][{j}] = {v}");
            }
        }
        let s = [1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 0.0, 1.0];
        assert!(Lu::of(&s, 3).singular);
        assert_eq!(Lu::of(&s, 3).det(), 0.0);
    }
}
