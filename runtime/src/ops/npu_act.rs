//! torch_npu's rotary, activation, normalization and layout kernels of
//! msprobe's NPU lists, as torch_npu documents them and Ascend/op-plugin's
//! goldens (or CANN's kernels, where no golden covers a case) compute them:
//! `npu_interleave_rope`, `npu_mrope` (multimodal rotary positions),
//! `npu_gelu_mul`, `npu_clipped_swiglu`, `npu_group_norm_swish` (the only
//! one differentiated), `npu_normalize_batch`, `npu_stride_add`, `npu_ffn`
//! (unquantized), `npu_scatter` (ArgMaxGrad's scatter) and
//! `npu_convert_weight_to_int4pack`. Those computed here in float64 round
//! once to the output dtype, as the kernels compute in float32 and cast
//! once; `npu_gelu_mul`, `npu_stride_add`, `npu_ffn` and
//! `npu_group_norm_swish` run through the table's entries and candle's ops
//! (so an emulated device rounds their steps). Cases: runtime/tests/npu/oracles.py.

use candle_core::{Tensor, D};

use super::npu_infer::first;
use super::npu_misc::group_norm_parts;
use super::{entry, rebind, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// Float64 values computed here, as a tensor of `dtype` (rounded once).
pub(super) fn values_out(ctx: &Ctx, values: Vec<f64>, shape: &[usize], dtype: TDType) -> Result<Value> {
    Ok(Value::Tensor(ctx.out(Tensor::from_vec(values, shape, &ctx.device)?.to_dtype(ctx.compute)?, dtype)?))
}

/// `npu_interleave_rope(x, cos, sin)`, x `[B, N, S, D]`: x's lanes
/// de-interleaved (even lanes first), then rotated by halves:
/// q·cos + cat(-q₂, q₁)·sin, left de-interleaved.
fn interleave_rope(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, cos, sin) = (b.tensor("x")?, b.tensor("cos")?, b.tensor("sin")?);
    let (bs, n, s, d) = x.t.dims4()?;
    if d % 2 != 0 {
        return Err(Error::Arg(format!("npu_interleave_rope: an odd head dim {d}")));
    }
    let q = x.t.reshape((bs, n, s, d / 2, 2))?.transpose(3, 4)?.contiguous()?.reshape((bs, n, s, d))?;
    let rot = Tensor::cat(&[&q.narrow(3, d / 2, d / 2)?.neg()?, &q.narrow(3, 0, d / 2)?], 3)?;
    let y = (q.broadcast_mul(&cos.t)? + rot.broadcast_mul(&sin.t)?)?;
    Ok(vec![Value::Tensor(ctx.out(y, x.dtype)?)])
}

/// The cos and sin lanes (rd/2 each) of each token for `npu_mrope`: the
/// cache rows at the positions, with multimodal sections taken from their
/// own position rows (`default`) or interleaved by threes (`interleave`).
fn mrope_angles(b: &Bound, positions: &T, cache: &[f64], rd: usize) -> Result<(Vec<Vec<f64>>, Vec<Vec<f64>>)> {
    let pos: Vec<usize> = positions.to_f64_vec()?.into_iter().map(|p| p as usize).collect();
    let rows = cache.len() / rd;
    if let Some(p) = pos.iter().find(|&&p| p >= rows) {
        return Err(Error::Arg(format!("npu_mrope: position {p} outside the cache's {rows} rows")));
    }
    let half = rd / 2;
    let lanes = |p: usize, from: usize| cache[p * rd + from..p * rd + from + half].to_vec();
    let t = *positions.dims().last().unwrap_or(&0);
    let (mut cos, mut sin): (Vec<Vec<f64>>, Vec<Vec<f64>>) = (0..t).map(|i| (lanes(pos[i], 0), lanes(pos[i], half))).unzip();
    if positions.rank() == 2 {
        let sections = b.opt_ints("mrope_section")?.unwrap_or_default();
        let owner: Vec<usize> = match b.str("cache_mode")? {
            "default" => sections.iter().enumerate().flat_map(|(i, &n)| std::iter::repeat_n(i, n.max(0) as usize)).collect(),
            "interleave" => {
                let stride = 3 * sections.get(1).copied().unwrap_or(0).max(0) as usize;
                (0..half).map(|l| if l < stride && l % 3 != 0 { l % 3 } else { 0 }).collect()
            }
            other => return Err(Error::Arg(format!("npu_mrope: cache_mode {other:?}"))),
        };
        if owner.len() != half || owner.iter().any(|&o| o >= positions.dims()[0]) {
            return Err(Error::Arg(format!("npu_mrope: mrope_section {sections:?} does not cover {half} lanes")));
        }
        for i in 0..t {
            for (l, &o) in owner.iter().enumerate() {
                cos[i][l] = cache[pos[o * t + i] * rd + l];
                sin[i][l] = cache[pos[o * t + i] * rd + half + l];
            }
        }
    }
    Ok((cos, sin))
}

