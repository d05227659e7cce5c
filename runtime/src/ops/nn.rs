//! Neural-network functions, composed from candle primitives so that every
//! gradient is exact (candle's fused softmax/layer_norm have none, and its
//! gelu backward uses 6-digit constants); gelu is one pointwise pass with
//! its exact derivative, where the composite's intermediates cost more than
//! the op.

use candle_core::{Tensor, D};
use rand::{Rng, SeedableRng};

use super::layer_norm_kernel;
use super::math::Pointwise;
use super::{node_grads, one, CommonError, Fact, Op, PartMagnitudes, Parts, Rest, Rounding, Slicing, Standard, Whole};
use crate::bind::Bound;
use crate::ctx::{dim, precise, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// torch's implicit softmax dim for `dim=None`.
fn implicit_dim(rank: usize) -> usize {
    if matches!(rank, 0 | 1 | 3) {
        0
    } else {
        1
    }
}

/// Softmax along `d`, max-shifted (the shift is detached: it cancels
/// mathematically, and max's tie-splitting gradient would only add noise).
pub(crate) fn softmax_t(x: &Tensor, d: usize) -> candle_core::Result<Tensor> {
    if let Some(y) = super::fused::softmax_f64(x, d)? {
        return Ok(y);
    }
    let m = x.max_keepdim(d)?.detach();
    let e = x.broadcast_sub(&m)?.exp()?;
    e.broadcast_div(&e.sum_keepdim(d)?)
}

/// Log-softmax along `d`, max-shifted like [`softmax_t`].
pub(crate) fn log_softmax_t(x: &Tensor, d: usize) -> candle_core::Result<Tensor> {
    let m = x.max_keepdim(d)?.detach();
    let shifted = x.broadcast_sub(&m)?;
    shifted.broadcast_sub(&shifted.exp()?.sum_keepdim(d)?.log()?)
}

/// The input of softmax-like ops, cast first when `dtype=` is given.
fn softmax_input(ctx: &Ctx, b: &Bound) -> Result<(T, usize)> {
    let x = b.tensor("input")?;
    let x = match b.opt_dtype("dtype")? {
        Some(d) => ctx.cast(x, d)?,
        None => x.clone(),
    };
    if !x.dtype.is_float() {
        return Err(Error::Unsupported(format!("softmax of a {} tensor (torch needs a float dtype)", x.dtype.name())));
    }
    let d = match b.opt_int("dim")? {
        Some(d) => dim(d, x.rank())?,
        None => implicit_dim(x.rank()),
    };
    Ok((x, d))
}

fn softmax(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, d) = softmax_input(ctx, b)?;
    if x.rank() == 0 {
        return one(ctx.out(x.t.ones_like()?, x.dtype)?);
    }
    one(ctx.out(softmax_t(&x.t, d)?, x.dtype)?)
}

/// softmax's gradient `y⊙(dy - Σ dy⊙y)` cancels where a row attends to
/// one element (`y → 1`), and a device computes it from its own rounded
/// `y`: the same terms over absolute values, `|y|⊙(|dy| + Σ|dy⊙y|)` along
/// the dim. None forward (Composite's magnitudes hold the output).
fn softmax_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    let ctx = Ctx::bench(0);
    let (x, d) = softmax_input(&ctx, b)?;
    let Some(dy) = dy.filter(|dy| x.rank() > 0 && dy.t.elem_count() == x.t.elem_count()) else { return Ok((vec![], vec![])) };
    let f64 = candle_core::DType::F64;
    let y = softmax_t(&x.t.to_dtype(f64)?, d)?.abs()?;
    let g = dy.t.to_dtype(f64)?.reshape(y.dims())?.abs()?;
    let across = (&g * &y)?.sum_keepdim(d)?;
    let m = (&y * g.broadcast_add(&across)?)?;
    Ok((vec![], vec![("input", m.flatten_all()?.to_vec1::<f64>()?)]))
}

fn log_softmax(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, d) = softmax_input(ctx, b)?;
    if x.rank() == 0 {
        return one(ctx.out(x.t.zeros_like()?, x.dtype)?);
    }
    one(ctx.out(log_softmax_t(&x.t, d)?, x.dtype)?)
}

/// torch.matmul for every rank combination.
fn matmul_t(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(match (a.rank(), b.rank()) {
        (0, _) | (_, 0) => return Err(Error::Arg("matmul: both arguments need at least 1 dimension".into())),
        (1, 1) => (a * b)?.sum_all()?,
        (1, _) => a.unsqueeze(0)?.broadcast_matmul(b)?.squeeze(D::Minus2)?,
        (_, 1) => a.broadcast_matmul(&b.unsqueeze(1)?)?.squeeze(D::Minus1)?,
        _ => a.broadcast_matmul(b)?,
    })
}

