//! torch_npu's detection kernels, as torch_npu documents them and
//! Ascend/op-plugin's goldens (or CANN's TIK kernels, where the
//! documentation is wrong) compute them: `npu_giou` and `npu_diou` (boxes
//! `[4, N]`, differentiated by autograd, as their goldens), `npu_ciou`
//! (forward: its backward's convention is not pinned down),
//! `npu_yolo_boxes_encode` (mmdetection's YOLO coder), `npu_rotated_box_encode`
//! / `_decode`, `npu_anchor_response_flags`, `npu_grid_assign_positive`,
//! `npu_roi_align` and `npu_roi_alignbk` (its adjoint). Cases:
//! runtime/tests/npu/oracles.py.

use super::npu_act::values_out;
use super::{entry, rebind, Fact, Inert, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// Elementwise arithmetic through the table's entries, so autograd is
/// theirs (an emulated half-precision device rounds each step, where the
/// kernels compute in float32 and cast once).
struct Calc<'a>(&'a Ctx);

impl Calc<'_> {
    fn call(&self, api: &str, args: Vec<Value>) -> Result<Value> {
        rebind(self.0, api, args, &[])?.into_iter().next().ok_or_else(|| Error::Arg(format!("{api} returned nothing")))
    }
    fn add(&self, a: &Value, b: &Value) -> Result<Value> {
        self.call("Torch.add", vec![a.clone(), b.clone()])
    }
    fn sub(&self, a: &Value, b: &Value) -> Result<Value> {
        self.call("Torch.sub", vec![a.clone(), b.clone()])
    }
    fn mul(&self, a: &Value, b: &Value) -> Result<Value> {
        self.call("Torch.mul", vec![a.clone(), b.clone()])
    }
    fn div(&self, a: &Value, b: &Value) -> Result<Value> {
        self.call("Torch.div", vec![a.clone(), b.clone()])
    }
    fn min(&self, a: &Value, b: &Value) -> Result<Value> {
        self.call("Torch.minimum", vec![a.clone(), b.clone()])
    }
    fn max(&self, a: &Value, b: &Value) -> Result<Value> {
        self.call("Torch.maximum", vec![a.clone(), b.clone()])
    }
    fn relu(&self, a: &Value) -> Result<Value> {
        rebind(self.0, "Torch.clamp", vec![a.clone()], &[("min", Value::Float(0.0))])?.into_iter().next().ok_or_else(|| Error::Arg("clamp".into()))
    }
    fn square(&self, a: &Value) -> Result<Value> {
        self.call("Torch.square", vec![a.clone()])
    }
}

fn num(v: f64) -> Value {
    Value::Float(v)
}

/// `x` raised to `low` when below it, NaN kept (as the kernels' Maxs).
fn floor_at(x: f64, low: f64) -> f64 {
    if x < low {
        low
    } else {
        x
    }
}

/// A box tensor `[4, N]`'s corners (x1, y1, x2, y2) as rows `[N]` (or
/// `[1, N]` / `[M, 1]` for a cross product), from (cx, cy, w, h) when `trans`.
fn corners(c: &Calc, b: &Bound, name: &str, trans: bool, cross: Option<i64>) -> Result<[Value; 4]> {
    let t = b.tensor(name)?;
    if t.rank() != 2 || t.dims()[0] != 4 {
        return Err(Error::Arg(format!("{name}: boxes are [4, N], got {:?}", t.dims())));
    }
    let row = |i: i64| -> Result<Value> {
        let r = c.call("Torch.select", vec![Value::Tensor(t.clone()), Value::Int(0), Value::Int(i)])?;
        match cross {
            Some(d) => c.call("Torch.unsqueeze", vec![r, Value::Int(d)]),
            None => Ok(r),
        }
    };
    let [a, b2, w, h] = [row(0)?, row(1)?, row(2)?, row(3)?];
    if !trans {
        return Ok([a, b2, w, h]);
    }
    let (hw, hh) = (c.mul(&w, &num(0.5))?, c.mul(&h, &num(0.5))?);
    Ok([c.sub(&a, &hw)?, c.sub(&b2, &hh)?, c.add(&a, &hw)?, c.add(&b2, &hh)?])
}

