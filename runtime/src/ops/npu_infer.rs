//! More of torch_npu's inference kernels (msprobe 26.2.0's NPU list), as
//! torch_npu documents them and Ascend/op-plugin's goldens compute them:
//! `npu_add_rms_norm_v2` (its rstd; the normalized output and the sum
//! overwrite its inputs), `npu_apply_rotary_pos_emb` (query and key
//! rotated), `npu_transpose_batchmatmul`, `npu_fused_matmul`,
//! `npu_attention_update` (partial attention outputs merged by their
//! log-sum-exps), `npu_grouped_matmul_add_` (K-grouped products
//! accumulated), `npu_sign_bits_pack`/`unpack`, `npu_masked_fill_range` and
//! `npu_moe_gating_top_k`; the unquantized flash-attention inference
//! kernels (`npu_prompt_flash_attention`, `npu_incre_flash_attention`,
//! `npu_fused_infer_attention_score(_v2)`) and `npu_fusion_attention_v3`
//! as `npu_fusion_attention`. The arithmetic runs through the table's entries
//! ([`super::rebind`]); torch_npu differentiates none of them but the
//! gating, which is replayed forward, and `npu_fusion_attention_v3`. Cases: runtime/tests/npu/oracles.py.

use super::{rebind, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The first value an entry returned.
pub(super) fn first(v: Vec<Value>) -> Result<Value> {
    v.into_iter().next().ok_or_else(|| Error::Arg("an entry returned nothing".into()))
}

fn tensor(v: &Value) -> Result<&T> {
    v.tensor("npu")
}

/// `npu_add_rms_norm_v2(x1, x2, gamma, epsilon=1e-6)`: returns rstd (float32).
fn add_rms_norm_v2(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let args = ["x1", "x2", "gamma"].map(|p| b.value(p).clone()).to_vec();
    let out = rebind(ctx, "NPU.npu_add_rms_norm", args, &[("epsilon", b.value("epsilon").clone())])?;
    Ok(vec![out.into_iter().nth(1).ok_or_else(|| Error::Arg("npu_add_rms_norm gave no rstd".into()))?])
}

/// `npu_apply_rotary_pos_emb(query, key, cos, sin, layout='BSND', rotary_mode='half')`:
/// x·cos + rotate(x)·sin for query and key (cos and sin broadcast over heads).
fn apply_rotary_pos_emb(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mode = b.str("rotary_mode")?;
    if !matches!(mode, "half" | "interleave") {
        return Err(Error::Unsupported(format!("npu_apply_rotary_pos_emb with rotary_mode {mode:?} is not replayed")));
    }
    let (cos, sin) = (b.value("cos").clone(), b.value("sin").clone());
    ["query", "key"]
        .iter()
        .map(|x| first(rebind(ctx, "NPU.npu_rotary_mul", vec![b.value(x).clone(), cos.clone(), sin.clone()], &[("rotary_mode", Value::Str(mode.into()))])?))
        .collect()
}

/// `npu_transpose_batchmatmul(input, weight, *, bias=None, scale=None,
/// perm_x1=None, perm_x2=None, perm_y=None, batch_split_factor=1)`:
/// permute(bmm(input.permute(perm_x1), weight.permute(perm_x2)), perm_y),
/// [M, B, N]; a split factor f regroups it as [f, M, B·N/f].
fn transpose_batchmatmul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.is_none("bias") || !b.is_none("scale") {
        return Err(Error::Unsupported("npu_transpose_batchmatmul with bias or scale (a quantized call) is not replayed".into()));
    }
    let perm = |name: &str, default: [i64; 3]| -> Value {
        if b.is_none(name) {
            Value::List(default.iter().map(|&d| Value::Int(d)).collect())
        } else {
            b.value(name).clone()
        }
    };
    let x = first(rebind(ctx, "Torch.permute", vec![b.value("input").clone(), perm("perm_x1", [0, 1, 2])], &[])?)?;
    let w = first(rebind(ctx, "Torch.permute", vec![b.value("weight").clone(), perm("perm_x2", [0, 1, 2])], &[])?)?;
    let y = first(rebind(ctx, "Torch.matmul", vec![x, w], &[])?)?;
    let y = first(rebind(ctx, "Torch.permute", vec![y, perm("perm_y", [1, 0, 2])], &[])?)?;
    let f = b.int("batch_split_factor")?;
    if f <= 1 {
        return Ok(vec![y]);
    }
    let t = tensor(&y)?;
    let [m, bs, n] = *t.dims() else { return Err(Error::Arg("npu_transpose_batchmatmul: a 3-D result".into())) };
    let f = f as usize;
    if !(bs * n).is_multiple_of(f) {
        return Err(Error::Arg(format!("npu_transpose_batchmatmul: batch_split_factor {f} does not divide {}", bs * n)));
    }
    let split = T { t: t.t.reshape((m, f, bs * n / f))?.transpose(0, 1)?.contiguous()?, dtype: t.dtype };
    Ok(vec![Value::Tensor(split)])
}

