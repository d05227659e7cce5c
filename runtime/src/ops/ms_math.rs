//! MindSpore's own arithmetic (`mindspore.ops`, dumped `Functional.X`)
//! that torch has no function for (`bias_add`, `addn`, `xdivy`, `lrn`,
//! `clip_by_norm`, `iou`, ...), and two counting functions both frameworks
//! have: `histc` and `nextafter`. The differentiable ones compose candle
//! ops, so their gradients are autograd's of the same arithmetic.
//! Cases: tests/agreement/cases.py, against MindSpore (torch for torch's names).

use candle_core::{DType, Tensor};

use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, operand, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

fn out(ctx: &Ctx, t: Tensor, dtype: TDType) -> Result<Vec<Value>> {
    Ok(vec![Value::Tensor(ctx.out(t, dtype)?)])
}

/// The two operands broadcast in their result dtype.
fn pair(ctx: &Ctx, b: &Bound) -> Result<(Tensor, Tensor, TDType)> {
    let dtype = result_type(&[b.value("input"), b.value("other")])?;
    let (x, y) = broadcast2(&operand(ctx, b.value("input"), dtype)?, &operand(ctx, b.value("other"), dtype)?)?;
    Ok((x, y, dtype))
}

/// `bias_add(input_x, bias)`: `bias` along axis 1 (NCHW's channels).
fn bias_add(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let bias = operand(ctx, b.value("bias"), x.dtype)?;
    if x.rank() < 2 || bias.dims() != [x.dims()[1]] {
        return Err(Error::Arg(format!("bias_add: a bias of shape {:?} for an input of shape {:?}", bias.dims(), x.dims())));
    }
    let mut at = vec![1; x.rank()];
    at[1] = x.dims()[1];
    out(ctx, x.t.broadcast_add(&bias.reshape(at)?)?, x.dtype)
}

/// `addn(x)` / `accumulate_n(x)`: the sum of a list of tensors of one shape.
fn addn(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let xs = b.tensors("input")?;
    let first = xs.first().ok_or_else(|| Error::Arg("addn: an empty list".into()))?;
    let mut sum = first.t.clone();
    for x in &xs[1..] {
        sum = (sum + operand(ctx, &Value::Tensor((*x).clone()), first.dtype)?)?;
    }
    out(ctx, sum, first.dtype)
}

/// `xdivy(x, y)`: x / y, and 0 where x is 0 (whatever y is).
fn xdivy(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y, dtype) = pair(ctx, b)?;
    let q = (&x / &y)?;
    out(ctx, x.eq(0.0)?.where_cond(&q.zeros_like()?, &q)?, dtype)
}

/// `imag(input)` of a real tensor: zeros.
fn imag(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    out(ctx, x.t.zeros_like()?, x.dtype)
}

/// `approximate_equal(x, y, tolerance=1e-5)`: |x - y| < tolerance.
fn approximate_equal(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y, _) = pair(ctx, b)?;
    let close = (x - y)?.abs()?.lt(b.float("tolerance")?)?;
    out(ctx, close.to_dtype(ctx.storage(TDType::Bool))?, TDType::Bool)
}

/// `intopk(x1, x2, k)`: whether each row's target class is among its k
/// largest (fewer than k elements strictly larger; a non-finite row is false).
fn intopk(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, target) = (b.tensor("x1")?, b.tensor("x2")?);
    let k = b.int("k")?;
    let [rows, cols] = x.dims() else { return Err(Error::Arg("intopk: x1 is [batch, classes]".into())) };
    let (v, t) = (x.to_f64_vec()?, target.to_f64_vec()?);
    if t.len() != *rows {
        return Err(Error::Arg("intopk: one target per row".into()));
    }
    let hits: Vec<f64> = (0..*rows)
        .map(|r| {
            let row = &v[r * cols..(r + 1) * cols];
            let c = t[r] as i64;
            let ok = c >= 0 && (c as usize) < *cols && row.iter().all(|e| e.is_finite()) && {
                let target = row[c as usize];
                (row.iter().filter(|&&e| e > target).count() as i64) < k
            };
            f64::from(u8::from(ok))
        })
        .collect();
    Ok(vec![Value::Tensor(T::from_f64(hits, &[*rows], TDType::Bool, ctx.compute, &ctx.device)?)])
}