/// The dtype of a matmul-like op. Mixed float dtypes reach a dump only
/// from autocast regions, which compute in the lower precision.
pub(super) fn float_pair(a: &T, b: &T, what: &str) -> Result<TDType> {
    match (a.dtype, b.dtype) {
        (x, y) if x == y => Ok(x),
        (x, y) if x.is_float() && y.is_float() => Ok(if x.bits() <= y.bits() { x } else { y }),
        (x, y) => Err(Error::Arg(format!("{what}: expected both inputs to have the same dtype, got {} and {}", x.name(), y.name()))),
    }
}

fn matmul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("input")?, b.tensor("other")?);
    let dtype = float_pair(x, y, "matmul")?;
    one(ctx.out(matmul_t(&x.t, &y.t)?, dtype)?)
}

/// matmul's [`super::Gradients`] for two matrices: candle's backward of
/// its matmul, `dy·otherᵀ` and `inputᵀ·dy` on the same operands, each
/// added to zero as autograd adds it into a zero tensor (-0 becomes +0),
/// without the graph's copies of the inputs and its zero tensors.
fn matmul_gradients(ctx: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let (x, y) = (b.tensor("input")?, b.tensor("other")?);
    let (Some(Some(dy)), dtype) = (dy.first(), float_pair(x, y, "matmul")?) else { return Ok(None) };
    let same = x.t.dtype() == y.t.dtype() && dy.t.dtype() == x.t.dtype();
    if x.rank() != 2 || y.rank() != 2 || !same || !ctx.keeps(&x.t, dtype) || dy.dims() != [x.dims()[0], y.dims()[1]] {
        return Ok(None);
    }
    let dx = (dy.t.matmul(&y.t.t()?)? + 0.0)?;
    let dother = (x.t.t()?.matmul(&dy.t)? + 0.0)?;
    Ok(Some(vec![("input", dx), ("other", dother)]))
}

fn linear(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, w) = (b.tensor("input")?, b.tensor("weight")?);
    let dtype = float_pair(x, w, "linear")?;
    let mut out = match super::linear_kernel::linear(&x.t, &w.t)? {
        Some(y) => y,
        None => matmul_t(&x.t, &w.t.t()?)?,
    };
    if let Some(bias) = b.opt_tensor("bias")? {
        let last = out.rank().saturating_sub(1);
        out = match super::bias_kernel::bias_add(&out, &bias.t, last)? {
            Some(sum) => sum,
            None => out.broadcast_add(&bias.t)?,
        };
    }
    one(ctx.out(out, dtype)?)
}

/// linear's [`super::Gradients`]: the linear kernel's `dy·W` and `dyᵀ·x`
/// and the bias kernel's sum, where the forward ran on those kernels and
/// kept its result as computed.
fn linear_gradients(ctx: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let (x, w) = (b.tensor("input")?, b.tensor("weight")?);
    let (Some(Some(dy)), dtype) = (dy.first(), float_pair(x, w, "linear")?) else { return Ok(None) };
    // The kernel's result has the input's dtype; `ctx.out` must have kept it.
    if !ctx.keeps(&x.t, dtype) {
        return Ok(None);
    }
    // A gradient passed as dumped (the forward skipped) has the output's shape `[.., N]`.
    let output = w.dims().first().map(|&n| [&x.dims()[..x.rank().saturating_sub(1)], &[n]].concat());
    if w.rank() != 2 || output.as_deref() != Some(dy.dims()) {
        return Ok(None);
    }
    let Some((dx, dw)) = super::linear_kernel::gradients(&x.t, &w.t, &dy.t, ctx.grad_transposed("weight"))? else { return Ok(None) };
    let mut grads = vec![("input", dx), ("weight", dw)];
    if let Some(bias) = b.opt_tensor("bias")? {
        let Some(db) = super::bias_kernel::gradient(&dy.t, &bias.t, dy.t.rank().saturating_sub(1))? else { return Ok(None) };
        grads.push(("bias", db));
    }
    Ok(Some(grads))
}

