//! Losses, with torch's reductions (and its legacy `size_average`/`reduce`),
//! and MindSpore's own signatures and defaults where `mindspore.ops` or
//! `mint.nn.functional` spell them differently (`MS.Functional.*`,
//! `MintFunctional.*`). Gradients are autograd's through formulas whose
//! slopes are torch's at the edges (`|x|'(0) = 0`); binary_cross_entropy's
//! input gradient is torch's formula itself (see [`binary_cross_entropy`]).
//! Arguments torch does not differentiate (class weights, `pos_weight`,
//! binary cross-entropy weights) are detached, so a MindSpore dump, which
//! differentiates every float tensor, gets zeros for them (it records `None`).

use candle_core::Tensor;

use super::activation::{abs_t, relu_t, softplus_t};
use super::distance::{finite_p, p_distance};
use super::nn::log_softmax_t;
use super::{inner_grad, node_grads, one, Fact, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, operand, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// How a loss reduces its per-element values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reduction {
    None,
    Sum,
    Mean,
    /// kl_div's sum divided by the batch size.
    BatchMean,
}

/// The `reduction` argument (a name, or torch's enum 0, 1, 2 at aten
/// level), or torch's legacy `size_average`/`reduce`
/// when either is given (MindSpore's signatures have neither: unbound
/// names read as `None`).
fn reduction(b: &Bound, what: &str) -> Result<Reduction> {
    let legacy = |name: &str| if b.is_none(name) { Ok(true) } else { b.bool(name) };
    let r = if b.is_none("size_average") && b.is_none("reduce") {
        match b.value("reduction") {
            // torch's aten-level losses (`torch.kl_div`, ...) take the enum.
            Value::Int(0) => "none",
            Value::Int(1) => "mean",
            Value::Int(2) => "sum",
            _ => b.str("reduction")?,
        }
    } else if !legacy("reduce")? {
        "none"
    } else if legacy("size_average")? {
        "mean"
    } else {
        "sum"
    };
    match r {
        "none" => Ok(Reduction::None),
        "sum" => Ok(Reduction::Sum),
        "mean" => Ok(Reduction::Mean),
        "batchmean" if what == "kl_div" => Ok(Reduction::BatchMean),
        other => Err(Error::Arg(format!("{what}: {other:?} is not a valid reduction"))),
    }
}

/// Per-element losses reduced: kept, summed, or averaged over every element.
fn reduce(loss: Tensor, r: Reduction) -> Result<Tensor> {
    Ok(match r {
        Reduction::None => loss,
        Reduction::Sum => loss.sum_all()?,
        Reduction::Mean | Reduction::BatchMean => (loss.sum_all()? / loss.elem_count() as f64)?,
    })
}

/// The input and target of an elementwise loss in their common dtype,
/// broadcast to one shape (torch warns and broadcasts), with that dtype.
fn pair(ctx: &Ctx, b: &Bound, input: &str, target: &str) -> Result<(Tensor, Tensor, TDType)> {
    let (x, t) = (b.value(input), b.value(target));
    let dtype = result_type(&[x, t])?;
    if !dtype.is_float() {
        return Err(Error::Arg(format!("loss of {} tensors (torch needs a floating input)", dtype.name())));
    }
    let (x, t) = broadcast2(&operand(ctx, x, dtype)?, &operand(ctx, t, dtype)?)?;
    Ok((x, t, dtype))
}

/// The input and target of a binary cross-entropy: same shape, as torch requires.
fn same_shape(ctx: &Ctx, b: &Bound, input: &str, target: &str, what: &str) -> Result<(Tensor, Tensor, TDType)> {
    let (x, t) = (b.tensor(input)?, b.tensor(target)?);
    if x.dims() != t.dims() {
        return Err(Error::Arg(format!("{what}: target of shape {:?} for an input of shape {:?} (they must be the same)", t.dims(), x.dims())));
    }
    pair(ctx, b, input, target)
}

/// A weight of an elementwise loss, broadcast to the loss's shape, detached
/// unless `differentiated`.
fn weight_of(ctx: &Ctx, b: &Bound, name: &str, shape: &[usize], dtype: TDType, differentiated: bool) -> Result<Option<Tensor>> {
    let Some(w) = b.opt_tensor(name)? else { return Ok(None) };
    let w = operand(ctx, &Value::Tensor(w.clone()), dtype)?.broadcast_as(shape)?;
    Ok(Some(if differentiated { w } else { w.detach() }))
}

/// l1_loss and mse_loss: `|x - t|` or `(x - t)^2`, times torch's optional
/// elementwise `weight` (differentiated; the mean is then `Σ w·e / Σ w`).
fn distance_loss(ctx: &Ctx, b: &Bound, squared: bool) -> Result<Vec<Value>> {
    let what = if squared { "mse_loss" } else { "l1_loss" };
    let r = reduction(b, what)?;
    let (x, t, dtype) = pair(ctx, b, "input", "target")?;
    let d = (x - t)?;
    let e = if squared { d.sqr()? } else { abs_t(&d)? };
    let out = match weight_of(ctx, b, "weight", e.dims(), dtype, true)? {
        None => reduce(e, r)?,
        Some(w) => {
            if b.tensor("weight")?.dims() != b.tensor("input")?.dims() {
                return Err(Error::Arg(format!("{what}: weights and input must have the same size")));
            }
            let we = (e * &w)?;
            match r {
                Reduction::Mean => we.sum_all()?.broadcast_div(&w.sum_all()?)?,
                r => reduce(we, r)?,
            }
        }
    };
    one(ctx.out(out, dtype)?)
}

