//! torch_npu's `npu_fusion_attention` (`NPU.npu_fusion_attention`) and
//! MindSpore's `flash_attention_score` (the same Ascend operator; its
//! entry is in `ms_fused.rs`: `real_shift`, `attn_mask`, `scalar_value`,
//! `pre_tokens`, `next_tokens` are its names of `pse`, `atten_mask`,
//! `scale`, `pre_tockens`, `next_tockens`, and it returns
//! `attention_out` alone), by the documented formula
//! `softmax(mask(scale·(Q·Kᵀ + pse)))·V` in float64,
//! composed from candle primitives so that the gradients of query, key and
//! value are autograd's.
//!
//! Its outputs are `(attention_out, softmax_max, softmax_sum, softmax_out,
//! seed, offset, numels)`. Replayed and judged: `attention_out` (by the
//! run's standard, in query's layout and dtype), `softmax_max` (the row
//! maxima of the masked, scaled logits) and `softmax_sum` (the rows' sums
//! of `exp(logit - max)`), both float32 and repeated 8 times along a last
//! dim as torch_npu stores them (`[B, N1, S1, 8]`; `[T1, N1, 8]` in TND).
//! Not replayed, so no row: `softmax_out` (reserved, unused by torch_npu)
//! and `seed`, `offset`, `numels` (the device generator's state for the
//! dropout mask).
//!
//! Layouts BSH, SBH, BSND, BNSD and TND (with `actual_seq_qlen` /
//! `actual_seq_kvlen`, cumulative), grouped-query key/value heads, `pse`
//! broadcast to `[B, N1, S1, S2]`. Masks (true = not attended) by
//! `sparse_mode`: 0 the given `atten_mask` and the band between
//! `pre_tockens` and `next_tockens` (none without a mask: torch_npu's
//! documentation), 1 the given `atten_mask`, 2 the causal mask from
//! the top left, 3 from the bottom right, 4 the band (equal sequence
//! lengths). Refused, each with its reason (a `skip` row): `keep_prob < 1`
//! (the dropout mask is drawn on the device from `seed`/`offset` inside
//! the softmax; no output shows it), sparse modes 5 to 8 (prefix and
//! variable-length compressed masks), `padding_mask` (reserved), a
//! `softmax_layout` other than the default, a row
//! with every key masked (torch_npu does not document its result).

use candle_core::{DType, Device, Tensor, D};

use super::attention_heads::{four, Heads};
use super::nn::softmax_t;
use super::{Fact, Op, PartMagnitudes, Parts, Rest, Rounding, Slicing, Standard, TokenKeys};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// The keyword names one fused attention API gives its settings, and its name.
struct Keys {
    api: &'static str,
    pse: &'static str,
    scale: &'static str,
    tokens: TokenKeys,
}

/// torch_npu's mask and token keywords.
const NPU_TOKENS: TokenKeys = TokenKeys { mask: "atten_mask", pre: "pre_tockens", next: "next_tockens" };

/// MindSpore's mask and token keywords (flash_attention_score).
pub(super) const MS_TOKENS: TokenKeys = TokenKeys { mask: "attn_mask", pre: "pre_tokens", next: "next_tokens" };

const NPU: Keys = Keys { api: "npu_fusion_attention", pse: "pse", scale: "scale", tokens: NPU_TOKENS };
const MS: Keys = Keys { api: "flash_attention_score", pse: "real_shift", scale: "scalar_value", tokens: MS_TOKENS };

fn unsupported<X>(api: &str, why: impl Into<String>) -> Result<X> {
    Err(Error::Unsupported(format!("{api}: {}", why.into())))
}

fn arg<X>(api: &str, why: impl Into<String>) -> Result<X> {
    Err(Error::Arg(format!("{api}: {}", why.into())))
}