/// bilinear: `y[.., o] = x1ᵀ·W[o]·x2 + b[o]` for `W` of shape `[out, in1, in2]`,
/// over any leading dims of `input1` and `input2` (the same).
fn bilinear(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x1, x2, w) = (b.tensor("input1")?, b.tensor("input2")?, b.tensor("weight")?);
    let dtype = float_pair(x1, w, "bilinear")?;
    float_pair(x2, w, "bilinear")?;
    let (Ok((o, i1, i2)), Some(&n1), Some(&n2)) = (w.t.dims3(), x1.dims().last(), x2.dims().last()) else {
        return Err(Error::Arg(format!("bilinear: weight {:?} must be [out, in1, in2] and the inputs at least 1-D", w.dims())));
    };
    let lead = &x1.dims()[..x1.rank() - 1];
    if n1 != i1 || n2 != i2 || lead != &x2.dims()[..x2.rank() - 1] {
        return Err(Error::Arg(format!("bilinear: inputs {:?} and {:?} for a weight {:?}", x1.dims(), x2.dims(), w.dims())));
    }
    let rows: usize = lead.iter().product();
    // x1 · W as [rows, out·in2], then each output's in2 terms times x2.
    let wt = w.t.transpose(0, 1)?.reshape((i1, o * i2))?;
    let xw = x1.t.reshape((rows, i1))?.matmul(&wt)?.reshape((rows, o, i2))?;
    let mut out = xw.broadcast_mul(&x2.t.reshape((rows, 1, i2))?)?.sum(2)?;
    if let Some(bias) = b.opt_tensor("bias")? {
        out = out.broadcast_add(&bias.t)?;
    }
    one(ctx.out(out.reshape([lead, &[o]].concat())?, dtype)?)
}

/// 1/√(2π), the standard normal density's factor.
const INV_SQRT_2PI: f64 = 0.3989422804014327;

/// Exact gelu, `x·½(1 + erf(x/√2))`, in the order torch's CPU kernel evaluates it.
fn gelu_erf(x: f64) -> f64 {
    (x * 0.5) * (candle_core::cpu::erf::erf_f64(x * std::f64::consts::FRAC_1_SQRT_2) + 1.0)
}

/// Exact gelu's derivative, `½(1 + erf(x/√2)) + x·φ(x)`.
fn gelu_erf_slope(x: f64) -> f64 {
    0.5 * (candle_core::cpu::erf::erf_f64(x * std::f64::consts::FRAC_1_SQRT_2) + 1.0) + x * INV_SQRT_2PI * (-0.5 * x * x).exp()
}

/// gelu in float64 and its exact derivative, one pass each way (the exact
/// form a [`super::math::Pointwise`], the tanh form
/// [`super::gelu_kernel`]), rounded once to the input's dtype.
fn gelu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let approximate = if b.is_none("approximate") { "none" } else { b.str("approximate")? };
    let t = precise(&x.t)?.contiguous()?;
    let y = match approximate {
        "none" => t.apply_op1(Pointwise { f: gelu_erf, df: Some(gelu_erf_slope) })?,
        "tanh" => super::gelu_kernel::gelu_tanh(&t)?,
        other => return Err(Error::Arg(format!("gelu: approximate must be 'none' or 'tanh', got {other:?}"))),
    };
    one(ctx.out(y, x.dtype)?)
}

/// gelu's [`super::Gradients`] for the tanh form on the bench (float64
/// kept as it is): [`super::gelu_kernel::gradients`]; any other is autograd's.
fn gelu_gradients(ctx: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let x = b.tensor("input")?;
    let tanh = !b.is_none("approximate") && b.str("approximate")? == "tanh";
    let (Some(Some(dy)), true) = (dy.first(), tanh && ctx.keeps(&x.t, x.dtype)) else { return Ok(None) };
    Ok(super::gelu_kernel::gradients(&x.t, &dy.t)?.map(|dx| vec![("input", dx)]))
}

/// gelu's parts: `x·½(1 + erf(x/√2))` cancels inside for negative x, and so
/// does its derivative `½(1 + erf(x/√2)) + x·φ(x)` (`tanh` form alike):
/// `|x|·½(1 + |inner|)` forward, `|dy|·(½(1 + |inner|) + |x·inner'|/2)` backward.
fn gelu_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    let x = b.tensor("input")?.to_f64_vec()?;
    let tanh = !b.is_none("approximate") && b.str("approximate")? == "tanh";
    let c = (2.0 / std::f64::consts::PI).sqrt();
    // (|inner|, |x·d(inner)/dx|) at each x.
    let inner = |x: f64| {
        if tanh {
            let t = (c * (x + 0.044715 * x * x * x)).tanh();
            (t.abs(), (x * (1.0 - t * t) * c * (1.0 + 3.0 * 0.044715 * x * x)).abs())
        } else {
            let e = candle_core::cpu::erf::erf_f64(x * std::f64::consts::FRAC_1_SQRT_2);
            (e.abs(), (x * std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * (-x * x / 2.0).exp()).abs())
        }
    };
    let forward = vec![x.iter().map(|&x| x.abs() * 0.5 * (1.0 + inner(x).0)).collect()];
    let mut grads = vec![];
    if let Some(dy) = dy {
        let dy = dy.to_f64_vec()?;
        if dy.len() == x.len() {
            grads.push((
                "input",
                x.iter()
                    .zip(dy)
                    .map(|(&x, g)| {
                        let (i, d) = inner(x);
                        g.abs() * (0.5 * (1.0 + i) + 0.5 * d)
                    })
                    .collect(),
            ));
        }
    }
    Ok((forward, grads))
}

