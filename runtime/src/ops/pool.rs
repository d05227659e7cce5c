//! Pooling and resampling. Max pooling is one kernel on the host
//! ([`super::pool_kernel`]); with its indices, adaptive max pooling, and
//! average pooling are built from a gather of every window (so the gradient
//! is the gather's: exact, and free of candle's "kernel must equal stride"
//! limit); a 1-D pooling is a 2-D one over `[.., 1, L]`; adaptive average
//! pooling sums windows with a 0/1 matrix per dim; interpolation selects
//! (nearest) or blends (linear) input rows per dim with torch's indices and
//! weights. Every gradient is autograd's through index_select, matmul and products.

use candle_core::{DType, Tensor};

use super::pool_kernel::{self, MaxPool};
use super::{one, Fact, Op, Rounding, Slicing, Standard, Whole};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// An int or a pair (torch's `_pair`); `None` takes `default`.
fn pair(b: &Bound, name: &str, default: Option<[usize; 2]>) -> Result<[usize; 2]> {
    if b.is_none(name) {
        return default.ok_or_else(|| Error::Arg(format!("pool: {name} is required")));
    }
    match b.ints(name)?.as_slice() {
        // torch.max_pool2d's `stride=[]`: the kernel size.
        [] if default.is_some() => Ok(default.unwrap_or_default()),
        [x] if *x >= 0 => Ok([*x as usize; 2]),
        [x, y] if *x >= 0 && *y >= 0 => Ok([*x as usize, *y as usize]),
        v => Err(Error::Arg(format!("pool: {name} must be an int or a pair, got {v:?}"))),
    }
}

/// Pads the last two dims of `t` with `value` on each side.
fn pad2(t: &Tensor, p: [usize; 2], value: f64) -> Result<Tensor> {
    let mut t = t.clone();
    for (i, &n) in p.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let d = t.rank() - 2 + i;
        let mut shape = t.dims().to_vec();
        shape[d] = n;
        let block = (Tensor::ones(shape.as_slice(), t.dtype(), t.device())? * value)?;
        t = Tensor::cat(&[&block, &t, &block], d)?;
    }
    Ok(t)
}

/// The output size of pooling an `h × w` input, or why the windows do not fit.
fn fit(h: usize, w: usize, k: [usize; 2], s: [usize; 2], p: [usize; 2], d: [usize; 2]) -> Result<(usize, usize)> {
    let (hp, wp) = (h + 2 * p[0], w + 2 * p[1]);
    let span = |i: usize| d[i] * (k[i].max(1) - 1) + 1;
    if k.contains(&0) || s.contains(&0) || span(0) > hp || span(1) > wp {
        return Err(Error::Arg(format!("pool: kernel {k:?} (dilation {d:?}) does not fit the padded input {hp}x{wp}")));
    }
    if p[0] * 2 > k[0] || p[1] * 2 > k[1] {
        return Err(Error::Arg(format!("pool: padding {p:?} must be at most half the kernel {k:?}")));
    }
    Ok(((hp - span(0)) / s[0] + 1, (wp - span(1)) / s[1] + 1))
}

/// Every pooling window of `x` ([N, C, H, W]) padded with `pad_value`:
/// a tensor [N, C, OH*OW, KH*KW], with OH and OW.
fn windows(x: &Tensor, k: [usize; 2], s: [usize; 2], p: [usize; 2], d: [usize; 2], pad_value: f64) -> Result<(Tensor, usize, usize)> {
    let (n, c, h, w) = x.dims4()?;
    let (hp, wp) = (h + 2 * p[0], w + 2 * p[1]);
    let (oh, ow) = fit(h, w, k, s, p, d)?;
    let mut idx = Vec::with_capacity(oh * ow * k[0] * k[1]);
    for y in 0..oh {
        for xo in 0..ow {
            for i in 0..k[0] {
                for j in 0..k[1] {
                    idx.push(((y * s[0] + i * d[0]) * wp + xo * s[1] + j * d[1]) as u32);
                }
            }
        }
    }
    let padded = pad2(x, p, pad_value)?.reshape((n * c, hp * wp))?.contiguous()?;
    let idx = Tensor::from_vec(idx, (1, oh * ow * k[0] * k[1]), x.device())?.broadcast_as((n * c, oh * ow * k[0] * k[1]))?.contiguous()?;
    let picked = padded.gather(&idx, 1)?.reshape((n, c, oh * ow, k[0] * k[1]))?;
    Ok((picked, oh, ow))
}

