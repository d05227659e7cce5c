//! Convolutions. Both run through candle's conv2d, whose gradients are
//! correct (its conv1d backward is wrong for batches > 1): a 1-D
//! convolution is a 2-D one over a height of 1. Padding is applied
//! explicitly, so each side may differ; stride and dilation must be the same
//! in both spatial dims (candle takes one value for both).

use candle_core::Tensor;

use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// An int or a tuple of `n` ints (torch's `_pair`/`_single`).
fn per_dim(b: &Bound, name: &str, n: usize) -> Result<Vec<usize>> {
    let v = b.ints(name)?;
    let v: Vec<i64> = if v.len() == 1 { vec![v[0]; n] } else { v };
    if v.len() != n || v.iter().any(|&x| x < 0) {
        return Err(Error::Arg(format!("conv: {name} must be a non-negative int or a tuple of {n}, got {v:?}")));
    }
    Ok(v.into_iter().map(|x| x as usize).collect())
}

fn same_in_all(v: &[usize], name: &str) -> Result<usize> {
    match v {
        [first, rest @ ..] if rest.iter().all(|x| x == first) => Ok(*first),
        _ => Err(Error::Unsupported(format!("conv2d with a different {name} per dimension ({v:?})"))),
    }
}

/// Where a convolution's kernel goes: over the last `n` (1 or 2) dims,
/// with per-side padding.
struct Geometry {
    n: usize,
    pads: Vec<(usize, usize)>,
    stride: Vec<usize>,
    dilation: Vec<usize>,
    groups: usize,
}

/// Runs a convolution over the last `n` (1 or 2) dims of `input`.
fn conv(ctx: &Ctx, b: &Bound, n: usize) -> Result<Vec<Value>> {
    let (x, w) = (b.tensor("input")?, b.tensor("weight")?);
    let groups = b.int("groups")?.max(1) as usize;
    let stride = per_dim(b, "stride", n)?;
    let dilation = per_dim(b, "dilation", n)?;
    let kernel: Vec<usize> = w.dims()[w.rank().saturating_sub(n)..].to_vec();
    let padding: Vec<usize> = match b.value("padding") {
        Value::Str(s) if s == "valid" => vec![0; n],
        Value::Str(s) if s == "same" => {
            if stride.iter().any(|&s| s != 1) {
                return Err(Error::Arg("conv: padding='same' needs stride 1".into()));
            }
            // torch pads (total // 2) before and the rest after.
            let totals: Vec<usize> = kernel.iter().zip(&dilation).map(|(&k, &d)| d * (k - 1)).collect();
            let pads = totals.iter().map(|t| (t / 2, t - t / 2)).collect();
            return conv_padded(ctx, x, w, b, &Geometry { n, pads, stride, dilation, groups });
        }
        _ => per_dim(b, "padding", n)?,
    };
    let pads = padding.iter().map(|&p| (p, p)).collect();
    conv_padded(ctx, x, w, b, &Geometry { n, pads, stride, dilation, groups })
}

fn conv_padded(ctx: &Ctx, x: &T, w: &T, b: &Bound, g: &Geometry) -> Result<Vec<Value>> {
    let n = g.n;
    let unbatched = x.rank() == n + 1;
    if !(x.rank() == n + 2 || unbatched) || w.rank() != n + 2 {
        return Err(Error::Arg(format!("conv{n}d: input of rank {} and weight of rank {}", x.rank(), w.rank())));
    }
    let mut t = if unbatched { x.t.unsqueeze(0)? } else { x.t.clone() };
    let mut k = w.t.clone();
    if n == 1 {
        t = t.unsqueeze(2)?;
        k = k.unsqueeze(2)?;
    }
    let rank = t.rank();
    for (i, &(before, after)) in g.pads.iter().enumerate() {
        let d = rank - n + i;
        t = t.pad_with_zeros(d, before, after)?;
    }
    let (s, dl) = (same_in_all(&g.stride, "stride")?, same_in_all(&g.dilation, "dilation")?);
    let mut out: Tensor = t.contiguous()?.conv2d(&k.contiguous()?, 0, s, dl, g.groups)?;
    if let Some(bias) = b.opt_tensor("bias")? {
        let shape: Vec<usize> = (0..out.rank()).map(|i| if i == 1 { bias.dims()[0] } else { 1 }).collect();
        out = out.broadcast_add(&bias.t.reshape(shape)?)?;
    }
    if n == 1 {
        out = out.squeeze(2)?;
    }
    if unbatched {
        out = out.squeeze(0)?;
    }
    Ok(vec![Value::Tensor(ctx.out(out, x.dtype)?)])
}

/// The convolution entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.conv1d", "Torch.conv1d", "MintFunctional.conv1d"],
        sig: "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1",
        forward: |c, b| conv(c, b, 1),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
    },
    Op {
        names: &["Functional.conv2d", "Torch.conv2d", "MintFunctional.conv2d"],
        sig: "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1",
        forward: |c, b| conv(c, b, 2),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
    },
];