fn silu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    one(ctx.out(precise(&x.t)?.silu()?, x.dtype)?)
}

pub(super) fn layer_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let shape = b.ints("normalized_shape")?;
    let eps = b.float("eps")?;
    let k = shape.len();
    let dims = x.dims().to_vec();
    if k == 0 || k > dims.len() || dims[dims.len() - k..].iter().zip(&shape).any(|(&a, &b)| a as i64 != b) {
        return Err(Error::Arg(format!("layer_norm: normalized_shape {shape:?} does not match the input's trailing dims {dims:?}")));
    }
    let n: usize = dims[dims.len() - k..].iter().product();
    let (weight, bias) = (b.opt_tensor("weight")?, b.opt_tensor("bias")?);
    if let Some(y) = layer_norm_kernel::fused_layer_norm(&x.t, n, weight.map(|w| &w.t), bias.map(|b| &b.t), eps)? {
        return one(ctx.out(y, x.dtype)?);
    }
    let lead: Vec<usize> = dims[..dims.len() - k].to_vec();
    let flat = x.t.reshape([lead.clone(), vec![n]].concat())?;
    let mean = flat.mean_keepdim(D::Minus1)?;
    let centered = flat.broadcast_sub(&mean)?;
    let var = centered.sqr()?.mean_keepdim(D::Minus1)?;
    let mut y = centered.broadcast_div(&(var + eps)?.sqrt()?)?.reshape(dims.as_slice())?;
    if let Some(w) = weight {
        y = y.broadcast_mul(&w.t)?;
    }
    if let Some(bias) = bias {
        y = y.broadcast_add(&bias.t)?;
    }
    one(ctx.out(y, x.dtype)?)
}

/// layer_norm's [`super::Gradients`]: the float64 kernel's backward, where
/// the forward runs on it and this side keeps its result as computed.
fn layer_norm_gradients(ctx: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let x = b.tensor("input")?;
    let (Some(Some(dy)), true) = (dy.first(), ctx.keeps(&x.t, x.dtype)) else { return Ok(None) };
    let n: usize = b.ints("normalized_shape")?.iter().map(|&d| usize::try_from(d).unwrap_or(0)).product();
    let (weight, bias) = (b.opt_tensor("weight")?, b.opt_tensor("bias")?);
    let (w, bt) = (weight.map(|w| &w.t), bias.map(|b| &b.t));
    // A gradient passed as dumped (the forward skipped) takes the output's storage dtype, as a run's would.
    let dy = dy.t.to_dtype(x.t.dtype())?;
    let Some((dx, dw, db)) = layer_norm_kernel::fused_layer_norm_gradients(&x.t, n, w, bt, &dy, b.float("eps")?)? else { return Ok(None) };
    Ok(Some([("input", Some(dx)), ("weight", dw), ("bias", db)].into_iter().filter_map(|(name, g)| g.map(|g| (name, g))).collect()))
}