/// `population_count(input_x)`: the set bits of each integer in its own width, as uint8.
fn population_count(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let bits = match x.dtype {
        TDType::I8 | TDType::U8 => 8,
        TDType::I16 | TDType::U16 => 16,
        TDType::I32 | TDType::U32 => 32,
        TDType::I64 | TDType::U64 => 64,
        d => return Err(Error::Arg(format!("population_count: an integer dtype, got {}", d.name()))),
    };
    let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let v: Vec<f64> = x.to_f64_vec()?.into_iter().map(|e| f64::from(((e as i64 as u64) & mask).count_ones())).collect();
    Ok(vec![Value::Tensor(T::from_f64(v, x.dims(), TDType::U8, ctx.compute, &ctx.device)?)])
}

/// `clip_by_norm(x, max_norm, norm_type=2.0, error_if_nonfinite=False)`:
/// each tensor (one, or a list with one norm over all) times
/// min(1, max_norm / (norm + 1e-6)).
fn clip_by_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let single = matches!(b.value("input"), Value::Tensor(_));
    let xs = if single { vec![b.tensor("input")?] } else { b.tensors("input")? };
    let p = b.float("norm_type")?;
    let max_norm = b.float("max_norm")?;
    let mut total: Option<Tensor> = None;
    for x in &xs {
        let a = x.t.abs()?;
        let part = if p.is_infinite() { a.flatten_all()?.max(0)? } else { a.powf(p)?.sum_all()? };
        total = Some(match total {
            None => part,
            Some(t) if p.is_infinite() => t.maximum(&part)?,
            Some(t) => (t + part)?,
        });
    }
    let total = total.ok_or_else(|| Error::Arg("clip_by_norm: no tensor".into()))?;
    let norm = if p.is_infinite() { total } else { total.powf(1.0 / p)? };
    if b.bool("error_if_nonfinite")? && !norm.to_dtype(DType::F64)?.to_scalar::<f64>()?.is_finite() {
        return Err(Error::Arg("clip_by_norm: the total norm is not finite".into()));
    }
    let coef = norm.affine(1.0, 1e-6)?.recip()?.affine(max_norm, 0.0)?.clamp(f64::NEG_INFINITY, 1.0)?;
    let clipped = xs.iter().map(|x| Ok(Value::Tensor(ctx.out(x.t.broadcast_mul(&coef)?, x.dtype)?))).collect::<Result<Vec<_>>>()?;
    Ok(if single { clipped } else { vec![Value::List(clipped)] })
}

/// `vander(x, N=None)`: columns x^(N-1), ..., x, 1 (decreasing powers).
fn vander(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() != 1 {
        return Err(Error::Arg("vander: x is 1-D".into()));
    }
    let n = b.opt_int("N")?.unwrap_or(x.dims()[0] as i64);
    if n < 0 {
        return Err(Error::Arg(format!("vander: N must be non-negative, got {n}")));
    }
    let mut cols = Vec::with_capacity(n as usize);
    let mut power = x.t.ones_like()?;
    for _ in 0..n {
        cols.push(power.clone());
        power = (power * &x.t)?;
    }
    cols.reverse();
    let t = if cols.is_empty() { Tensor::zeros((x.dims()[0], 0), x.t.dtype(), x.t.device())? } else { Tensor::stack(&cols, 1)? };
    out(ctx, t, x.dtype)
}

/// `lrn(x, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, norm_region)`:
/// x / (bias + alpha · Σ x²)^beta, the sum over the channels within
/// `depth_radius` (axis 1 of an NCHW tensor).
fn lrn(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if b.str("norm_region")? != "ACROSS_CHANNELS" || x.rank() != 4 {
        return Err(Error::Unsupported("lrn is replayed across the channels of an NCHW tensor".into()));
    }
    let r = b.int("depth_radius")?.max(0) as usize;
    let c = x.dims()[1];
    let sq = x.t.sqr()?.pad_with_zeros(1, r, r)?;
    let mut sum = sq.narrow(1, 0, c)?;
    for i in 1..=2 * r {
        sum = (sum + sq.narrow(1, i, c)?)?;
    }
    let scale = sum.affine(b.float("alpha")?, b.float("bias")?)?.powf(-b.float("beta")?)?;
    out(ctx, (&x.t * scale)?, x.dtype)
}