/// `npu_fused_matmul(x1, x2, *, bias=None, x3=None, fused_op_type='')`:
/// op(x1 @ x2 + bias, x3) for '' , 'add', 'mul', 'gelu_erf', 'gelu_tanh',
/// 'relu'; '16cast32' is the product as float32.
fn fused_matmul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mut y = first(rebind(ctx, "Torch.matmul", vec![b.value("x1").clone(), b.value("x2").clone()], &[])?)?;
    if !b.is_none("bias") {
        y = first(rebind(ctx, "Torch.add", vec![y, b.value("bias").clone()], &[])?)?;
    }
    let x3 = b.value("x3").clone();
    let y = match b.str("fused_op_type")? {
        "" => y,
        "add" => first(rebind(ctx, "Torch.add", vec![y, x3], &[])?)?,
        "mul" => first(rebind(ctx, "Torch.mul", vec![y, x3], &[])?)?,
        "gelu_erf" => first(rebind(ctx, "Functional.gelu", vec![y], &[])?)?,
        "gelu_tanh" => first(rebind(ctx, "Functional.gelu", vec![y], &[("approximate", Value::Str("tanh".into()))])?)?,
        "relu" => first(rebind(ctx, "Functional.relu", vec![y], &[])?)?,
        "16cast32" => Value::Tensor(ctx.cast(tensor(&y)?, TDType::F32)?),
        other => return Err(Error::Arg(format!("npu_fused_matmul: fused_op_type {other:?}"))),
    };
    Ok(vec![y])
}

/// `npu_attention_update(lse, local_out, update_type)`: the partial outputs
/// weighted by exp(lse_i − logsumexp_i lse_i) and summed (in float32), and,
/// for `update_type` 1, that log-sum-exp (else None).
fn attention_update(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (lse, outs) = (b.tensors("lse")?, b.tensors("local_out")?);
    if lse.is_empty() || lse.len() != outs.len() {
        return Err(Error::Arg("npu_attention_update: one lse per local_out".into()));
    }
    let stacked = first(rebind(ctx, "Torch.stack", vec![Value::List(lse.iter().map(|t| Value::Tensor((*t).clone())).collect())], &[])?)?;
    let total = first(rebind(ctx, "Torch.logsumexp", vec![stacked, Value::Int(0)], &[])?)?;
    let mut sum: Option<Value> = None;
    for (l, o) in lse.iter().zip(&outs) {
        let shifted = first(rebind(ctx, "Torch.sub", vec![Value::Tensor((*l).clone()), total.clone()], &[])?)?;
        let weight = first(rebind(ctx, "Torch.exp", vec![shifted], &[])?)?;
        let weight = first(rebind(ctx, "Torch.unsqueeze", vec![weight, Value::Int(-1)], &[])?)?;
        let wide = Value::Tensor(ctx.cast(o, TDType::F32)?);
        let term = first(rebind(ctx, "Torch.mul", vec![wide, weight], &[])?)?;
        sum = Some(match sum {
            None => term,
            Some(s) => first(rebind(ctx, "Torch.add", vec![s, term], &[])?)?,
        });
    }
    let out = Value::Tensor(ctx.cast(tensor(&sum.unwrap_or(Value::None))?, outs[0].dtype)?);
    Ok(vec![out, if b.int("update_type")? == 1 { total } else { Value::None }])
}