/// `t` in `layout` as `[B, N, S, D]` (`heads` splits H in BSH and SBH).
fn to_bnsd(api: &str, t: &Tensor, layout: &str, heads: usize, what: &str) -> Result<Tensor> {
    let dims = t.dims().to_vec();
    let split = |h: usize| -> Result<usize> {
        if heads == 0 || !h.is_multiple_of(heads) {
            return arg(api, format!("{what}'s hidden size {h} is not a multiple of {heads} heads"));
        }
        Ok(h / heads)
    };
    Ok(match (layout, dims.as_slice()) {
        ("BSH", &[b, s, h]) => t.reshape((b, s, heads, split(h)?))?.transpose(1, 2)?.contiguous()?,
        ("SBH", &[s, b, h]) => t.reshape((s, b, heads, split(h)?))?.permute((1, 2, 0, 3))?.contiguous()?,
        ("BSND", &[_, _, _, _]) => t.transpose(1, 2)?.contiguous()?,
        ("BNSD", &[_, _, _, _]) => t.clone(),
        _ => return arg(api, format!("{what} of shape {dims:?} is not in layout {layout}")),
    })
}

/// `[B, N, S, D]` back to `layout`.
fn from_bnsd(t: &Tensor, layout: &str) -> Result<Tensor> {
    let (b, n, s, d) = t.dims4()?;
    Ok(match layout {
        "BSH" => t.transpose(1, 2)?.contiguous()?.reshape((b, s, n * d))?,
        "SBH" => t.permute((2, 0, 1, 3))?.contiguous()?.reshape((s, b, n * d))?,
        "BSND" => t.transpose(1, 2)?.contiguous()?,
        _ => t.clone(),
    })
}

/// The heads of `key`/`value` in BSH and SBH: their hidden size over query's head dim.
fn kv_heads(api: &str, k: &T, layout: &str, head_dim: usize) -> Result<usize> {
    match (layout, k.dims()) {
        ("BSH" | "SBH", &[_, _, h]) if head_dim > 0 && h % head_dim == 0 => Ok(h / head_dim),
        ("BSND", &[_, _, n, _]) | ("BNSD", &[_, n, _, _]) => Ok(n),
        _ => arg(api, format!("key of shape {:?} does not fit layout {layout} with head dim {head_dim}", k.dims())),
    }
}

/// `[B, N2, S, D]` repeated to `[B, N1, S, D]`: query head `i` reads key/value head `i / (N1/N2)`.
fn repeat_heads(api: &str, t: &Tensor, n1: usize) -> Result<Tensor> {
    let (b, n2, s, d) = t.dims4()?;
    if n2 == 0 || !n1.is_multiple_of(n2) {
        return arg(api, format!("{n1} query heads are not a multiple of {n2} key/value heads"));
    }
    if n1 == n2 {
        return Ok(t.clone());
    }
    Ok(t.unsqueeze(2)?.broadcast_as((b, n2, n1 / n2, s, d))?.contiguous()?.reshape((b, n1, s, d))?)
}

/// A `[s1, s2]` mask (1 = not attended) of the places where `masked(i, j)`.
fn mask_of(s1: usize, s2: usize, device: &Device, masked: impl Fn(i64, i64) -> bool) -> Result<Tensor> {
    let m: Vec<u8> = (0..s1).flat_map(|i| (0..s2).map(move |j| (i, j))).map(|(i, j)| masked(i as i64, j as i64) as u8).collect();
    Ok(Tensor::from_vec(m, (s1, s2), device)?)
}