/// A bool parameter that an entry's signature may lack (unbound: false).
fn flag(b: &Bound, name: &str) -> Result<bool> {
    Ok(!b.is_none(name) && b.bool(name)?)
}

/// The geometry of a pooling (and of unfold's blocks): kernel, stride,
/// padding, dilation over the last two dims (a 1-D pooling is a 2-D one
/// over `[.., 1, L]`).
#[derive(Clone, Copy)]
pub(super) struct Geometry {
    pub(super) k: [usize; 2],
    pub(super) s: [usize; 2],
    pub(super) p: [usize; 2],
    pub(super) d: [usize; 2],
}

impl Geometry {
    /// The call's `kernel_size`, `stride`, `padding` and (if `dilated`)
    /// `dilation`; for a 1-D pooling (`one_d`) each one number, placed on the last dim.
    fn of(b: &Bound, one_d: bool, dilated: bool) -> Result<Geometry> {
        let get = |name: &str, default: Option<[usize; 2]>| -> Result<[usize; 2]> {
            if !one_d {
                return pair(b, name, default);
            }
            let v = pair(b, name, default.map(|d| [d[1]; 2]))?;
            if v[0] != v[1] {
                return Err(Error::Arg(format!("pool1d: {name} must be one number, got {v:?}")));
            }
            Ok([if name == "kernel_size" || name == "stride" || name == "dilation" { 1 } else { 0 }, v[1]])
        };
        let k = get("kernel_size", None)?;
        let s = get("stride", Some(k))?;
        let p = get("padding", Some([0, 0]))?;
        let d = if dilated { get("dilation", Some([1, 1]))? } else { [1, 1] };
        Ok(Geometry { k, s, p, d })
    }
}

/// The input as `[N, C, H, W]` (a 1-D pooling's `[N, C, L]` or `[C, L]` as
/// `H = 1`), and how to give the result the input's own layout back.
fn pooled_input(x: &T, one_d: bool) -> Result<(Tensor, impl Fn(Tensor) -> Result<Tensor>)> {
    let (t, lifted) = if one_d {
        if !(2..=3).contains(&x.rank()) {
            return Err(Error::Arg(format!("pool1d: input of rank {} (expected 2 or 3)", x.rank())));
        }
        (x.t.unsqueeze(x.rank() - 1)?, true)
    } else {
        (x.t.clone(), false)
    };
    let (t, unbatched) = match t.rank() {
        4 => (t, false),
        3 => (t.unsqueeze(0)?, true),
        r => return Err(Error::Arg(format!("pool2d: input of rank {r} (expected 3 or 4)"))),
    };
    Ok((t, move |y: Tensor| -> Result<Tensor> {
        let y = if unbatched { y.squeeze(0)? } else { y };
        Ok(if lifted { y.squeeze(y.rank() - 2)? } else { y })
    }))
}

/// The flat input position (`row · W + column`) of each window element of
/// [`windows`], `-1` in the padding: `[OH·OW, KH·KW]`.
fn window_positions(h: usize, w: usize, g: Geometry, oh: usize, ow: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(oh * ow * g.k[0] * g.k[1]);
    for y in 0..oh {
        for xo in 0..ow {
            for i in 0..g.k[0] {
                for j in 0..g.k[1] {
                    let (r, c) = ((y * g.s[0] + i * g.d[0]) as i64 - g.p[0] as i64, (xo * g.s[1] + j * g.d[1]) as i64 - g.p[1] as i64);
                    let inside = r >= 0 && c >= 0 && (r as usize) < h && (c as usize) < w;
                    out.push(if inside { (r as usize * w + c as usize) as f64 } else { -1.0 });
                }
            }
        }
    }
    out
}