/// `npu_mrope(positions, query, key, cos_sin_cache, head_size, *,
/// mrope_section=None, rotary_mode='half', cache_mode='default')`: each
/// head's first rotary_dim lanes rotated (NeoX halves, or GPT-J pairs for
/// 'interleave') by the cache row [cos | sin] of its token's position; the
/// other lanes pass.
fn mrope(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (positions, cache) = (b.tensor("positions")?, b.tensor("cos_sin_cache")?);
    let [_, rd] = *cache.dims() else { return Err(Error::Arg("npu_mrope: cos_sin_cache is [positions, rotary_dim]".into())) };
    let hs = b.int("head_size")?.max(1) as usize;
    let interleave = match b.str("rotary_mode")? {
        "half" => false,
        "interleave" => true,
        other => return Err(Error::Arg(format!("npu_mrope: rotary_mode {other:?} (half or interleave)"))),
    };
    if rd > hs || rd % 2 != 0 {
        return Err(Error::Arg(format!("npu_mrope: rotary_dim {rd} for head_size {hs}")));
    }
    let (cos, sin) = mrope_angles(b, positions, &cache.to_f64_vec()?, rd)?;
    let half = rd / 2;
    ["query", "key"]
        .iter()
        .map(|name| {
            let x = b.tensor(name)?;
            let mut v = x.to_f64_vec()?;
            let width = v.len() / cos.len().max(1);
            if width % hs != 0 || width < rd {
                return Err(Error::Arg(format!("npu_mrope: {name} rows of {width} are not heads of {hs}")));
            }
            for (t, row) in v.chunks_mut(width.max(1)).enumerate() {
                for head in row.chunks_mut(hs) {
                    let lane = |l: usize| if interleave { (2 * l, 2 * l + 1) } else { (l, l + half) };
                    for l in 0..half {
                        let (i, j) = lane(l);
                        let (x1, x2) = (head[i], head[j]);
                        head[i] = x1 * cos[t][l] - x2 * sin[t][l];
                        head[j] = x2 * cos[t][l] + x1 * sin[t][l];
                    }
                }
            }
            values_out(ctx, v, x.dims(), x.dtype)
        })
        .collect()
}

/// `npu_gelu_mul(input, *, approximate='none')`: gelu of the last dim's
/// first half times its second half.
fn gelu_mul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = *x.dims().last().ok_or_else(|| Error::Arg("npu_gelu_mul of a 0-d input".into()))? / 2;
    let half = |from: usize| -> Result<Value> { Ok(Value::Tensor(T { t: x.t.narrow(D::Minus1, from, d)?, dtype: x.dtype })) };
    let gelu = first(rebind(ctx, "Functional.gelu", vec![half(0)?], &[("approximate", b.value("approximate").clone())])?)?;
    Ok(vec![first(rebind(ctx, "Torch.mul", vec![gelu, half(d)?], &[])?)?])
}

/// `npu_clipped_swiglu(x, *, group_index=None, dim=-1, alpha=1.702,
/// limit=7.0, bias=1.0, interleaved=True)`: over the dims from `dim` on,
/// flattened, a = the even (or first-half) lanes clamped above at limit,
/// c = the others clamped to ±limit; a·sigmoid(alpha·a)·(c + bias). Rows
/// past the grouped ones are unspecified (None).
fn clipped_swiglu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("x")?;
    let dim = crate::ctx::dim(b.int("dim")?, x.rank())?;
    let rows: usize = x.dims()[..dim].iter().product();
    if let Some(g) = b.opt_tensor("group_index")? {
        if (g.to_f64_vec()?.iter().sum::<f64>() as usize) < rows {
            return Ok(vec![Value::None]);
        }
    }
    let (alpha, limit, bias, interleaved) = (b.float("alpha")?, b.float("limit")?, b.float("bias")?, b.bool("interleaved")?);
    let v = x.to_f64_vec()?;
    let width = v.len() / rows.max(1);
    let out: Vec<f64> = v
        .chunks(width.max(1))
        .flat_map(|row| {
            (0..width / 2).map(move |i| {
                let (a, c) = if interleaved { (row[2 * i], row[2 * i + 1]) } else { (row[i], row[width / 2 + i]) };
                let a = if a > limit { limit } else { a }; // NaN stays NaN
                a / (1.0 + (-alpha * a).exp()) * (c.clamp(-limit, limit) + bias)
            })
        })
        .collect();
    let mut shape = x.dims().to_vec();
    shape[dim] /= 2;
    Ok(vec![values_out(ctx, out, &shape, x.dtype)?])
}

