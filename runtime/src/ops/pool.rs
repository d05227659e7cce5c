//! 2-D pooling, built from a gather of every window (so the gradient is the
//! gather's: exact, and free of candle's "kernel must equal stride" limit).

use candle_core::{DType, Tensor};

use super::{Op, Standard};
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

/// Every pooling window of `x` ([N, C, H, W]) padded with `pad_value`:
/// a tensor [N, C, OH*OW, KH*KW], with OH and OW.
fn windows(x: &Tensor, k: [usize; 2], s: [usize; 2], p: [usize; 2], d: [usize; 2], pad_value: f64) -> Result<(Tensor, usize, usize)> {
    let (n, c, h, w) = x.dims4()?;
    let (hp, wp) = (h + 2 * p[0], w + 2 * p[1]);
    let span = |i: usize| d[i] * (k[i] - 1) + 1;
    if k.contains(&0) || s.contains(&0) || span(0) > hp || span(1) > wp {
        return Err(Error::Arg(format!("pool: kernel {k:?} (dilation {d:?}) does not fit the padded input {hp}x{wp}")));
    }
    if p[0] * 2 > k[0] || p[1] * 2 > k[1] {
        return Err(Error::Arg(format!("pool: padding {p:?} must be at most half the kernel {k:?}")));
    }
    let (oh, ow) = ((hp - span(0)) / s[0] + 1, (wp - span(1)) / s[1] + 1);
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

/// Unbatched [C, H, W] inputs pool as a batch of one.
fn batched(x: &T) -> Result<(Tensor, bool)> {
    match x.rank() {
        4 => Ok((x.t.clone(), false)),
        3 => Ok((x.t.unsqueeze(0)?, true)),
        r => Err(Error::Arg(format!("pool2d: input of rank {r} (expected 3 or 4)"))),
    }
}

fn finish(ctx: &Ctx, x: &T, out: Tensor, unbatched: bool) -> Result<Vec<Value>> {
    let out = if unbatched { out.squeeze(0)? } else { out };
    Ok(vec![Value::Tensor(ctx.out(out, x.dtype)?)])
}

fn max_pool2d(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if b.bool("ceil_mode")? || b.bool("return_indices")? {
        return Err(Error::Unsupported("max_pool2d with ceil_mode or return_indices is not replayed".into()));
    }
    let k = pair(b, "kernel_size", None)?;
    let s = pair(b, "stride", Some(k))?;
    let (p, d) = (pair(b, "padding", Some([0, 0]))?, pair(b, "dilation", Some([1, 1]))?);
    let (t, unbatched) = batched(x)?;
    let (win, oh, ow) = windows(&t, k, s, p, d, f64::NEG_INFINITY)?;
    let (n, c) = (t.dims()[0], t.dims()[1]);
    // The first maximum of each window (in kernel order) takes the value
    // and the whole gradient, as in torch; candle's max would send the
    // gradient to every tied element (ties are common after a ReLU).
    let first = win.detach().argmax_keepdim(3)?;
    finish(ctx, x, win.gather(&first, 3)?.reshape((n, c, oh, ow))?, unbatched)
}

fn avg_pool2d(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if b.bool("ceil_mode")? {
        return Err(Error::Unsupported("avg_pool2d with ceil_mode is not replayed".into()));
    }
    let k = pair(b, "kernel_size", None)?;
    let s = pair(b, "stride", Some(k))?;
    let p = pair(b, "padding", Some([0, 0]))?;
    let (t, unbatched) = batched(x)?;
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
    finish(ctx, x, out.reshape((n, c, oh, ow))?, unbatched)
}

/// The pooling entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.max_pool2d", "MintFunctional.max_pool2d"],
        sig: "input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False",
        forward: max_pool2d,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
    },
    Op {
        names: &["Functional.avg_pool2d", "MintFunctional.avg_pool2d"],
        sig: "input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None",
        forward: avg_pool2d,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
    },
];
