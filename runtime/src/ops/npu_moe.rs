//! torch_npu's mixture-of-experts kernels, as torch_npu documents them and
//! Ascend/op-plugin's CPU goldens compute them: `npu_moe_init_routing`
//! (tokens sorted by expert) and `npu_moe_init_routing_v2` (the same,
//! row-major, within an active expert range, with token counts),
//! `npu_moe_compute_expert_tokens` (each
//! expert's cumulative token count), `npu_moe_finalize_routing` (the
//! experts' rows weighted back into the tokens) and `npu_grouped_matmul`
//! (one product per expert group). Rows move exactly; the arithmetic runs
//! through the table's entries ([`super::rebind`]), so the products and
//! sums round as theirs, and `npu_grouped_matmul` is differentiated by
//! autograd. Cases: runtime/tests/npu/oracles.py.

use candle_core::Tensor;

use super::ms_array::u32s;
use super::{rebind, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// A tensor's values as integers ([`super::ms_array::ints`]).
pub(super) fn ints(t: &T) -> Result<Vec<i64>> {
    super::ms_array::ints(&Value::Tensor(t.clone()), "index")
}

fn int_tensor(ctx: &Ctx, v: Vec<i64>, shape: &[usize], dtype: TDType) -> Result<Value> {
    Ok(Value::Tensor(T::from_f64(v.into_iter().map(|x| x as f64).collect(), shape, dtype, ctx.compute, &ctx.device)?))
}

/// `npu_moe_init_routing(x, row_idx, expert_idx, active_num)` ->
/// (expanded_x, expanded_row_idx, expanded_expert_idx): the flattened
/// expert ids sorted (stably); `expanded_row_idx[row_idx value] = its
/// sorted position`; `expanded_x[j] = x[row of the j-th sorted entry]` for
/// the first min(active_num, rows)·K positions.
fn init_routing(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, row_idx, expert_idx) = (b.tensor("x")?, b.tensor("row_idx")?, b.tensor("expert_idx")?);
    let [n, _] = *x.dims() else { return Err(Error::Arg("npu_moe_init_routing: x is [rows, hidden]".into())) };
    let [rows, k] = *expert_idx.dims() else { return Err(Error::Arg("npu_moe_init_routing: expert_idx is [rows, k]".into())) };
    if rows != n || row_idx.dims() != expert_idx.dims() {
        return Err(Error::Arg("npu_moe_init_routing: row_idx and expert_idx are [rows of x, k]".into()));
    }
    let (experts, row_values) = (ints(expert_idx)?, ints(row_idx)?);
    let mut order: Vec<usize> = (0..experts.len()).collect();
    order.sort_by_key(|&i| experts[i]);
    let dst_to_src: Vec<i64> = order.iter().map(|&i| row_values[i]).collect();
    let mut expanded_row = vec![0i64; n * k];
    for (j, &src) in dst_to_src.iter().enumerate() {
        let at = usize::try_from(src)
            .ok()
            .filter(|&s| s < n * k)
            .ok_or_else(|| Error::Arg(format!("npu_moe_init_routing: row_idx value {src} outside [0, {})", n * k)))?;
        expanded_row[at] = j as i64;
    }
    let active = (b.int("active_num")?.max(0) as usize).min(n) * k;
    let sources: Vec<usize> = dst_to_src[..active].iter().map(|&s| s as usize % n).collect();
    let expanded_x = x.t.index_select(&u32s(&sources, x.t.device())?, 0)?;
    let sorted: Vec<i64> = order.iter().map(|&i| experts[i]).collect();
    Ok(vec![
        Value::Tensor(ctx.out(expanded_x, x.dtype)?),
        int_tensor(ctx, expanded_row, &[n * k], TDType::I32)?,
        int_tensor(ctx, sorted, &[n * k], TDType::I32)?,
    ])
}

