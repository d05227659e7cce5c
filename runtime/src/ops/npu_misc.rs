//! torch_npu's fused ops that are not attention, norms of the forward pass
//! or activations (those are in the entries of the `NPU` prefix beside
//! them): `npu_linear`, `npu_confusion_transpose`, the optimizer steps
//! `npu_apply_adam` and `npu_apply_adam_w`, `npu_layer_norm_eval`,
//! `npu_group_norm_silu`, `npu_moe_gating_top_k_softmax`, `npu_sort_v2` and
//! `matmul_backward`, with torch_npu's documented signatures, defaults and
//! outputs, composed from candle primitives (a backward, where torch_npu
//! defines one, is autograd's).
//!
//! msprobe 26.2.0 registers a CPU bench function for each in
//! `bench_functions/fusion_operator_config.yaml`; where its function departs
//! from torch_npu's documented semantics the entry follows torch_npu and
//! says so (npu_layer_norm_eval's weight, bias and eps, npu_apply_adam_w's
//! `amsgrad` state).

use candle_core::{Tensor, D};

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{dim, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// A scalar argument given as a Python number or as a one-element tensor
/// (torch_npu takes `beta1_power`, `lr`, ... either way).
fn number(b: &Bound, name: &str) -> Result<f64> {
    match b.value(name) {
        Value::Tensor(t) if t.t.elem_count() == 1 => Ok(t.to_f64_vec()?[0]),
        v => v.as_f64().ok_or_else(|| Error::Arg(format!("argument {name:?}: expected a number or a one-element tensor, got {}", v.kind()))),
    }
}

/// torch_npu.npu_linear(input, weight, bias=None): `input @ weight.T + bias`
/// for a 2-D input and weight; autograd gives the input, weight and bias
/// gradients (msprobe's bench backward returns the first two).
fn linear(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, w) = (b.tensor("input")?, b.tensor("weight")?);
    if x.rank() != 2 || w.rank() != 2 {
        return Err(Error::Arg(format!("npu_linear: expected a 2-D input and weight, got {:?} and {:?}", x.dims(), w.dims())));
    }
    let mut out = x.t.matmul(&w.t.t()?)?;
    if let Some(bias) = b.opt_tensor("bias")? {
        out = out.broadcast_add(&bias.t)?;
    }
    one(ctx.out(out, super::nn::float_pair(x, w, "npu_linear")?)?)
}

/// A permutation of `rank` dims, each once.
fn permutation(perm: &[i64], rank: usize, what: &str) -> Result<Vec<usize>> {
    let dims = perm.iter().map(|&d| dim(d, rank)).collect::<Result<Vec<_>>>()?;
    let mut seen = vec![false; rank];
    if dims.len() != rank || dims.iter().any(|&d| std::mem::replace(&mut seen[d], true)) {
        return Err(Error::Arg(format!("{what}: perm {perm:?} is not a permutation of {rank} dims")));
    }
    Ok(dims)
}

/// torch_npu.npu_confusion_transpose(input, perm, shape, transpose_first):
/// permute then reshape to `shape` (`transpose_first`), or reshape to
/// `shape` then permute; data movement, judged exactly.
fn confusion_transpose(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (perm, shape) = (b.ints("perm")?, b.ints("shape")?);
    let target = shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| Error::Arg(format!("npu_confusion_transpose: invalid shape {shape:?}"))))
        .collect::<Result<Vec<_>>>()?;
    if target.iter().product::<usize>() != x.t.elem_count() {
        return Err(Error::Arg(format!("npu_confusion_transpose: shape {shape:?} is invalid for an input of {} elements", x.t.elem_count())));
    }
    let t = if b.bool("transpose_first")? {
        x.t.permute(permutation(&perm, x.rank(), "npu_confusion_transpose")?)?.contiguous()?.reshape(target)?
    } else {
        let r = x.t.reshape(target)?;
        let p = permutation(&perm, r.rank(), "npu_confusion_transpose")?;
        r.permute(p)?.contiguous()?
    };
    Ok(vec![Value::Tensor(T { t, dtype: x.dtype })])
}