/// `npu_grouped_matmul_add_(self, x, weight, group_list, *, transpose_x=True,
/// transpose_weight=False, group_type=2, group_list_type=0)`: per K group
/// [k0, k1), self[g] += x[k0:k1]ᵀ @ weight[k0:k1].
fn grouped_matmul_add(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.bool("transpose_x")? || b.bool("transpose_weight")? || b.int("group_type")? != 2 {
        return Err(Error::Unsupported("npu_grouped_matmul_add_ is replayed for its one documented layout (transposed x, K groups)".into()));
    }
    let y = b.tensor("input")?;
    let (x, w) = (b.tensor("x")?, b.tensor("weight")?);
    let mut ends: Vec<i64> = b.tensor("group_list")?.to_f64_vec()?.into_iter().map(|v| v as i64).collect();
    if b.int("group_list_type")? == 1 {
        ends = ends
            .iter()
            .scan(0, |s, &c| {
                *s += c;
                Some(*s)
            })
            .collect();
    }
    let (m, n) = (x.dims()[1], w.dims()[1]);
    let mut start = 0usize;
    let mut products = vec![];
    for &end in &ends {
        let len = (end as usize).saturating_sub(start);
        let xg = Value::Tensor(T { t: x.t.narrow(0, start, len)?.t()?, dtype: x.dtype });
        let wg = Value::Tensor(T { t: w.t.narrow(0, start, len)?, dtype: w.dtype });
        let p = first(rebind(ctx, "Torch.matmul", vec![xg, wg], &[])?)?;
        products.push(Value::Tensor(ctx.cast(tensor(&p)?, y.dtype)?));
        start = end as usize;
    }
    let stacked = first(rebind(ctx, "Torch.stack", vec![Value::List(products)], &[])?)?;
    let stacked = T { t: tensor(&stacked)?.t.reshape(y.dims())?, dtype: y.dtype };
    if stacked.t.elem_count() != ends.len() * m * n {
        return Err(Error::Arg("npu_grouped_matmul_add_: self holds one [M, N] block per group".into()));
    }
    rebind(ctx, "Torch.add", vec![Value::Tensor(y.clone()), Value::Tensor(stacked)], &[])
}

/// `npu_sign_bits_pack(self, size)`: one bit per element (1 where x ≥ 0,
/// NaN included), eight to a byte from the lowest bit, padded with 0
/// bits; uint8 of shape [size, bytes / size].
fn sign_bits_pack(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let v = b.tensor("input")?.to_f64_vec()?;
    let size = b.int("size")?.max(1) as usize;
    let bytes: Vec<f64> = v.chunks(8).map(|c| c.iter().enumerate().fold(0u32, |acc, (i, &x)| acc | (u32::from(!(x < 0.0)) << i)) as f64).collect();
    if !bytes.len().is_multiple_of(size) {
        return Err(Error::Arg(format!("npu_sign_bits_pack: size {size} does not divide {} bytes", bytes.len())));
    }
    let shape = [size, bytes.len() / size];
    Ok(vec![Value::Tensor(T::from_f64(bytes, &shape, TDType::U8, ctx.compute, &ctx.device)?)])
}

/// `npu_sign_bits_unpack(input, size, dtype)`: each byte's bits from the
/// lowest, 1 as +1 and 0 as −1, shape [size, 8·bytes / size].
fn sign_bits_unpack(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let v = b.tensor("input")?.to_f64_vec()?;
    let size = b.int("size")?.max(1) as usize;
    let dtype = b.opt_dtype("dtype")?.ok_or_else(|| Error::Arg("npu_sign_bits_unpack: dtype is float16 or float32".into()))?;
    let signs: Vec<f64> = v.iter().flat_map(|&byte| (0..8).map(move |i| if (byte as u32) >> i & 1 == 1 { 1.0 } else { -1.0 })).collect();
    if !signs.len().is_multiple_of(size) {
        return Err(Error::Arg(format!("npu_sign_bits_unpack: size {size} does not divide {} signs", signs.len())));
    }
    let shape = [size, signs.len() / size];
    Ok(vec![Value::Tensor(T::from_f64(signs, &shape, dtype, ctx.compute, &ctx.device)?)])
}