/// max_pool1d/2d (and `_with_indices`): the first maximum of each window
/// (in kernel order) takes the value and the whole gradient, as in torch;
/// the indices are its flat position in the input's pooled dims.
fn max_pool(ctx: &Ctx, b: &Bound, one_d: bool, indices: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if flag(b, "ceil_mode")? {
        return Err(Error::Unsupported("max_pool with ceil_mode is not replayed".into()));
    }
    let indices = indices || flag(b, "return_indices")?;
    let g = Geometry::of(b, one_d, true)?;
    let (t, back) = pooled_input(x, one_d)?;
    let (h, w) = (t.dims()[2], t.dims()[3]);
    fit(h, w, g.k, g.s, g.p, g.d)?;
    if !indices {
        if let Some(y) = pool_kernel::max_pool2d(&t, MaxPool { k: g.k, s: g.s, p: g.p, d: g.d })? {
            return one(ctx.out(back(y)?, x.dtype)?);
        }
    }
    let (win, oh, ow) = windows(&t, g.k, g.s, g.p, g.d, f64::NEG_INFINITY)?;
    let (n, c) = (t.dims()[0], t.dims()[1]);
    // candle's max would send the gradient to every tied element (ties are
    // common after a ReLU).
    let first = win.detach().argmax_keepdim(3)?;
    let values = ctx.out(back(win.gather(&first, 3)?.reshape((n, c, oh, ow))?)?, x.dtype)?;
    if !indices {
        return Ok(vec![Value::Tensor(values)]);
    }
    let kk = g.k[0] * g.k[1];
    let table = Tensor::from_vec(window_positions(h, w, g, oh, ow), (1, 1, oh * ow, kk), t.device())?.broadcast_as((n, c, oh * ow, kk))?.contiguous()?;
    let at = ctx.out(back(table.gather(&first, 3)?.reshape((n, c, oh, ow))?)?, crate::dtype::TDType::I64)?;
    Ok(vec![Value::Tensor(values), Value::Tensor(at)])
}

/// avg_pool1d/2d: each window's sum over its kernel size, or over the real
/// (unpadded) elements without `count_include_pad`, or `divisor_override`.
fn avg_pool(ctx: &Ctx, b: &Bound, one_d: bool, input: &str) -> Result<Vec<Value>> {
    let x = b.tensor(input)?;
    if flag(b, "ceil_mode")? {
        return Err(Error::Unsupported("avg_pool with ceil_mode is not replayed".into()));
    }
    let Geometry { k, s, p, .. } = Geometry::of(b, one_d, false)?;
    let (t, back) = pooled_input(x, one_d)?;
    let (win, oh, ow) = windows(&t, k, s, p, [1, 1], 0.0)?;
    let (n, c) = (t.dims()[0], t.dims()[1]);
    let sum = win.sum(3)?;
    let out = match (b.opt_int("divisor_override")?, b.bool("count_include_pad")?) {
        (Some(div), _) => (sum / div as f64)?,
        (None, true) => (sum / (k[0] * k[1]) as f64)?,
        (None, false) => {
            // Count the real (unpadded) elements of each window.
            let ones = Tensor::ones((1, 1, t.dims()[2], t.dims()[3]), DType::F64, t.device())?.to_dtype(t.dtype())?;
            let (count, _, _) = windows(&ones, k, s, p, [1, 1], 0.0)?;
            sum.broadcast_div(&count.sum(3)?)?
        }
    };
    one(ctx.out(back(out.reshape((n, c, oh, ow))?)?, x.dtype)?)
}

/// lp_pool1d/2d: `(Σ_window x^p)^(1/p)` as torch composes it: the average
/// pool of `x^p` times the kernel size, `sign·relu(|·|)` of that (its value,
/// with no gradient where it is 0), to the power `1/p`; no padding.
fn lp_pool(ctx: &Ctx, b: &Bound, one_d: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let p = b.float("norm_type")?;
    if flag(b, "ceil_mode")? {
        return Err(Error::Unsupported("lp_pool with ceil_mode is not replayed".into()));
    }
    if !(p.is_finite() && p != 0.0) {
        return Err(Error::Unsupported(format!("lp_pool with norm_type {p} (only finite, non-zero)")));
    }
    // No padding parameter: unbound, Geometry's default of none.
    let Geometry { k, s, .. } = Geometry::of(b, one_d, false)?;
    let (t, back) = pooled_input(x, one_d)?;
    let (win, oh, ow) = windows(&t.powf(p)?, k, s, [0, 0], [1, 1], 0.0)?;
    let (n, c) = (t.dims()[0], t.dims()[1]);
    let size = (k[0] * k[1]) as f64;
    let out = ((win.sum(3)? / size)? * size)?;
    let signed = (super::activation::relu_t(&out)? - super::activation::relu_t(&out.neg()?)?)?;
    one(ctx.out(back(signed.powf(1.0 / p)?.reshape((n, c, oh, ow))?)?, x.dtype)?)
}