/// `iou(anchor_boxes, gt_boxes, mode='iou')`: [M, N] overlaps of the M
/// ground-truth and N anchor boxes (x0, y0, x1, y1), their areas counting
/// the edge pixels (+1), over the union ('iou') or the anchor's area ('iof').
fn iou(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (anchors, gts) = (b.tensor("anchor_boxes")?, b.tensor("gt_boxes")?);
    let over_union = match b.str("mode")? {
        "iou" => true,
        "iof" => false,
        m => return Err(Error::Arg(format!("iou: mode is 'iou' or 'iof', got {m:?}"))),
    };
    let (a, g) = (anchors.to_f64_vec()?, gts.to_f64_vec()?);
    if anchors.dims().last() != Some(&4) || gts.dims().last() != Some(&4) {
        return Err(Error::Arg("iou: boxes are [n, 4]".into()));
    }
    let area = |q: &[f64]| (q[2] - q[0] + 1.0) * (q[3] - q[1] + 1.0);
    let mut v = vec![];
    for gt in g.chunks(4) {
        for an in a.chunks(4) {
            let w = (an[2].min(gt[2]) - an[0].max(gt[0]) + 1.0).max(0.0);
            let h = (an[3].min(gt[3]) - an[1].max(gt[1]) + 1.0).max(0.0);
            let inter = w * h;
            v.push(if over_union { inter / (area(an) + area(gt) - inter) } else { inter / area(gt) });
        }
    }
    let shape = [g.len() / 4, a.len() / 4];
    Ok(vec![Value::Tensor(T::from_f64(v, &shape, anchors.dtype, ctx.compute, &ctx.device)?)])
}

/// `histc(input, bins=100, min=0, max=0)`: counts in equal bins over
/// [min, max] (the data's range when both are equal, widened by 1 each way
/// when that is one value), values outside left out, `max` in the last bin.
fn histc(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let bins = b.int("bins")?;
    if bins <= 0 {
        return Err(Error::Arg(format!("histc: bins must be positive, got {bins}")));
    }
    let v = x.to_f64_vec()?;
    let (mut lo, mut hi) = (b.float("min")?, b.float("max")?);
    if lo > hi {
        return Err(Error::Arg(format!("histc: max {hi} is below min {lo}")));
    }
    if lo == hi && !v.is_empty() {
        lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    }
    if lo == hi {
        (lo, hi) = (lo - 1.0, hi + 1.0);
    }
    let mut counts = vec![0.0; bins as usize];
    for e in v.into_iter().filter(|e| (lo..=hi).contains(e)) {
        let i = (((e - lo) * bins as f64 / (hi - lo)) as usize).min(bins as usize - 1);
        counts[i] += 1.0;
    }
    let dtype = if x.dtype.is_float() { x.dtype } else { TDType::F32 };
    Ok(vec![Value::Tensor(T::from_f64(counts, &[bins as usize], dtype, ctx.compute, &ctx.device)?)])
}

/// `nextafter(input, other)`: the next value of the input's dtype after
/// `input` toward `other`.
fn nextafter(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y, dtype) = pair(ctx, b)?;
    let step: fn(f64, f64) -> f64 = match dtype {
        TDType::F32 => |a, o| f64::from(next_f32(a as f32, o as f32)),
        TDType::F64 => next_f64,
        d => return Err(Error::Unsupported(format!("nextafter of {}", d.name()))),
    };
    let (xv, yv) = (T { t: x, dtype }.to_f64_vec()?, T { t: y.clone(), dtype }.to_f64_vec()?);
    let v: Vec<f64> = xv.iter().zip(&yv).map(|(&a, &o)| step(a, o)).collect();
    Ok(vec![Value::Tensor(T::from_exact_f64(v, y.dims(), dtype, ctx.compute, &ctx.device)?)])
}

