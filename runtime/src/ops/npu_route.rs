//! torch_npu's token-routing kernels of MoE training and inference, as
//! torch_npu documents them and Ascend/op-plugin's goldens (or CANN's
//! kernels, where the goldens are placeholders) compute them:
//! `npu_moe_token_permute` (tokens sorted by expert) and
//! `npu_moe_token_unpermute` (the experts' rows weighted back into tokens),
//! `npu_moe_token_permute_with_routing_map` (by a boolean routing map,
//! dropless), `npu_moe_re_routing` (rank-major rows regrouped expert-major)
//! and `npu_gather_sparse_index` (rows gathered). Rows move through
//! `index_select`, so autograd differentiates what torch_npu does (the
//! permutes, the unpermute, the gather). Cases: runtime/tests/npu/oracles.py.

use candle_core::Tensor;

use super::ms_array::u32s;
use super::npu_moe::ints;
use super::{entry, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

fn int_tensor(ctx: &Ctx, v: &[usize], shape: &[usize], dtype: TDType) -> Result<Value> {
    Ok(Value::Tensor(T::from_f64(v.iter().map(|&x| x as f64).collect(), shape, dtype, ctx.compute, &ctx.device)?))
}

/// The rows `rows` of `t` (along dim 0), in `t`'s dtype.
fn rows_of(ctx: &Ctx, t: &T, rows: &[usize]) -> Result<Value> {
    Ok(Value::Tensor(ctx.out(t.t.index_select(&u32s(rows, t.t.device())?, 0)?, t.dtype)?))
}

/// The stable ascending order of `keys`.
fn stable_order(keys: &[i64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| keys[i]);
    order
}

/// The inverse of the permutation `order`: where each entry went.
fn inverse(order: &[usize]) -> Vec<usize> {
    let mut at = vec![0; order.len()];
    for (j, &i) in order.iter().enumerate() {
        at[i] = j;
    }
    at
}

/// `npu_moe_token_permute(tokens, indices, num_out_tokens=None,
/// padded_mode=False)` -> (permuted_tokens, sorted_indices): the (token,
/// slot) pairs sorted stably by expert, the first `num_out_tokens` rows of
/// their tokens (all when None or 0; a negative count drops from the end),
/// and where each pair went (int32).
fn token_permute(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.bool("padded_mode")? {
        return Err(Error::Unsupported("npu_moe_token_permute with padded_mode (not implemented by the kernel) is not replayed".into()));
    }
    let (tokens, indices) = (b.tensor("tokens")?, b.tensor("indices")?);
    let k = match indices.dims() {
        [_] => 1,
        [_, k] => *k,
        d => return Err(Error::Arg(format!("npu_moe_token_permute: indices are [tokens] or [tokens, k], got {d:?}"))),
    };
    let experts = ints(indices)?;
    let numel = experts.len() as i64;
    let n = b.opt_int("num_out_tokens")?.unwrap_or(0);
    let kept = if n > 0 { n.min(numel) } else { (numel + n).max(0) } as usize;
    let order = stable_order(&experts);
    let sources: Vec<usize> = order[..kept].iter().map(|&f| f / k).collect();
    Ok(vec![rows_of(ctx, tokens, &sources)?, int_tensor(ctx, &inverse(&order), &[order.len()], TDType::I32)?])
}

/// `npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None,
/// padded_mode=False, restore_shape=None)`: out[t] = Σ_k probs[t, k] ·
/// permuted_tokens[sorted_indices[t·K + k]], an index past the rows adding
/// nothing (K = 1 without probs), `[tokens, hidden]` whatever
/// `restore_shape` says (torch_npu passes it to the kernel only).
fn token_unpermute(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.bool("padded_mode")? {
        return Err(Error::Unsupported("npu_moe_token_unpermute with padded_mode is not replayed".into()));
    }
    let x = b.tensor("permuted_tokens")?;
    let [n, h] = *x.dims() else { return Err(Error::Arg("npu_moe_token_unpermute: permuted_tokens is [rows, hidden]".into())) };
    let probs = b.opt_tensor("probs")?;
    let k = probs.map(|p| p.dims().get(1).copied().unwrap_or(1)).unwrap_or(1).max(1);
    let at = ints(b.tensor("sorted_indices")?)?;
    let t = at.len() / k;
    let padded = Tensor::cat(&[&x.t, &Tensor::zeros((1, h), x.t.dtype(), x.t.device())?], 0)?;
    let picks: Vec<usize> = at[..t * k].iter().map(|&i| if (0..n as i64).contains(&i) { i as usize } else { n }).collect();
    let mut rows = padded.index_select(&u32s(&picks, x.t.device())?, 0)?;
    if let Some(p) = probs {
        rows = rows.broadcast_mul(&p.t.reshape((t * k, 1))?)?;
    }
    let out = rows.reshape((t, k, h))?.sum(1)?;
    Ok(vec![Value::Tensor(ctx.out(out, x.dtype)?)])
}

/// `npu_moe_token_permute_with_routing_map(tokens, routing_map, *,
/// probs=None, num_out_tokens=None, drop_and_pad=False)` -> (permuted_tokens,
/// permuted_probs, sorted_indices), dropless: each expert's tokens in token
/// order, expert after expert, their probabilities, and where each (token,
/// expert) pair went in token order (int32).
fn permute_with_routing_map(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.bool("drop_and_pad")? {
        return Err(Error::Unsupported("npu_moe_token_permute_with_routing_map with drop_and_pad is not replayed".into()));
    }
    let (tokens, map) = (b.tensor("tokens")?, b.tensor("routing_map")?);
    let [t, e] = *map.dims() else { return Err(Error::Arg("npu_moe_token_permute_with_routing_map: routing_map is [tokens, experts]".into())) };
    let routed = map.to_f64_vec()?;
    // Expert-major (expert, token) pairs that are routed, as flat positions of the map.
    let pairs: Vec<usize> = (0..e).flat_map(|x| (0..t).map(move |y| y * e + x)).filter(|&f| routed[f] != 0.0).collect();
    let wanted = b.opt_int("num_out_tokens")?.map_or(t, |n| n.max(0) as usize);
    if wanted != pairs.len() {
        return Err(Error::Unsupported(format!(
            "npu_moe_token_permute_with_routing_map: num_out_tokens {wanted} is not the {} routed pairs (a dropping call is not replayed)",
            pairs.len()
        )));
    }
    let sources: Vec<usize> = pairs.iter().map(|&f| f / e).collect();
    let probs = match b.opt_tensor("probs")? {
        Some(p) => Value::Tensor(ctx.out(p.t.flatten_all()?.index_select(&u32s(&pairs, p.t.device())?, 0)?, p.dtype)?),
        None => Value::None,
    };
    // The permuted rows in token order: for each pair in token order, its row.
    let went = stable_order(&sources.iter().map(|&s| s as i64).collect::<Vec<_>>());
    Ok(vec![rows_of(ctx, tokens, &sources)?, probs, int_tensor(ctx, &went, &[went.len()], TDType::I32)?])
}

/// `npu_moe_re_routing(tokens, expert_token_num_per_rank, *,
/// per_token_scales=None, expert_token_num_type=1, idx_type=0)` ->
/// (permuted_tokens, permuted_scales, permute_token_idx, expert_token_num):
/// rows that arrive rank after rank, each rank's expert after expert,
/// regrouped expert after expert, each expert's rank after rank; the
/// gather index (int32) and each expert's count. When the counts do not
/// cover the rows exactly, the rows, scales and index are unspecified
/// (None), as the scales are without `per_token_scales`.
fn re_routing(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.int("expert_token_num_type")? != 1 || b.int("idx_type")? != 0 {
        return Err(Error::Unsupported("npu_moe_re_routing is replayed with expert_token_num_type 1 and idx_type 0".into()));
    }
    let (tokens, counts) = (b.tensor("tokens")?, b.tensor("expert_token_num_per_rank")?);
    let [ranks, experts] = *counts.dims() else { return Err(Error::Arg("npu_moe_re_routing: expert_token_num_per_rank is [ranks, experts]".into())) };
    let c: Vec<usize> = ints(counts)?.into_iter().map(|v| v.max(0) as usize).collect();
    let starts: Vec<usize> = c
        .iter()
        .scan(0, |acc, &n| {
            let s = *acc;
            *acc += n;
            Some(s)
        })
        .collect();
    let gather: Vec<usize> = (0..experts).flat_map(|x| (0..ranks).map(move |r| r * experts + x)).flat_map(|i| starts[i]..starts[i] + c[i]).collect();
    let rows = tokens.dims().first().copied().unwrap_or(0);
    let per_expert: Vec<usize> = (0..experts).map(|x| (0..ranks).map(|r| c[r * experts + x]).sum()).collect();
    let total = int_tensor(ctx, &per_expert, &[experts], counts.dtype)?;
    if gather.len() != rows || gather.iter().any(|&g| g >= rows) {
        return Ok(vec![Value::None, Value::None, Value::None, total]);
    }
    let scales = match b.opt_tensor("per_token_scales")? {
        Some(s) => rows_of(ctx, s, &gather)?,
        None => Value::None,
    };
    Ok(vec![rows_of(ctx, tokens, &gather)?, scales, int_tensor(ctx, &gather, &[rows], TDType::I32)?, total])
}

/// `npu_gather_sparse_index(input, index)`: input's rows at `index`, of
/// shape index.shape + input.shape[1:].
fn gather_sparse_index(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (input, index) = (b.tensor("input")?, b.tensor("index")?);
    let rows = input.dims().first().copied().ok_or_else(|| Error::Unsupported("npu_gather_sparse_index of a 0-d input is not replayed".into()))?;
    let at = ints(index)?;
    if let Some(bad) = at.iter().find(|&&i| !(0..rows as i64).contains(&i)) {
        return Err(Error::Arg(format!("npu_gather_sparse_index: index {bad} outside [0, {rows})")));
    }
    let picked = input.t.index_select(&u32s(&at.iter().map(|&i| i as usize).collect::<Vec<_>>(), input.t.device())?, 0)?;
    let shape: Vec<usize> = index.dims().iter().chain(&input.dims()[1..]).copied().collect();
    Ok(vec![Value::Tensor(ctx.out(picked.reshape(shape)?, input.dtype)?)])
}

/// The entries.
pub static OPS: &[Op] = &[
    entry(&["NPU.npu_moe_token_permute"], "tokens, indices, num_out_tokens=None, padded_mode=False", token_permute, true, Standard::Exact),
    entry(
        &["NPU.npu_moe_token_unpermute"],
        "permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None",
        token_unpermute,
        true,
        Standard::Accuracy,
    ),
    entry(
        &["NPU.npu_moe_token_permute_with_routing_map"],
        "tokens, routing_map, *, probs=None, num_out_tokens=None, drop_and_pad=False",
        permute_with_routing_map,
        true,
        Standard::Exact,
    ),
    entry(
        &["NPU.npu_moe_re_routing"],
        "tokens, expert_token_num_per_rank, *, per_token_scales=None, expert_token_num_type=1, idx_type=0, tokens_dtype=None",
        re_routing,
        false,
        Standard::Exact,
    ),
    entry(&["NPU.npu_gather_sparse_index"], "input, index", gather_sparse_index, true, Standard::Exact),
];