/// `npu_masked_fill_range(self, start, end, value, axis=-1)` on the last
/// axis: for each range i and batch row j (dim 0), elements
/// [start[i, j], end[i, j]) of row j take value[i], later ranges last.
fn masked_fill_range(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let axis = crate::ctx::dim(b.int("axis")?, x.rank())?;
    if axis + 1 != x.rank() || x.rank() < 2 {
        return Err(Error::Unsupported("npu_masked_fill_range is replayed on the last axis of a batch".into()));
    }
    let (start, end, value) = (b.tensor("start")?.to_f64_vec()?, b.tensor("end")?.to_f64_vec()?, b.tensor("value")?.to_f64_vec()?);
    let rows = x.dims()[0];
    let last = x.dims()[axis];
    let mut v = x.to_f64_vec()?;
    let per_row = v.len() / rows;
    for (i, &fill) in value.iter().enumerate() {
        for j in 0..rows {
            let (s, e) = (start[i * rows + j].max(0.0) as usize, (end[i * rows + j].max(0.0) as usize).min(last));
            for chunk in v[j * per_row..(j + 1) * per_row].chunks_mut(last) {
                chunk[s.min(e)..e].iter_mut().for_each(|x| *x = fill);
            }
        }
    }
    Ok(vec![Value::Tensor(T::from_f64(v, x.dims(), x.dtype, ctx.compute, &ctx.device)?)])
}

/// `npu_moe_gating_top_k(x, k, *, bias=None, ..., k_group=1, group_count=1,
/// group_select_mode=0, renorm=0, norm_type=0, out_flag=False,
/// routed_scaling_factor=1.0, eps=1e-20)`: p = softmax(x) (norm_type 0) or
/// sigmoid(x) (1); experts ranked by p + bias within the top `k_group`
/// groups (a group's score its max, or its top two's sum); y = p of the k
/// chosen (renormalized for sigmoid), times the scaling factor; the int32
/// expert ids; p itself (float32).
fn moe_gating_top_k(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.is_none("input_ids") || !b.is_none("tid2eid") || b.int("renorm")? != 0 {
        return Err(Error::Unsupported("npu_moe_gating_top_k's hash mode and renorm are not replayed".into()));
    }
    let x = b.tensor("x")?;
    let [rows, e] = *x.dims() else { return Err(Error::Arg("npu_moe_gating_top_k: x is [rows, experts]".into())) };
    let sigmoid = b.int("norm_type")? == 1;
    let wide = Value::Tensor(ctx.cast(x, TDType::F32)?);
    let p = first(if sigmoid { rebind(ctx, "Torch.sigmoid", vec![wide], &[])? } else { rebind(ctx, "Functional.softmax", vec![wide, Value::Int(-1)], &[])? })?;
    let pt = tensor(&p)?;
    let probs = pt.to_f64_vec()?;
    let bias = b.opt_tensor("bias")?.map(|t| t.to_f64_vec()).transpose()?;
    let (k, groups, keep) = (b.int("k")?.max(0) as usize, b.int("group_count")?.max(1) as usize, b.int("k_group")?.max(1) as usize);
    if e % groups != 0 || k > e {
        return Err(Error::Arg(format!("npu_moe_gating_top_k: {e} experts in {groups} groups, k {k}")));
    }
    let (per, top2) = (e / groups, b.int("group_select_mode")? == 1);
    let (mut ids, mut picked) = (Vec::with_capacity(rows * k), Vec::with_capacity(rows * k));
    for r in 0..rows {
        let row = &probs[r * e..(r + 1) * e];
        let score: Vec<f64> = (0..e).map(|i| row[i] + bias.as_ref().map_or(0.0, |bv| bv[i])).collect();
        let group_score = |g: usize| {
            let mut s: Vec<f64> = score[g * per..(g + 1) * per].to_vec();
            s.sort_by(|a, b| b.total_cmp(a));
            if top2 {
                s.iter().take(2).sum()
            } else {
                s[0]
            }
        };
        let mut order: Vec<usize> = (0..groups).collect();
        order.sort_by(|&a, &b| group_score(b).total_cmp(&group_score(a)));
        let kept: Vec<usize> = order.into_iter().take(keep).collect();
        let mut experts: Vec<usize> = (0..e).filter(|i| kept.contains(&(i / per))).collect();
        experts.sort_by(|&a, &b| score[b].total_cmp(&score[a]));
        let chosen = &experts[..k.min(experts.len())];
        let total: f64 = chosen.iter().map(|&i| row[i]).sum();
        for &i in chosen {
            ids.push(i as f64);
            let y = if sigmoid { row[i] / (total + b.float("eps")?) } else { row[i] };
            picked.push(y * b.float("routed_scaling_factor")?);
        }
    }
    Ok(vec![
        Value::Tensor(T::from_f64(picked, &[rows, k], x.dtype, ctx.compute, &ctx.device)?),
        Value::Tensor(T::from_f64(ids, &[rows, k], TDType::I32, ctx.compute, &ctx.device)?),
        p,
    ])
}