/// The output sizes of the last `dims.len()` dims (whose sizes are `dims`)
/// of an adaptive pool or an interpolation: an int for every dim, or one
/// entry per dim, `None` keeping that dim's size.
fn output_sizes(v: &Value, dims: &[usize], what: &str) -> Result<Vec<usize>> {
    let size = |v: &Value, keep: usize| match v {
        Value::None => Ok(keep),
        v => match v.as_i64() {
            Some(n) if n >= 0 => Ok(n as usize),
            _ => Err(Error::Arg(format!("{what}: output size must be a non-negative int or None, got {}", v.kind()))),
        },
    };
    match v {
        Value::List(items) if items.len() == dims.len() => items.iter().zip(dims).map(|(v, &d)| size(v, d)).collect(),
        Value::List(items) => Err(Error::Arg(format!("{what}: {} output sizes for {} dims", items.len(), dims.len()))),
        v => dims.iter().map(|&d| size(v, d)).collect(),
    }
}

/// `t` with its dim `d` (of size L) averaged into `out` adaptive windows, as
/// torch's adaptive pooling: window `i` covers `[floor(i*L/out), ceil((i+1)*L/out))`.
/// The windows are summed by a 0/1 matrix and divided by their lengths.
fn adaptive_dim(t: &Tensor, d: usize, out: usize) -> Result<Tensor> {
    let len = t.dims()[d];
    if len == 0 {
        return Err(Error::Arg(format!("adaptive pooling of an empty dim (input shape {:?})", t.dims())));
    }
    let mut ones = vec![0f64; len * out];
    let mut counts = Vec::with_capacity(out);
    for i in 0..out {
        let (start, end) = (i * len / out, ((i + 1) * len).div_ceil(out));
        for j in start..end {
            ones[j * out + i] = 1.0;
        }
        counts.push((end - start) as f64);
    }
    let last = t.rank() - 1;
    let ones = Tensor::from_vec(ones, (len, out), t.device())?.to_dtype(t.dtype())?;
    let counts = Tensor::from_vec(counts, out, t.device())?.to_dtype(t.dtype())?;
    let moved = t.transpose(d, last)?.contiguous()?;
    let pooled = moved.broadcast_matmul(&ones)?.broadcast_div(&counts)?;
    Ok(pooled.transpose(d, last)?.contiguous()?)
}

/// adaptive_avg_pool1d/2d: averages over the last `n` dims of a batched
/// or unbatched input.
fn adaptive_avg_pool(ctx: &Ctx, b: &Bound, n: usize) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.rank() != n + 1 && x.rank() != n + 2 {
        return Err(Error::Arg(format!("adaptive_avg_pool{n}d: input of rank {} (expected {} or {})", x.rank(), n + 1, n + 2)));
    }
    let spatial = &x.dims()[x.rank() - n..];
    let sizes = output_sizes(b.value("output_size"), spatial, "adaptive_avg_pool")?;
    let mut t = x.t.clone();
    for (i, &o) in sizes.iter().enumerate() {
        t = adaptive_dim(&t, x.rank() - n + i, o)?;
    }
    Ok(vec![Value::Tensor(ctx.out(t, x.dtype)?)])
}

/// The windows of an adaptive pooling of a dim of length `len` into `out`:
/// window `i` covers `[floor(i·L/out), ceil((i+1)·L/out))`.
fn adaptive_windows(len: usize, out: usize) -> Vec<(usize, usize)> {
    (0..out).map(|i| (i * len / out, ((i + 1) * len).div_ceil(out))).collect()
}