/// The self and gtboxes corners of a giou/diou/ciou call (cross: gt j along rows, box i along columns).
fn pair(c: &Calc, b: &Bound, api: &str) -> Result<([Value; 4], [Value; 4])> {
    if b.int("mode")? != 0 {
        return Err(Error::Unsupported(format!("{api} with mode 1 (iof: its denominator is not documented) is not replayed")));
    }
    let (trans, cross) = (b.bool("trans")?, b.bool("is_cross")?);
    Ok((corners(c, b, "self", trans, cross.then_some(0))?, corners(c, b, "gtboxes", trans, cross.then_some(1))?))
}

/// The intersection area of two corner sets.
fn intersection(c: &Calc, p: &[Value; 4], q: &[Value; 4]) -> Result<Value> {
    let w = c.relu(&c.sub(&c.min(&p[2], &q[2])?, &c.max(&p[0], &q[0])?)?)?;
    let h = c.relu(&c.sub(&c.min(&p[3], &q[3])?, &c.max(&p[1], &q[1])?)?)?;
    c.mul(&w, &h)
}

/// The enclosing box's width and height.
fn enclosing(c: &Calc, p: &[Value; 4], q: &[Value; 4]) -> Result<(Value, Value)> {
    Ok((c.sub(&c.max(&p[2], &q[2])?, &c.min(&p[0], &q[0])?)?, c.sub(&c.max(&p[3], &q[3])?, &c.min(&p[1], &q[1])?)?))
}

/// A `[N]` result as `[1, N]`, or a cross result as it is.
fn as_row(c: &Calc, v: Value, cross: bool) -> Result<Value> {
    if cross {
        Ok(v)
    } else {
        c.call("Torch.unsqueeze", vec![v, Value::Int(0)])
    }
}

/// `npu_giou(self, gtboxes, trans=False, is_cross=False, mode=0)`, which
/// torch_npu runs only with trans, pairwise, mode 0: inter/union -
/// (outer - union)/outer, union = a₁ + a₂ - inter + 1e-16, as `[N, 1]`.
fn giou(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !b.bool("trans")? || b.bool("is_cross")? || b.int("mode")? != 0 {
        return Err(Error::Arg("npu_giou: torch_npu runs it with trans=True, is_cross=False, mode=0 only".into()));
    }
    let c = Calc(ctx);
    let (p, q) = pair(&c, b, "npu_giou")?;
    let area = |x: &[Value; 4]| -> Result<Value> { c.mul(&c.sub(&x[2], &x[0])?, &c.sub(&x[3], &x[1])?) };
    let inter = intersection(&c, &p, &q)?;
    let union = c.add(&c.sub(&c.add(&area(&p)?, &area(&q)?)?, &inter)?, &num(1e-16))?;
    let (w, h) = enclosing(&c, &p, &q)?;
    let outer = c.mul(&c.call("Torch.abs", vec![w])?, &c.call("Torch.abs", vec![h])?)?;
    let g = c.sub(&c.div(&inter, &union)?, &c.div(&c.sub(&outer, &union)?, &outer)?)?;
    Ok(vec![c.call("Torch.unsqueeze", vec![g, Value::Int(1)])?])
}

/// The DIoU terms (op-plugin's golden, eps 1e-9): iou, rho²/c², and the
/// boxes' widths and heights.
fn diou_terms(c: &Calc, p: &[Value; 4], q: &[Value; 4]) -> Result<(Value, Value, [Value; 4])> {
    let eps = num(1e-9);
    let (w1, h1) = (c.sub(&p[2], &p[0])?, c.add(&c.sub(&p[3], &p[1])?, &eps)?);
    let (w2, h2) = (c.sub(&q[2], &q[0])?, c.add(&c.sub(&q[3], &q[1])?, &eps)?);
    let inter = intersection(c, p, q)?;
    let union = c.add(&c.sub(&c.add(&c.mul(&w1, &h1)?, &c.mul(&w2, &h2)?)?, &inter)?, &eps)?;
    let iou = c.div(&inter, &union)?;
    let (cw, ch) = enclosing(c, p, q)?;
    let c2 = c.add(&c.add(&c.square(&cw)?, &c.square(&ch)?)?, &eps)?;
    let dx = c.sub(&c.add(&q[0], &q[2])?, &c.add(&p[0], &p[2])?)?;
    let dy = c.sub(&c.add(&q[1], &q[3])?, &c.add(&p[1], &p[3])?)?;
    let rho2 = c.mul(&c.add(&c.square(&dx)?, &c.square(&dy)?)?, &num(0.25))?;
    Ok((iou, c.div(&rho2, &c2)?, [w1, h1, w2, h2]))
}