/// The parameters of the flash-attention inference kernels that the replay
/// does not take: quantization, per-sequence lengths, paged caches, shifts.
const ATTENTION_EXTRAS: &[&str] = &[
    "pse_shift",
    "padding_mask",
    "actual_seq_lengths",
    "actual_seq_lengths_kv",
    "deq_scale1",
    "quant_scale1",
    "deq_scale2",
    "dequant_scale1",
    "dequant_scale2",
    "quant_scale2",
    "quant_offset2",
    "antiquant_scale",
    "antiquant_offset",
    "block_table",
    "kv_padding_size",
];

/// `npu_prompt_flash_attention` and `npu_incre_flash_attention`, unquantized
/// and of whole sequences: `npu_fusion_attention`'s attention_out for the
/// same query, key, value, `num_heads`, `input_layout`, `atten_mask`,
/// `scale_value`, tokens and `sparse_mode` (key/value heads from their shape).
fn flash_attention(ctx: &Ctx, b: &Bound, prompt: bool) -> Result<Vec<Value>> {
    if let Some(p) = ATTENTION_EXTRAS.iter().find(|p| !b.is_none(p)) {
        return Err(Error::Unsupported(format!("a flash-attention inference call with {p} is not replayed")));
    }
    let args = vec![b.value("query").clone(), b.value("key").clone(), b.value("value").clone(), b.value("num_heads").clone(), b.value("input_layout").clone()];
    let mut kwargs = vec![("atten_mask", b.value("atten_mask").clone()), ("scale", b.value("scale_value").clone())];
    if prompt {
        kwargs.extend([
            ("pre_tockens", b.value("pre_tokens").clone()),
            ("next_tockens", b.value("next_tokens").clone()),
            ("sparse_mode", b.value("sparse_mode").clone()),
        ]);
    }
    Ok(vec![first(rebind(ctx, "NPU.npu_fusion_attention", args, &kwargs)?)?])
}

/// The keyword names one fused-inference attention API gives its settings.
struct InferKeys {
    api: &'static str,
    heads: &'static str,
    scale: &'static str,
    lse: &'static str,
    /// Settings replayed only when None: quantization, paging, rope parts,
    /// shared prefixes, variable lengths, positional shifts.
    extras: &'static [&'static str],
}