/// adaptive_max_pool1d/2d (and `_with_indices`): the first maximum of each
/// adaptive window, by a gather of every window padded to the longest
/// with its own first element (which cannot be a later first maximum).
fn adaptive_max_pool(ctx: &Ctx, b: &Bound, one_d: bool, indices: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let indices = indices || flag(b, "return_indices")?;
    let (t, back) = pooled_input(x, one_d)?;
    let (n, c, h, w) = t.dims4()?;
    if h == 0 || w == 0 {
        return Err(Error::Arg(format!("adaptive_max_pool of an empty input {:?}", x.dims())));
    }
    let spatial: Vec<usize> = if one_d { vec![w] } else { vec![h, w] };
    let sizes = output_sizes(b.value("output_size"), &spatial, "adaptive_max_pool")?;
    let (oh, ow) = if one_d { (1, sizes[0]) } else { (sizes[0], sizes[1]) };
    let (rows, cols) = (adaptive_windows(h, oh), adaptive_windows(w, ow));
    let kh = rows.iter().map(|r| r.1 - r.0).max().unwrap_or(1);
    let kw = cols.iter().map(|r| r.1 - r.0).max().unwrap_or(1);
    let mut positions = Vec::with_capacity(oh * ow * kh * kw);
    for &(r0, r1) in &rows {
        for &(c0, c1) in &cols {
            let first = r0 * w + c0;
            for i in 0..kh {
                for j in 0..kw {
                    let (r, col) = (r0 + i, c0 + j);
                    positions.push(if r < r1 && col < c1 { r * w + col } else { first } as u32);
                }
            }
        }
    }
    let k = kh * kw;
    let idx = Tensor::from_vec(positions.clone(), (1, oh * ow * k), t.device())?.broadcast_as((n * c, oh * ow * k))?.contiguous()?;
    let win = t.reshape((n * c, h * w))?.contiguous()?.gather(&idx, 1)?.reshape((n, c, oh * ow, k))?;
    let first = win.detach().argmax_keepdim(3)?;
    let values = ctx.out(back(win.gather(&first, 3)?.reshape((n, c, oh, ow))?)?, x.dtype)?;
    if !indices {
        return Ok(vec![Value::Tensor(values)]);
    }
    let table: Vec<f64> = positions.iter().map(|&p| p as f64).collect();
    let table = Tensor::from_vec(table, (1, 1, oh * ow, k), t.device())?.broadcast_as((n, c, oh * ow, k))?.contiguous()?;
    let at = table.gather(&first, 3)?.reshape((n, c, oh, ow))?;
    Ok(vec![Value::Tensor(values), Value::Tensor(ctx.out(back(at)?, crate::dtype::TDType::I64)?)])
}

/// One number or a list of numbers (a `scale_factor`).
fn floats(v: &Value, n: usize) -> Result<Vec<f64>> {
    match v {
        Value::List(items) if items.len() == n => {
            items.iter().map(|v| v.as_f64().ok_or_else(|| Error::Arg(format!("interpolate: scale_factor entries must be numbers, got {}", v.kind())))).collect()
        }
        Value::List(items) => Err(Error::Arg(format!("interpolate: {} scale factors for {n} spatial dims", items.len()))),
        v => v.as_f64().map(|f| vec![f; n]).ok_or_else(|| Error::Arg(format!("interpolate: scale_factor must be a number or a list, got {}", v.kind()))),
    }
}

/// Arithmetic in the precision a kernel computes its coordinates in:
/// float32 (`single`) or float64.
#[derive(Clone, Copy)]
struct Coord {
    single: bool,
}

impl Coord {
    fn r(self, v: f64) -> f64 {
        if self.single {
            v as f32 as f64
        } else {
            v
        }
    }

    /// torch's `compute_scales_value`: `1 / scale_factor` when the kernel
    /// was given one, else `in / out`.
    fn scale(self, given: Option<f64>, len: usize, out: usize) -> f64 {
        match given {
            Some(s) if s > 0.0 => self.r(1.0 / s),
            _ => self.r(self.r(len as f64) / out as f64),
        }
    }
}

/// How one dim is resampled: per output position, the input positions and
/// their weights (the second weight is zero for nearest modes).
struct Taps {
    first: Vec<u32>,
    second: Vec<u32>,
    weight: Vec<f64>,
}

