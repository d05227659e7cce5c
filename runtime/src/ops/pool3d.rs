//! Pooling over three spatial dims: `max_pool3d` (and `_with_indices`),
//! `avg_pool3d`, `adaptive_max_pool3d` (and `_with_indices`), `lp_pool3d`,
//! `max_unpool1d/2d/3d`. Each output element's window is a list of flat
//! input positions within its `[D, H, W]` plane, found once; a maximum is
//! picked in float64 on the values (a larger value or a NaN replaces the
//! current pick, as torch's 3-D CPU kernel compares) and gathered from the
//! input, so its gradient reaches the picked element alone; an average sums
//! the gathered window (padding reads a zero) over torch's divisor.
//! `ceil_mode` as torch's: a last window must start inside the padded input.

use candle_core::{DType, Tensor};

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// An int-or-triple argument (`kernel_size`, `stride`, ...), `default` when None or empty.
fn triple(b: &Bound, name: &str, default: Option<[usize; 3]>) -> Result<[usize; 3]> {
    let v = match b.value(name) {
        Value::None => None,
        Value::List(l) if l.is_empty() => None,
        _ => Some(b.ints(name)?),
    };
    match (v, default) {
        (None, Some(d)) => Ok(d),
        (None, None) => Err(Error::Arg(format!("pool3d: {name} is required"))),
        (Some(v), _) if v.len() == 1 && v[0] >= 0 => Ok([v[0] as usize; 3]),
        (Some(v), _) if v.len() == 3 && v.iter().all(|&x| x >= 0) => Ok([v[0] as usize, v[1] as usize, v[2] as usize]),
        (Some(v), _) => Err(Error::Arg(format!("pool3d: {name} must be one or three non-negative ints, got {v:?}"))),
    }
}

/// The input as `[planes, D·H·W]` with its spatial dims, and the layout of
/// a `[.., d, h, w]` result (batched or not).
struct Planes {
    t: Tensor,
    lead: Vec<usize>,
    dims: [usize; 3],
}

impl Planes {
    fn of(x: &T, what: &str) -> Result<Planes> {
        if !(4..=5).contains(&x.rank()) {
            return Err(Error::Arg(format!("{what}: expected a 4-D or 5-D input, got {:?}", x.dims())));
        }
        let r = x.rank();
        let dims = [x.dims()[r - 3], x.dims()[r - 2], x.dims()[r - 1]];
        let lead = x.dims()[..r - 3].to_vec();
        let planes: usize = lead.iter().product();
        Ok(Planes { t: x.t.reshape((planes, dims.iter().product::<usize>()))?, lead, dims })
    }

    fn planes(&self) -> usize {
        self.lead.iter().product()
    }

    /// `[planes, out]` values in the input's layout with spatial dims `out`.
    fn back(&self, y: Tensor, out: [usize; 3]) -> Result<Tensor> {
        Ok(y.reshape([self.lead.clone(), out.to_vec()].concat())?)
    }
}

/// One output element's window: its in-bounds flat positions and its
/// divisor with the padding counted.
struct Window {
    at: Vec<usize>,
    padded_size: usize,
}

/// The windows of a kernel, stride, padding and dilation over `dims`, in
/// output order, and the output's dims.
fn windows(dims: [usize; 3], k: [usize; 3], s: [usize; 3], p: [usize; 3], d: [usize; 3], ceil: bool) -> Result<(Vec<Window>, [usize; 3])> {
    let mut out = [0; 3];
    for i in 0..3 {
        if k[i] == 0 || s[i] == 0 || d[i] == 0 || p[i] * 2 > k[i] {
            return Err(Error::Arg(format!("pool3d: kernel {k:?}, stride {s:?}, padding {p:?}, dilation {d:?} (padding at most half the kernel)")));
        }
        let span = d[i] * (k[i] - 1) + 1;
        let room = (dims[i] + 2 * p[i])
            .checked_sub(span)
            .ok_or_else(|| Error::Arg(format!("pool3d: a kernel spanning {span} does not fit {dims:?} padded by {p:?}")))?;
        let mut o = if ceil { room.div_ceil(s[i]) } else { room / s[i] } + 1;
        if ceil && (o - 1) * s[i] >= dims[i] + p[i] {
            o -= 1;
        }
        out[i] = o;
    }
    let mut all = Vec::with_capacity(out.iter().product());
    for z in 0..out[0] {
        for y in 0..out[1] {
            for x in 0..out[2] {
                let start = [z * s[0], y * s[1], x * s[2]];
                let mut at = vec![];
                let mut size = 1;
                for i in 0..3 {
                    // torch's divisor counts the padding but not past it.
                    let (lo, hi) = (start[i] as i64 - p[i] as i64, (start[i] + d[i] * (k[i] - 1) + 1) as i64 - p[i] as i64);
                    size *= (hi.min((dims[i] + p[i]) as i64) - lo) as usize;
                }
                for a in 0..k[0] {
                    for bb in 0..k[1] {
                        for c in 0..k[2] {
                            let pos = [start[0] + a * d[0], start[1] + bb * d[1], start[2] + c * d[2]];
                            if (0..3).all(|i| pos[i] >= p[i] && pos[i] - p[i] < dims[i]) {
                                at.push(((pos[0] - p[0]) * dims[1] + pos[1] - p[1]) * dims[2] + pos[2] - p[2]);
                            }
                        }
                    }
                }
                all.push(Window { at, padded_size: size });
            }
        }
    }
    Ok((all, out))
}

