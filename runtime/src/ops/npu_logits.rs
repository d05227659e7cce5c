//! torch_npu's kernels over logits and expert scores, as torch_npu
//! documents them and Ascend/op-plugin's goldens compute them:
//! `npu_top_k_top_p` (logits outside the top k and the top-p nucleus set
//! to -inf), `npu_cross_entropy_loss` (torch's cross entropy with the log
//! probabilities) and ATB's `npu_fused_add_topk_div` (group-limited top-k
//! of biased sigmoid scores, renormalized). Cases: runtime/tests/npu/oracles.py.

use super::{entry, rebind, Fact, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// A float tensor's values and its `[rows, columns]`.
fn matrix(t: &T, what: &str) -> Result<(Vec<f64>, usize, usize)> {
    let [rows, cols] = *t.dims() else { return Err(Error::Arg(format!("{what} is [rows, columns], got {:?}", t.dims()))) };
    Ok((t.to_f64_vec()?, rows, cols))
}

/// The stable ascending order of one row, as torch's stable sort: -0.0
/// and 0.0 equal (in index order), NaN last.
fn ascending(row: &[f64]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..row.len()).collect();
    order.sort_by(|&a, &b| row[a].partial_cmp(&row[b]).unwrap_or_else(|| row[a].is_nan().cmp(&row[b].is_nan())));
    order
}

/// `npu_top_k_top_p(logits, p=None, k=None)`: per row, logits below the
/// k-th largest set to -inf (ties kept; k ≤ 0 or ≥ V: no top-k), then,
/// in ascending order, those whose cumulative softmax is at most 1 - p
/// (the largest always kept). Kept values are the logits themselves. A
/// row whose nucleus boundary lies within float32's rounding of the
/// cumulative sum (V·2⁻²⁴) is not replayed: which logit the device keeps
/// there is not determined by the values.
fn top_k_top_p(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let logits = b.tensor("logits")?;
    let (mut x, rows, v) = matrix(logits, "npu_top_k_top_p: logits")?;
    let p = b.opt_tensor("p")?.map(|t| t.to_f64_vec()).transpose()?;
    let k = b.opt_tensor("k")?.map(|t| t.to_f64_vec()).transpose()?;
    if p.is_none() && k.is_none() {
        return Err(Error::Arg("npu_top_k_top_p: p or k".into()));
    }
    if let Some(short) = [&p, &k].into_iter().flatten().find(|v| v.len() != rows) {
        return Err(Error::Arg(format!("npu_top_k_top_p: p and k have one value per row ({rows}), got {}", short.len())));
    }
    let margin = v as f64 * f64::from(f32::EPSILON) / 2.0;
    for r in 0..rows {
        let row = &mut x[r * v..(r + 1) * v];
        let order = ascending(row);
        let mut sorted: Vec<f64> = order.iter().map(|&i| row[i]).collect();
        if let Some(kk) = k.as_ref().map(|k| k[r] as i64).filter(|&kk| kk > 0 && (kk as usize) < v) {
            let kth = sorted[v - kk as usize];
            sorted.iter_mut().filter(|s| **s < kth).for_each(|s| *s = f64::NEG_INFINITY);
        }
        if let Some(p) = &p {
            let max = sorted[v - 1];
            let weights: Vec<f64> = sorted.iter().map(|s| (s - max).exp()).collect();
            let total: f64 = weights.iter().sum();
            let mut cumulative = 0.0;
            for (s, w) in sorted.iter_mut().zip(&weights).take(v - 1) {
                cumulative += w / total;
                if (cumulative - (1.0 - p[r])).abs() <= margin {
                    return Err(Error::Unsupported(format!(
                        "npu_top_k_top_p: row {r}'s nucleus boundary is within float32's rounding of the cumulative softmax (V·2⁻²⁴): which logit the device keeps there is not determined"
                    )));
                }
                if cumulative <= 1.0 - p[r] {
                    *s = f64::NEG_INFINITY;
                }
            }
        }
        for (j, &i) in order.iter().enumerate() {
            row[i] = sorted[j];
        }
    }
    Ok(vec![Value::Tensor(T::from_f64(x, &[rows, v], logits.dtype, ctx.compute, &ctx.device)?)])
}

/// `npu_cross_entropy_loss(input, target, weight=None, reduction='mean',
/// ignore_index=-100, label_smoothing=0.0, lse_square_scale_for_zloss=0.0,
/// return_zloss=False)` -> (loss, log_prob, zloss, lse_for_zloss): torch's
/// cross entropy ([1] when reduced) and log_softmax; the z-loss outputs are
/// empty when not asked for, and not replayed (None) when asked for (the
/// kernel does not compute them).
fn cross_entropy_loss(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let input = b.tensor("input")?;
    let kwargs = ["weight", "reduction", "ignore_index", "label_smoothing"].map(|p| (p, b.value(p).clone()));
    let loss = rebind(ctx, "Functional.cross_entropy", vec![b.value("input").clone(), b.value("target").clone()], &kwargs)?.remove(0);
    let loss = match b.str("reduction")? {
        "none" => loss,
        _ => {
            let t = loss.tensor("npu_cross_entropy_loss")?;
            Value::Tensor(T { t: t.t.reshape(1)?, dtype: t.dtype })
        }
    };
    let log_prob = rebind(ctx, "Functional.log_softmax", vec![b.value("input").clone()], &[("dim", Value::Int(-1))])?.remove(0);
    let empty = || -> Result<Value> { Ok(Value::Tensor(T::from_f64(vec![], &[0], input.dtype, ctx.compute, &ctx.device)?)) };
    let zloss = if b.bool("return_zloss")? { Value::None } else { empty()? };
    let lse = if b.float("lse_square_scale_for_zloss")? == 0.0 { empty()? } else { Value::None };
    Ok(vec![loss, log_prob, zloss, lse])
}