/// What one call's settings mask, for sequences of `s1` queries and `s2`
/// keys, on `device`; `given` is `atten_mask` (for one sequence in TND).
fn mask(k: &Keys, b: &Bound, given: Option<&T>, s1: usize, s2: usize, device: &Device) -> Result<Option<Tensor>> {
    let (pre, next) = (b.int(k.tokens.pre)?, b.int(k.tokens.next)?);
    let band = move |i: i64, j: i64| j - i > next || i - j > pre;
    let given = given.map(|m| m.t.ne(0.0)).transpose()?;
    let (s1i, s2i) = (s1 as i64, s2 as i64);
    Ok(match b.int("sparse_mode")? {
        // torch_npu's documentation: without atten_mask nothing is masked and
        // the tokens are ignored; with it, only the band between them is
        // computed, so the mask and the band both apply. Megatron's causal
        // call (a causal mask, next_tockens 0, pre_tockens past the sequence)
        // masks the same either way, as msprobe's reference (the mask alone) does.
        0 => match given {
            Some(m) if pre >= s1i && next >= s2i => Some(m),
            Some(m) => Some(m.broadcast_maximum(&mask_of(s1, s2, device, band)?)?),
            None => None,
        },
        1 => given,
        2 => Some(mask_of(s1, s2, device, |i, j| j > i)?),
        3 => Some(mask_of(s1, s2, device, |i, j| j - i > s2i - s1i)?),
        4 if s1 == s2 => Some(mask_of(s1, s2, device, band)?),
        4 => return unsupported(k.api, format!("sparse_mode 4 with {s1} queries and {s2} keys (the band's alignment is replayed for equal lengths only)")),
        m @ 5..=8 => return unsupported(k.api, format!("sparse_mode {m} (prefix and variable-length compressed masks) is not replayed")),
        m => return arg(k.api, format!("sparse_mode must be 0 to 8, got {m}")),
    })
}

/// Attention of `[B, N1, S1, D]` queries over `[B, N1, S2, D]` keys and
/// values: `(out [B, N1, S1, D], row max, row sum of exp)`, both `[B, N1, S1, 1]`.
#[allow(clippy::too_many_arguments)]
fn attend(keys: &Keys, ctx: &Ctx, b: &Bound, q: &Tensor, k: &Tensor, v: &Tensor, m: Option<Tensor>, dtype: TDType) -> Result<(Tensor, Tensor, Tensor)> {
    let by_heads = b.opt_tensor(keys.pse)?.is_none() && crate::device::is_host(q) && matches!(q.dtype(), DType::F32 | DType::F64);
    if by_heads {
        return attend_by_heads(keys, b, q, k, v, m);
    }
    let mut logits = q.matmul(&k.transpose(2, 3)?.contiguous()?)?;
    if let Some(pse) = b.opt_tensor(keys.pse)? {
        logits = logits
            .broadcast_add(&pse.t)
            .map_err(|_| Error::Arg(format!("{}: {} of shape {:?} does not broadcast to {:?}", keys.api, keys.pse, pse.dims(), logits.dims())))?;
    }
    logits = (logits * b.float(keys.scale)?)?;
    if let Some(m) = m {
        let m = m
            .broadcast_as(logits.dims())
            .map_err(|_| Error::Arg(format!("{}: {} of shape {:?} does not broadcast to {:?}", keys.api, keys.tokens.mask, m.dims(), logits.dims())))?;
        if m.min_keepdim(D::Minus1)?.flatten_all()?.max(0)?.to_scalar::<u8>()? != 0 {
            return unsupported(keys.api, "a query row with every key masked (the kernel's documentation does not say its result)");
        }
        logits = m.where_cond(&ctx.full(logits.dims(), f64::NEG_INFINITY, dtype)?, &logits)?;
    }
    let max = logits.max_keepdim(D::Minus1)?.detach();
    let sum = logits.detach().broadcast_sub(&max)?.exp()?.sum_keepdim(D::Minus1)?;
    let p = softmax_t(&logits, 3)?;
    Ok((p.matmul(v)?, max, sum))
}