/// `npu_group_norm_swish(input, num_groups, weight, bias, eps=1e-5,
/// swish_scale=1.0)` -> (y, mean, rstd): group norm, then t·sigmoid(s·t);
/// mean and rstd `[N, groups]` in weight's dtype.
fn group_norm_swish(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let (t, mean, rstd) = group_norm_parts("npu_group_norm_swish", b, x, b.int("num_groups")?, b.float("eps")?)?;
    let s = b.float("swish_scale")?;
    let y = if s == 0.0 { (t * 0.5)? } else { (t.affine(s, 0.0)?.silu()? / s)? };
    let stat_dtype = b.opt_tensor("weight")?.map_or(x.dtype, |w| w.dtype);
    Ok(vec![Value::Tensor(ctx.out(y, x.dtype)?), Value::Tensor(ctx.out(mean, stat_dtype)?), Value::Tensor(ctx.out(rstd, stat_dtype)?)])
}

/// `npu_normalize_batch(self, seq_len, normalize_type=0)`, self `[B, C, T]`:
/// (x - mean) / (std + 1e-5), mean and unbiased std over each sequence's
/// first seq_len steps, per channel (type 0) or over all channels (type 1),
/// applied to every step.
fn normalize_batch(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("self")?;
    let [bs, c, t] = *x.dims() else { return Err(Error::Arg("npu_normalize_batch: self is [batch, channels, steps]".into())) };
    let lengths = b.tensor("seq_len")?.to_f64_vec()?;
    if lengths.len() != bs || lengths.iter().any(|&l| l < 2.0 || l as usize > t) {
        return Err(Error::Arg(format!("npu_normalize_batch: seq_len {lengths:?} for {bs} sequences of {t} steps (at least 2 each)")));
    }
    let per_channel = match b.int("normalize_type")? {
        0 => true,
        1 => false,
        other => return Err(Error::Arg(format!("npu_normalize_batch: normalize_type {other} (0 per feature, 1 over all features)"))),
    };
    let mut v = x.to_f64_vec()?;
    for (i, &len) in lengths.iter().enumerate() {
        let len = len as usize;
        let groups: Vec<Vec<usize>> = if per_channel { (0..c).map(|ch| vec![ch]).collect() } else { vec![(0..c).collect()] };
        for channels in groups {
            let steps = |ch: usize| (i * c + ch) * t;
            let seen: Vec<f64> = channels.iter().flat_map(|&ch| v[steps(ch)..steps(ch) + len].to_vec()).collect();
            let mean = seen.iter().sum::<f64>() / seen.len() as f64;
            let std = (seen.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (seen.len() - 1) as f64).sqrt();
            for &ch in &channels {
                v[steps(ch)..steps(ch) + t].iter_mut().for_each(|x| *x = (*x - mean) / (std + 1e-5));
            }
        }
    }
    Ok(vec![values_out(ctx, v, x.dims(), x.dtype)?])
}

/// `npu_stride_add(self, other, offset1, offset2, c1_len)`: channels
/// (dim 1) zero-padded to a multiple of 16; out[:, c] = self[:, 16·offset1
/// + c] + other[:, 16·offset2 + c] for c < 16·c1_len.
fn stride_add(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let len = 16 * b.int("c1_len")?.max(0) as usize;
    let window = |name: &str, offset: &str| -> Result<Value> {
        let x = b.tensor(name)?;
        let c = *x.dims().get(1).ok_or_else(|| Error::Arg(format!("npu_stride_add: {name} has no channel dim")))?;
        let from = 16 * b.int(offset)?.max(0) as usize;
        let padded = (from + len).max(c).div_ceil(16) * 16;
        let mut shape = x.dims().to_vec();
        shape[1] = padded - c;
        let wide = Tensor::cat(&[&x.t, &Tensor::zeros(shape, x.t.dtype(), x.t.device())?], 1)?;
        Ok(Value::Tensor(T { t: wide.narrow(1, from, len)?, dtype: x.dtype }))
    };
    let sum = first(rebind(ctx, "Torch.add", vec![window("self", "offset1")?, window("other", "offset2")?], &[])?)?;
    Ok(vec![Value::Tensor(ctx.cast(sum.tensor("npu_stride_add")?, b.tensor("self")?.dtype)?)])
}