fn next_f64(a: f64, o: f64) -> f64 {
    if a.is_nan() || o.is_nan() {
        return f64::NAN;
    }
    if a == o {
        return o;
    }
    if a == 0.0 {
        return f64::from_bits(1).copysign(o);
    }
    let bits = a.to_bits();
    f64::from_bits(if (o > a) == (a > 0.0) { bits + 1 } else { bits - 1 })
}

fn next_f32(a: f32, o: f32) -> f32 {
    if a.is_nan() || o.is_nan() {
        return f32::NAN;
    }
    if a == o {
        return o;
    }
    if a == 0.0 {
        return f32::from_bits(1).copysign(o);
    }
    let bits = a.to_bits();
    f32::from_bits(if (o > a) == (a > 0.0) { bits + 1 } else { bits - 1 })
}

/// `batch_dot(x1, x2, axes=None)`: per batch entry (axis 0), `x1`'s axis
/// `axes[0]` contracted with `x2`'s `axes[1]` (by default the last of `x1`
/// and the last of a 2-D `x2` or its second to last); two vectors give `[B, 1]`.
fn batch_dot(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("x1")?, b.tensor("x2")?);
    let (r1, r2) = (x.rank(), y.rank());
    if r1 < 2 || r2 < 2 {
        return Err(Error::Arg("batch_dot: both inputs have a batch axis and another".into()));
    }
    let axes: Vec<i64> = match b.value("axes") {
        Value::None => vec![r1 as i64 - 1, if r2 == 2 { 1 } else { r2 as i64 - 2 }],
        Value::Int(a) => vec![*a, *a],
        Value::List(v) => v.iter().map(|a| a.as_i64().ok_or_else(|| Error::Arg("batch_dot: axes are ints".into()))).collect::<Result<_>>()?,
        v => return Err(Error::Arg(format!("batch_dot: axes is an int or a pair, got {}", v.kind()))),
    };
    let [a1, a2] = axes[..] else { return Err(Error::Arg("batch_dot: axes is a pair".into())) };
    let (a1, a2) = (crate::ctx::dim(a1, r1)?, crate::ctx::dim(a2, r2)?);
    if a1 == 0 || a2 == 0 || x.dims()[0] != y.dims()[0] || x.dims()[a1] != y.dims()[a2] {
        return Err(Error::Arg(format!("batch_dot: axes {a1}, {a2} of shapes {:?} and {:?}", x.dims(), y.dims())));
    }
    let dtype = TDType::promote(x.dtype, y.dtype);
    let (xt, yt) = (operand(ctx, b.value("x1"), dtype)?, operand(ctx, b.value("x2"), dtype)?);
    let rest1: Vec<usize> = (1..r1).filter(|&d| d != a1).collect();
    let rest2: Vec<usize> = (1..r2).filter(|&d| d != a2).collect();
    let (bs, k) = (x.dims()[0], x.dims()[a1]);
    let (p, q): (usize, usize) = (rest1.iter().map(|&d| x.dims()[d]).product(), rest2.iter().map(|&d| y.dims()[d]).product());
    let xt = xt.permute([vec![0], rest1.clone(), vec![a1]].concat())?.reshape((bs, p, k))?;
    let yt = yt.permute([vec![0, a2], rest2.clone()].concat())?.reshape((bs, k, q))?;
    let mut shape = vec![bs];
    shape.extend(rest1.iter().map(|&d| x.dims()[d]));
    shape.extend(rest2.iter().map(|&d| y.dims()[d]));
    if shape.len() == 1 {
        shape.push(1);
    }
    out(ctx, xt.contiguous()?.matmul(&yt.contiguous()?)?.reshape(shape)?, dtype)
}

/// `bounding_box_encode(anchor_box, groundtruth_box, means, stds)`: the
/// deltas (dx, dy, dw, dh) of each box from its anchor, widths counting the
/// edge pixel (+1), normalized by `means` and `stds`.
fn bounding_box_encode(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    encode_boxes(ctx, b.tensor("anchor_box")?, b.tensor("groundtruth_box")?, four(b, "means")?, four(b, "stds")?)
}