/// `npu_diou(self, gtboxes, trans=False, is_cross=False, mode=0)`:
/// iou - rho²/c², `[1, N]` (cross: `[M, N]`).
fn diou(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let c = Calc(ctx);
    let (p, q) = pair(&c, b, "npu_diou")?;
    let (iou, distance, _) = diou_terms(&c, &p, &q)?;
    Ok(vec![as_row(&c, c.sub(&iou, &distance)?, b.bool("is_cross")?)?])
}

/// `npu_ciou(self, gtboxes, trans=False, is_cross=True, mode=0,
/// atan_sub_flag=False)`: iou - rho²/c² - alpha·v, v = 4/π²·(atan(w₂/h₂) -
/// atan(w₁/h₁))², alpha = v/((1 + eps) - iou + v).
fn ciou(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let c = Calc(ctx);
    let (p, q) = pair(&c, b, "npu_ciou")?;
    let (iou, distance, [w1, h1, w2, h2]) = diou_terms(&c, &p, &q)?;
    let atan = |w: &Value, h: &Value| -> Result<Value> { c.call("Torch.atan", vec![c.div(w, h)?]) };
    let v = c.mul(&c.square(&c.sub(&atan(&w2, &h2)?, &atan(&w1, &h1)?)?)?, &num(4.0 / std::f64::consts::PI.powi(2)))?;
    let alpha = c.div(&v, &c.add(&c.sub(&num(1.0 + 1e-9), &iou)?, &v)?)?;
    let out = c.sub(&c.sub(&iou, &distance)?, &c.mul(&alpha, &v)?)?;
    Ok(vec![as_row(&c, out, b.bool("is_cross")?)?])
}

/// A tensor's values as rows of `width`.
fn rows_of(t: &T, width: usize, what: &str) -> Result<Vec<Vec<f64>>> {
    if t.dims().last() != Some(&width) {
        return Err(Error::Arg(format!("{what}: rows of {width}, got {:?}", t.dims())));
    }
    Ok(t.to_f64_vec()?.chunks(width).map(<[f64]>::to_vec).collect())
}

/// `npu_yolo_boxes_encode(self, gt_bboxes, stride, performance_mode=False)`:
/// mmdetection's YOLO coder (eps 1e-6): centre offsets per stride + 0.5,
/// clamped to [eps, 1 - eps]; log size ratios, the ratio clamped below at eps.
fn yolo_boxes_encode(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.bool("performance_mode")? {
        return Err(Error::Unsupported("npu_yolo_boxes_encode with performance_mode (a float16 path documented to 5e-3) is not replayed".into()));
    }
    let gt = b.tensor("gt_bboxes")?;
    let (anchors, truth) = (rows_of(b.tensor("self")?, 4, "npu_yolo_boxes_encode: self")?, rows_of(gt, 4, "npu_yolo_boxes_encode: gt_bboxes")?);
    let stride = b.tensor("stride")?.to_f64_vec()?;
    if anchors.len() != truth.len() || stride.len() != truth.len() {
        return Err(Error::Arg("npu_yolo_boxes_encode: one anchor, box and stride per row".into()));
    }
    let eps = 1e-6;
    let centre = |r: &[f64]| ((r[0] + r[2]) * 0.5, (r[1] + r[3]) * 0.5, r[2] - r[0], r[3] - r[1]);
    let out: Vec<f64> = anchors
        .iter()
        .zip(&truth)
        .zip(&stride)
        .flat_map(|((a, g), s)| {
            let ((ax, ay, aw, ah), (gx, gy, gw, gh)) = (centre(a), centre(g));
            [((gx - ax) / s + 0.5).clamp(eps, 1.0 - eps), ((gy - ay) / s + 0.5).clamp(eps, 1.0 - eps), floor_at(gw / aw, eps).ln(), floor_at(gh / ah, eps).ln()]
        })
        .collect();
    Ok(vec![values_out(ctx, out, gt.dims(), gt.dtype)?])
}