/// layer_norm's weight and bias gradients sum `dy·x̂` and `dy` over every
/// position, which cancels where the terms' signs differ; a device that
/// accumulates them in the dtype (torch's CPU bfloat16 kernel sums both
/// in bfloat16, position after position) rounds every partial sum, whose
/// magnitude can exceed the terms' (256 positions: errors of 10 `u·Σ|dy|`
/// seen): the terms' and the running partial sums' absolute values,
/// `Σ|dy·x̂| + Σ|s_i|` and `Σ|dy| + Σ|s_i|`; and
/// the input gradient `(g - mean(g) - x̂·mean(g·x̂))/σ` (`g = dy·w`), which
/// cancels, its terms over absolute values. None forward (Composite's
/// magnitudes hold the output).
fn layer_norm_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    let x = b.tensor("input")?;
    let n: usize = b.ints("normalized_shape")?.iter().map(|&d| usize::try_from(d).unwrap_or(0)).product();
    let Some(dy) = dy.filter(|dy| n > 0 && dy.t.elem_count() == x.t.elem_count() && x.t.elem_count() % n == 0) else { return Ok((vec![], vec![])) };
    let (xs, g, eps) = (x.to_f64_vec()?, dy.to_f64_vec()?, b.float("eps")?);
    let w = match b.opt_tensor("weight")? {
        Some(w) if w.t.elem_count() == n => w.to_f64_vec()?,
        _ => vec![1.0; n],
    };
    let (mut weight, mut bias, mut input) = (vec![0.0; n], vec![0.0; n], Vec::with_capacity(xs.len()));
    let (mut weight_sum, mut bias_sum) = (vec![0.0; n], vec![0.0; n]);
    for (row, dy) in xs.chunks_exact(n).zip(g.chunks_exact(n)) {
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let inv = 1.0 / (var + eps).sqrt();
        // dx = (g - mean(g) - x̂·mean(g·x̂))/σ with g = dy·w: its terms over absolute values.
        let (mut g_abs, mut gx_abs) = (0.0, 0.0);
        for (j, (&v, &d)) in row.iter().zip(dy).enumerate() {
            weight_sum[j] += d * (v - mean) * inv;
            bias_sum[j] += d;
            weight[j] += (d * (v - mean) * inv).abs() + weight_sum[j].abs();
            bias[j] += d.abs() + bias_sum[j].abs();
            g_abs += (d * w[j]).abs();
            gx_abs += (d * w[j] * (v - mean) * inv).abs();
        }
        let (g_mean, gx_mean) = (g_abs / n as f64, gx_abs / n as f64);
        input.extend(row.iter().zip(dy).zip(&w).map(|((&v, &d), &wj)| inv * ((d * wj).abs() + g_mean + ((v - mean) * inv).abs() * gx_mean)));
    }
    Ok((vec![], vec![("input", input), ("weight", weight), ("bias", bias)]))
}

/// embedding's weight gradient sums the rows of `dy` of each index, which
/// cancels; a device accumulating them in the dtype (torch's CPU bfloat16
/// kernel) rounds every partial sum: the same sums over absolute values,
/// `Σ|dy|` per weight row. None forward (a gather is exact).
fn embedding_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    let (index, weight) = (b.tensor("input")?, b.tensor("weight")?);
    let (rows, width) = match weight.dims() {
        &[rows, width] => (rows, width),
        _ => return Ok((vec![], vec![])),
    };
    let Some(dy) = dy.filter(|dy| dy.t.elem_count() == index.t.elem_count() * width) else { return Ok((vec![], vec![])) };
    let (index, g) = (index.to_f64_vec()?, dy.to_f64_vec()?);
    let mut sums = vec![0.0; rows * width];
    for (&i, dy) in index.iter().zip(g.chunks_exact(width.max(1))) {
        let row = if i < 0.0 { i + rows as f64 } else { i };
        if (0.0..rows as f64).contains(&row) {
            let start = row as usize * width;
            sums[start..start + width].iter_mut().zip(dy).for_each(|(s, d)| *s += d.abs());
        }
    }
    Ok((vec![], vec![("weight", sums)]))
}

/// Indices as a U32 tensor, checked against `size` (negative indices wrap).
pub(crate) fn indices(t: &T, size: usize, what: &str) -> Result<Tensor> {
    if t.dtype.is_float() {
        return Err(Error::Arg(format!("{what}: indices must be an integer tensor, got {}", t.dtype.name())));
    }
    let vals = t.to_f64_vec()?;
    let mut out = Vec::with_capacity(vals.len());
    for v in vals {
        let i = if v < 0.0 { v + size as f64 } else { v };
        if i < 0.0 || i >= size as f64 {
            return Err(Error::Arg(format!("{what}: index {v} is out of range for size {size}")));
        }
        out.push(i as u32);
    }
    Ok(Tensor::from_vec(out, t.dims(), t.t.device())?)
}

fn embedding(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    embedding_of(ctx, b, "input", false)
}