/// The `out=(var, m, v)` state of the optimizer steps, same shapes as `grad`.
fn adam_state<'a>(b: &'a Bound, what: &str) -> Result<[&'a T; 3]> {
    let out = match b.value("out") {
        Value::List(items) if items.len() == 3 => items.iter().map(|v| v.tensor(what)).collect::<Result<Vec<_>>>()?,
        v => return Err(Error::Arg(format!("{what}: out must be the tuple (var, m, v), got {}", v.kind()))),
    };
    let grad = b.tensor("grad")?;
    if out.iter().any(|t| t.dims() != grad.dims()) {
        return Err(Error::Arg(format!("{what}: var, m and v must have grad's shape {:?}", grad.dims())));
    }
    Ok([out[0], out[1], out[2]])
}

/// The three updated states, each in its input's dtype.
fn states(ctx: &Ctx, state: [&T; 3], values: [Tensor; 3]) -> Result<Vec<Value>> {
    let [var, m, v] = values;
    Ok(vec![Value::Tensor(ctx.out(var, state[0].dtype)?), Value::Tensor(ctx.out(m, state[1].dtype)?), Value::Tensor(ctx.out(v, state[2].dtype)?)])
}

/// torch_npu.npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2,
/// epsilon, grad, use_locking, use_nesterov, out=(var, m, v)) -> (var, m, v),
/// TBE's ApplyAdam: `m += (1-β₁)(g-m)`, `v += (1-β₂)(g²-v)`,
/// `lr_t = lr·√(1-β₂ᵖ)/(1-β₁ᵖ)`, `var -= lr_t·m/(ε+√v)` (Nesterov:
/// `lr_t·(β₁m + (1-β₁)g)/(ε+√v)`). The powers are the current step's.
fn apply_adam(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let state @ [var, m, v] = adam_state(b, "npu_apply_adam")?;
    let g = &b.tensor("grad")?.t;
    let (b1p, b2p, lr) = (number(b, "beta1_power")?, number(b, "beta2_power")?, number(b, "lr")?);
    let (b1, b2, eps) = (number(b, "beta1")?, number(b, "beta2")?, number(b, "epsilon")?);
    let m_t = (&m.t + ((g - &m.t)? * (1.0 - b1))?)?;
    let v_t = (&v.t + ((g.sqr()? - &v.t)? * (1.0 - b2))?)?;
    let lr_t = lr * (1.0 - b2p).sqrt() / (1.0 - b1p);
    let step = if b.bool("use_nesterov")? { ((&m_t * b1)? + (g * (1.0 - b1))?)? } else { m_t.clone() };
    let var_t = (&var.t - ((step * lr_t)? / (v_t.sqrt()? + eps)?)?)?;
    states(ctx, state, [var_t, m_t, v_t])
}

/// torch_npu.npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay,
/// beta1, beta2, epsilon, grad, max_grad_norm, amsgrad, maximize,
/// out=(var, m, v)) -> (var, m, v), CANN's ApplyAdamW: the powers are the
/// previous step's (this step's are `β₁ᵖ·β₁`, `β₂ᵖ·β₂`), decoupled decay
/// `var·(1 - lr·wd)`, `g` negated under `maximize`, `m = β₁m + (1-β₁)g`,
/// `v = β₂v + (1-β₂)g²`, `denom = √(v̂/(1-β₂ᵖβ₂)) + ε` with `v̂ = v`, or
/// `max(max_grad_norm, v)` under `amsgrad` (max_grad_norm is then the
/// running maximum of v, a tensor; msprobe's bench draws it at random),
/// `var -= lr·m/(1-β₁ᵖβ₁)/denom`; a bias correction `1 - β·ᵖβ·` of 0 is
/// replaced by `-ε`, as the kernel guards it.
fn apply_adam_w(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let state @ [var, m, v] = adam_state(b, "npu_apply_adam_w")?;
    let grad = &b.tensor("grad")?.t;
    let (b1p, b2p, lr, wd) = (number(b, "beta1_power")?, number(b, "beta2_power")?, number(b, "lr")?, number(b, "weight_decay")?);
    let (b1, b2, eps) = (number(b, "beta1")?, number(b, "beta2")?, number(b, "epsilon")?);
    let corrected = |p: f64| if 1.0 - p == 0.0 { 1.0 - (p - eps) } else { 1.0 - p };
    let (c1, c2) = (corrected(b1p * b1), corrected(b2p * b2));
    let g = if b.bool("maximize")? { grad.neg()? } else { grad.clone() };
    let var_t = (&var.t * (1.0 - lr * wd))?;
    let m_t = ((&m.t * b1)? + (&g * (1.0 - b1))?)?;
    let v_t = ((&v.t * b2)? + (g.sqr()? * (1.0 - b2))?)?;
    let second = if b.bool("amsgrad")? {
        let max = b.tensor("max_grad_norm")?;
        if max.dims() != v.dims() {
            return Err(Error::Arg(format!("npu_apply_adam_w: max_grad_norm of shape {:?} for a state of shape {:?}", max.dims(), v.dims())));
        }
        max.t.maximum(&v_t)?
    } else {
        v_t.clone()
    };
    let denom = ((second / c2)?.sqrt()? + eps)?;
    let var_out = (var_t - ((&m_t * (lr / c1))? / denom)?)?;
    states(ctx, state, [var_out, m_t, v_t])
}