const FFN_QUANT: [&str; 8] = ["scale", "offset", "deq_scale1", "deq_scale2", "antiquant_scale1", "antiquant_scale2", "antiquant_offset1", "antiquant_offset2"];

/// `npu_ffn(x, weight1, weight2, activation, *, expert_tokens=None,
/// expert_tokens_index=None, bias1=None, bias2=None, ...)`, unquantized:
/// act(x @ W1 + b1) @ W2 + b2 (weights `[K, N]`, per expert `[E, K, N]`
/// over consecutive rows counted by expert_tokens, or their cumulative
/// expert_tokens_index); relu, silu, gelu (tanh form, as the kernel) and
/// fastgelu (x·sigmoid(1.702x)).
fn ffn(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if let Some(p) = FFN_QUANT.iter().find(|p| !b.is_none(p)) {
        return Err(Error::Unsupported(format!("npu_ffn with {p} (a quantized call) is not replayed")));
    }
    let activation = b.str("activation")?.to_string();
    if !matches!(activation.as_str(), "relu" | "silu" | "gelu" | "fastgelu") {
        return Err(Error::Unsupported(format!("npu_ffn with activation {activation:?} is not replayed (relu, silu, gelu and fastgelu are)")));
    }
    let x = b.tensor("x")?;
    let k = *x.dims().last().ok_or_else(|| Error::Arg("npu_ffn of a 0-d x".into()))?;
    let flat = T { t: x.t.reshape(((), k))?, dtype: x.dtype };
    let counts: Option<Vec<usize>> = match (b.opt_ints("expert_tokens")?, b.opt_ints("expert_tokens_index")?) {
        (Some(c), None) => Some(c.iter().map(|&n| n.max(0) as usize).collect()),
        (None, Some(ends)) => Some(
            ends.iter()
                .scan(0, |prev, &e| {
                    let n = (e - *prev).max(0) as usize;
                    *prev = e;
                    Some(n)
                })
                .collect(),
        ),
        (None, None) => None,
        _ => return Err(Error::Arg("npu_ffn: expert_tokens or expert_tokens_index, not both".into())),
    };
    let (w1, w2) = (b.tensor("weight1")?, b.tensor("weight2")?);
    let expert = |t: Option<&T>, e: Option<usize>| -> Result<Value> {
        Ok(match (t, e) {
            (None, _) => Value::None,
            (Some(t), None) => Value::Tensor(t.clone()),
            (Some(t), Some(e)) => Value::Tensor(T { t: t.t.get(e)?, dtype: t.dtype }),
        })
    };
    let one = |rows: T, e: Option<usize>| -> Result<Tensor> {
        let mut h = first(rebind(ctx, "Torch.matmul", vec![Value::Tensor(rows), expert(Some(w1), e)?], &[])?)?;
        if let Value::Tensor(_) = expert(b.opt_tensor("bias1")?, e)? {
            h = first(rebind(ctx, "Torch.add", vec![h, expert(b.opt_tensor("bias1")?, e)?], &[])?)?;
        }
        h = match activation.as_str() {
            "relu" => first(rebind(ctx, "Functional.relu", vec![h], &[])?)?,
            "silu" => first(rebind(ctx, "Functional.silu", vec![h], &[])?)?,
            "gelu" => first(rebind(ctx, "Functional.gelu", vec![h], &[("approximate", Value::Str("tanh".into()))])?)?,
            _ => first(rebind(ctx, "NPU.npu_fast_gelu", vec![h], &[])?)?,
        };
        let mut y = first(rebind(ctx, "Torch.matmul", vec![h, expert(Some(w2), e)?], &[])?)?;
        if let Value::Tensor(_) = expert(b.opt_tensor("bias2")?, e)? {
            y = first(rebind(ctx, "Torch.add", vec![y, expert(b.opt_tensor("bias2")?, e)?], &[])?)?;
        }
        Ok(y.tensor("npu_ffn")?.t.clone())
    };
    let y = match counts {
        None => one(flat, None)?,
        Some(counts) => {
            let mut from = 0;
            let mut parts = vec![];
            for (e, &n) in counts.iter().enumerate() {
                parts.push(one(T { t: flat.t.narrow(0, from, n)?, dtype: x.dtype }, Some(e))?);
                from += n;
            }
            Tensor::cat(&parts, 0)?
        }
    };
    let mut shape = x.dims().to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = *w2.dims().last().unwrap_or(&0);
    Ok(vec![Value::Tensor(ctx.out(y.reshape(shape)?, x.dtype)?)])
}