/// embedding with the indices under `ids`; `aten`: torch.embedding's
/// `padding_idx`, where a negative one means none (F.embedding wraps it).
fn embedding_of(ctx: &Ctx, b: &Bound, ids: &str, aten: bool) -> Result<Vec<Value>> {
    let (ids, w) = (b.tensor(ids)?, b.tensor("weight")?);
    if w.rank() != 2 {
        return Err(Error::Arg("embedding: weight must be 2-D".into()));
    }
    if !b.is_none("max_norm") {
        return Err(Error::Unsupported("embedding: max_norm renormalises the weight in place; not replayed".into()));
    }
    let rows = w.dims()[0];
    let idx = indices(ids, rows, "embedding")?;
    let picked = w.t.index_select(&idx.flatten_all()?, 0)?;
    let mut out = picked.reshape([ids.dims().to_vec(), vec![w.dims()[1]]].concat())?;
    if let Some(pad) = b.opt_int("padding_idx")?.filter(|&p| !(aten && p < 0)) {
        let pad = if pad < 0 { pad + rows as i64 } else { pad } as f64;
        let is_pad = ids.t.eq(pad)?.unsqueeze(D::Minus1)?.broadcast_as(out.dims())?;
        out = is_pad.where_cond(&out.detach(), &out)?;
    }
    if b.bool("scale_grad_by_freq")? {
        // torch divides each weight row's gradient by how often its index
        // occurs in `input` (this flag used to be ignored). Only the
        // gradient path is scaled: `out.detach() + (out - out.detach()) * s`
        // keeps the forward values (exactly, for finite weights).
        let flat: Vec<u32> = idx.flatten_all()?.to_vec1()?;
        let mut count = vec![0u32; rows];
        for &i in &flat {
            count[i as usize] += 1;
        }
        let scale: Vec<f64> = flat.iter().map(|&i| 1.0 / count[i as usize] as f64).collect();
        let scale = Tensor::from_vec(scale, ids.dims(), out.device())?.to_dtype(out.dtype())?;
        let scale = scale.unsqueeze(D::Minus1)?.broadcast_as(out.dims())?;
        let frozen = out.detach();
        out = (&frozen + ((&out - &frozen)? * scale)?)?;
    }
    one(ctx.out(out, w.dtype)?)
}

/// Dropout with a mask drawn from the run's seed: the same mask on both
/// sides, so the comparison judges the arithmetic, not the randomness.
fn dropout(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let p = b.float("p")?;
    let training = b.bool("training")?;
    if !training || p == 0.0 {
        return one(x.clone());
    }
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::Arg(format!("dropout: p must be in [0, 1], got {p}")));
    }
    if p == 1.0 {
        return one(ctx.out(x.t.zeros_like()?, x.dtype)?);
    }
    let n = x.t.elem_count();
    let keep: Vec<f64> = match &ctx.keep_mask {
        Some(mask) if mask.len() == n => mask.iter().map(|&k| k as u8 as f64).collect(),
        _ => {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(ctx.seed ^ u64::from_be_bytes(*b"\0dropout"));
            (0..n).map(|_| if rng.random::<f64>() >= p { 1.0 } else { 0.0 }).collect()
        }
    };
    let mask = Tensor::from_vec(keep, x.dims(), x.t.device())?.to_dtype(x.t.dtype())?;
    one(ctx.out(((&x.t * &mask)? / (1.0 - p))?, x.dtype)?)
}

/// torch.dropout / feature_dropout (`train` for `training`): as
/// [`dropout`].
fn torch_dropout(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    dropout(ctx, &b.renamed("train", "training"))
}

/// alpha_dropout and feature_alpha_dropout: the input itself outside
/// training or with `p = 0`; in training the dropped elements take a value
/// the dump does not record the draws of.
fn alpha_dropout(_: &Ctx, b: &Bound, training: &str) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if !b.bool(training)? || b.float("p")? == 0.0 {
        return one(x.clone());
    }
    Err(Error::Unsupported("alpha dropout in training draws random numbers, and the dump records neither the generator's state nor the draws".into()))
}

fn sdpa(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (q, v) = (b.tensor("query")?, b.tensor("value")?);
    if b.opt_tensor("attn_mask")?.is_none() {
        let (k, (scale, causal)) = (b.tensor("key")?, sdpa_scale(b)?);
        if let Some(out) = super::attention_kernel::fused_attention(&q.t, &k.t, &v.t, scale, causal)? {
            return one(ctx.out(out, q.dtype)?);
        }
    }
    let (weights, _) = sdpa_weights(ctx, b)?;
    one(ctx.out(weights.broadcast_matmul(&v.t)?, q.dtype)?)
}