/// [`bounding_box_encode`] of given means and stds (torch_npu's `npu_bounding_box_encode` too).
pub(super) fn encode_boxes(ctx: &Ctx, anchors: &T, gts: &T, means: [f64; 4], stds: [f64; 4]) -> Result<Vec<Value>> {
    let (a, g) = (anchors.to_f64_vec()?, gts.to_f64_vec()?);
    if a.len() != g.len() || a.len() % 4 != 0 {
        return Err(Error::Arg("bounding_box_encode: two [n, 4] tensors".into()));
    }
    let centre = |q: &[f64]| ((q[0] + q[2]) / 2.0, (q[1] + q[3]) / 2.0, q[2] - q[0] + 1.0, q[3] - q[1] + 1.0);
    let v: Vec<f64> = a
        .chunks(4)
        .zip(g.chunks(4))
        .flat_map(|(an, gt)| {
            let ((px, py, pw, ph), (gx, gy, gw, gh)) = (centre(an), centre(gt));
            let d = [(gx - px) / pw, (gy - py) / ph, (gw / pw).ln(), (gh / ph).ln()];
            (0..4).map(move |i| (d[i] - means[i]) / stds[i])
        })
        .collect();
    Ok(vec![Value::Tensor(T::from_f64(v, anchors.dims(), anchors.dtype, ctx.compute, &ctx.device)?)])
}

/// `bounding_box_decode(anchor_box, deltas, max_shape, means, stds, wh_ratio_clip=0.016)`:
/// the boxes the deltas give, their log-ratios clipped to |ln wh_ratio_clip|
/// and their corners to [0, width] and [0, height] (`max_shape` = (height, width)).
fn bounding_box_decode(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let shape = b.ints("max_shape")?;
    let [h, w] = shape[..] else { return Err(Error::Arg("bounding_box_decode: max_shape is (height, width)".into())) };
    let (anchors, deltas) = (b.tensor("anchor_box")?, b.tensor("deltas")?);
    decode_boxes(ctx, anchors, deltas, four(b, "means")?, four(b, "stds")?, (h, w), b.float("wh_ratio_clip")?, 0.0)
}

/// [`bounding_box_decode`] of given means, stds, image (height, width) and
/// ratio clip (torch_npu's `npu_bounding_box_decode` too), the corners
/// clamped to [0, width − `edge`] and [0, height − `edge`]: MindSpore's CPU
/// kernel clamps to the image size (`edge` 0), the Ascend kernel to its
/// last pixel (`edge` 1, as op-plugin's tests of torch_npu's give).
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_boxes(
    ctx: &Ctx,
    anchors: &T,
    deltas: &T,
    means: [f64; 4],
    stds: [f64; 4],
    (h, w): (i64, i64),
    ratio_clip: f64,
    edge: f64,
) -> Result<Vec<Value>> {
    let clip = ratio_clip.ln().abs();
    let (a, d) = (anchors.to_f64_vec()?, deltas.to_f64_vec()?);
    if a.len() != d.len() || a.len() % 4 != 0 {
        return Err(Error::Arg("bounding_box_decode: two [n, 4] tensors".into()));
    }
    let v: Vec<f64> = a
        .chunks(4)
        .zip(d.chunks(4))
        .flat_map(|(an, de)| {
            let de: Vec<f64> = (0..4).map(|i| de[i] * stds[i] + means[i]).collect();
            let (px, py, pw, ph) = ((an[0] + an[2]) / 2.0, (an[1] + an[3]) / 2.0, an[2] - an[0] + 1.0, an[3] - an[1] + 1.0);
            let (gw, gh) = (pw * de[2].clamp(-clip, clip).exp(), ph * de[3].clamp(-clip, clip).exp());
            let (gx, gy) = (px + pw * de[0], py + ph * de[1]);
            let (xmax, ymax) = (w as f64 - edge, h as f64 - edge);
            [
                (gx - (gw - 1.0) / 2.0).clamp(0.0, xmax),
                (gy - (gh - 1.0) / 2.0).clamp(0.0, ymax),
                (gx + (gw - 1.0) / 2.0).clamp(0.0, xmax),
                (gy + (gh - 1.0) / 2.0).clamp(0.0, ymax),
            ]
        })
        .collect();
    Ok(vec![Value::Tensor(T::from_f64(v, anchors.dims(), anchors.dtype, ctx.compute, &ctx.device)?)])
}