/// mse_loss's [`super::Gradients`] without a weight, for an input and target
/// of one shape and dtype this side keeps: what candle's autograd of
/// [`distance_loss`] gives, bit for bit, without its graph (the difference
/// and its square as full tensors, a zero tensor for every gradient).
fn mse_gradients(ctx: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let (Some(Some(dy)), true) = (dy.first(), b.is_none("weight")) else { return Ok(None) };
    let (x, t) = (b.tensor("input")?, b.tensor("target")?);
    let r = reduction(b, "mse_loss")?;
    let fits = x.dtype == t.dtype && x.dims() == t.dims() && x.t.dtype() == t.t.dtype() && ctx.keeps(&x.t, x.dtype) && ctx.keeps(&t.t, t.dtype);
    let dy_fits = if r == Reduction::None { dy.dims() == x.dims() } else { dy.t.elem_count() == 1 };
    if !fits || !dy_fits || !crate::device::is_host(&x.t) {
        return Ok(None);
    }
    let (xc, tc, g) = (x.t.contiguous()?, t.t.contiguous()?, dy.t.to_dtype(x.t.dtype())?.contiguous()?);
    let grads = match x.t.dtype() {
        candle_core::DType::F64 => crate::device::with_host_values("mse_loss", [&xc, &tc, &g], |[x, t, g]| mse_backward::<f64>(x, t, g, r)),
        candle_core::DType::F32 => crate::device::with_host_values("mse_loss", [&xc, &tc, &g], |[x, t, g]| mse_backward::<f32>(x, t, g, r)),
        _ => return Ok(None),
    }?;
    let (dx, dt) = grads;
    Ok(Some(vec![("input", dx.reshape(x.dims())?), ("target", dt.reshape(x.dims())?)]))
}

/// The input's and target's gradients of `reduce((x − t)²)` under `g`, in
/// `V`'s arithmetic, as autograd computes them: the reduction's gradient
/// (`g·(1/n) + 0` for the mean), the square's `(d·G)·2 + 0`, the
/// difference's `G` and `0 − G`, each summed into zeros (`0 + v`).
fn mse_backward<V: candle_core::WithDType>(x: &[V], t: &[V], g: &[V], r: Reduction) -> candle_core::Result<(Tensor, Tensor)> {
    let (zero, two) = (V::from_f64(0.0), V::from_f64(2.0));
    let z = |v: V| zero + v;
    let scalar = match r {
        Reduction::None => None,
        Reduction::Mean | Reduction::BatchMean => Some(z(z(g[0]) * V::from_f64(1.0 / x.len() as f64) + zero)),
        Reduction::Sum => Some(z(g[0])),
    };
    let (mut dx, mut dt) = (Vec::with_capacity(x.len()), Vec::with_capacity(x.len()));
    for (i, (&x, &t)) in x.iter().zip(t).enumerate() {
        let ge = z(scalar.unwrap_or_else(|| z(g[i])));
        let gd = z((x - t) * ge * two + zero);
        dx.push(z(gd));
        dt.push(z(zero - gd));
    }
    let (dev, n) = (crate::device::host(), dx.len());
    Ok((Tensor::from_vec(dx, n, &dev)?, Tensor::from_vec(dt, n, &dev)?))
}

/// soft_margin_loss: `log(1 + exp(-y·x))`, as `max(z, 0) + log(1 + exp(-|z|))` for `z = -y·x`.
fn soft_margin_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "soft_margin_loss")?;
    let (x, y, dtype) = pair(ctx, b, "input", "target")?;
    let z = (x * y)?.neg()?;
    let e = (relu_t(&z)? + (abs_t(&z)?.neg()?.exp()? + 1.0)?.log()?)?;
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// margin_ranking_loss: `max(0, -y·(x1 - x2) + margin)`.
fn margin_ranking_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "margin_ranking_loss")?;
    let dtype = result_type(&[b.value("input1"), b.value("input2"), b.value("target")])?;
    if !dtype.is_float() {
        return Err(Error::Arg(format!("margin_ranking_loss of {} tensors (torch needs a floating input)", dtype.name())));
    }
    let (x1, x2) = broadcast2(&operand(ctx, b.value("input1"), dtype)?, &operand(ctx, b.value("input2"), dtype)?)?;
    let (d, y) = broadcast2(&(x1 - x2)?, &operand(ctx, b.value("target"), dtype)?)?;
    let e = relu_t(&((d * y)?.neg()? + b.float("margin")?)?)?;
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// hinge_embedding_loss: `x` where `y = 1`, `max(0, margin - x)` where `y = -1`
/// (torch's: the first term where `y != -1`, the second where `y != 1`).
fn hinge_embedding_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "hinge_embedding_loss")?;
    let (x, y, dtype) = pair(ctx, b, "input", "target")?;
    let zero = x.zeros_like()?;
    let clamp = relu_t(&(x.neg()? + b.float("margin")?)?)?;
    let margin_part = y.ne(1.0)?.where_cond(&clamp, &zero)?;
    let self_part = y.ne(-1.0)?.where_cond(&x, &zero)?;
    one(ctx.out(reduce((margin_part + self_part)?, r)?, dtype)?)
}