/// scaled_dot_product_attention's parts: its output sums `P·V` and its
/// gradients sum `dS·K`, `dSᵀ·Q`, `Pᵀ·dO` with `dS = P⊙(dO·Vᵀ - rowsum(dO⊙O))`,
/// a difference that cancels exactly where a row attends to one key (the
/// first query under a causal mask): the same sums over absolute values
/// (`O` as `P·|V|`).
fn sdpa_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    let ctx = Ctx::bench(0);
    let (q, k, v) = (b.tensor("query")?, b.tensor("key")?, b.tensor("value")?);
    let (p, scale) = sdpa_weights(&ctx, b)?;
    let (qa, ka, va) = (q.t.abs()?, k.t.abs()?, v.t.abs()?);
    let flat = |t: &Tensor| -> Result<Vec<f64>> { Ok(t.flatten_all()?.to_dtype(candle_core::DType::F64)?.to_vec1::<f64>()?) };
    let pv = p.broadcast_matmul(&va)?;
    let forward = vec![flat(&pv)?];
    let Some(dy) = dy.filter(|dy| dy.t.elem_count() == pv.elem_count()) else { return Ok((forward, vec![])) };
    let last = p.rank() - 1;
    let doa = dy.t.reshape(pv.dims())?.abs()?;
    // rowsum(dO⊙O) over absolute values: O = P·V's own parts, P·|V|.
    let d = (&doa * &pv)?.sum_keepdim(last)?;
    let ds = (&p * doa.broadcast_matmul(&va.transpose(D::Minus2, D::Minus1)?)?.broadcast_add(&d)?)?;
    let dst = ds.transpose(D::Minus2, D::Minus1)?;
    let grads = vec![
        ("query", flat(&(ds.broadcast_matmul(&ka)? * scale)?)?),
        ("key", flat(&(dst.broadcast_matmul(&qa)? * scale)?)?),
        ("value", flat(&p.transpose(D::Minus2, D::Minus1)?.broadcast_matmul(&doa)?)?),
    ];
    Ok((forward, grads))
}

/// scaled_dot_product_attention's scale and `is_causal`, once the call is
/// one the runtime replays (no dropout, no grouped-query heads).
fn sdpa_scale(b: &Bound) -> Result<(f64, bool)> {
    let (q, k) = (b.tensor("query")?, b.tensor("key")?);
    if b.float("dropout_p")? != 0.0 {
        return Err(Error::Unsupported("scaled_dot_product_attention: dropout_p > 0 is random; not replayed".into()));
    }
    if b.bool("enable_gqa")? && q.dims()[q.rank().saturating_sub(3)] != k.dims()[k.rank().saturating_sub(3)] {
        return Err(Error::Unsupported("scaled_dot_product_attention: grouped-query attention is not replayed".into()));
    }
    let e = *q.dims().last().unwrap_or(&1) as f64;
    Ok((b.opt_float("scale")?.unwrap_or(1.0 / e.sqrt()), b.bool("is_causal")?))
}

/// The attention weights of scaled_dot_product_attention (softmax of the
/// scaled, masked logits) and the scale.
fn sdpa_weights(ctx: &Ctx, b: &Bound) -> Result<(Tensor, f64)> {
    let (q, k) = (b.tensor("query")?, b.tensor("key")?);
    let (scale, _) = sdpa_scale(b)?;
    let logits = q.t.broadcast_matmul(&k.t.transpose(D::Minus2, D::Minus1)?)?;
    let mask = b.opt_tensor("attn_mask")?;
    if mask.is_none() {
        if let Some(weights) = super::fused::attention_weights_f64(&logits, scale, b.bool("is_causal")?)? {
            return Ok((weights, scale));
        }
    }
    let mut attn = (logits * scale)?;
    let (l, s) = (attn.dims()[attn.rank() - 2], attn.dims()[attn.rank() - 1]);
    let neg_inf = ctx.full(attn.dims(), f64::NEG_INFINITY, q.dtype)?;
    if b.bool("is_causal")? {
        let allowed: Vec<u8> = (0..l).flat_map(|i| (0..s).map(move |j| (j <= i) as u8)).collect();
        let allowed = Tensor::from_vec(allowed, (l, s), attn.device())?.broadcast_as(attn.dims())?;
        attn = allowed.where_cond(&attn, &neg_inf)?;
    }
    if let Some(mask) = mask {
        attn = if mask.dtype == TDType::Bool { mask.t.ne(0.0)?.broadcast_as(attn.dims())?.where_cond(&attn, &neg_inf)? } else { attn.broadcast_add(&mask.t)? };
    }
    Ok((softmax_t(&attn, attn.rank() - 1)?, scale))
}

/// A dropout entry: random in training, no rounding class of its own.
const fn dropped(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: true, facts: &[] }
}