/// torch_npu.npu_layer_norm_eval(input, normalized_shape, weight=None,
/// bias=None, eps=1e-05): layer_norm in inference, no gradient. msprobe's
/// bench drops weight, bias and eps (it calls `layer_norm(data,
/// normalized_shape)`); torch_npu applies them.
fn layer_norm_eval(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let shape = b.ints("normalized_shape")?;
    let k = shape.len();
    let dims = x.dims().to_vec();
    if k == 0 || k > dims.len() || dims[dims.len() - k..].iter().zip(&shape).any(|(&a, &s)| a as i64 != s) {
        return Err(Error::Arg(format!("npu_layer_norm_eval: normalized_shape {shape:?} does not match the input's trailing dims {dims:?}")));
    }
    let n: usize = dims[dims.len() - k..].iter().product();
    let flat = x.t.reshape([dims[..dims.len() - k].to_vec(), vec![n]].concat())?;
    let centered = flat.broadcast_sub(&flat.mean_keepdim(D::Minus1)?)?;
    let var = centered.sqr()?.mean_keepdim(D::Minus1)?;
    let mut y = centered.broadcast_div(&(var + b.float("eps")?)?.sqrt()?)?.reshape(dims.as_slice())?;
    if let Some(w) = b.opt_tensor("weight")? {
        y = y.broadcast_mul(&w.t)?;
    }
    if let Some(bias) = b.opt_tensor("bias")? {
        y = y.broadcast_add(&bias.t)?;
    }
    one(ctx.out(y, x.dtype)?)
}

/// torch_npu's group norm of an `[N, C, *]` input over `groups` groups
/// with its `weight` and `bias`, before the activation, and `mean` and
/// `rstd` (`1/√(var+ε)`, biased variance) per sample and group, shaped
/// `[N, groups]`, as aten's native_group_norm (`api` names the call).
pub(super) fn group_norm_parts(api: &str, b: &Bound, x: &T, groups: i64, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
    if x.rank() < 2 {
        return Err(Error::Arg(format!("{api}: expected an input of at least 2 dims [N, C, *], got {:?}", x.dims())));
    }
    let (n, c) = (x.dims()[0], x.dims()[1]);
    if groups <= 0 || c % groups as usize != 0 {
        return Err(Error::Arg(format!("{api}: {c} channels are not divisible into {groups} groups")));
    }
    let g = groups as usize;
    let flat = x.t.reshape((n, g, x.t.elem_count() / (n * g).max(1)))?;
    let mean = flat.mean_keepdim(2)?;
    let centered = flat.broadcast_sub(&mean)?;
    let rstd = (centered.sqr()?.mean_keepdim(2)? + eps)?.sqrt()?.recip()?;
    let mut y = centered.broadcast_mul(&rstd)?.reshape(x.dims())?;
    let channels: Vec<usize> = (0..x.rank()).map(|i| if i == 1 { c } else { 1 }).collect();
    for (name, scale) in [("weight", true), ("bias", false)] {
        let Some(p) = b.opt_tensor(name)? else { continue };
        if p.t.elem_count() != c {
            return Err(Error::Arg(format!("{api}: {name} of shape {:?} for {c} channels", p.dims())));
        }
        let p = p.t.reshape(channels.as_slice())?;
        y = if scale { y.broadcast_mul(&p)? } else { y.broadcast_add(&p)? };
    }
    Ok((y, mean.reshape((n, g))?, rstd.reshape((n, g))?))
}