/// `npu_moe_init_routing_v2(x, expert_idx, *, scale=None, ..., active_num=-1,
/// expert_num=-1, expert_tokens_num_type=0, expert_tokens_num_flag=False,
/// active_expert_range=[], row_idx_type=0)` -> (expanded_x,
/// expanded_row_idx, expert_token_cumsum_or_count, expanded_scale), dropless
/// and unquantized: the flattened (row-major) expert ids in the active range
/// sorted stably, the others after them; `expanded_x[j] = x[source of the
/// j-th sorted entry]`; the row index as a gather index (the sorted position
/// of each entry, -1 when outside the range) or a scatter index (the sorted
/// order); the in-range experts' token counts, cumulative or not, or as
/// (expert, count) pairs ended by (0, 0). An output the kernel leaves
/// unspecified for the call's arguments (counts without their flag, scales
/// without `scale`, rows past the active ones) is None, and not judged.
fn init_routing_v2(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.int("quant_mode")? != -1 || b.int("drop_pad_mode")? != 0 {
        return Err(Error::Unsupported("npu_moe_init_routing_v2 is replayed dropless and unquantized (drop_pad_mode 0, quant_mode -1)".into()));
    }
    let (x, expert_idx) = (b.tensor("x")?, b.tensor("expert_idx")?);
    let [n, _] = *x.dims() else { return Err(Error::Arg("npu_moe_init_routing_v2: x is [rows, hidden]".into())) };
    let [rows, k] = *expert_idx.dims() else { return Err(Error::Arg("npu_moe_init_routing_v2: expert_idx is [rows, k]".into())) };
    if rows != n {
        return Err(Error::Arg(format!("npu_moe_init_routing_v2: expert_idx has {rows} rows, x {n}")));
    }
    let expert_num = b.int("expert_num")?;
    let range = match b.opt_ints("active_expert_range")? {
        Some(r) if r.len() == 2 => Some((r[0], r[1])),
        Some(r) if !r.is_empty() => return Err(Error::Arg(format!("npu_moe_init_routing_v2: active_expert_range {r:?} is not [start, end]"))),
        _ => (expert_num > 0).then_some((0, expert_num)),
    };
    let experts = ints(expert_idx)?;
    let in_range = |e: i64| range.is_none_or(|(s, end)| (s..end).contains(&e));
    // Ids below the range sort last; ids past it sort after the range by themselves.
    let key = |e: i64| if range.is_some_and(|(s, _)| e < s) { i64::MAX } else { e };
    let mut perm: Vec<usize> = (0..experts.len()).collect();
    perm.sort_by_key(|&f| key(experts[f]));
    let active = experts.iter().filter(|&&e| in_range(e)).count();
    let total = n * k;
    let active_num = b.int("active_num")?;
    let (allocated, defined) = if active_num <= 0 { (total, active) } else { ((active_num as usize).min(total), (active_num as usize).min(active)) };
    let expanded_x = if defined == allocated {
        let sources: Vec<usize> = perm[..defined].iter().map(|&f| f / k).collect();
        Value::Tensor(ctx.out(x.t.index_select(&u32s(&sources, x.t.device())?, 0)?, x.dtype)?)
    } else {
        Value::None
    };
    let row_idx = match b.int("row_idx_type")? {
        0 => {
            let mut out = vec![-1i64; total];
            for (j, &f) in perm[..active].iter().enumerate() {
                out[f] = j as i64;
            }
            int_tensor(ctx, out, &[total], TDType::I32)?
        }
        _ if active == total => int_tensor(ctx, perm.iter().map(|&f| f as i64).collect(), &[total], TDType::I32)?,
        _ => Value::None,
    };
    let counts = if b.bool("expert_tokens_num_flag")? { token_counts(ctx, b, &experts, range)? } else { Value::None };
    let scale = match b.opt_tensor("scale")? {
        Some(scale) if defined == allocated => {
            let sources: Vec<usize> = perm[..defined].iter().map(|&f| f / k).collect();
            let picked = scale.t.flatten_all()?.index_select(&u32s(&sources, scale.t.device())?, 0)?;
            Value::Tensor(ctx.cast(&T { t: picked, dtype: scale.dtype }, TDType::F32)?)
        }
        _ => Value::None,
    };
    Ok(vec![expanded_x, row_idx, counts, scale])
}

