//! `torch.nn.functional.multi_head_attention_forward`, what every
//! `nn.MultiheadAttention` records: torch's composition step by step (the
//! packed or separate input projections, `bias_k`/`bias_v`, `add_zero_attn`,
//! the key padding mask merged into the attention mask, the scaled product,
//! softmax, the output projection), so that autograd gives every input's
//! gradient. `is_causal` is a hint: torch requires the causal `attn_mask`
//! with it and computes the same values. A dropout in training is random:
//! refused.

use candle_core::{Tensor, D};

use super::nn::{float_pair, softmax_t};
use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// `x @ wᵀ + b` over the last dim.
fn project(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let y = x.broadcast_matmul(&w.t()?)?;
    Ok(match b {
        Some(b) => y.broadcast_add(b)?,
        None => y,
    })
}

/// A mask as an additive float mask: a bool one is `-inf` where true.
fn additive(mask: &T, like: &Tensor) -> Result<Tensor> {
    Ok(if mask.dtype == TDType::Bool {
        let neg = (Tensor::ones(mask.dims(), like.dtype(), like.device())? * f64::NEG_INFINITY)?;
        mask.t.ne(0.0)?.where_cond(&neg, &Tensor::zeros(mask.dims(), like.dtype(), like.device())?)?
    } else {
        mask.t.clone()
    })
}

/// `t` with one zero appended along its last dim (a mask for an appended key).
fn pad_last(t: &Tensor) -> Result<Tensor> {
    Ok(t.pad_with_zeros(t.rank() - 1, 0, 1)?)
}

/// The input projections of query, key and value: one packed `[3E, E]`
/// weight's thirds, or three weights; the packed bias's thirds.
fn projections(b: &Bound, inputs: [&Tensor; 3], embed: usize) -> Result<[Tensor; 3]> {
    let bias = b.opt_tensor("in_proj_bias")?.map(|t| t.t.clone());
    let separate = b.bool("use_separate_proj_weight")?;
    let mut out = vec![];
    for (i, (x, name)) in inputs.into_iter().zip(["q_proj_weight", "k_proj_weight", "v_proj_weight"]).enumerate() {
        let w = if separate { b.tensor(name)?.t.clone() } else { b.tensor("in_proj_weight")?.t.narrow(0, i * embed, embed)? };
        let bias = bias.as_ref().map(|bb| bb.narrow(0, i * embed, embed)).transpose()?;
        out.push(project(x, &w, bias.as_ref())?);
    }
    let [q, k, v]: [Tensor; 3] = out.try_into().map_err(|_| Error::Arg("multi_head_attention_forward: three projections".into()))?;
    Ok([q, k, v])
}

/// `attn_mask` (`[1, L, S]` from a 2-D one) and `key_padding_mask`
/// (`[N, S]`) as additive float masks.
fn masks(b: &Bound, like: &Tensor, batched: bool) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let attn_mask = match b.opt_tensor("attn_mask")? {
        Some(m) => {
            let m = additive(m, like)?;
            Some(if m.rank() == 2 { m.unsqueeze(0)? } else { m })
        }
        None => None,
    };
    let kpm = match b.opt_tensor("key_padding_mask")? {
        Some(m) => {
            let m = additive(m, like)?;
            Some(if batched { m } else { m.unsqueeze(0)? })
        }
        None => None,
    };
    Ok((attn_mask, kpm))
}