/// huber_loss: `0.5 d²` where `|d| < delta`, else `delta·(|d| - 0.5 delta)`,
/// times torch's optional elementwise `weight` (a plain mean after it).
fn huber_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "huber_loss")?;
    let delta = b.float("delta")?;
    if delta <= 0.0 {
        return Err(Error::Arg(format!("huber_loss: delta must be positive, got {delta}")));
    }
    let (x, t, dtype) = pair(ctx, b, "input", "target")?;
    let d = (x - t)?;
    let a = abs_t(&d)?;
    let e = a.detach().lt(delta)?.where_cond(&(d.sqr()? * 0.5)?, &((&a - 0.5 * delta)? * delta)?)?;
    let e = match weight_of(ctx, b, "weight", e.dims(), dtype, true)? {
        Some(w) if b.tensor("weight")?.dims() != b.tensor("input")?.dims() => {
            return Err(Error::Arg(format!("huber_loss: weights and input must have the same size, got {:?}", w.dims())));
        }
        Some(w) => (e * w)?,
        None => e,
    };
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// poisson_nll_loss: `exp(x) - t·x` for a log input, else `x - t·log(x + eps)`;
/// `full` adds Stirling's `t·log t - t + ½·log(2πt)` where `t > 1`.
fn poisson_nll_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "poisson_nll_loss")?;
    let (x, t, dtype) = pair(ctx, b, "input", "target")?;
    let mut e = if b.bool("log_input")? { (x.exp()? - (&t * &x)?)? } else { (&x - (&t * (&x + b.float("eps")?)?.log()?)?)? };
    if b.bool("full")? {
        // On `t` itself, as torch: masked where `t <= 1`, whose gradient is
        // then 0·log(0) = NaN at `t = 0`, as a device's.
        let stirling = (((&t * t.log()?)? - &t)? + ((&t * (2.0 * std::f64::consts::PI))?.log()? * 0.5)?)?;
        e = (e + t.detach().gt(1.0)?.where_cond(&stirling, &t.zeros_like()?)?)?;
    }
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// The last dimension's index of a loss over vectors (`[N, D]` or `[D]`).
fn vector_dim(t: &Tensor, what: &str) -> Result<usize> {
    match t.rank() {
        1 | 2 => Ok(t.rank() - 1),
        _ => Err(Error::Arg(format!("{what}: expected 1-D or 2-D inputs, got {:?}", t.dims()))),
    }
}

/// cosine_embedding_loss: `1 - cos` where `y = 1`, `max(0, cos - margin)`
/// where `y = -1`, with torch's `cos = Σx1·x2 / √((Σx1² + ε)(Σx2² + ε))`, ε = 1e-12.
fn cosine_embedding_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "cosine_embedding_loss")?;
    let dtype = result_type(&[b.value("input1"), b.value("input2")])?;
    if !dtype.is_float() {
        return Err(Error::Arg(format!("cosine_embedding_loss of {} tensors (torch needs a floating input)", dtype.name())));
    }
    let (x1, x2) = (operand(ctx, b.value("input1"), dtype)?, operand(ctx, b.value("input2"), dtype)?);
    if x1.dims() != x2.dims() {
        return Err(Error::Arg(format!("cosine_embedding_loss: inputs of shapes {:?} and {:?} (they must be the same)", x1.dims(), x2.dims())));
    }
    let d = vector_dim(&x1, "cosine_embedding_loss")?;
    let prod = (&x1 * &x2)?.sum(d)?;
    let m1 = (x1.sqr()?.sum(d)? + 1e-12)?;
    let m2 = (x2.sqr()?.sum(d)? + 1e-12)?;
    let cos = (prod / (m1 * m2)?.sqrt()?)?;
    let y = operand(ctx, b.value("target"), dtype)?.detach();
    let zero = cos.zeros_like()?;
    let pos = y.eq(1.0)?.where_cond(&(cos.neg()? + 1.0)?, &zero)?;
    let neg = y.eq(-1.0)?.where_cond(&relu_t(&(&cos - b.float("margin")?)?)?, &zero)?;
    one(ctx.out(reduce((pos + neg)?, r)?, dtype)?)
}

/// triplet_margin_loss: `max(0, margin + d(a, p) - d(a, n))` with
/// pairwise_distance's `d`; `swap` takes `min(d(a, n), d(p, n))`.
fn triplet_margin_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (norm, eps) = (finite_p(b, "triplet_margin_loss")?, b.float("eps")?);
    triplet(ctx, b, "triplet_margin_loss", norm, eps)
}

/// triplet_margin_with_distance_loss: [`triplet_margin_loss`] with its
/// default distance, pairwise_distance (p = 2, eps = 1e-6); a
/// `distance_function` is a Python function the dump does not record.
fn triplet_margin_with_distance_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.is_none("distance_function") {
        return Err(Error::Unsupported("triplet_margin_with_distance_loss with a distance_function: a Python function, which the dump does not record".into()));
    }
    triplet(ctx, b, "triplet_margin_with_distance_loss", 2.0, 1e-6)
}

/// The triplet losses' `max(0, margin + d(a, p) - d(a, n))`, `d` the
/// `norm`-distance with `eps`, and with `swap` the smaller of `d(a, n)`
/// and `d(p, n)`.
fn triplet(ctx: &Ctx, b: &Bound, api: &str, norm: f64, eps: f64) -> Result<Vec<Value>> {
    let r = reduction(b, api)?;
    let margin = b.float("margin")?;
    if margin <= 0.0 {
        return Err(Error::Arg(format!("{api}: margin must be greater than 0, got {margin}")));
    }
    let dtype = result_type(&[b.value("anchor"), b.value("positive"), b.value("negative")])?;
    if !dtype.is_float() {
        return Err(Error::Arg(format!("{api} of {} tensors (torch needs a floating input)", dtype.name())));
    }
    let [a, p, n] = ["anchor", "positive", "negative"].map(|k| operand(ctx, b.value(k), dtype));
    let (a, p, n) = (a?, p?, n?);
    if a.dims() != p.dims() || a.dims() != n.dims() {
        return Err(Error::Arg(format!("{api}: shapes {:?}, {:?}, {:?} (they must be the same)", a.dims(), p.dims(), n.dims())));
    }
    vector_dim(&a, api)?;
    let pos = p_distance(&a, &p, norm, eps, false)?;
    let mut neg = p_distance(&a, &n, norm, eps, false)?;
    if b.bool("swap")? {
        let swapped = p_distance(&p, &n, norm, eps, false)?;
        neg = swapped.lt(&neg)?.where_cond(&swapped, &neg)?;
    }
    one(ctx.out(reduce(relu_t(&((pos - neg)? + margin)?)?, r)?, dtype)?)
}