/// torch_npu.npu_group_norm_silu(input, weight, bias, group, eps=1e-05) ->
/// (out, mean, rstd): [`group_norm_parts`], then silu.
fn group_norm_silu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (y, mean, rstd) = group_norm_parts("npu_group_norm_silu", b, x, b.int("group")?, b.float("eps")?)?;
    let stat = |t: Tensor| ctx.out(t, x.dtype).map(Value::Tensor);
    Ok(vec![Value::Tensor(ctx.out(y.silu()?, x.dtype)?), stat(mean)?, stat(rstd)?])
}

/// torch_npu.npu_moe_gating_top_k_softmax(x, finished=None, k=1) ->
/// (y, expert_idx, row_idx): the softmax over the experts (last dim) of
/// each row, its `k` largest values in descending order (ties: the lower
/// expert first) and their experts (int32; `num_experts` for a row whose
/// `finished` flag is set), and `row_idx` (int32), `j·rows + i` at row `i`,
/// choice `j`, the order of the expanded rows that follows.
fn moe_gating_top_k_softmax(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() < 2 || !x.dtype.is_float() {
        return Err(Error::Arg(format!("npu_moe_gating_top_k_softmax: expected a floating input of at least 2 dims, got {} {:?}", x.dtype.name(), x.dims())));
    }
    let experts = x.dims()[x.rank() - 1];
    let rows = x.t.elem_count() / experts.max(1);
    let k = b.int("k")?;
    if k < 1 || k as usize > experts {
        return Err(Error::Arg(format!("npu_moe_gating_top_k_softmax: k = {k} is out of range for {experts} experts")));
    }
    let k = k as usize;
    let finished = match b.opt_tensor("finished")? {
        Some(f) if f.t.elem_count() != rows => {
            return Err(Error::Arg(format!("npu_moe_gating_top_k_softmax: finished of shape {:?} for {rows} rows", f.dims())))
        }
        Some(f) => f.to_f64_vec()?.into_iter().map(|v| v != 0.0).collect(),
        None => vec![false; rows],
    };
    let soft = super::nn::softmax_t(&x.t.reshape((rows, experts))?, 1)?;
    let values = soft.to_dtype(candle_core::DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let mut picked = Vec::with_capacity(rows * k);
    let mut experts_out = Vec::with_capacity(rows * k);
    let mut row_idx = Vec::with_capacity(rows * k);
    for (i, row) in values.chunks(experts).enumerate() {
        let mut order: Vec<usize> = (0..experts).collect();
        order.sort_by(|&a, &c| row[c].total_cmp(&row[a]));
        for (j, &e) in order[..k].iter().enumerate() {
            picked.push((i * experts + e) as u32);
            experts_out.push(if finished[i] { experts } else { e } as f64);
            row_idx.push((j * rows + i) as f64);
        }
    }
    let shape = [&x.dims()[..x.rank() - 1], &[k]].concat();
    let idx = Tensor::from_vec(picked, rows * k, &ctx.device)?;
    let y = soft.flatten_all()?.gather(&idx, 0)?.reshape(shape.as_slice())?;
    Ok(vec![
        Value::Tensor(ctx.out(y, x.dtype)?),
        Value::Tensor(T::from_f64(experts_out, &shape, TDType::I32, ctx.compute, &ctx.device)?),
        Value::Tensor(T::from_f64(row_idx, &shape, TDType::I32, ctx.compute, &ctx.device)?),
    ])
}

/// torch_npu.npu_sort_v2(input, dim=-1, descending=False, out=None): the
/// sorted values only (no indices); data movement, judged exactly.
fn sort_v2(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let shape: Vec<usize> = if x.rank() == 0 { vec![1] } else { x.dims().to_vec() };
    let d = dim(b.int("dim")?, shape.len())?;
    let descending = b.bool("descending")?;
    let n = shape[d];
    let (outer, inner): (usize, usize) = (shape[..d].iter().product(), shape[d + 1..].iter().product());
    let values = x.to_f64_vec()?;
    let mut picked = vec![0u32; values.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| (o * n + j) * inner + i;
            let mut order: Vec<usize> = (0..n).collect();
            // NaN sorts as the largest value, as in torch.
            let key = |j: usize| {
                let v = values[at(j)];
                if v.is_nan() {
                    f64::INFINITY
                } else {
                    v
                }
            };
            order.sort_by(|&a, &c| {
                let by = key(a).total_cmp(&key(c)).then(values[at(a)].is_nan().cmp(&values[at(c)].is_nan()));
                if descending {
                    by.reverse()
                } else {
                    by
                }
            });
            for (j, p) in order.into_iter().enumerate() {
                picked[at(j)] = p as u32;
            }
        }
    }
    let idx = Tensor::from_vec(picked, shape.as_slice(), x.t.device())?;
    let t = x.t.reshape(shape.as_slice())?.contiguous()?.gather(&idx, d)?.reshape(x.dims())?;
    Ok(vec![Value::Tensor(T { t, dtype: x.dtype })])
}