const FIA: InferKeys = InferKeys {
    api: "npu_fused_infer_attention_score",
    heads: "num_heads",
    scale: "scale",
    lse: "softmax_lse_flag",
    extras: &[
        "pse_shift",
        "actual_seq_lengths",
        "actual_seq_lengths_kv",
        "dequant_scale1",
        "quant_scale1",
        "dequant_scale2",
        "quant_scale2",
        "quant_offset2",
        "antiquant_scale",
        "antiquant_offset",
        "key_antiquant_scale",
        "key_antiquant_offset",
        "value_antiquant_scale",
        "value_antiquant_offset",
        "block_table",
        "query_padding_size",
        "kv_padding_size",
        "key_shared_prefix",
        "value_shared_prefix",
        "actual_shared_prefix_len",
        "query_rope",
        "key_rope",
        "key_rope_antiquant_scale",
    ],
};

const FIA_V2: InferKeys = InferKeys {
    api: "npu_fused_infer_attention_score_v2",
    heads: "num_query_heads",
    scale: "softmax_scale",
    lse: "return_softmax_lse",
    extras: &[
        "query_rope",
        "key_rope",
        "pse_shift",
        "actual_seq_qlen",
        "actual_seq_kvlen",
        "block_table",
        "dequant_scale_query",
        "dequant_scale_key",
        "dequant_offset_key",
        "dequant_scale_value",
        "dequant_offset_value",
        "dequant_scale_key_rope",
        "quant_scale_out",
        "quant_offset_out",
        "quant_scale_p",
        "learnable_sink",
        "out_dtype",
    ],
};

/// `npu_fused_infer_attention_score(_v2)`, unquantized, unpaged, of whole
/// sequences in layout BSH, BSND or BNSD: `npu_fusion_attention`'s
/// attention_out for the same heads, mask, scale, tokens and sparse mode
/// (key/value heads from their shape), and the softmax log-sum-exp
/// (max + ln sum, `[B, N, S1, 1]` float32) when asked for, else torch_npu's
/// placeholder: one float32 zero. With one query token (decoding) the
/// kernel ignores the sparse mode and the tokens, and takes a `[B, KV_S]`
/// mask per batch.
fn fused_infer_attention(ctx: &Ctx, b: &Bound, keys: &InferKeys) -> Result<Vec<Value>> {
    if let Some(p) = keys.extras.iter().find(|p| !b.is_none(p)) {
        return Err(Error::Unsupported(format!("{} with {p} is not replayed", keys.api)));
    }
    let layout = b.str("input_layout")?;
    if !matches!(layout, "BSH" | "BSND" | "BNSD") {
        return Err(Error::Unsupported(format!("{} in layout {layout} is not replayed (BSH, BSND and BNSD are)", keys.api)));
    }
    let query = b.tensor("query")?;
    let decoding = query.dims().get(if layout == "BNSD" { 2 } else { 1 }) == Some(&1);
    let args = vec![b.value("query").clone(), b.value("key").clone(), b.value("value").clone(), b.value(keys.heads).clone(), b.value("input_layout").clone()];
    let mut mask = b.value("atten_mask").clone();
    if let (true, Value::Tensor(m)) = (decoding, &mask) {
        if let [batch, kv] = *m.dims() {
            mask = Value::Tensor(T { t: m.t.reshape((batch, 1, 1, kv))?, dtype: m.dtype });
        }
    }
    let (sparse, pre, next) = if decoding {
        (Value::Int(0), Value::Int(2147483647), Value::Int(2147483647))
    } else {
        (b.value("sparse_mode").clone(), b.value("pre_tokens").clone(), b.value("next_tokens").clone())
    };
    let kwargs = [("atten_mask", mask), ("scale", b.value(keys.scale).clone()), ("pre_tockens", pre), ("next_tockens", next), ("sparse_mode", sparse)];
    let mut out = rebind(ctx, "NPU.npu_fusion_attention", args, &kwargs)?.into_iter();
    let attention = out.next().ok_or_else(|| Error::Arg(format!("{}: no attention_out", keys.api)))?;
    let lse = if b.bool(keys.lse)? {
        let (max, sum) = (out.next().unwrap_or(Value::None), out.next().unwrap_or(Value::None));
        let (max, sum) = (tensor(&max)?, tensor(&sum)?);
        let lse = (max.t.narrow(3, 0, 1)? + sum.t.narrow(3, 0, 1)?.log()?)?;
        ctx.out(lse, TDType::F32)?
    } else {
        T::from_f64(vec![0.0], &[1], TDType::F32, ctx.compute, &ctx.device)?
    };
    Ok(vec![attention, Value::Tensor(lse)])
}