/// multilabel_soft_margin_loss: `-(y·logσ(x) + (1 - y)·logσ(-x))`, times
/// the optional class `weight`, averaged over the classes (the last dimension).
fn multilabel_soft_margin_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "multilabel_soft_margin_loss")?;
    let (x, y, dtype) = pair(ctx, b, "input", "target")?;
    let log_sigmoid = |z: &Tensor| -> candle_core::Result<Tensor> { softplus_t(&z.neg()?, 1.0, 20.0)?.neg() };
    let e = ((&y * log_sigmoid(&x)?)? + ((y.neg()? + 1.0)? * log_sigmoid(&x.neg()?)?)?)?.neg()?;
    let e = match b.opt_tensor("weight")? {
        Some(w) => e.broadcast_mul(&operand(ctx, &Value::Tensor(w.clone()), dtype)?)?,
        None => e,
    };
    let last = e.rank().checked_sub(1).ok_or_else(|| Error::Arg("multilabel_soft_margin_loss of a 0-D input".into()))?;
    let classes = e.dims()[last] as f64;
    one(ctx.out(reduce((e.sum(last)? / classes)?, r)?, dtype)?)
}

/// gaussian_nll_loss: `½(log v + (x - t)²/v)` (`+ ½ log 2π` when `full`),
/// the variance clamped at `eps` as torch does, without recording it (its
/// gradient passes unclamped); `var` of the input's shape, or with its last
/// dim dropped or 1, or a number.
fn gaussian_nll_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "gaussian_nll_loss")?;
    let (x, t, dtype) = pair(ctx, b, "input", "target")?;
    let v = operand(ctx, b.value("var"), dtype)?;
    let v = if v.rank() == 0 || v.dims() == x.dims() {
        v
    } else if v.dims() == &x.dims()[..x.rank() - 1] {
        v.unsqueeze(v.rank())?
    } else if v.dims()[..v.rank() - 1] == x.dims()[..x.rank() - 1] && v.dims()[v.rank() - 1] == 1 {
        v
    } else {
        return Err(Error::Arg(format!("gaussian_nll_loss: var of shape {:?} for an input of shape {:?}", v.dims(), x.dims())));
    };
    if v.detach().lt(0.0)?.to_dtype(candle_core::DType::F64)?.sum_all()?.to_scalar::<f64>()? > 0.0 {
        return Err(Error::Arg("gaussian_nll_loss: var has negative entry/entries".into()));
    }
    let eps = b.float("eps")?;
    let clamped = v.detach().lt(eps)?.where_cond(&v.ones_like()?.affine(eps, 0.0)?, &v.detach())?;
    let v = (&v + (clamped - v.detach())?)?;
    let mut e = ((v.log()?.broadcast_add(&(x - t)?.sqr()?.broadcast_div(&v)?))? * 0.5)?;
    if b.bool("full")? {
        e = (e + 0.5 * (2.0 * std::f64::consts::PI).ln())?;
    }
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// `[N, C]` scores (or `[C]`) and their class targets as `[N]` positions.
fn scores_and_classes(b: &Bound, what: &str) -> Result<(Tensor, Vec<u32>, TDType, bool)> {
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("{what} of {} tensors (torch needs a floating input)", x.dtype.name())));
    }
    let single = x.rank() <= 1;
    let scores = if single { x.t.reshape((1, x.t.elem_count()))? } else { x.t.clone() };
    let (_, c) = scores.dims2().map_err(|_| Error::Arg(format!("{what}: expected a 1-D or 2-D input, got {:?}", x.dims())))?;
    let classes = super::nn::indices(b.tensor("target")?, c, what)?.flatten_all()?.to_vec1::<u32>()?;
    Ok((scores, classes, x.dtype, single))
}

/// multi_margin_loss: `Σ_{j≠y} max(0, margin - x_y + x_j)^p / C`, each term
/// times `weight[y]` if given; p 1 or 2.
fn multi_margin_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "multi_margin_loss")?;
    let p = b.int("p")?;
    if p != 1 && p != 2 {
        return Err(Error::Arg(format!("multi_margin_loss: only p == 1 and p == 2 supported, got {p}")));
    }
    let (x, classes, dtype, single) = scores_and_classes(b, "multi_margin_loss")?;
    let (n, c) = x.dims2()?;
    if classes.len() != n {
        return Err(Error::Arg(format!("multi_margin_loss: {} targets for {n} rows", classes.len())));
    }
    let idx = Tensor::from_vec(classes.clone(), (n, 1), x.device())?;
    let xy = x.gather(&idx, 1)?;
    let h = relu_t(&(x.broadcast_sub(&xy)? + b.float("margin")?)?)?;
    let h = if p == 2 { h.sqr()? } else { h };
    let others: Vec<u8> = classes.iter().flat_map(|&y| (0..c as u32).map(move |j| u8::from(j != y))).collect();
    let mut h = Tensor::from_vec(others, (n, c), x.device())?.where_cond(&h, &h.zeros_like()?)?;
    if let Some(w) = b.opt_tensor("weight")? {
        let wy = operand(ctx, &Value::Tensor(w.clone()), dtype)?.index_select(&idx.flatten_all()?, 0)?.reshape((n, 1))?;
        h = h.broadcast_mul(&wy.detach())?;
    }
    let per = (h.sum(1)? / c as f64)?;
    let per = if single { per.reshape(())? } else { per };
    one(ctx.out(reduce(per, r)?, dtype)?)
}