/// `npu_moe_init_routing_v2`'s third output: the token counts of the
/// experts in `range` (cumulative, plain, or as (expert, count) pairs ended
/// by (0, 0)); None where the kernel leaves it unspecified.
fn token_counts(ctx: &Ctx, b: &Bound, experts: &[i64], range: Option<(i64, i64)>) -> Result<Value> {
    let Some((s, end)) = range else { return Ok(Value::None) };
    let expert_num = b.int("expert_num")?;
    let mut hist = vec![0i64; (end - s).max(0) as usize];
    for &e in experts.iter().filter(|&&e| (s..end).contains(&e)) {
        hist[(e - s) as usize] += 1;
    }
    Ok(match b.int("expert_tokens_num_type")? {
        0 => {
            let cumulative: Vec<i64> = hist
                .iter()
                .scan(0, |acc, &c| {
                    *acc += c;
                    Some(*acc)
                })
                .collect();
            int_tensor(ctx, cumulative, &[hist.len()], TDType::I64)?
        }
        1 => int_tensor(ctx, hist.clone(), &[hist.len()], TDType::I64)?,
        _ => {
            // (expert, count) pairs, then (0, 0); rows past that are unspecified.
            let mut pairs: Vec<i64> = hist.iter().enumerate().filter(|(_, &c)| c > 0).flat_map(|(i, &c)| [s + i as i64, c]).collect();
            let slots = expert_num.max(0) as usize;
            if pairs.len() / 2 < slots {
                pairs.extend([0, 0]);
            }
            if pairs.len() / 2 == slots {
                int_tensor(ctx, pairs, &[slots, 2], TDType::I64)?
            } else {
                Value::None
            }
        }
    })
}

/// `npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert)`:
/// for each expert e, how many sorted entries are at most e.
fn compute_expert_tokens(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let sorted = b.tensor("sorted_expert_for_source_row")?;
    let v = ints(sorted)?;
    let e = b.int("num_expert")?.max(0) as usize;
    let counts: Vec<i64> = (0..e as i64).map(|expert| v.partition_point(|&x| x <= expert) as i64).collect();
    Ok(vec![int_tensor(ctx, counts, &[e], sorted.dtype)?])
}