/// [`attend`] without a `pse`, one head at a time ([`Heads`]): the same
/// results and gradients in one head's working set.
fn attend_by_heads(keys: &Keys, b: &Bound, q: &Tensor, k: &Tensor, v: &Tensor, m: Option<Tensor>) -> Result<(Tensor, Tensor, Tensor)> {
    let (bs, n, s1, d) = q.dims4()?;
    let s2 = k.dims4()?.2;
    let mask = match m {
        None => None,
        Some(m) => {
            let m4 = four(&m)?;
            let dims = m4.dims();
            let fits = dims.len() == 4 && (dims[0] == 1 || dims[0] == bs) && (dims[1] == 1 || dims[1] == n) && m4.broadcast_as((bs, n, s1, s2)).is_ok();
            if !fits {
                return arg(keys.api, format!("{} of shape {:?} does not broadcast to {:?}", keys.tokens.mask, m.dims(), [bs, n, s1, s2]));
            }
            if m4.min_keepdim(D::Minus1)?.flatten_all()?.max(0)?.to_scalar::<u8>()? != 0 {
                return unsupported(keys.api, "a query row with every key masked (the kernel's documentation does not say its result)");
            }
            Some(m4)
        }
    };
    let heads = Heads { mask, scale: b.float(keys.scale)?, pse: None };
    let all = q.contiguous()?.apply_op3(&k.contiguous()?, &v.contiguous()?, heads)?;
    Ok((all.narrow(3, 0, d)?, all.narrow(3, d, 1)?.detach(), all.narrow(3, d + 1, 1)?.detach()))
}

/// A `[.., 1]` statistic repeated 8 times along its last dim, as torch_npu stores it.
fn eight(t: &Tensor) -> Result<Tensor> {
    let mut dims = t.dims().to_vec();
    *dims.last_mut().unwrap_or(&mut 0) = 8;
    Ok(t.broadcast_as(dims.as_slice())?.contiguous()?)
}

/// The cumulative sequence ends of TND's `actual_seq_*len` over `total` rows.
fn ends(api: &str, b: &Bound, name: &str, total: usize) -> Result<Vec<usize>> {
    let Some(ends) = b.opt_ints(name)? else { return arg(api, format!("layout TND needs {name}")) };
    let ok = ends.windows(2).all(|w| w[0] <= w[1]) && ends.first().is_some_and(|&e| e >= 0) && ends.last() == Some(&(total as i64));
    if !ok {
        return arg(api, format!("{name} {ends:?} must be non-decreasing cumulative lengths ending at {total}"));
    }
    Ok(ends.into_iter().map(|e| e as usize).collect())
}

/// npu_fusion_attention: `(attention_out, softmax_max, softmax_sum)`.
fn fusion_attention(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.str("softmax_layout")?.is_empty() {
        return unsupported(NPU.api, "a softmax_layout other than the default (softmax_max and softmax_sum laid out otherwise) is not replayed");
    }
    let (out, max, sum) = attention(&NPU, ctx, b)?;
    Ok(vec![Value::Tensor(out), Value::Tensor(ctx.out(eight(&max)?, TDType::F32)?), Value::Tensor(ctx.out(eight(&sum)?, TDType::F32)?)])
}

/// MindSpore's flash_attention_score: `attention_out` alone.
pub(super) fn flash_attention_score(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    Ok(vec![Value::Tensor(attention(&MS, ctx, b)?.0)])
}

/// How one call's tensors split into attention problems `[B, N1, S, D]`
/// (the whole batch, or one per TND sequence; key and value heads repeated
/// to query's) and back.
struct Split {
    layout: String,
    /// Query heads (head_num) and key/value heads.
    n1: usize,
    n2: usize,
    /// TND's cumulative query and key sequence ends.
    ends: Option<(Vec<usize>, Vec<usize>)>,
}