/// The rotated boxes `[B, 5, N]` (rows x1, y1, x2, y2, angle in degrees) as
/// (cx, cy, w, h, angle) per box, w and h at least 1.
fn rotated_centres(t: &T, what: &str) -> Result<(Vec<[f64; 5]>, [usize; 3])> {
    let [bs, five, n] = *t.dims() else { return Err(Error::Arg(format!("{what}: boxes are [B, 5, N], got {:?}", t.dims()))) };
    if five != 5 {
        return Err(Error::Arg(format!("{what}: boxes are [B, 5, N], got {:?}", t.dims())));
    }
    let v = t.to_f64_vec()?;
    let at = |b: usize, r: usize, i: usize| v[(b * 5 + r) * n + i];
    let boxes = (0..bs)
        .flat_map(|b| (0..n).map(move |i| (b, i)))
        .map(|(b, i)| {
            let (w, h) = (floor_at(at(b, 2, i) - at(b, 0, i), 1.0), floor_at(at(b, 3, i) - at(b, 1, i), 1.0));
            [at(b, 0, i) + 0.5 * w, at(b, 1, i) + 0.5 * h, w, h, at(b, 4, i)]
        })
        .collect();
    Ok((boxes, [bs, 5, n]))
}

/// Per-box rows back to `[B, 5, N]`.
fn rotated_layout(boxes: &[[f64; 5]], [bs, _, n]: [usize; 3]) -> Vec<f64> {
    let mut out = vec![0.0; bs * 5 * n];
    for (k, b) in boxes.iter().enumerate() {
        for (r, v) in b.iter().enumerate() {
            out[((k / n) * 5 + r) * n + k % n] = *v;
        }
    }
    out
}

fn weights(b: &Bound) -> Result<[f64; 5]> {
    let w = b.tensor("weight")?.to_f64_vec()?;
    w.try_into().map_err(|w: Vec<f64>| Error::Arg(format!("rotated box weight: 5 values, got {}", w.len())))
}

/// `npu_rotated_box_encode(self, gt_bboxes, weight)`: (Δcx/w, Δcy/h, ln
/// of the size ratios, tan(gt angle) - tan(anchor angle)), each times its weight.
fn rotated_box_encode(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let anchor = b.tensor("self")?;
    let ((a, shape), (g, _)) =
        (rotated_centres(anchor, "npu_rotated_box_encode: self")?, rotated_centres(b.tensor("gt_bboxes")?, "npu_rotated_box_encode: gt_bboxes")?);
    let w = weights(b)?;
    let tan = |deg: f64| deg.to_radians().tan();
    let deltas: Vec<[f64; 5]> = a
        .iter()
        .zip(&g)
        .map(|(a, g)| {
            [(g[0] - a[0]) / a[2] * w[0], (g[1] - a[1]) / a[3] * w[1], (g[2] / a[2]).ln() * w[2], (g[3] / a[3]).ln() * w[3], (tan(g[4]) - tan(a[4])) * w[4]]
        })
        .collect();
    Ok(vec![values_out(ctx, rotated_layout(&deltas, shape), anchor.dims(), anchor.dtype)?])
}

/// `npu_rotated_box_decode(self, deltas, weight)`: the inverse of the
/// encoding, as corners (x1, y1, x2, y2) and atan(tan(anchor angle) + Δ) in degrees.
fn rotated_box_decode(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let anchor = b.tensor("self")?;
    let (a, shape) = rotated_centres(anchor, "npu_rotated_box_decode: self")?;
    let d = b.tensor("deltas")?;
    if d.dims() != anchor.dims() {
        return Err(Error::Arg(format!("npu_rotated_box_decode: deltas {:?} for boxes {:?}", d.dims(), anchor.dims())));
    }
    let (dv, w, n) = (d.to_f64_vec()?, weights(b)?, shape[2]);
    let boxes: Vec<[f64; 5]> = a
        .iter()
        .enumerate()
        .map(|(k, a)| {
            let delta = |r: usize| dv[((k / n) * 5 + r) * n + k % n] / w[r];
            let (cx, cy, bw, bh) = (delta(0) * a[2] + a[0], delta(1) * a[3] + a[1], delta(2).exp() * a[2], delta(3).exp() * a[3]);
            [cx - 0.5 * bw, cy - 0.5 * bh, cx + 0.5 * bw, cy + 0.5 * bh, (a[4].to_radians().tan() + delta(4)).atan().to_degrees()]
        })
        .collect();
    Ok(vec![values_out(ctx, rotated_layout(&boxes, shape), anchor.dims(), anchor.dtype)?])
}