/// multilabel_margin_loss: `Σ_{j ∈ y} Σ_{k ∉ y} max(0, 1 - (x_j - x_k)) / C`,
/// `y` each row's class indices up to the first -1.
fn multilabel_margin_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "multilabel_margin_loss")?;
    let x = b.tensor("input")?;
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("multilabel_margin_loss of {} tensors (torch needs a floating input)", x.dtype.name())));
    }
    let single = x.rank() <= 1;
    let scores = if single { x.t.reshape((1, x.t.elem_count()))? } else { x.t.clone() };
    let (n, c) = scores.dims2()?;
    let target = b.tensor("target")?.to_f64_vec()?;
    if target.len() != n * c {
        return Err(Error::Arg(format!("multilabel_margin_loss: target of {} elements for an input of shape {:?}", target.len(), x.dims())));
    }
    // Per row: how often each class is listed (the first loop of torch's
    // kernel), and whether it is a target at all.
    let (mut listed, mut is_target) = (vec![0f64; n * c], vec![0f64; n * c]);
    for i in 0..n {
        for &y in target[i * c..(i + 1) * c].iter().take_while(|&&y| y >= 0.0) {
            let y = y as usize;
            if y >= c {
                return Err(Error::Arg(format!("multilabel_margin_loss: target {y} out of range for {c} classes")));
            }
            listed[i * c + y] += 1.0;
            is_target[i * c + y] = 1.0;
        }
    }
    let dev = scores.device();
    let listed = Tensor::from_vec(listed, (n, c, 1), dev)?.to_dtype(scores.dtype())?;
    let others = (Tensor::from_vec(is_target, (n, 1, c), dev)?.to_dtype(scores.dtype())?.neg()? + 1.0)?;
    let d = (scores.unsqueeze(1)?.broadcast_sub(&scores.unsqueeze(2)?)? + 1.0)?;
    let per = (relu_t(&d)?.broadcast_mul(&listed)?.broadcast_mul(&others)?.sum((1, 2))? / c as f64)?;
    let per = if single { per.reshape(())? } else { per };
    one(ctx.out(reduce(per, r)?, x.dtype)?)
}

/// smooth_l1_loss: `0.5 d^2 / beta` where `|d| < beta`, else `|d| - 0.5 beta`
/// (the L1 loss for `beta = 0`).
fn smooth_l1_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "smooth_l1_loss")?;
    let beta = b.float("beta")?;
    if beta < 0.0 {
        return Err(Error::Arg(format!("smooth_l1_loss: beta must be non-negative, got {beta}")));
    }
    let (x, t, dtype) = pair(ctx, b, "input", "target")?;
    let d = (x - t)?;
    let a = abs_t(&d)?;
    let e = if beta == 0.0 { a } else { a.detach().lt(beta)?.where_cond(&((d.sqr()? * 0.5)? / beta)?, &(&a - 0.5 * beta)?)? };
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// `t * log(t)`, 0 where `t = 0` (torch's xlogy(t, t)); NaN for negative `t`.
fn xlogx(t: &Tensor) -> Result<Tensor> {
    let zero = t.detach().eq(0.0)?;
    let safe = zero.where_cond(&t.ones_like()?, t)?;
    Ok(zero.where_cond(&t.zeros_like()?, &(t * safe.log()?)?)?)
}

/// kl_div of log-probabilities `input` against `target` (probabilities, or
/// log-probabilities with `log_target`): `t·(log t - x)`, reduced by
/// none/sum/mean (over elements)/batchmean (over the first dim).
fn kl_div(ctx: &Ctx, b: &Bound, input: &str, target: &str) -> Result<Vec<Value>> {
    let r = reduction(b, "kl_div")?;
    let log_target = !b.is_none("log_target") && b.bool("log_target")?;
    let rank = b.tensor(input)?.rank();
    let (x, t, dtype) = pair(ctx, b, input, target)?;
    let e = if log_target { (t.exp()? * (&t - &x)?)? } else { (xlogx(&t)? - (&t * &x)?)? };
    let out = match r {
        Reduction::BatchMean if rank > 0 => (e.sum_all()? / e.dims()[0] as f64)?,
        Reduction::BatchMean => e.sum_all()?,
        r => reduce(e, r)?,
    };
    one(ctx.out(out, dtype)?)
}