/// The windows of an adaptive pooling to `out`: `[⌊i·n/o⌋, ⌈(i+1)·n/o⌉)` per dim.
fn adaptive_windows(dims: [usize; 3], out: [usize; 3]) -> Vec<Window> {
    let span = |i: usize, n: usize, o: usize| (i * n / o, ((i + 1) * n).div_ceil(o));
    let mut all = vec![];
    for z in 0..out[0] {
        for y in 0..out[1] {
            for x in 0..out[2] {
                let (r0, r1, r2) = (span(z, dims[0], out[0]), span(y, dims[1], out[1]), span(x, dims[2], out[2]));
                let mut at = vec![];
                for a in r0.0..r0.1 {
                    for bb in r1.0..r1.1 {
                        for c in r2.0..r2.1 {
                            at.push((a * dims[1] + bb) * dims[2] + c);
                        }
                    }
                }
                let padded_size = at.len();
                all.push(Window { at, padded_size });
            }
        }
    }
    all
}

/// Each plane's pick per window (a larger value or a NaN replaces the
/// pick), gathered; and the picks as int64 flat positions.
fn max_over(ctx: &Ctx, x: &T, planes: &Planes, wins: &[Window], out: [usize; 3], indices: bool) -> Result<Vec<Value>> {
    let values = planes.t.to_dtype(DType::F64)?.flatten_all()?.to_vec1::<f64>()?;
    let per = planes.dims.iter().product::<usize>();
    let mut pick = Vec::with_capacity(planes.planes() * wins.len());
    for plane in values.chunks(per.max(1)).take(planes.planes()) {
        for w in wins {
            let mut best = *w.at.first().ok_or_else(|| Error::Arg("max_pool3d: an empty window".into()))?;
            for &i in &w.at[1..] {
                if plane[i] > plane[best] || plane[i].is_nan() {
                    best = i;
                }
            }
            pick.push(best as u32);
        }
    }
    let index = Tensor::from_vec(pick, (planes.planes(), wins.len()), planes.t.device())?;
    let y = planes.t.contiguous()?.gather(&index, 1)?;
    let mut result = vec![Value::Tensor(ctx.out(planes.back(y, out)?, x.dtype)?)];
    if indices {
        result.push(Value::Tensor(ctx.out(planes.back(index.to_dtype(DType::F64)?, out)?, TDType::I64)?));
    }
    Ok(result)
}

/// `max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1,
/// ceil_mode=False, return_indices=False)`.
fn max_pool3d(ctx: &Ctx, b: &Bound, indices: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let planes = Planes::of(x, "max_pool3d")?;
    let k = triple(b, "kernel_size", None)?;
    let (s, p, d) = (triple(b, "stride", Some(k))?, triple(b, "padding", Some([0; 3]))?, triple(b, "dilation", Some([1; 3]))?);
    let ceil = !b.is_none("ceil_mode") && b.bool("ceil_mode")?;
    let (wins, out) = windows(planes.dims, k, s, p, d, ceil)?;
    let indices = indices || (!b.is_none("return_indices") && b.bool("return_indices")?);
    max_over(ctx, x, &planes, &wins, out, indices)
}