/// torch's source indices of `nearest` (`floor(i * scale)`, with the exact
/// shortcuts for equal and doubled sizes) and `nearest-exact`
/// (`floor((i + 0.5) * scale)`), in float32 as torch's kernels compute them.
fn nearest_taps(len: usize, out: usize, scale: Option<f64>, exact: bool) -> Taps {
    let s = Coord { single: true }.scale(scale, len, out) as f32;
    let first: Vec<u32> = (0..out)
        .map(|i| {
            let src = match (exact, out) {
                (false, o) if o == len => i,
                (false, o) if o == 2 * len => i >> 1,
                (false, _) => (i as f32 * s).floor() as usize,
                (true, _) => (((i as f64 + 0.5) * s as f64) as f32).floor() as usize,
            };
            src.min(len - 1) as u32
        })
        .collect();
    Taps { second: first.clone(), weight: vec![0.0; out], first }
}

/// torch's linear interpolation taps (`area_pixel_compute_source_index`,
/// `guard_index_and_lambda`): the source coordinate `i * (L-1)/(out-1)`
/// with `align_corners`, else `scale * (i + 0.5) - 0.5` clamped at 0; the
/// weight of the next input position is the coordinate's fraction.
fn linear_taps(c: Coord, len: usize, out: usize, scale: Option<f64>, align_corners: bool) -> Taps {
    let s = match (align_corners, out) {
        (true, o) if o > 1 => c.r(c.r((len - 1) as f64) / (o - 1) as f64),
        (true, _) => 0.0,
        (false, _) => c.scale(scale, len, out),
    };
    let mut taps = Taps { first: vec![], second: vec![], weight: vec![] };
    for i in 0..out {
        let src = if align_corners { c.r(s * i as f64) } else { c.r(c.r(s * c.r(i as f64 + 0.5)) - 0.5).max(0.0) };
        let idx = ((src as f32).floor() as usize).min(len - 1);
        let lambda = c.r(src - idx as f64).clamp(0.0, 1.0);
        taps.first.push(idx as u32);
        taps.second.push((idx + usize::from(idx < len - 1)) as u32);
        taps.weight.push(lambda);
    }
    taps
}

/// `t` resampled along dim `d` by `taps`: `t[first] * (1 - w) + t[second] * w`.
fn resample(t: &Tensor, d: usize, taps: &Taps, linear: bool) -> Result<Tensor> {
    let n = taps.first.len();
    let first = t.index_select(&Tensor::from_vec(taps.first.clone(), n, t.device())?, d)?;
    if !linear {
        return Ok(first);
    }
    let second = t.index_select(&Tensor::from_vec(taps.second.clone(), n, t.device())?, d)?;
    let shape: Vec<usize> = (0..t.rank()).map(|i| if i == d { n } else { 1 }).collect();
    let w1 = Tensor::from_vec(taps.weight.clone(), shape.as_slice(), t.device())?.to_dtype(t.dtype())?;
    let w0 = Tensor::from_vec(taps.weight.iter().map(|w| 1.0 - w).collect::<Vec<f64>>(), shape.as_slice(), t.device())?.to_dtype(t.dtype())?;
    Ok((first.broadcast_mul(&w0)? + second.broadcast_mul(&w1)?)?)
}

/// torch.nn.functional.interpolate: `nearest`, `nearest-exact`, `linear` /
/// `bilinear` / `trilinear` (with or without `align_corners`) and `area`
/// (adaptive average pooling), by `size` or `scale_factor`, over the
/// spatial dims of an `[N, C, *]` input. Coordinates are computed in
/// float32 for nearest modes (as torch does for every dtype) and in the
/// compute precision for linear ones (torch's opmath: float32 for float32
/// inputs, float64 on the bench).
fn interpolate(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    interpolate_as(ctx, b, None)
}