/// `npu_anchor_response_flags(self, featmap_size, stride, num_base_anchors)`:
/// 1 (uint8) for each base anchor of the grid cell holding a box's centre
/// (x by stride[0], y by stride[1], clamped to the map), else 0.
fn anchor_response_flags(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let boxes = rows_of(b.tensor("self")?, 4, "npu_anchor_response_flags: self")?;
    let (size, stride) = (b.ints("featmap_size")?, b.ints("stride")?);
    let ([h, w], [sx, sy]) = (
        <[i64; 2]>::try_from(size).map_err(|_| Error::Arg("featmap_size: [h, w]".into()))?,
        <[i64; 2]>::try_from(stride).map_err(|_| Error::Arg("stride: two values".into()))?,
    );
    if h <= 0 || w <= 0 || sx <= 0 || sy <= 0 {
        return Err(Error::Arg(format!("npu_anchor_response_flags: featmap_size [{h}, {w}] and stride [{sx}, {sy}] must be positive")));
    }
    let anchors = b.int("num_base_anchors")?.max(0) as usize;
    let mut cells = vec![0.0; (h * w).max(0) as usize];
    for r in &boxes {
        // The kernel computes in float32.
        let (cx, cy) = (((r[0] as f32 + r[2] as f32) * 0.5) as f64, ((r[1] as f32 + r[3] as f32) * 0.5) as f64);
        let gx = ((cx as f32 / sx as f32).floor() as i64).clamp(0, w - 1);
        let gy = ((cy as f32 / sy as f32).floor() as i64).clamp(0, h - 1);
        cells[(gy * w + gx) as usize] = 1.0;
    }
    let flags: Vec<f64> = cells.iter().flat_map(|&f| std::iter::repeat_n(f, anchors)).collect();
    let n = flags.len();
    Ok(vec![Value::Tensor(T::from_f64(flags, &[n], TDType::U8, ctx.compute, &ctx.device)?)])
}

/// `npu_grid_assign_positive(self, overlaps, box_responsible_flags,
/// max_overlaps, argmax_overlaps, gt_max_overlaps, gt_argmax_overlaps,
/// num_gts, pos_iou_thr, min_pos_iou, gt_max_assign_all)`: mmdetection's
/// GridAssigner positive stage; strict thresholds, later boxes winning.
fn grid_assign_positive(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let assigned = b.tensor("self")?;
    let mut out = assigned.to_f64_vec()?;
    let n = out.len();
    let values = |p: &str| -> Result<Vec<f64>> { b.tensor(p)?.to_f64_vec() };
    let (overlaps, flags, max, argmax) = (values("overlaps")?, values("box_responsible_flags")?, values("max_overlaps")?, values("argmax_overlaps")?);
    let (gt_max, gt_argmax) = (values("gt_max_overlaps")?, values("gt_argmax_overlaps")?);
    if [flags.len(), max.len(), argmax.len()].iter().any(|&l| l != n) || overlaps.len() % n.max(1) != 0 {
        return Err(Error::Arg("npu_grid_assign_positive: one flag, max and argmax per box, overlaps [gts, boxes]".into()));
    }
    // The kernel takes the thresholds as float32 attributes and compares in float32.
    let (pos_thr, min_pos) = (b.float("pos_iou_thr")? as f32, b.float("min_pos_iou")? as f32);
    for i in 0..n {
        if max[i] as f32 > pos_thr && flags[i] != 0.0 {
            out[i] = argmax[i] + 1.0;
        }
    }
    let gts = (b.int("num_gts")?.max(0) as usize).min(overlaps.len() / n.max(1)).min(gt_max.len());
    for g in (0..gts).filter(|&g| gt_max[g] as f32 > min_pos) {
        if b.bool("gt_max_assign_all")? {
            for i in (0..n).filter(|&i| overlaps[g * n + i] as f32 == gt_max[g] as f32 && flags[i] != 0.0) {
                out[i] = (g + 1) as f64;
            }
        } else if let Some(j) = gt_argmax.get(g).map(|&j| j as usize).filter(|&j| j < n && flags[j] != 0.0) {
            out[j] = (g + 1) as f64;
        }
    }
    Ok(vec![Value::Tensor(T::from_f64(out, assigned.dims(), assigned.dtype, ctx.compute, &ctx.device)?)])
}