/// torch_npu's `matmul_backward(grad, self, other, mask) -> (grad_self,
/// grad_other)`: the gradients of `torch.matmul(self, other)` for the
/// output gradient `grad`, each computed where `mask` (two bools) asks for
/// it, `None` where not. msprobe 26.2.0 registers a bench function for it
/// under this name but no hook records it (it is not on the NPU hook list):
/// a dump holds it only as `NPU.matmul_backward`, if ever.
fn matmul_backward(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (g, a, o) = (b.tensor("grad")?, b.tensor("self")?, b.tensor("other")?);
    let mask = b.ints("mask")?;
    if mask.len() < 2 {
        return Err(Error::Arg(format!("matmul_backward: mask needs 2 entries, got {mask:?}")));
    }
    let dtype = super::nn::float_pair(a, o, "matmul_backward")?;
    // matmul's operands as batched matrices: a 1-D self is a row, a 1-D other a column.
    let a2 = if a.rank() == 1 { a.t.unsqueeze(0)? } else { a.t.clone() };
    let o2 = if o.rank() == 1 { o.t.unsqueeze(1)? } else { o.t.clone() };
    if a.rank() == 0 || o.rank() == 0 {
        return Err(Error::Arg("matmul_backward: both arguments need at least 1 dimension".into()));
    }
    let mut gs: Vec<usize> = a2.dims()[..a2.rank() - 2].to_vec();
    let ob = &o2.dims()[..o2.rank() - 2];
    gs = crate::ctx::broadcast_shape(&gs, ob)?;
    gs.extend([a2.dims()[a2.rank() - 2], o2.dims()[o2.rank() - 1]]);
    if g.t.elem_count() != gs.iter().product::<usize>() {
        return Err(Error::Arg(format!("matmul_backward: grad of shape {:?} for a product of shape {gs:?}", g.dims())));
    }
    let g2 = g.t.reshape(gs.as_slice())?;
    // The gradient of a broadcast operand sums over the broadcast dims.
    let reduce = |t: Tensor, shape: &[usize]| -> Result<Tensor> {
        let mut t = t;
        while t.rank() > shape.len() {
            t = t.sum(0)?;
        }
        for (d, &s) in shape.iter().enumerate() {
            if s == 1 && t.dims()[d] != 1 {
                t = t.sum_keepdim(d)?;
            }
        }
        Ok(t)
    };
    let mut out = vec![];
    if mask[0] != 0 {
        let ga = reduce(g2.broadcast_matmul(&o2.t()?)?, a2.dims())?.reshape(a.dims())?;
        out.push(Value::Tensor(ctx.out(ga, dtype)?));
    } else {
        out.push(Value::None);
    }
    if mask[1] != 0 {
        let go = reduce(a2.t()?.broadcast_matmul(&g2)?, o2.dims())?.reshape(o.dims())?;
        out.push(Value::Tensor(ctx.out(go, dtype)?));
    } else {
        out.push(Value::None);
    }
    Ok(out)
}

/// The entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["NPU.npu_linear"],
        sig: "input, weight, bias=None",
        forward: linear,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["NPU.npu_confusion_transpose"],
        sig: "input, perm, shape, transpose_first",
        forward: confusion_transpose,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_apply_adam"],
        sig: "beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking, use_nesterov, *, out=None",
        forward: apply_adam,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_apply_adam_w"],
        sig: "beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm, amsgrad, maximize, *, out=None",
        forward: apply_adam_w,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_layer_norm_eval"],
        sig: "input, normalized_shape, weight=None, bias=None, eps=1e-05",
        forward: layer_norm_eval,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_group_norm_silu"],
        sig: "input, weight, bias, group, eps=1e-05",
        forward: group_norm_silu,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_moe_gating_top_k_softmax"],
        sig: "input, finished=None, k=1",
        forward: moe_gating_top_k_softmax,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_sort_v2"],
        sig: "input, dim=-1, descending=False, *, out=None",
        forward: sort_v2,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.matmul_backward"],
        sig: "grad, self, other, mask",
        forward: matmul_backward,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
];