/// binary_cross_entropy of probabilities `input`: `-w·(t·log x + (1-t)·log(1-x))`,
/// each log clamped at -100 as in torch. The input's gradient is torch's
/// own formula, `w·(x - t) / max(x·(1-x), ε)` (ε = 1e-12 in float32; finite at 0 and 1,
/// where the clamped logs' slopes are not), joined to the value as
/// `value + (x - stop(x))·stop(grad)`; the target's is autograd's, `w·(log(1-x) - log x)`.
fn binary_cross_entropy(ctx: &Ctx, b: &Bound, input: &str, target: &str) -> Result<Vec<Value>> {
    let r = reduction(b, "binary_cross_entropy")?;
    let (x, t, dtype) = same_shape(ctx, b, input, target, "binary_cross_entropy")?;
    let xd = x.detach();
    if xd.flatten_all()?.to_dtype(candle_core::DType::F64)?.to_vec1::<f64>()?.iter().any(|v| !(0.0..=1.0).contains(v)) {
        return Err(Error::Arg("binary_cross_entropy: all elements of input should be between 0 and 1".into()));
    }
    let log_x = xd.log()?.maximum(-100.0)?;
    let log_1mx = xd.affine(-1.0, 1.0)?.log()?.maximum(-100.0)?;
    let value = ((&t * &log_x)? + (t.affine(-1.0, 1.0)? * &log_1mx)?)?.neg()?;
    // torch's EPSILON, 1e-12, reaches the kernel as a float32.
    let slope = ((&xd - t.detach())? / (&xd * xd.affine(-1.0, 1.0)?)?.maximum(1e-12f32 as f64)?)?;
    let mut e = (value + ((&x - &xd)? * slope)?)?;
    if let Some(w) = weight_of(ctx, b, "weight", e.dims(), dtype, false)? {
        e = (e * w)?;
    }
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// binary_cross_entropy_with_logits: `(1-t)·x + (1 + (p-1)·t)·softplus(-x)`
/// (p = `pos_weight`, broadcast over the last dim), times `weight`, with
/// softplus(-x) = `log(1 + exp(-|x|)) + max(-x, 0)`, stable and with the
/// slope -1/2 at 0 (|x| and max are selects, so they cannot overflow or lose it).
fn binary_cross_entropy_with_logits(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let r = reduction(b, "binary_cross_entropy_with_logits")?;
    let (x, t, dtype) = same_shape(ctx, b, "input", "target", "binary_cross_entropy_with_logits")?;
    let nonneg = x.detach().ge(0.0)?;
    let abs = nonneg.where_cond(&x, &x.neg()?)?;
    let relu_neg = nonneg.where_cond(&x.zeros_like()?, &x.neg()?)?;
    let softplus = ((abs.neg()?.exp()? + 1.0)?.log()? + relu_neg)?;
    let log_weight = match weight_of(ctx, b, "pos_weight", x.dims(), dtype, false)? {
        Some(p) => ((p - 1.0)? * &t)?.affine(1.0, 1.0)?,
        None => t.ones_like()?,
    };
    let mut e = ((t.affine(-1.0, 1.0)? * &x)? + (log_weight * softplus)?)?;
    if let Some(w) = weight_of(ctx, b, "weight", e.dims(), dtype, false)? {
        e = (e * w)?;
    }
    one(ctx.out(reduce(e, r)?, dtype)?)
}

/// Class scores as rows: the class dim (1, or 0 of an unbatched `[C]`
/// input) moved last and the others flattened, `[M, C]`, with the shape
/// of the per-sample loss (`[N, d1, ...]`, or `[]` unbatched).
fn rows(x: &Tensor, what: &str) -> Result<(Tensor, Vec<usize>)> {
    match x.rank() {
        0 => Err(Error::Arg(format!("{what}: a 0-d input has no class dim"))),
        1 => Ok((x.unsqueeze(0)?, vec![])),
        2 => Ok((x.clone(), vec![x.dims()[0]])),
        r => {
            let perm: Vec<usize> = std::iter::once(0).chain(2..r).chain(std::iter::once(1)).collect();
            let moved = x.permute(perm)?;
            let lead = moved.dims()[..r - 1].to_vec();
            let m = lead.iter().product::<usize>();
            Ok((moved.reshape((m, x.dims()[1]))?, lead))
        }
    }
}

/// The options of a class-index loss.
struct ClassLoss<'a> {
    what: &'a str,
    weight: Option<Tensor>,
    ignore: i64,
    reduction: Reduction,
    smoothing: f64,
}

impl ClassLoss<'_> {
    /// The per-sample losses (`[M]`) reduced, reshaped to `lead` for `none`.
    fn finish(&self, loss: Tensor, lead: &[usize], mean_by: Tensor) -> Result<Tensor> {
        Ok(match self.reduction {
            Reduction::None => loss.reshape(lead)?,
            Reduction::Sum => loss.sum_all()?,
            _ => loss.sum_all()?.broadcast_div(&mean_by.sum_all()?)?,
        })
    }

    /// torch's nll loss with label smoothing of log-probabilities `logp`
    /// (`[M, C]`) against class indices: `-w[t]·logp[t]`, mixed with
    /// `-Σ_c w[c]·logp[c] / C` by `smoothing`, 0 where `t = ignore_index`;
    /// the mean divides by `Σ w[t]` over the samples not ignored.
    fn indices(&self, logp: &Tensor, target: &T, lead: &[usize]) -> Result<Tensor> {
        if target.dtype.is_float() {
            return Err(Error::Arg(format!("{}: expected integer class indices as target, got {}", self.what, target.dtype.name())));
        }
        if target.dims() != lead {
            return Err(Error::Arg(format!("{}: target of shape {:?} for per-sample losses of shape {lead:?}", self.what, target.dims())));
        }
        let (m, c) = logp.dims2()?;
        let mut idx = Vec::with_capacity(m);
        let mut keep = Vec::with_capacity(m);
        for t in target.to_f64_vec()? {
            let ignored = t as i64 == self.ignore;
            if !ignored && !(0.0..c as f64).contains(&t) {
                return Err(Error::Arg(format!(
                    "{}: target {t} is neither a class in [0, {c}) nor ignore_index {} (torch and MindSpore raise)",
                    self.what, self.ignore
                )));
            }
            idx.push(if ignored { 0 } else { t as u32 });
            keep.push(u8::from(!ignored));
        }
        let dev = logp.device();
        let idx = Tensor::from_vec(idx, (m, 1), dev)?;
        // Ignored samples are selected away, not multiplied by 0: their
        // gradient stays 0 when every sample is ignored and the mean is
        // 0/0 (torch: NaN, with zero gradients).
        let keep = Tensor::from_vec(keep, m, dev)?;
        let zeros = Tensor::zeros(m, logp.dtype(), dev)?;
        let w_t = match &self.weight {
            Some(w) => w.index_select(&idx.squeeze(1)?, 0)?,
            None => zeros.ones_like()?,
        };
        let mut loss = (logp.gather(&idx, 1)?.squeeze(1)?.neg()? * &w_t)?;
        if self.smoothing > 0.0 {
            let weighted = match &self.weight {
                Some(w) => logp.broadcast_mul(w)?,
                None => logp.clone(),
            };
            let smooth = weighted.sum(1)?.neg()?;
            loss = ((loss * (1.0 - self.smoothing))? + (smooth * (self.smoothing / c as f64))?)?;
        }
        let loss = keep.where_cond(&loss, &zeros)?;
        let w_t = keep.where_cond(&w_t, &zeros)?;
        self.finish(loss, lead, w_t)
    }

    /// cross_entropy against class probabilities (`[M, C]`, mixed with the
    /// uniform distribution by `smoothing`): `-Σ_c w[c]·t[c]·logp[c]`; the
    /// mean divides by the number of samples.
    fn probabilities(&self, logp: &Tensor, target: &Tensor, lead: &[usize]) -> Result<Tensor> {
        let c = logp.dims()[1];
        let t = if self.smoothing > 0.0 { target.affine(1.0 - self.smoothing, self.smoothing / c as f64)? } else { target.clone() };
        let mut per = (logp * t)?;
        if let Some(w) = &self.weight {
            per = per.broadcast_mul(w)?;
        }
        let loss = per.sum(1)?.neg()?;
        let count = loss.ones_like()?.detach();
        self.finish(loss, lead, count)
    }
}