impl Split {
    /// The split of a call's query, key and value, checked against its layout and head_num.
    fn of(keys: &Keys, b: &Bound) -> Result<Split> {
        let api = keys.api;
        let (q, k, v) = (b.tensor("query")?, b.tensor("key")?, b.tensor("value")?);
        let layout = b.str("input_layout")?.to_string();
        let n1 = usize::try_from(b.int("head_num")?).unwrap_or(0);
        if layout == "TND" {
            let (t1, n, d) = q.t.dims3()?;
            if n != n1 {
                return arg(api, format!("query of shape {:?} in TND has {n} heads, head_num is {n1}", q.dims()));
            }
            if b.opt_tensor(keys.tokens.mask)?.is_some() && b.int("sparse_mode")? < 2 {
                return unsupported(api, format!("{} in layout TND with sparse_mode 0 or 1 is not replayed", keys.tokens.mask));
            }
            if k.rank() != 3 || k.dims()[2] != d || k.dims() != v.dims() {
                return arg(api, format!("key {:?} and value {:?} do not fit layout TND with head dim {d}", k.dims(), v.dims()));
            }
            let (qe, ke) = (ends(api, b, "actual_seq_qlen", t1)?, ends(api, b, "actual_seq_kvlen", k.dims()[0])?);
            if qe.len() != ke.len() {
                return arg(api, format!("actual_seq_qlen has {} sequences, actual_seq_kvlen {}", qe.len(), ke.len()));
            }
            return Ok(Split { layout, n1, n2: k.dims()[1], ends: Some((qe, ke)) });
        }
        let q4 = to_bnsd(api, &q.t, &layout, n1, "query")?;
        let (bs, _, _, d) = q4.dims4()?;
        let n2 = kv_heads(api, k, &layout, d)?;
        let (k4, v4) = (to_bnsd(api, &k.t, &layout, n2, "key")?, to_bnsd(api, &v.t, &layout, n2, "value")?);
        if k4.dims4()?.0 != bs || k4.dims4()?.3 != d || k4.dims() != v4.dims() {
            return arg(api, format!("query {:?}, key {:?} and value {:?} do not fit layout {layout}", q.dims(), k.dims(), v.dims()));
        }
        Ok(Split { layout, n1, n2, ends: None })
    }

    /// The `[from, to)` rows of each TND sequence (`key`: the key sequences').
    fn ranges(&self, key: bool) -> Vec<(usize, usize)> {
        let Some((qe, ke)) = &self.ends else { return vec![] };
        let ends = if key { ke } else { qe };
        ends.iter().enumerate().map(|(i, &e)| (if i == 0 { 0 } else { ends[i - 1] }, e)).collect()
    }

    /// A tensor of query's layout (query, the output's gradient) per problem.
    fn queries(&self, api: &str, t: &Tensor) -> Result<Vec<Tensor>> {
        self.parts(api, t, false, self.n1)
    }

    /// A tensor of key's layout (key, value) per problem, its heads repeated to query's.
    fn keys_values(&self, api: &str, t: &Tensor) -> Result<Vec<Tensor>> {
        self.parts(api, t, true, self.n2)?.iter().map(|t| repeat_heads(api, t, self.n1)).collect()
    }

    fn parts(&self, api: &str, t: &Tensor, key: bool, heads: usize) -> Result<Vec<Tensor>> {
        if self.ends.is_none() {
            return Ok(vec![to_bnsd(api, t, &self.layout, heads, if key { "key" } else { "query" })?]);
        }
        self.ranges(key).into_iter().map(|(from, to)| Ok(t.narrow(0, from, to - from)?.unsqueeze(0)?.transpose(1, 2)?.contiguous()?)).collect()
    }

    /// Per-problem `[B, N1, S1, W]` results back in query's layout (W = D),
    /// or as statistics (`[B, N1, S1, 1]`; TND `[T1, N1, 1]`).
    fn back(&self, parts: Vec<Tensor>, statistics: bool) -> Result<Tensor> {
        if self.ends.is_some() {
            let back = parts.iter().map(|t| Ok(t.transpose(1, 2)?.squeeze(0)?.contiguous()?)).collect::<Result<Vec<_>>>()?;
            return Ok(Tensor::cat(&back, 0)?);
        }
        let whole = parts.into_iter().next().ok_or_else(|| Error::Arg("attention: no problem".into()))?;
        if statistics {
            Ok(whole)
        } else {
            from_bnsd(&whole, &self.layout)
        }
    }