/// One RoI's sampling: (batch, for each output bin the bilinear taps
/// (flat offset in a channel plane, weight) averaged over its samples).
struct RoiTaps {
    batch: usize,
    bins: Vec<Vec<(usize, f64)>>,
}

/// The taps of `npu_roi_align` for each RoI `[K, 5]` (batch, x1, y1, x2, y2):
/// roi_end_mode 0 as torchvision's aligned=False, 1 with the end + 1, 2
/// and 3 aligned (-0.5); `sample_num` samples per bin side (0: adaptive).
fn roi_taps(rois: &T, (h, w): (usize, usize), scale: f64, (ph, pw): (usize, usize), sample: i64, mode: i64, batches: usize) -> Result<Vec<Option<RoiTaps>>> {
    let rows = rows_of(rois, 5, "rois")?;
    let tap = |y: f64, x: f64, into: &mut Vec<(usize, f64)>, share: f64| {
        if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 {
            return;
        }
        let (y, x) = (y.max(0.0), x.max(0.0));
        let (mut yl, mut xl) = (y as usize, x as usize);
        let (yh, y) = if yl >= h - 1 {
            yl = h - 1;
            (h - 1, yl as f64)
        } else {
            (yl + 1, y)
        };
        let (xh, x) = if xl >= w - 1 {
            xl = w - 1;
            (w - 1, xl as f64)
        } else {
            (xl + 1, x)
        };
        let (ly, lx) = (y - yl as f64, x - xl as f64);
        for (yy, xx, wt) in [(yl, xl, (1.0 - ly) * (1.0 - lx)), (yl, xh, (1.0 - ly) * lx), (yh, xl, ly * (1.0 - lx)), (yh, xh, ly * lx)] {
            into.push((yy * w + xx, wt * share));
        }
    };
    Ok(rows
        .iter()
        .map(|r| {
            let batch = r[0] as i64;
            if batch < 0 || batch as usize >= batches {
                return None;
            }
            let [mut x0, mut y0, mut x1, mut y1] = [r[1] * scale, r[2] * scale, r[3] * scale, r[4] * scale];
            if mode == 1 {
                x1 += scale;
                y1 += scale;
            } else if mode >= 2 {
                [x0, y0, x1, y1] = [x0 - 0.5, y0 - 0.5, x1 - 0.5, y1 - 0.5];
            }
            let (mut rw, mut rh) = (x1 - x0, y1 - y0);
            if mode < 2 {
                (rw, rh) = (floor_at(rw, 1.0), floor_at(rh, 1.0));
            }
            let (bw, bh) = (rw / pw as f64, rh / ph as f64);
            let (gw, gh) = if sample > 0 { (sample as usize, sample as usize) } else { (bw.ceil() as usize, bh.ceil() as usize) };
            let share = 1.0 / (gw * gh).max(1) as f64;
            let bins = (0..ph * pw)
                .map(|bin| {
                    let (py, px) = (bin / pw, bin % pw);
                    let mut taps = vec![];
                    for iy in 0..gh {
                        for ix in 0..gw {
                            let y = y0 + py as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                            tap(y, x0 + px as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64, &mut taps, share);
                        }
                    }
                    taps
                })
                .collect();
            Some(RoiTaps { batch: batch as usize, bins })
        })
        .collect())
}

/// `npu_roi_align(self, rois, spatial_scale, pooled_height, pooled_width,
/// sample_num, roi_end_mode)`: each bin the mean of its bilinear samples,
/// `[K, C, pooled_height, pooled_width]`.
fn roi_align(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("self")?;
    let (n, c, h, w) = x.t.dims4()?;
    let (ph, pw) = (b.int("pooled_height")?.max(1) as usize, b.int("pooled_width")?.max(1) as usize);
    let taps = roi_taps(b.tensor("rois")?, (h, w), b.float("spatial_scale")?, (ph, pw), b.int("sample_num")?, b.int("roi_end_mode")?, n)?;
    let v = x.to_f64_vec()?;
    let mut out = vec![0.0; taps.len() * c * ph * pw];
    for (k, roi) in taps.iter().enumerate() {
        let Some(roi) = roi else { continue };
        for ch in 0..c {
            let plane = &v[(roi.batch * c + ch) * h * w..][..h * w];
            for (bin, t) in roi.bins.iter().enumerate() {
                out[(k * c + ch) * ph * pw + bin] = t.iter().map(|&(at, wt)| plane[at] * wt).sum();
            }
        }
    }
    Ok(vec![values_out(ctx, out, &[taps.len(), c, ph, pw], x.dtype)?])
}