/// `npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias,
/// scales, expanded_src_to_dst_row, export_for_source_row, drop_pad_mode=0)`:
/// out[i] = skip1[i] + skip2[i] + Σ_k scales[i, k]·(rows[src_to_dst[i + k·N]] +
/// bias[expert[i, k]]), an index of -1 a zero row (drop_pad_mode 0 and 1:
/// the indices by column; 2 and 3, as `npu_moe_init_routing_v2` writes
/// them, by row: src_to_dst[i·K + k]).
fn finalize_routing(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mode = b.int("drop_pad_mode")?;
    if !(0..=3).contains(&mode) {
        return Err(Error::Arg(format!("npu_moe_finalize_routing: drop_pad_mode {mode} is not 0-3")));
    }
    let rows = b.tensor("expanded_permuted_rows")?;
    let h = *rows.dims().last().ok_or_else(|| Error::Arg("npu_moe_finalize_routing: rows of a hidden size".into()))?;
    let flat = T { t: rows.t.reshape(((), h))?, dtype: rows.dtype };
    let dst = ints(b.tensor("expanded_src_to_dst_row")?)?;
    let k = match b.opt_tensor("scales")? {
        Some(s) => *s.dims().get(1).ok_or_else(|| Error::Arg("npu_moe_finalize_routing: scales are [rows, k]".into()))?,
        None => b.int("k")?.max(1) as usize,
    };
    let n = dst.len() / k;
    // A zero row past the last, for the dropped (-1) entries.
    let padded = T { t: Tensor::cat(&[&flat.t, &flat.t.narrow(0, 0, 1)?.zeros_like()?], 0)?, dtype: rows.dtype };
    let zero_row = padded.dims()[0] - 1;
    let experts = b.opt_tensor("export_for_source_row")?.map(ints).transpose()?;
    let mut total: Option<Value> = None;
    let add = |acc: Option<Value>, v: Value| -> Result<Option<Value>> {
        Ok(Some(match acc {
            None => v,
            Some(a) => rebind(ctx, "Torch.add", vec![a, v], &[])?.remove(0),
        }))
    };
    for skip in ["skip1", "skip2"] {
        if !b.is_none(skip) {
            total = add(total, b.value(skip).clone())?;
        }
    }
    for slot in 0..k {
        // Modes 0 and 1 list the indices by column (i + k·N), 2 and 3 by row (i·K + k).
        let column: Vec<i64> = if mode < 2 { dst[slot * n..(slot + 1) * n].to_vec() } else { (0..n).map(|i| dst[i * k + slot]).collect() };
        let picks: Vec<usize> = column.iter().map(|&d| if d < 0 { zero_row } else { d as usize }).collect();
        if let Some(p) = picks.iter().find(|&&p| p > zero_row) {
            return Err(Error::Arg(format!("npu_moe_finalize_routing: row {p} outside the expanded rows")));
        }
        let mut term = Value::Tensor(T { t: padded.t.index_select(&u32s(&picks, padded.t.device())?, 0)?, dtype: rows.dtype });
        if let (Some(bias), Some(experts)) = (b.opt_tensor("bias")?, &experts) {
            let ids: Vec<usize> = (0..n).map(|i| experts[i * k + slot].max(0) as usize).collect();
            let picked = Value::Tensor(T { t: bias.t.index_select(&u32s(&ids, bias.t.device())?, 0)?, dtype: bias.dtype });
            term = rebind(ctx, "Torch.add", vec![term, picked], &[])?.remove(0);
        }
        if let Some(scales) = b.opt_tensor("scales")? {
            let column = Value::Tensor(T { t: scales.t.narrow(1, slot, 1)?, dtype: scales.dtype });
            term = rebind(ctx, "Torch.mul", vec![term, column], &[])?.remove(0);
        }
        total = add(total, term)?;
    }
    let out = total.ok_or_else(|| Error::Arg("npu_moe_finalize_routing: nothing to sum".into()))?;
    Ok(vec![Value::Tensor(ctx.cast(out.tensor("npu_moe_finalize_routing")?, rows.dtype)?)])
}

/// The tensors of a list argument (a lone tensor as a list of one).
fn tensor_list(b: &Bound, name: &str) -> Result<Vec<T>> {
    match b.value(name) {
        Value::None => Ok(vec![]),
        Value::Tensor(t) => Ok(vec![t.clone()]),
        _ => Ok(b.tensors(name)?.into_iter().cloned().collect()),
    }
}