    /// Per-problem gradients of repeated key/value heads, summed over each
    /// group back to key's heads and layout.
    fn back_to_keys(&self, parts: Vec<Tensor>) -> Result<Tensor> {
        let grouped = parts
            .into_iter()
            .map(|t| {
                let (b, n1, s, d) = t.dims4()?;
                Ok(t.reshape((b, self.n2, n1 / self.n2.max(1), s, d))?.sum(2)?)
            })
            .collect::<Result<Vec<_>>>()?;
        self.back(grouped, false)
    }
}

/// The masks of each problem of `split` (TND: the sparse mode's, per sequence).
fn masks(keys: &Keys, b: &Bound, split: &Split, qs: &[Tensor], ks: &[Tensor], device: &Device) -> Result<Vec<Option<Tensor>>> {
    let given = if split.ends.is_some() { None } else { b.opt_tensor(keys.tokens.mask)? };
    qs.iter().zip(ks).map(|(q, k)| mask(keys, b, given, q.dims4()?.2, k.dims4()?.2, device)).collect()
}

/// One call of either API: `attention_out` in query's layout and dtype, and
/// the row max and sum of exp as computed (`[B, N1, S1, 1]`; `[T1, N1, 1]` in TND).
fn attention(keys: &Keys, ctx: &Ctx, b: &Bound) -> Result<(T, Tensor, Tensor)> {
    let q = b.tensor("query")?;
    refuse(keys, b)?;
    let split = Split::of(keys, b)?;
    let (qs, ks, vs) = (split.queries(keys.api, &q.t)?, split.keys_values(keys.api, &b.tensor("key")?.t)?, split.keys_values(keys.api, &b.tensor("value")?.t)?);
    let masks = masks(keys, b, &split, &qs, &ks, &ctx.device)?;
    let (mut outs, mut maxs, mut sums) = (vec![], vec![], vec![]);
    for (((q4, k4), v4), m) in qs.iter().zip(&ks).zip(&vs).zip(masks) {
        let (o, mx, sm) = attend(keys, ctx, b, q4, k4, v4, m, q.dtype)?;
        outs.push(o);
        maxs.push(mx);
        sums.push(sm);
    }
    let (out, max, sum) = (split.back(outs, false)?, split.back(maxs, true)?, split.back(sums, true)?);
    Ok((ctx.out(out, q.dtype)?, max, sum))
}

/// The settings no output shows (dropout) or that are reserved: refused.
fn refuse(keys: &Keys, b: &Bound) -> Result<()> {
    if b.float("keep_prob")? < 1.0 {
        return unsupported(keys.api, "keep_prob < 1: the dropout mask is drawn on the device (seed, offset) inside the softmax, and no output shows it");
    }
    if !b.is_none("padding_mask") {
        return unsupported(keys.api, "padding_mask (reserved) is not replayed");
    }
    Ok(())
}