/// Each plane's windows summed (padding reads a zero) over `divisor(window)`.
fn average(planes: &Planes, wins: &[Window], out: [usize; 3], divisor: impl Fn(&Window) -> f64) -> Result<Tensor> {
    let per: usize = planes.dims.iter().product();
    let k = wins.iter().map(|w| w.at.len()).max().unwrap_or(0);
    // A zero column after the plane for the taps a window lacks.
    let padded = Tensor::cat(&[&planes.t, &planes.t.narrow(1, 0, 1)?.zeros_like()?], 1)?;
    let taps: Vec<u32> = wins.iter().flat_map(|w| w.at.iter().map(|&i| i as u32).chain(std::iter::repeat_n(per as u32, k - w.at.len()))).collect();
    let taps = Tensor::from_vec(taps, wins.len() * k, planes.t.device())?;
    let sums = padded.index_select(&taps, 1)?.reshape((planes.planes(), wins.len(), k))?.sum(2)?;
    let div: Vec<f64> = wins.iter().map(divisor).collect();
    let div = Tensor::from_vec(div, (1, wins.len()), planes.t.device())?.to_dtype(sums.dtype())?;
    planes.back(sums.broadcast_div(&div)?, out)
}

/// `avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
/// count_include_pad=True, divisor_override=None)`.
fn avg_pool3d(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let planes = Planes::of(x, "avg_pool3d")?;
    let k = triple(b, "kernel_size", None)?;
    let (s, p) = (triple(b, "stride", Some(k))?, triple(b, "padding", Some([0; 3]))?);
    let (wins, out) = windows(planes.dims, k, s, p, [1; 3], b.bool("ceil_mode")?)?;
    let include_pad = b.bool("count_include_pad")?;
    let fixed = b.opt_int("divisor_override")?;
    let y = average(&planes, &wins, out, |w| match fixed {
        Some(f) => f as f64,
        None if include_pad => w.padded_size as f64,
        None => w.at.len() as f64,
    })?;
    one(ctx.out(y, x.dtype)?)
}

/// `lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False)`:
/// torch's composition, `(sign(s)·relu(|s|)·K)^(1/p)` of the average `s` of `x^p`.
fn lp_pool3d(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let p = b.float("norm_type")?;
    let powered = T { t: x.t.powf(p)?, dtype: x.dtype };
    let planes = Planes::of(&powered, "lp_pool3d")?;
    let k = triple(b, "kernel_size", None)?;
    let s = triple(b, "stride", Some(k))?;
    let (wins, out) = windows(planes.dims, k, s, [0; 3], [1; 3], b.bool("ceil_mode")?)?;
    let kk = (k[0] * k[1] * k[2]) as f64;
    let avg = average(&planes, &wins, out, |w| w.padded_size as f64)?;
    let y = (avg.sign()? * avg.abs()?.relu()?)?.affine(kk, 0.0)?.powf(1.0 / p)?;
    one(ctx.out(y, x.dtype)?)
}

/// `adaptive_max_pool3d(input, output_size, return_indices=False)`.
fn adaptive_max_pool3d(ctx: &Ctx, b: &Bound, indices: bool) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let planes = Planes::of(x, "adaptive_max_pool3d")?;
    let sizes: Vec<Option<usize>> = match b.value("output_size") {
        Value::List(l) => l.iter().map(|v| v.as_f64().map(|f| f as usize)).collect(),
        v => vec![v.as_f64().map(|f| f as usize); 3],
    };
    if sizes.len() != 3 {
        return Err(Error::Arg(format!("adaptive_max_pool3d: output_size must be one or three sizes, got {} values", sizes.len())));
    }
    let out = [0, 1, 2].map(|i| sizes[i].unwrap_or(planes.dims[i]));
    if out.contains(&0) && planes.dims.iter().any(|&n| n > 0) {
        return Err(Error::Arg(format!("adaptive_max_pool3d: output_size {out:?}")));
    }
    let indices = indices || (!b.is_none("return_indices") && b.bool("return_indices")?);
    max_over(ctx, x, &planes, &adaptive_windows(planes.dims, out), out, indices)
}