/// ATB's `npu_fused_add_topk_div(x, add_num, *, group_num=1, group_topk=1,
/// n=1, k=1, is_norm=True, scale=1)` -> (y, indices): s = sigmoid(x),
/// t = s + add_num; the `group_topk` groups with the largest sums of their
/// top `n` values kept (the others 0); the top `k` of t (stable, ties by
/// position) as int32 indices, y their s, divided by its row sum and
/// times `scale` when `is_norm` (float32).
fn fused_add_topk_div(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.bool("enable_expert_mapping")? {
        return Err(Error::Unsupported("npu_fused_add_topk_div with enable_expert_mapping is not replayed".into()));
    }
    let (x, rows, cols) = matrix(b.tensor("x")?, "npu_fused_add_topk_div: x")?;
    let add = b.tensor("add_num")?.to_f64_vec()?;
    let (groups, group_topk) = (b.int("group_num")?.max(1) as usize, b.int("group_topk")?.max(0) as usize);
    let (n, k) = (b.int("n")?.max(1) as usize, b.int("k")?.max(0) as usize);
    if add.len() != cols || cols % groups != 0 || k > cols {
        return Err(Error::Arg(format!("npu_fused_add_topk_div: x [{rows}, {cols}], add_num of {}, group_num {groups}, k {k}", add.len())));
    }
    let width = cols / groups;
    let (is_norm, scale) = (b.bool("is_norm")?, b.float("scale")?);
    let (mut ys, mut ids) = (Vec::with_capacity(rows * k), Vec::with_capacity(rows * k));
    for r in 0..rows {
        let s: Vec<f64> = x[r * cols..(r + 1) * cols].iter().map(|v| 1.0 / (1.0 + (-v).exp())).collect();
        let mut t: Vec<f64> = s.iter().zip(&add).map(|(a, b)| a + b).collect();
        let scores: Vec<f64> = t
            .chunks(width)
            .map(|g| {
                let mut g = g.to_vec();
                g.sort_by(|a, b| b.total_cmp(a));
                g.iter().take(n).sum()
            })
            .collect();
        let mut best: Vec<usize> = (0..groups).collect();
        best.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        for g in best.into_iter().skip(group_topk) {
            t[g * width..(g + 1) * width].iter_mut().for_each(|v| *v = 0.0);
        }
        let mut order: Vec<usize> = (0..cols).collect();
        order.sort_by(|&a, &b| t[b].total_cmp(&t[a]));
        let picked: Vec<f64> = order[..k].iter().map(|&i| s[i]).collect();
        let total: f64 = picked.iter().sum();
        ys.extend(picked.iter().map(|v| if is_norm { v / total * scale } else { *v }));
        ids.extend(order[..k].iter().map(|&i| i as f64));
    }
    Ok(vec![
        Value::Tensor(ctx.out(candle_core::Tensor::from_vec(ys, (rows, k), &ctx.device)?.to_dtype(ctx.compute)?, TDType::F32)?),
        Value::Tensor(T::from_f64(ids, &[rows, k], TDType::I32, ctx.compute, &ctx.device)?),
    ])
}

/// The entries.
pub static OPS: &[Op] = &[
    entry(&["NPU.npu_top_k_top_p"], "logits, p=None, k=None", top_k_top_p, false, Standard::Exact),
    Op {
        facts: &[Fact::ClassTargets],
        ..entry(
        &["NPU.npu_cross_entropy_loss"],
        "input, target, weight=None, reduction='mean', ignore_index=-100, label_smoothing=0.0, lse_square_scale_for_zloss=0.0, return_zloss=False",
        cross_entropy_loss,
        true,
        Standard::Accuracy,
    )
    },
    entry(
        &["NPU.npu_fused_add_topk_div"],
        "x, add_num, *, mapping_num=None, mapping_table=None, activation_type=None, group_num=1, group_topk=1, n=1, k=1, is_norm=True, scale=1.0, enable_expert_mapping=False",
        fused_add_topk_div,
        false,
        Standard::Accuracy,
    ),
];

#[cfg(test)]
mod tests {
    use candle_core::DType;

    use crate::ctx::Ctx;
    use crate::dtype::TDType;
    use crate::ops::lookup;
    use crate::spec::Framework;
    use crate::value::{Value, T};

    fn tensor(values: Vec<f64>, shape: &[usize]) -> Value {
        Value::Tensor(T::from_f64(values, shape, TDType::F64, DType::F64, &crate::device::host()).unwrap())
    }

    /// Equal logits put the cumulative softmax exactly on 1 - p: the kept
    /// logit is not determined, and the call says so instead of guessing.
    #[test]
    fn a_nucleus_boundary_within_float32_rounding_is_refused() {
        let op = lookup(Framework::PyTorch, "NPU.npu_top_k_top_p").unwrap();
        let run = |p: f64| {
            crate::exec::run(
                op,
                "NPU.npu_top_k_top_p",
                vec![tensor(vec![0.0; 4], &[1, 4])],
                vec![("p".into(), tensor(vec![p], &[1]))],
                &[],
                None,
                &Ctx::bench(0),
            )
        };
        let refused = run(0.5).expect_err("refused").to_string();
        assert!(refused.contains("row 0's nucleus boundary is within float32's rounding"), "{refused}");
        let kept = run(0.6).unwrap().outputs.remove(0);
        assert_eq!(kept.tensor("out").unwrap().to_f64_vec().unwrap(), [f64::NEG_INFINITY, 0.0, 0.0, 0.0]);
    }
}