/// The rounding magnitudes of one call of either API, head by head
/// ([`Heads::magnitudes`]): attention_out's (and, for
/// npu_fusion_attention, softmax_max's and softmax_sum's, repeated 8
/// times), and with the output's gradient `dy` query's, key's and value's.
fn attention_parts(keys: &Keys, b: &Bound, dy: Option<&T>, statistics: bool) -> Result<PartMagnitudes> {
    let api = keys.api;
    let f64s = |t: &Tensor| -> Result<Tensor> { Ok(t.to_dtype(DType::F64)?) };
    let flat = |t: &Tensor| -> Result<Vec<f64>> { Ok(t.flatten_all()?.to_vec1::<f64>()?) };
    refuse(keys, b)?;
    let split = Split::of(keys, b)?;
    let q = f64s(&b.tensor("query")?.t)?;
    let (qs, ks, vs) = (split.queries(api, &q)?, split.keys_values(api, &f64s(&b.tensor("key")?.t)?)?, split.keys_values(api, &f64s(&b.tensor("value")?.t)?)?);
    let dys = match dy.filter(|dy| dy.t.elem_count() == q.elem_count()) {
        Some(dy) => Some(split.queries(api, &f64s(&dy.t)?.reshape(q.dims())?)?),
        None => None,
    };
    let masks = masks(keys, b, &split, &qs, &ks, q.device())?;
    let pse = b.opt_tensor(keys.pse)?.map(|p| f64s(&p.t)).transpose()?;
    // float32's unit roundoff in units of the output dtype's: the logits' share of the output's.
    let w = match b.tensor("query")?.dtype.float_format() {
        Some((mantissa, _)) if mantissa < 23 => 2f64.powi(mantissa + 1 - 24),
        _ => 1.0,
    };
    let (mut outs, mut maxs, mut sums, mut dq, mut dk, mut dv) = (vec![], vec![], vec![], vec![], vec![], vec![]);
    for (i, (((q4, k4), v4), mask)) in qs.iter().zip(&ks).zip(&vs).zip(masks).enumerate() {
        let mask = mask.map(|m| four(&m)).transpose()?;
        let heads = Heads { mask, scale: b.float(keys.scale)?, pse: pse.clone() };
        let m = heads.magnitudes(q4, k4, v4, dys.as_ref().map(|d| &d[i]), w)?;
        outs.push(m.out);
        maxs.push(m.max);
        sums.push(m.sum);
        if let Some((q, k, v)) = m.grads {
            dq.push(q);
            dk.push(k);
            dv.push(v);
        }
    }
    let mut forward = vec![flat(&split.back(outs, false)?)?];
    if statistics {
        forward.push(flat(&eight(&split.back(maxs, true)?)?)?);
        forward.push(flat(&eight(&split.back(sums, true)?)?)?);
    }
    let grads = if dq.is_empty() {
        vec![]
    } else {
        vec![("query", flat(&split.back(dq, false)?)?), ("key", flat(&split.back_to_keys(dk)?)?), ("value", flat(&split.back_to_keys(dv)?)?)]
    };
    Ok((forward, grads))
}

/// npu_fusion_attention's rounding parts ([`attention_parts`]).
fn npu_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    attention_parts(&NPU, b, dy, true)
}

/// flash_attention_score's rounding parts ([`attention_parts`]).
pub(super) fn ms_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    attention_parts(&MS, b, dy, false)
}

/// [`scores`] of an npu_fusion_attention call (input_layout 5th).
fn npu_scores(r: &crate::spec::Replay) -> Option<u128> {
    scores(r, (4, None), "pse")
}

/// [`scores`] of a flash_attention_score call (input_layout 17th, default BSH).
pub(super) fn ms_scores(r: &crate::spec::Replay) -> Option<u128> {
    scores(r, (16, Some("BSH")), "real_shift")
}

/// Elements of the score matrices one run holds at once, from the shapes
/// of `query` and `key` in the call's layout (the argument at `layout.0`,
/// or by keyword; `layout.1` when neither): one head's `[S1, S2]`
/// ([`attend_by_heads`]), or all `[B, N1, S1, S2]` with a `pse` (keyword
/// `pse_key`: the composite keeps them for its gradient); TND: `T1·T2`
/// per head, an upper bound. `None` when the specs do not say.
fn scores(r: &crate::spec::Replay, layout: (usize, Option<&str>), pse_key: &str) -> Option<u128> {
    use crate::spec::Spec;
    let shape = |i: usize| match r.args.get(i) {
        Some(Spec::Tensor(t)) => Some(t.shape.iter().map(|&d| d as u128).collect::<Vec<u128>>()),
        _ => None,
    };
    let (q, k) = (shape(0)?, shape(1)?);
    // head_num and input_layout, positional or by keyword.
    let arg = |i: usize, name: &str| r.args.get(i).or_else(|| r.kwargs.iter().find(|(k, _)| k == name).map(|(_, v)| v));
    let heads = match arg(3, "head_num") {
        Some(Spec::Int(n)) => u128::try_from(*n).ok()?,
        _ => return None,
    };
    let layout = match arg(layout.0, "input_layout") {
        Some(Spec::Str(s)) => s.as_str(),
        None => layout.1?,
        _ => return None,
    };
    let pse = r.kwargs.iter().any(|(k, v)| k == pse_key && matches!(v, Spec::Tensor(_)));
    let product = |f: [u128; 4]| Some(f.iter().try_fold(1u128, |a, &b| a.checked_mul(b)).unwrap_or(u128::MAX));
    // (batch, heads, S1, S2)
    let [b, n, s1, s2] = match (layout, q.len(), k.len()) {
        ("BSH", 3, 3) => [q[0], heads, q[1], k[1]],
        ("SBH", 3, 3) => [q[1], heads, q[0], k[0]],
        ("BSND", 4, 4) => [q[0], q[2], q[1], k[1]],
        ("BNSD", 4, 4) => [q[0], q[1], q[2], k[2]],
        ("TND", 3, 3) => [1, q[1], q[0], k[0]],
        _ => return None,
    };
    if pse {
        product([b, n, s1, s2])
    } else {
        product([1, 1, s1, s2])
    }
}