/// `npu_roi_alignbk(self, rois, xdiff_shape, pooled_width, pooled_height,
/// spatial_scale, sample_num, roi_end_mode=None)`: the adjoint of
/// `npu_roi_align` (mode 1 when None): each bin's gradient spread over its
/// taps, into a tensor of xdiff_shape.
fn roi_alignbk(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dy = b.tensor("self")?;
    let shape: Vec<usize> = b.ints("xdiff_shape")?.into_iter().map(|d| d.max(0) as usize).collect();
    let [n, c, h, w] = *shape.as_slice() else { return Err(Error::Arg("npu_roi_alignbk: xdiff_shape is [N, C, H, W]".into())) };
    let (ph, pw) = (b.int("pooled_height")?.max(1) as usize, b.int("pooled_width")?.max(1) as usize);
    let mode = b.opt_int("roi_end_mode")?.unwrap_or(1);
    let taps = roi_taps(b.tensor("rois")?, (h, w), b.float("spatial_scale")?, (ph, pw), b.int("sample_num")?, mode, n)?;
    if dy.dims() != [taps.len(), c, ph, pw] {
        return Err(Error::Arg(format!("npu_roi_alignbk: gradient {:?} for {} rois of {c} channels, {ph}x{pw} bins", dy.dims(), taps.len())));
    }
    let g = dy.to_f64_vec()?;
    let mut dx = vec![0.0; n * c * h * w];
    for (k, roi) in taps.iter().enumerate() {
        let Some(roi) = roi else { continue };
        for ch in 0..c {
            for (bin, t) in roi.bins.iter().enumerate() {
                let grad = g[(k * c + ch) * ph * pw + bin];
                for &(at, wt) in t {
                    dx[(roi.batch * c + ch) * h * w + at] += grad * wt;
                }
            }
        }
    }
    Ok(vec![values_out(ctx, dx, &shape, dy.dtype)?])
}

/// The RoIs choose the bilinear taps: the rounding magnitudes perturb the features alone.
const ROIS_FIXED: &[Fact] = &[Fact::Inert(Inert { when: None, params: &["rois"] })];

/// The entries.
pub static OPS: &[Op] = &[
    entry(&["NPU.npu_giou"], "self, gtboxes, trans=False, is_cross=False, mode=0", giou, true, Standard::Accuracy),
    entry(&["NPU.npu_diou"], "self, gtboxes, trans=False, is_cross=False, mode=0", diou, true, Standard::Accuracy),
    entry(&["NPU.npu_ciou"], "self, gtboxes, trans=False, is_cross=True, mode=0, atan_sub_flag=False", ciou, false, Standard::Accuracy),
    entry(&["NPU.npu_yolo_boxes_encode"], "self, gt_bboxes, stride, performance_mode=False", yolo_boxes_encode, false, Standard::Accuracy),
    entry(&["NPU.npu_rotated_box_encode"], "self, gt_bboxes, weight", rotated_box_encode, false, Standard::Accuracy),
    entry(&["NPU.npu_rotated_box_decode"], "self, deltas, weight", rotated_box_decode, false, Standard::Accuracy),
    entry(&["NPU.npu_anchor_response_flags"], "self, featmap_size, stride, num_base_anchors", anchor_response_flags, false, Standard::Exact),
    entry(
        &["NPU.npu_grid_assign_positive"],
        "self, overlaps, box_responsible_flags, max_overlaps, argmax_overlaps, gt_max_overlaps, gt_argmax_overlaps, num_gts, pos_iou_thr, min_pos_iou, gt_max_assign_all",
        grid_assign_positive,
        false,
        Standard::Exact,
    ),
    Op { facts: ROIS_FIXED, ..entry(&["NPU.npu_roi_align"], "self, rois, spatial_scale, pooled_height, pooled_width, sample_num, roi_end_mode", roi_align, false, Standard::Accuracy) },
    Op {
        facts: ROIS_FIXED,
        ..entry(&["NPU.npu_roi_alignbk"], "self, rois, xdiff_shape, pooled_width, pooled_height, spatial_scale, sample_num, roi_end_mode=None", roi_alignbk, false, Standard::Accuracy)
    },
];