/// `npu_fusion_attention_v3`: `npu_fusion_attention` for graph mode, its
/// sequence lengths as tensors; a `sink` is not replayed.
fn fusion_attention_v3(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.is_none("sink") {
        return Err(Error::Unsupported("npu_fusion_attention_v3 with sink (per-head softmax biases) is not replayed".into()));
    }
    let args = ["query", "key", "value", "head_num", "input_layout"].map(|p| b.value(p).clone()).to_vec();
    let lengths = |p: &str| -> Result<Value> {
        Ok(match b.value(p) {
            Value::None => Value::None,
            v => Value::List(super::ms_array::ints(v, p)?.into_iter().map(Value::Int).collect()),
        })
    };
    let mut kwargs: Vec<(&str, Value)> = [
        "pse",
        "padding_mask",
        "atten_mask",
        "scale",
        "keep_prob",
        "pre_tockens",
        "next_tockens",
        "inner_precise",
        "prefix",
        "sparse_mode",
        "gen_mask_parallel",
        "sync",
        "softmax_layout",
    ]
    .iter()
    .map(|&p| (p, b.value(p).clone()))
    .collect();
    kwargs.extend([("actual_seq_qlen", lengths("actual_seq_qlen")?), ("actual_seq_kvlen", lengths("actual_seq_kvlen")?)]);
    rebind(ctx, "NPU.npu_fusion_attention", args, &kwargs)
}

/// An inference kernel: forward only.
const fn kernel(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, standard: Standard) -> Op {
    Op { names, sig, forward, backward: false, standard, random: false, facts: &[] }
}