/// What the replay knows of npu_fusion_attention, and of its graph-mode
/// `npu_fusion_attention_v3` (the same kernel under the same keywords).
pub(super) const FUSION_ATTENTION_FACTS: &[Fact] = &[
    Fact::Slicing(Slicing::FusionAttention),
    Fact::TokenMask(NPU_TOKENS),
    Fact::Intermediates(npu_scores),
    Fact::Rounding(Rounding::Parts(Parts { name: "npu_fusion_attention", rest: Rest::Nothing, magnitude: npu_parts })),
];

/// The entry.
pub static OPS: &[Op] = &[Op {
    names: &["NPU.npu_fusion_attention"],
    sig: "query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False, softmax_layout=''",
    forward: fusion_attention,
    backward: true,
    standard: Standard::Accuracy,
    random: false,
    facts: FUSION_ATTENTION_FACTS,
}];

#[cfg(test)]
mod tests {
    use candle_core::DType;

    use crate::ctx::Ctx;
    use crate::dtype::TDType;
    use crate::ops::lookup;
    use crate::spec::Framework;
    use crate::value::{Value, T};

    /// The refusal of a BNSD call `[1, 1, 3, 2]` with `kwargs`.
    fn refusal(kwargs: Vec<(&str, Value)>) -> String {
        let t = || Value::Tensor(T::from_f64((0..6).map(f64::from).collect(), &[1, 1, 3, 2], TDType::F32, DType::F64, &crate::device::host()).unwrap());
        let op = lookup(Framework::PyTorch, "NPU.npu_fusion_attention").unwrap();
        let args = vec![t(), t(), t(), Value::Int(1), Value::Str("BNSD".into())];
        let kwargs = kwargs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        crate::exec::run(op, "NPU.npu_fusion_attention", args, kwargs, &[], None, &Ctx::bench(0)).expect_err("refused").to_string()
    }

    #[test]
    fn what_is_not_replayed_says_why() {
        let all_masked =
            Value::Tensor(T::from_f64(vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0], &[3, 3], TDType::Bool, DType::F64, &crate::device::host()).unwrap());
        for (kwargs, why) in [
            (
                vec![("keep_prob", Value::Float(0.9))],
                "keep_prob < 1: the dropout mask is drawn on the device (seed, offset) inside the softmax, and no output shows it",
            ),
            (vec![("sparse_mode", Value::Int(6))], "sparse_mode 6 (prefix and variable-length compressed masks) is not replayed"),
            (vec![("padding_mask", Value::Float(1.0))], "padding_mask (reserved) is not replayed"),
            (vec![("atten_mask", all_masked)], "a query row with every key masked (the kernel's documentation does not say its result)"),
            (vec![("sparse_mode", Value::Int(9))], "sparse_mode must be 0 to 8, got 9"),
            (
                vec![("softmax_layout", Value::Str("TND".into()))],
                "a softmax_layout other than the default (softmax_max and softmax_sum laid out otherwise) is not replayed",
            ),
        ] {
            assert_eq!(refusal(kwargs), format!("npu_fusion_attention: {why}"));
        }
    }
}