/// cross_entropy (`log_softmax` over the class dim first) and nll_loss
/// (log-probabilities given) over `[C]`, `[N, C]` or `[N, C, d1, ...]`
/// inputs, with class indices or (cross_entropy) class probabilities as
/// the target. `label_smoothing` is torch's cross_entropy's and MindSpore's
/// nll_loss's (absent from torch's nll_loss: 0).
fn class_loss(ctx: &Ctx, b: &Bound, input: &str, what: &str) -> Result<Vec<Value>> {
    let (x, target) = (b.tensor(input)?, b.tensor("target")?);
    if !x.dtype.is_float() {
        return Err(Error::Arg(format!("{what}: expected a floating input, got {}", x.dtype.name())));
    }
    let smoothing = b.opt_float("label_smoothing")?.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&smoothing) {
        return Err(Error::Arg(format!("{what}: label_smoothing must be between 0.0 and 1.0, got {smoothing}")));
    }
    let weight = match b.opt_tensor("weight")? {
        Some(w) => Some(operand(ctx, &Value::Tensor(w.clone()), x.dtype)?.detach()),
        None => None,
    };
    let spec = ClassLoss { what, weight, ignore: b.int("ignore_index")?, reduction: reduction(b, what)?, smoothing };
    let (scores, lead) = rows(&x.t, what)?;
    let logp = if what == "cross_entropy" { log_softmax_t(&scores, 1)? } else { scores };
    let loss = if target.dtype.is_float() && what == "cross_entropy" {
        if target.dims() != x.dims() {
            return Err(Error::Arg(format!("cross_entropy: probabilities of shape {:?} for an input of shape {:?}", target.dims(), x.dims())));
        }
        let (t, _) = rows(&operand(ctx, &Value::Tensor(target.clone()), x.dtype)?, what)?;
        spec.probabilities(&logp, &t, &lead)?
    } else {
        spec.indices(&logp, target, &lead)?
    };
    one(ctx.out(loss, x.dtype)?)
}

/// A loss entry judged by the run's standard, with autograd's backward and no facts.
const fn loss(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    loss_with(names, sig, forward, &[])
}

/// A [`loss`] entry with facts.
const fn loss_with(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, facts: &'static [Fact]) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts }
}