/// The entries.
pub static OPS: &[Op] = &[
    kernel(&["NPU.npu_add_rms_norm_v2"], "x1, x2, gamma, epsilon=1e-06", add_rms_norm_v2, Standard::Accuracy),
    kernel(&["NPU.npu_apply_rotary_pos_emb"], "query, key, cos, sin, layout='BSND', rotary_mode='half'", apply_rotary_pos_emb, Standard::Accuracy),
    kernel(
        &["NPU.npu_transpose_batchmatmul"],
        "input, weight, *, bias=None, scale=None, perm_x1=None, perm_x2=None, perm_y=None, batch_split_factor=1",
        transpose_batchmatmul,
        Standard::Accuracy,
    ),
    kernel(&["NPU.npu_fused_matmul"], "x1, x2, *, bias=None, x3=None, fused_op_type=''", fused_matmul, Standard::Accuracy),
    kernel(&["NPU.npu_attention_update"], "lse, local_out, update_type", attention_update, Standard::Accuracy),
    kernel(
        &["NPU.npu_grouped_matmul_add_"],
        "input, x, weight, group_list, *, transpose_x=True, transpose_weight=False, group_type=2, group_list_type=0",
        grouped_matmul_add,
        Standard::Accuracy,
    ),
    kernel(&["NPU.npu_sign_bits_pack"], "input, size", sign_bits_pack, Standard::Exact),
    kernel(&["NPU.npu_sign_bits_unpack"], "input, size, dtype", sign_bits_unpack, Standard::Exact),
    kernel(&["NPU.npu_masked_fill_range"], "input, start, end, value, axis=-1", masked_fill_range, Standard::Exact),
    kernel(
        &["NPU.npu_prompt_flash_attention"],
        "query, key, value, *, pse_shift=None, padding_mask=None, atten_mask=None, actual_seq_lengths=None, deq_scale1=None, quant_scale1=None, deq_scale2=None, quant_scale2=None, quant_offset2=None, num_heads=1, scale_value=1.0, pre_tokens=2147473647, next_tokens=0, input_layout='BSH', num_key_value_heads=0, actual_seq_lengths_kv=None, sparse_mode=0",
        |c, b| flash_attention(c, b, true),
        Standard::Accuracy,
    ),
    kernel(
        &["NPU.npu_incre_flash_attention"],
        "query, key, value, *, padding_mask=None, pse_shift=None, atten_mask=None, actual_seq_lengths=None, antiquant_scale=None, antiquant_offset=None, block_table=None, dequant_scale1=None, quant_scale1=None, dequant_scale2=None, quant_scale2=None, quant_offset2=None, kv_padding_size=None, num_heads=1, scale_value=1.0, input_layout='BSH', num_key_value_heads=0, block_size=0, inner_precise=1",
        |c, b| flash_attention(c, b, false),
        Standard::Accuracy,
    ),
    kernel(
        &["NPU.npu_fused_infer_attention_score"],
        "query, key, value, *, pse_shift=None, atten_mask=None, actual_seq_lengths=None, actual_seq_lengths_kv=None, dequant_scale1=None, quant_scale1=None, dequant_scale2=None, quant_scale2=None, quant_offset2=None, antiquant_scale=None, antiquant_offset=None, key_antiquant_scale=None, key_antiquant_offset=None, value_antiquant_scale=None, value_antiquant_offset=None, block_table=None, query_padding_size=None, kv_padding_size=None, key_shared_prefix=None, value_shared_prefix=None, actual_shared_prefix_len=None, query_rope=None, key_rope=None, key_rope_antiquant_scale=None, num_heads=1, scale=1.0, pre_tokens=2147483647, next_tokens=2147483647, input_layout='BSH', num_key_value_heads=0, sparse_mode=0, inner_precise=0, block_size=0, antiquant_mode=0, key_antiquant_mode=0, value_antiquant_mode=0, softmax_lse_flag=False",
        |c, b| fused_infer_attention(c, b, &FIA),
        Standard::Accuracy,
    ),
    kernel(
        &["NPU.npu_fused_infer_attention_score_v2"],
        "query, key, value, *, query_rope=None, key_rope=None, pse_shift=None, atten_mask=None, actual_seq_qlen=None, actual_seq_kvlen=None, block_table=None, dequant_scale_query=None, dequant_scale_key=None, dequant_offset_key=None, dequant_scale_value=None, dequant_offset_value=None, dequant_scale_key_rope=None, quant_scale_out=None, quant_offset_out=None, quant_scale_p=None, learnable_sink=None, num_query_heads=1, num_key_value_heads=0, softmax_scale=1.0, pre_tokens=2147483647, next_tokens=2147483647, input_layout='BSH', sparse_mode=0, block_size=0, query_quant_mode=0, key_quant_mode=0, value_quant_mode=0, inner_precise=0, return_softmax_lse=False, query_dtype=None, key_dtype=None, value_dtype=None, query_rope_dtype=None, key_rope_dtype=None, key_shared_prefix_dtype=None, value_shared_prefix_dtype=None, dequant_scale_query_dtype=None, dequant_scale_key_dtype=None, dequant_scale_value_dtype=None, dequant_scale_key_rope_dtype=None, out_dtype=None",
        |c, b| fused_infer_attention(c, b, &FIA_V2),
        Standard::Accuracy,
    ),
    Op {
        names: &["NPU.npu_fusion_attention_v3"],
        sig: "query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False, softmax_layout='', sink=None",
        forward: fusion_attention_v3,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: super::npu_attention::FUSION_ATTENTION_FACTS,
    },
    kernel(
        &["NPU.npu_moe_gating_top_k"],
        "x, k, *, bias=None, input_ids=None, tid2eid=None, k_group=1, group_count=1, group_select_mode=0, renorm=0, norm_type=0, out_flag=False, routed_scaling_factor=1.0, eps=1e-20",
        moe_gating_top_k,
        Standard::Accuracy,
    ),
];