fn multi_head_attention_forward(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (query, key, value) = (b.tensor("query")?, b.tensor("key")?, b.tensor("value")?);
    let dtype = float_pair(query, key, "multi_head_attention_forward")?;
    let heads = b.int("num_heads")?;
    if b.bool("training")? && b.float("dropout_p")? > 0.0 {
        return Err(Error::Unsupported("multi_head_attention_forward: dropout in training draws a random mask, which the dump does not record".into()));
    }
    if !b.is_none("static_k") || !b.is_none("static_v") {
        return Err(Error::Unsupported("multi_head_attention_forward with static_k or static_v is not replayed".into()));
    }
    let batched = query.rank() == 3;
    let lift = |t: &Tensor| -> Result<Tensor> { Ok(if batched { t.clone() } else { t.unsqueeze(1)? }) };
    let (q_in, k_in, v_in) = (lift(&query.t)?, lift(&key.t)?, lift(&value.t)?);
    let (tgt, bsz, embed) = q_in.dims3()?;
    if heads <= 0 || embed % heads as usize != 0 || embed as i64 != b.int("embed_dim_to_check")? {
        return Err(Error::Arg(format!(
            "multi_head_attention_forward: embed_dim {embed} for {heads} heads (embed_dim_to_check {})",
            b.int("embed_dim_to_check")?
        )));
    }
    let h = heads as usize;
    let hd = embed / h;
    let [q, mut k, mut v] = projections(b, [&q_in, &k_in, &v_in], embed)?;
    let (mut attn_mask, mut kpm) = masks(b, &q, batched)?;
    // bias_k and bias_v: one more key and value per sample.
    if let (Some(bk), Some(bv)) = (b.opt_tensor("bias_k")?, b.opt_tensor("bias_v")?) {
        k = Tensor::cat(&[&k, &bk.t.reshape((1, 1, embed))?.broadcast_as((1, bsz, embed))?], 0)?;
        v = Tensor::cat(&[&v, &bv.t.reshape((1, 1, embed))?.broadcast_as((1, bsz, embed))?], 0)?;
        attn_mask = attn_mask.map(|m| pad_last(&m)).transpose()?;
        kpm = kpm.map(|m| pad_last(&m)).transpose()?;
    }
    // [L, N, E] -> [N·H, L, hd].
    let heads_first = |t: &Tensor| -> Result<Tensor> {
        let len = t.dims()[0];
        Ok(t.reshape((len, bsz * h, hd))?.transpose(0, 1)?.contiguous()?)
    };
    let q = heads_first(&q)?;
    let (mut k, mut v) = (heads_first(&k)?, heads_first(&v)?);
    if b.bool("add_zero_attn")? {
        let zeros = Tensor::zeros((bsz * h, 1, hd), k.dtype(), k.device())?;
        k = Tensor::cat(&[&k, &zeros], 1)?;
        v = Tensor::cat(&[&v, &zeros], 1)?;
        attn_mask = attn_mask.map(|m| pad_last(&m)).transpose()?;
        kpm = kpm.map(|m| pad_last(&m)).transpose()?;
    }
    let src = k.dims()[1];
    if let Some(m) = kpm {
        let m = m.reshape((bsz, 1, 1, src))?.broadcast_as((bsz, h, 1, src))?.reshape((bsz * h, 1, src))?;
        attn_mask = Some(match attn_mask {
            Some(a) => a.broadcast_add(&m)?,
            None => m,
        });
    }
    let scores = (q * (1.0 / hd as f64).sqrt())?.matmul(&k.transpose(D::Minus2, D::Minus1)?)?;
    let scores = match &attn_mask {
        Some(m) => scores.broadcast_add(m)?,
        None => scores,
    };
    let weights = softmax_t(&scores, 2)?;
    let attended = weights.matmul(&v)?.transpose(0, 1)?.contiguous()?.reshape((tgt * bsz, embed))?;
    let out_bias = b.opt_tensor("out_proj_bias")?.map(|t| t.t.clone());
    let out = project(&attended, &b.tensor("out_proj_weight")?.t, out_bias.as_ref())?.reshape((tgt, bsz, embed))?;
    let out = if batched { out } else { out.squeeze(1)? };
    let out = Value::Tensor(ctx.out(out, dtype)?);
    if !b.bool("need_weights")? {
        return Ok(vec![out, Value::None]);
    }
    let w = weights.reshape((bsz, h, tgt, src))?;
    let w = if b.bool("average_attn_weights")? { w.mean(1)? } else { w };
    let w = if batched { w } else { w.squeeze(0)? };
    Ok(vec![out, Value::Tensor(ctx.out(w, dtype)?)])
}

/// The entry.
pub static OPS: &[Op] = &[Op {
    names: &["Functional.multi_head_attention_forward"],
    sig: "query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, \
          out_proj_weight, out_proj_bias, training=True, key_padding_mask=None, need_weights=True, attn_mask=None, \
          use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None, \
          average_attn_weights=True, is_causal=False",
    forward: multi_head_attention_forward,
    backward: true,
    standard: Standard::Accuracy,
    random: false,
    facts: &[],
}];