/// [`interpolate`] with the mode and `align_corners` fixed where the
/// function fixes them (`upsample_nearest`: nearest; `upsample_bilinear`:
/// bilinear with aligned corners), else the call's.
fn interpolate_as(ctx: &Ctx, b: &Bound, fixed: Option<(&str, bool)>) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let mode = match fixed {
        Some((m, _)) => m,
        None => b.str("mode")?,
    };
    if !(1..=3).contains(&x.rank().saturating_sub(2)) {
        return Err(Error::Arg(format!("interpolate: expected an input of 3 to 5 dims [N, C, *], got {:?}", x.dims())));
    }
    let n = x.rank() - 2;
    if b.value("antialias").as_i64().unwrap_or(0) != 0 {
        return Err(Error::Unsupported("interpolate with antialias=True is not replayed".into()));
    }
    let linear = match (mode, n) {
        ("nearest" | "nearest-exact" | "area", _) => false,
        ("linear", 1) | ("bilinear", 2) | ("trilinear", 3) => true,
        ("bicubic", 2) => return Err(Error::Unsupported("interpolate mode 'bicubic' is not replayed".into())),
        (m, _) => return Err(Error::Arg(format!("interpolate: mode {m:?} does not apply to an input of {n} spatial dims"))),
    };
    let align_corners = match b.value("align_corners") {
        _ if fixed.is_some() => fixed.is_some_and(|f| f.1),
        Value::None => false,
        v => v.as_i64().ok_or_else(|| Error::Arg(format!("interpolate: align_corners must be a bool, got {}", v.kind())))? != 0,
    };
    if align_corners && !linear {
        return Err(Error::Arg("interpolate: align_corners can only be set with the linear modes".into()));
    }
    if linear && !x.dtype.is_float() {
        return Err(Error::Arg(format!("interpolate: mode {mode:?} needs a floating input, got {}", x.dtype.name())));
    }
    let spatial = x.dims()[2..].to_vec();
    let recompute = b.value("recompute_scale_factor").as_i64().unwrap_or(0) != 0;
    let (sizes, scales): (Vec<usize>, Vec<Option<f64>>) = match (b.is_none("size"), b.is_none("scale_factor")) {
        (false, true) => (output_sizes(b.value("size"), &spatial, "interpolate")?, vec![None; n]),
        (true, false) => {
            let f = floats(b.value("scale_factor"), n)?;
            let sizes = spatial.iter().zip(&f).map(|(&l, &s)| (l as f64 * s).floor().max(0.0) as usize).collect();
            // area mode, and recompute_scale_factor, give the kernel sizes only.
            let given = !(recompute || mode == "area");
            (sizes, f.into_iter().map(|s| given.then_some(s)).collect())
        }
        _ => return Err(Error::Arg("interpolate: exactly one of size and scale_factor must be given".into())),
    };
    ctx.fits(&[x.dims()[..2].to_vec(), sizes.clone()].concat())?;
    let c = Coord { single: ctx.compute != DType::F64 };
    let mut t = x.t.clone();
    for (i, (&out, &scale)) in sizes.iter().zip(&scales).enumerate() {
        let (d, len) = (2 + i, spatial[i]);
        if len == 0 || out == 0 {
            return Err(Error::Arg(format!("interpolate: input size {len} and output size {out} must be positive")));
        }
        t = match mode {
            "area" => adaptive_dim(&t, d, out)?,
            "nearest" | "nearest-exact" => resample(&t, d, &nearest_taps(len, out, scale, mode == "nearest-exact"), false)?,
            _ => resample(&t, d, &linear_taps(c, len, out, scale, align_corners), true)?,
        };
    }
    Ok(vec![Value::Tensor(ctx.out(t, x.dtype)?)])
}

/// An entry judged by the run's standard, with autograd's backward and no facts.
const fn pooled(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts: &[] }
}

/// A max pooling entry: [`pooled`], its results selections ([`Rounding::Selects`]).
const fn max_pooled(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { facts: &[Fact::Rounding(Rounding::Selects)], ..pooled(names, sig, forward) }
}