/// `means` (zeros by default) or `stds` (ones).
fn four(b: &Bound, name: &str) -> Result<[f64; 4]> {
    let v = match b.value(name) {
        Value::None => return Ok([if name == "stds" { 1.0 } else { 0.0 }; 4]),
        Value::List(v) => v,
        _ => return Err(Error::Arg(format!("{name}: four numbers"))),
    };
    let v: Vec<f64> = v.iter().map(|x| x.as_f64().ok_or_else(|| Error::Arg(format!("{name}: four numbers")))).collect::<Result<_>>()?;
    v.try_into().map_err(|_| Error::Arg(format!("{name}: four numbers")))
}

/// `check_valid(bboxes, img_metas)`: whether each box (x0, y0, x1, y1)
/// starts at or after 0 and ends within the image of (height, width, ratio),
/// its last pixel at (width·ratio − 1, height·ratio − 1).
fn check_valid(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let boxes = b.tensor("bboxes")?;
    let metas = b.tensor("img_metas")?.to_f64_vec()?;
    let [h, w, r] = metas[..] else { return Err(Error::Arg("check_valid: img_metas is (height, width, ratio)".into())) };
    let v: Vec<f64> =
        boxes.to_f64_vec()?.chunks(4).map(|q| f64::from(u8::from(q[0] >= 0.0 && q[1] >= 0.0 && q[2] <= w * r - 1.0 && q[3] <= h * r - 1.0))).collect();
    let n = v.len();
    Ok(vec![Value::Tensor(T::from_f64(v, &[n], TDType::Bool, ctx.compute, &ctx.device)?)])
}

/// An entry of MindSpore's arithmetic, judged for accuracy.
const fn arith(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, backward: bool) -> Op {
    Op { names, sig, forward, backward, standard: Standard::Accuracy, random: false, facts: &[] }
}

/// An entry whose result is exact (counts, bits, tests).
const fn exact(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: false, standard: Standard::Exact, random: false, facts: &[] }
}

/// The entries.
pub static OPS: &[Op] = &[
    arith(&["MS.Functional.bias_add"], "input, bias", bias_add, true),
    arith(&["MS.Functional.addn", "MS.Functional.accumulate_n"], "input", addn, true),
    arith(&["MS.Functional.xdivy"], "input, other", xdivy, true),
    Op { names: &["MS.Functional.imag", "MS.Tensor.imag"], sig: "input", forward: imag, backward: true, standard: Standard::Exact, random: false, facts: &[] },
    exact(&["MS.Functional.approximate_equal"], "input, other, tolerance=1e-05", approximate_equal),
    exact(&["MS.Functional.intopk"], "x1, x2, k", intopk),
    exact(&["MS.Functional.population_count"], "input", population_count),
    arith(&["MS.Functional.clip_by_norm"], "input, max_norm, norm_type=2.0, error_if_nonfinite=False", clip_by_norm, true),
    arith(&["MS.Functional.vander"], "input, N=None", vander, true),
    arith(&["MS.Functional.lrn"], "input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, norm_region='ACROSS_CHANNELS'", lrn, true),
    arith(&["MS.Functional.iou"], "anchor_boxes, gt_boxes, mode='iou'", iou, false),
    arith(&["MS.Functional.batch_dot"], "x1, x2, axes=None", batch_dot, true),
    arith(&["MS.Functional.bounding_box_encode"], "anchor_box, groundtruth_box, means=None, stds=None", bounding_box_encode, false),
    arith(&["MS.Functional.bounding_box_decode"], "anchor_box, deltas, max_shape, means=None, stds=None, wh_ratio_clip=0.016", bounding_box_decode, false),
    exact(&["MS.Functional.check_valid"], "bboxes, img_metas", check_valid),
    exact(&["Torch.histc", "Tensor.histc", "Mint.histc", "MS.Functional.histc", "MS.Tensor.histc"], "input, bins=100, min=0, max=0", histc),
    exact(&["Torch.nextafter", "Tensor.nextafter", "MS.Functional.nextafter", "MS.Tensor.nextafter"], "input, other", nextafter),
];