/// `npu_grouped_matmul(x, weight, *, bias=None, ..., group_list=None,
/// split_item=0, group_type=None, group_list_type=0, ...)`, unquantized:
/// per group i, x_i @ weight_i (+ bias_i), weight_i [K, N] (or the i-th of
/// one [E, K, N]); x a list (split_item 0, 2) or one [M, K] tensor cut along
/// M by `group_list` (cumulative ends, or sizes for `group_list_type` 1;
/// split_item 1, 3); the results a list (0, 1) or one tensor stacked along
/// M (2, 3).
fn grouped_matmul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    for quant in ["scale", "offset", "antiquant_scale", "antiquant_offset", "per_token_scale", "activation_input"] {
        if !b.is_none(quant) {
            return Err(Error::Unsupported(format!("npu_grouped_matmul with {quant} (a quantized call) is not replayed")));
        }
    }
    if b.int("act_type")? != 0 || b.opt_int("group_type")?.is_some_and(|g| g == 2) {
        return Err(Error::Unsupported("npu_grouped_matmul with an activation or a K-axis grouping is not replayed".into()));
    }
    let (xs, weights, biases) = (tensor_list(b, "x")?, tensor_list(b, "weight")?, tensor_list(b, "bias")?);
    let split = b.int("split_item")?;
    let ends: Option<Vec<i64>> = match b.value("group_list") {
        Value::None => None,
        v => Some(super::ms_array::ints(v, "group_list")?),
    };
    let sizes = b.int("group_list_type")? == 1;
    let ends = ends.map(|g| {
        if sizes {
            g.iter()
                .scan(0, |s, &c| {
                    *s += c;
                    Some(*s)
                })
                .collect()
        } else {
            g
        }
    });
    let groups: Vec<T> = match (split, &ends) {
        (1 | 3, Some(ends)) if xs.len() == 1 => {
            let x = &xs[0];
            let mut start = 0i64;
            ends.iter()
                .map(|&end| {
                    let part = T { t: x.t.narrow(0, start as usize, (end - start).max(0) as usize)?, dtype: x.dtype };
                    start = end;
                    Ok(part)
                })
                .collect::<Result<_>>()?
        }
        _ => xs,
    };
    let weight_of = |i: usize| -> Result<T> {
        match weights.as_slice() {
            [w] if w.rank() == 3 => Ok(T { t: w.t.narrow(0, i, 1)?.squeeze(0)?, dtype: w.dtype }),
            ws => ws.get(i).cloned().ok_or_else(|| Error::Arg(format!("npu_grouped_matmul: no weight for group {i}"))),
        }
    };
    let mut outs = Vec::with_capacity(groups.len());
    for (i, x) in groups.into_iter().enumerate() {
        let mut y = rebind(ctx, "Torch.matmul", vec![Value::Tensor(x), Value::Tensor(weight_of(i)?)], &[])?.remove(0);
        if let Some(bias) = biases.get(i) {
            y = rebind(ctx, "Torch.add", vec![y, Value::Tensor(bias.clone())], &[])?.remove(0);
        }
        outs.push(y);
    }
    if split >= 2 {
        let parts: Vec<Tensor> = outs.iter().map(|v| Ok(v.tensor("npu_grouped_matmul")?.t.clone())).collect::<Result<_>>()?;
        let dtype = outs.first().map(|v| v.tensor("npu_grouped_matmul").map(|t| t.dtype)).transpose()?.unwrap_or(TDType::F32);
        return Ok(vec![Value::Tensor(T { t: Tensor::cat(&parts, 0)?, dtype })]);
    }
    Ok(outs)
}

/// The entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["NPU.npu_moe_init_routing"],
        sig: "x, row_idx, expert_idx, active_num",
        forward: init_routing,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_moe_compute_expert_tokens"],
        sig: "sorted_expert_for_source_row, num_expert",
        forward: compute_expert_tokens,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_moe_init_routing_v2"],
        sig: "x, expert_idx, *, scale=None, offset=None, active_num=-1, expert_capacity=-1, expert_num=-1, drop_pad_mode=0, expert_tokens_num_type=0, expert_tokens_num_flag=False, quant_mode=-1, active_expert_range=None, row_idx_type=0, x_dtype=None",
        forward: init_routing_v2,
        backward: false,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_moe_finalize_routing"],
        sig: "expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row, export_for_source_row, drop_pad_mode=0, k=1",
        forward: finalize_routing,
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["NPU.npu_grouped_matmul"],
        sig: "x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None, per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None, activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0, output_dtype=None, tuning_config=None",
        forward: grouped_matmul,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];