/// The neural-network entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.matmul", "Tensor.matmul", "Tensor.__matmul__", "Mint.matmul", "MS.Functional.matmul"],
        sig: "input, other",
        forward: matmul,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Product { a: "input", b: "other" }),
            Fact::Rounding(Rounding::Sums),
            Fact::Autocast,
            Fact::NodeGradients(node_grads::matmul),
            Fact::Gradients(matmul_gradients),
        ],
    },
    // mindspore.ops.dense is linear (`input @ weight.T + bias`).
    Op {
        names: &["Functional.linear", "MintFunctional.linear", "MS.Functional.dense"],
        sig: "input, weight, bias=None",
        forward: linear,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Linear),
            Fact::Rounding(Rounding::Sums),
            Fact::Autocast,
            Fact::NodeGradients(node_grads::linear),
            Fact::Gradients(linear_gradients),
        ],
    },
    Op {
        names: &["Functional.softmax", "MintFunctional.softmax"],
        sig: "input, dim=None, _stacklevel=3, dtype=None",
        forward: softmax,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", None))),
            Fact::Rounding(Rounding::Parts(Parts { name: "softmax", rest: Rest::Composite, magnitude: softmax_parts })),
        ],
    },
    Op {
        names: &["Torch.softmax", "Tensor.softmax", "Mint.softmax"],
        sig: "input, dim, dtype=None",
        forward: softmax,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", None)))],
    },
    Op {
        names: &["MS.Functional.log_softmax"],
        sig: "input, dim=-1",
        forward: log_softmax,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", Some(-1)))),
            Fact::CommonError(CommonError {
                float32_epsilons: 12.0,
                source: "MindSpore 2.10's CPU log_softmax gradient, measured 9.9 epsilons (standard error 0.29) on ../shared/fixtures/mindspore/dump_tensor_L1",
            }),
        ],
    },
    Op {
        names: &["Functional.log_softmax", "MintFunctional.log_softmax"],
        sig: "input, dim=None, _stacklevel=3, dtype=None",
        forward: log_softmax,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", None)))],
    },
    Op {
        names: &["Torch.log_softmax", "Tensor.log_softmax", "Mint.log_softmax"],
        sig: "input, dim, dtype=None",
        forward: log_softmax,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", None)))],
    },
    Op {
        names: &["Functional.gelu", "MintFunctional.gelu", "Torch.gelu", "NPU.npu_gelu"],
        sig: "input, approximate='none'",
        forward: gelu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Parts(Parts { name: "gelu", rest: Rest::Smooth, magnitude: gelu_parts })), Fact::Gradients(gelu_gradients)],
    },
    Op {
        names: &["Functional.silu", "MintFunctional.silu", "Torch.silu", "NPU.npu_silu"],
        sig: "input, inplace=False",
        forward: silu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.layer_norm", "MintFunctional.layer_norm", "Torch.layer_norm"],
        sig: "input, normalized_shape, weight=None, bias=None, eps=1e-05",
        forward: layer_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Aligned(Whole::Normalized("normalized_shape"))),
            Fact::Rounding(Rounding::Parts(Parts { name: "layer_norm", rest: Rest::Composite, magnitude: layer_norm_parts })),
            Fact::Gradients(layer_norm_gradients),
        ],
    },
    Op {
        names: &["Torch.embedding"],
        sig: "weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False",
        forward: |c, b| embedding_of(c, b, "indices", true),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.embedding", "MintFunctional.embedding"],
        sig: "input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False",
        forward: embedding,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Leading("input")),
            Fact::Rounding(Rounding::Parts(Parts { name: "embedding", rest: Rest::Composite, magnitude: embedding_parts })),
        ],
    },
    Op {
        names: &["Functional.bilinear", "Torch.bilinear"],
        sig: "input1, input2, weight, bias=None",
        forward: bilinear,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    dropped(
        &["Functional.dropout", "MintFunctional.dropout", "Functional.dropout1d", "Functional.dropout2d", "Functional.dropout3d"],
        "input, p=0.5, training=True, inplace=False, seed=None",
        dropout,
    ),
    dropped(&["Torch.dropout", "Torch.feature_dropout"], "input, p, train", torch_dropout),
    dropped(&["Functional.alpha_dropout", "Functional.feature_alpha_dropout"], "input, p=0.5, training=False, inplace=False", |c, b| {
        alpha_dropout(c, b, "training")
    }),
    dropped(&["Torch.alpha_dropout", "Torch.feature_alpha_dropout"], "input, p, train", |c, b| alpha_dropout(c, b, "train")),
    Op {
        names: &["Functional.scaled_dot_product_attention"],
        sig: "query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False",
        forward: sdpa,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[
            Fact::Slicing(Slicing::Attention),
            Fact::Rounding(Rounding::Parts(Parts { name: "sdpa", rest: Rest::Composite, magnitude: sdpa_parts })),
            Fact::Autocast,
            Fact::NodeGradients(node_grads::attention),
        ],
    },
];