/// `npu_scatter(self, indices, updates, dim)` (ArgMaxGrad's scatter):
/// indices and updates have self's shape without `dim`; self with
/// out[..., indices[...], ...] = updates along `dim`.
fn scatter(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("self")?;
    let d = crate::ctx::dim(b.int("dim")?, x.rank())?;
    let (indices, updates) = (b.tensor("indices")?.to_f64_vec()?, b.tensor("updates")?.to_f64_vec()?);
    let (outer, size, inner) = (x.dims()[..d].iter().product::<usize>(), x.dims()[d], x.dims()[d + 1..].iter().product::<usize>());
    if indices.len() != outer * inner || updates.len() != indices.len() {
        return Err(Error::Arg(format!("npu_scatter: indices and updates of {} elements for self {:?} without dim {d}", indices.len(), x.dims())));
    }
    let mut v = x.to_f64_vec()?;
    for (j, (&i, &u)) in indices.iter().zip(&updates).enumerate() {
        if !(0.0..size as f64).contains(&i) {
            return Err(Error::Arg(format!("npu_scatter: index {i} outside [0, {size})")));
        }
        let (o, r) = (j / inner, j % inner);
        v[(o * size + i as usize) * inner + r] = u;
    }
    Ok(vec![Value::Tensor(T::from_f64(v, x.dims(), x.dtype, ctx.compute, &ctx.device)?)])
}

/// `npu_convert_weight_to_int4pack(weight, inner_k_tiles=0)`, int32:
/// each 8 values' low nibbles packed into one int32, value 8i + j into
/// nibble j (the float32 fp4 packing of Ascend 950 is not replayed).
fn convert_weight_to_int4pack(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let w = b.tensor("weight")?;
    if w.dtype != TDType::I32 {
        return Err(Error::Unsupported(format!("npu_convert_weight_to_int4pack of {} (fp4 packing) is not replayed", w.dtype.name())));
    }
    let last = *w.dims().last().ok_or_else(|| Error::Arg("npu_convert_weight_to_int4pack of a 0-d weight".into()))?;
    if last % 8 != 0 {
        return Err(Error::Arg(format!("npu_convert_weight_to_int4pack: last dim {last} is not a multiple of 8")));
    }
    let packed: Vec<f64> = w
        .to_f64_vec()?
        .chunks(8)
        .map(|group| group.iter().enumerate().fold(0u32, |acc, (j, &v)| acc | (((v as i64 & 0xF) as u32) << (4 * j))) as i32 as f64)
        .collect();
    let mut shape = w.dims().to_vec();
    *shape.last_mut().unwrap_or(&mut 0) = last / 8;
    Ok(vec![Value::Tensor(T::from_f64(packed, &shape, TDType::I32, ctx.compute, &ctx.device)?)])
}

/// The entries.
pub static OPS: &[Op] = &[
    entry(&["NPU.npu_interleave_rope"], "x, cos, sin", interleave_rope, false, Standard::Accuracy),
    entry(
        &["NPU.npu_mrope"],
        "positions, query, key, cos_sin_cache, head_size, *, mrope_section=None, rotary_mode='half', cache_mode='default'",
        mrope,
        false,
        Standard::Accuracy,
    ),
    entry(&["NPU.npu_gelu_mul"], "input, *, approximate='none'", gelu_mul, false, Standard::Accuracy),
    entry(
        &["NPU.npu_clipped_swiglu"],
        "x, *, group_index=None, dim=-1, alpha=1.702, limit=7.0, bias=1.0, interleaved=True",
        clipped_swiglu,
        false,
        Standard::Accuracy,
    ),
    entry(&["NPU.npu_group_norm_swish"], "input, num_groups, weight, bias, eps=1e-05, swish_scale=1.0", group_norm_swish, true, Standard::Accuracy),
    entry(&["NPU.npu_normalize_batch"], "self, seq_len, normalize_type=0", normalize_batch, false, Standard::Accuracy),
    entry(&["NPU.npu_stride_add"], "self, other, offset1, offset2, c1_len", stride_add, false, Standard::Accuracy),
    entry(
        &["NPU.npu_ffn"],
        "x, weight1, weight2, activation, *, expert_tokens=None, expert_tokens_index=None, bias1=None, bias2=None, scale=None, offset=None, deq_scale1=None, deq_scale2=None, antiquant_scale1=None, antiquant_scale2=None, antiquant_offset1=None, antiquant_offset2=None, inner_precise=None, output_dtype=None",
        ffn,
        false,
        Standard::Accuracy,
    ),
    entry(&["NPU.npu_scatter"], "self, indices, updates, dim", scatter, false, Standard::Exact),
    entry(&["NPU.npu_convert_weight_to_int4pack"], "weight, inner_k_tiles=0", convert_weight_to_int4pack, false, Standard::Exact),
];