/// The loss entries: torch's signatures under `Functional`, MindSpore's
/// (`mindspore.ops`) under `MS.Functional`, mint's under `MintFunctional`.
pub static OPS: &[Op] = &[
    // The torch-level spellings: `reduction` as torch's enum (0 none, 1 mean, 2 sum),
    // by default 0 in Python's torch namespace (aten's schema says 1; measured).
    loss(&["Torch.hinge_embedding_loss"], "input, target, margin=1.0, reduction=0", hinge_embedding_loss),
    loss(&["Torch.margin_ranking_loss"], "input1, input2, target, margin=0.0, reduction=0", margin_ranking_loss),
    loss(&["Torch.kl_div"], "input, target, reduction=0, *, log_target=False", |c, b| kl_div(c, b, "input", "target")),
    loss(&["Torch.cosine_embedding_loss"], "input1, input2, target, margin=0.0, reduction=0", cosine_embedding_loss),
    loss(&["Torch.triplet_margin_loss"], "anchor, positive, negative, margin=1.0, p=2.0, eps=1e-06, swap=False, reduction=0", triplet_margin_loss),
    loss(&["Torch.poisson_nll_loss"], "input, target, log_input, full, eps, reduction", poisson_nll_loss),
    loss(&["Torch.binary_cross_entropy_with_logits"], "input, target, weight=None, pos_weight=None, reduction=0", binary_cross_entropy_with_logits),
    loss(&["Functional.gaussian_nll_loss"], "input, target, var, full=False, eps=1e-06, reduction='mean'", gaussian_nll_loss),
    loss(&["Functional.multi_margin_loss"], "input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction='mean'", multi_margin_loss),
    loss(&["Functional.multilabel_margin_loss"], "input, target, size_average=None, reduce=None, reduction='mean'", multilabel_margin_loss),
    loss(&["Functional.huber_loss"], "input, target, reduction='mean', delta=1.0, weight=None", huber_loss),
    loss(
        &["Functional.poisson_nll_loss"],
        "input, target, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None, reduction='mean'",
        poisson_nll_loss,
    ),
    loss(&["Functional.cosine_embedding_loss"], "input1, input2, target, margin=0, size_average=None, reduce=None, reduction='mean'", cosine_embedding_loss),
    loss(
        &["Functional.triplet_margin_loss"],
        "anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None, reduce=None, reduction='mean'",
        triplet_margin_loss,
    ),
    loss(
        &["Functional.triplet_margin_with_distance_loss"],
        "anchor, positive, negative, distance_function=None, margin=1.0, swap=False, reduction='mean'",
        triplet_margin_with_distance_loss,
    ),
    loss(
        &["Functional.multilabel_soft_margin_loss"],
        "input, target, weight=None, size_average=None, reduce=None, reduction='mean'",
        multilabel_soft_margin_loss,
    ),
    Op {
        names: &["Functional.cross_entropy"],
        sig: "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean', label_smoothing=0.0",
        forward: |c, b| class_loss(c, b, "input", "cross_entropy"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::ClassTargets, Fact::InnerGradient(inner_grad::CROSS_ENTROPY), Fact::NodeGradients(node_grads::cross_entropy)],
    },
    Op {
        names: &["MS.Functional.cross_entropy", "MintFunctional.cross_entropy"],
        sig: "input, target, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0",
        forward: |c, b| class_loss(c, b, "input", "cross_entropy"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::ClassTargets, Fact::InnerGradient(inner_grad::CROSS_ENTROPY)],
    },
    Op {
        names: &["Functional.nll_loss"],
        sig: "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
        forward: |c, b| class_loss(c, b, "input", "nll_loss"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::ClassTargets],
    },
    Op {
        names: &["MS.Functional.nll_loss"],
        sig: "inputs, target, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0",
        forward: |c, b| class_loss(c, b, "inputs", "nll_loss"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::ClassTargets],
    },
    Op {
        names: &["Functional.l1_loss"],
        sig: "input, target, size_average=None, reduce=None, reduction='mean', weight=None",
        forward: |c, b| distance_loss(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::InnerGradient(inner_grad::L1_LOSS)],
    },
    Op {
        names: &["MS.Functional.l1_loss", "MintFunctional.l1_loss"],
        sig: "input, target, reduction='mean'",
        forward: |c, b| distance_loss(c, b, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::InnerGradient(inner_grad::L1_LOSS)],
    },
    loss_with(
        &["Functional.mse_loss"],
        "input, target, size_average=None, reduce=None, reduction='mean', weight=None",
        |c, b| distance_loss(c, b, true),
        &[Fact::Gradients(mse_gradients)],
    ),
    loss_with(
        &["MS.Functional.mse_loss", "MintFunctional.mse_loss"],
        "input, target, reduction='mean'",
        |c, b| distance_loss(c, b, true),
        &[Fact::Gradients(mse_gradients)],
    ),
    loss(&["Functional.soft_margin_loss"], "input, target, size_average=None, reduce=None, reduction='mean'", soft_margin_loss),
    loss(&["Functional.margin_ranking_loss"], "input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction='mean'", margin_ranking_loss),
    loss(&["Functional.hinge_embedding_loss"], "input, target, margin=1.0, size_average=None, reduce=None, reduction='mean'", hinge_embedding_loss),
    loss(&["Functional.smooth_l1_loss"], "input, target, size_average=None, reduce=None, reduction='mean', beta=1.0", smooth_l1_loss),
    Op {
        // MindSpore's default reduction is 'none'.
        names: &["MS.Functional.smooth_l1_loss"],
        sig: "input, target, beta=1.0, reduction='none'",
        forward: smooth_l1_loss,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    loss(&["Functional.kl_div"], "input, target, size_average=None, reduce=None, reduction='mean', log_target=False", |c, b| kl_div(c, b, "input", "target")),
    loss(&["MS.Functional.kl_div"], "logits, labels, reduction='mean'", |c, b| kl_div(c, b, "logits", "labels")),
    loss(&["Functional.binary_cross_entropy"], "input, target, weight=None, size_average=None, reduce=None, reduction='mean'", |c, b| {
        binary_cross_entropy(c, b, "input", "target")
    }),
    loss(&["MS.Functional.binary_cross_entropy"], "logits, labels, weight=None, reduction='mean'", |c, b| binary_cross_entropy(c, b, "logits", "labels")),
    loss(&["MintFunctional.binary_cross_entropy"], "input, target, weight=None, reduction='mean'", |c, b| binary_cross_entropy(c, b, "input", "target")),
    loss(
        &["Functional.binary_cross_entropy_with_logits"],
        "input, target, weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None",
        binary_cross_entropy_with_logits,
    ),
    loss(
        &["MS.Functional.binary_cross_entropy_with_logits"],
        "input, target, weight=None, pos_weight=None, reduction='mean'",
        binary_cross_entropy_with_logits,
    ),
    loss(
        &["MintFunctional.binary_cross_entropy_with_logits"],
        "input, target, weight=None, reduction='mean', pos_weight=None",
        binary_cross_entropy_with_logits,
    ),
];