/// The pooling and resampling entries.
pub static OPS: &[Op] = &[
    // lp pooling: no rounding class of its own (Composite).
    pooled(&["Functional.lp_pool1d"], "input, norm_type, kernel_size, stride=None, ceil_mode=False", |c, b| lp_pool(c, b, true)),
    pooled(&["Functional.lp_pool2d"], "input, norm_type, kernel_size, stride=None, ceil_mode=False", |c, b| lp_pool(c, b, false)),
    Op {
        names: &["Functional.max_pool2d", "MintFunctional.max_pool2d"],
        sig: "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
        forward: |c, b| max_pool(c, b, false, false),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(2))), Fact::Rounding(Rounding::Selects)],
    },
    Op {
        names: &["Functional.avg_pool2d", "MintFunctional.avg_pool2d"],
        sig: "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None",
        forward: |c, b| avg_pool(c, b, false, "input"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(2))), Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Functional.adaptive_avg_pool1d", "Torch.adaptive_avg_pool1d", "MintFunctional.adaptive_avg_pool1d"],
        sig: "input, output_size",
        forward: |c, b| adaptive_avg_pool(c, b, 1),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(1))), Fact::Rounding(Rounding::Sums)],
    },
    Op {
        // mindspore.ops.adaptive_avg_pool2d binds and computes the same.
        names: &["Functional.adaptive_avg_pool2d", "MintFunctional.adaptive_avg_pool2d", "Torch._adaptive_avg_pool2d"],
        sig: "input, output_size",
        forward: |c, b| adaptive_avg_pool(c, b, 2),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(2))), Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Functional.adaptive_avg_pool3d"],
        sig: "input, output_size",
        forward: |c, b| adaptive_avg_pool(c, b, 3),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(3))), Fact::Rounding(Rounding::Sums)],
    },
    Op {
        // mindspore.ops.interpolate and mint's bind the same (without antialias).
        names: &["Functional.interpolate", "MintFunctional.interpolate"],
        sig: "input, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None, antialias=False",
        forward: interpolate,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    max_pooled(&["Functional.max_pool1d"], "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False", |c, b| {
        max_pool(c, b, true, false)
    }),
    max_pooled(
        &["Functional.max_pool1d_with_indices"],
        "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
        |c, b| max_pool(c, b, true, true),
    ),
    max_pooled(
        &["Functional.max_pool2d_with_indices"],
        "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
        |c, b| max_pool(c, b, false, true),
    ),
    // torch.max_pool1d/2d: `stride=[]` means the kernel size; no return_indices.
    max_pooled(&["Torch.max_pool1d"], "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False", |c, b| max_pool(c, b, true, false)),
    max_pooled(&["Torch.max_pool2d"], "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False", |c, b| max_pool(c, b, false, false)),
    max_pooled(&["Torch.max_pool1d_with_indices"], "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False", |c, b| {
        max_pool(c, b, true, true)
    }),
    Op {
        names: &["Functional.avg_pool1d", "Torch.avg_pool1d"],
        sig: "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True",
        forward: |c, b| avg_pool(c, b, true, "input"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    // mindspore.ops.avg_pool1d: `input_x`, and a stride of 1 by default.
    Op {
        names: &["MS.Functional.avg_pool1d"],
        sig: "input_x, kernel_size=1, stride=1, padding=0, ceil_mode=False, count_include_pad=True",
        forward: |c, b| avg_pool(c, b, true, "input_x"),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    max_pooled(&["Functional.adaptive_max_pool1d"], "input, output_size, return_indices=False", |c, b| adaptive_max_pool(c, b, true, false)),
    // torch.adaptive_max_pool1d returns the indices too.
    max_pooled(&["Functional.adaptive_max_pool1d_with_indices", "Torch.adaptive_max_pool1d"], "input, output_size, return_indices=False", |c, b| {
        adaptive_max_pool(c, b, true, true)
    }),
    max_pooled(&["Functional.adaptive_max_pool2d"], "input, output_size, return_indices=False", |c, b| adaptive_max_pool(c, b, false, false)),
    max_pooled(&["Functional.adaptive_max_pool2d_with_indices"], "input, output_size, return_indices=False", |c, b| adaptive_max_pool(c, b, false, true)),
    // The deprecated spellings of interpolate.
    pooled(&["Functional.upsample"], "input, size=None, scale_factor=None, mode='nearest', align_corners=None, recompute_scale_factor=None", interpolate),
    pooled(&["Functional.upsample_nearest"], "input, size=None, scale_factor=None", |c, b| interpolate_as(c, b, Some(("nearest", false)))),
    pooled(&["Functional.upsample_bilinear"], "input, size=None, scale_factor=None", |c, b| interpolate_as(c, b, Some(("bilinear", true)))),
];