/// `max_unpool{n}d(input, indices, kernel_size, stride=None, padding=0,
/// output_size=None)`: zeros of the output size with each input element
/// placed at its index's flat position in its plane; an index written
/// twice is a `skip` (which write wins is up to the device's kernel).
fn max_unpool(ctx: &Ctx, b: &Bound, n: usize) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let idx = b.tensor("indices")?;
    if x.dims() != idx.dims() || x.rank() < n + 1 {
        return Err(Error::Arg(format!("max_unpool{n}d: input {:?} and indices {:?}", x.dims(), idx.dims())));
    }
    let spatial = &x.dims()[x.rank() - n..];
    let each = |name: &str, default: Option<Vec<usize>>| -> Result<Vec<usize>> {
        match (b.value(name), default) {
            (Value::None, Some(d)) => Ok(d),
            _ => {
                let v = b.ints(name)?;
                Ok(if v.len() == 1 { vec![v[0].max(0) as usize; n] } else { v.iter().map(|&i| i.max(0) as usize).collect() })
            }
        }
    };
    let k = each("kernel_size", None)?;
    let s = each("stride", Some(k.clone()))?;
    let p = each("padding", Some(vec![0; n]))?;
    let out: Vec<usize> = match b.opt_ints("output_size")? {
        Some(o) => o[o.len().saturating_sub(n)..].iter().map(|&v| v.max(0) as usize).collect(),
        None => (0..n).map(|i| ((spatial[i] - 1) * s[i] + k[i]).saturating_sub(2 * p[i])).collect(),
    };
    let lead = &x.dims()[..x.rank() - n];
    let planes: usize = lead.iter().product();
    let (per_in, per_out): (usize, usize) = (spatial.iter().product(), out.iter().product());
    let positions = idx.to_f64_vec()?;
    let mut seen = vec![false; planes * per_out];
    let mut flat = Vec::with_capacity(positions.len());
    for (i, &v) in positions.iter().enumerate() {
        let at = v as i64;
        if at < 0 || at as usize >= per_out {
            return Err(Error::Arg(format!("max_unpool{n}d: index {at} is out of bounds for an output of {out:?}")));
        }
        let f = (i / per_in.max(1)) * per_out + at as usize;
        if std::mem::replace(&mut seen[f], true) {
            return Err(Error::Unsupported(format!("max_unpool{n}d: two elements go to one output position, and which the device keeps is up to its kernel")));
        }
        flat.push(f as u32);
    }
    let index = Tensor::from_vec(flat, positions.len(), x.t.device())?;
    let zeros = Tensor::zeros(planes * per_out, x.t.dtype(), x.t.device())?;
    let y = zeros.index_add(&index, &x.t.flatten_all()?, 0)?.reshape([lead.to_vec(), out].concat())?;
    one(ctx.out(y, x.dtype)?)
}

/// An averaging entry.
const fn averaged(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { names, sig, forward, backward: true, standard: Standard::Accuracy, random: false, facts: &[] }
}

/// A selecting entry (maxima, unpooling): its results are input elements, never rounded.
const fn selected(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Op {
    Op { facts: &[Fact::Rounding(Rounding::Selects)], ..averaged(names, sig, forward) }
}

const MAX_POOL: &str = "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False";
const UNPOOL: &str = "input, indices, kernel_size, stride=None, padding=0, output_size=None";

/// The three-dimensional pooling and unpooling entries.
pub static OPS: &[Op] = &[
    selected(&["Functional.max_pool3d", "Torch.max_pool3d"], MAX_POOL, |c, b| max_pool3d(c, b, false)),
    selected(&["Functional.max_pool3d_with_indices"], MAX_POOL, |c, b| max_pool3d(c, b, true)),
    averaged(
        &["Functional.avg_pool3d"],
        "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None",
        avg_pool3d,
    ),
    averaged(&["Functional.lp_pool3d"], "input, norm_type, kernel_size, stride=None, ceil_mode=False", lp_pool3d),
    selected(&["Functional.adaptive_max_pool3d"], "input, output_size, return_indices=False", |c, b| adaptive_max_pool3d(c, b, false)),
    selected(&["Functional.adaptive_max_pool3d_with_indices"], "input, output_size, return_indices=False", |c, b| adaptive_max_pool3d(c, b, true)),
    selected(&["Functional.max_unpool1d"], UNPOOL, |c, b| max_unpool(c, b, 1)),
    selected(&["Functional.max_unpool2d"], UNPOOL, |c, b| max_unpool(c, b, 2)),
    selected(&["Functional.max_unpool3d"], UNPOOL, |c, b| max_unpool(c, b, 3)),
];
