//! The rearranging layers of `torch.nn.functional` that only move elements
//! between channels and positions: `pixel_shuffle`, `pixel_unshuffle` and
//! `channel_shuffle`, each a reshape, a permutation and a reshape (data
//! movement, judged exactly; their gradients move back the same way).

use candle_core::Tensor;

use super::{one, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// `x`'s dimensions before its last `n` (the batch-like ones), at least `n` required.
fn split_last<'a>(x: &'a T, n: usize, what: &str) -> Result<(&'a [usize], &'a [usize])> {
    let d = x.dims();
    if d.len() < n {
        return Err(Error::Arg(format!("{what}: input of {} dimensions, at least {n} needed", d.len())));
    }
    Ok(d.split_at(d.len() - n))
}

/// `t` permuted by `order` and given the shape `lead ++ tail`.
fn rearranged(t: &Tensor, order: &[usize], lead: &[usize], tail: &[usize]) -> candle_core::Result<Tensor> {
    t.permute(order.to_vec())?.contiguous()?.reshape([lead, tail].concat())
}

/// pixel_shuffle (`(*, C·r², H, W)` to `(*, C, H·r, W·r)`) and, `down`,
/// pixel_unshuffle (the reverse).
fn pixel_shuffle(ctx: &Ctx, b: &Bound, down: bool) -> Result<Vec<Value>> {
    let what = if down { "pixel_unshuffle" } else { "pixel_shuffle" };
    let x = b.tensor("input")?;
    let r = usize::try_from(b.int(if down { "downscale_factor" } else { "upscale_factor" })?).unwrap_or(0);
    let (lead, chw) = split_last(x, 3, what)?;
    let (c, h, w) = (chw[0], chw[1], chw[2]);
    let n: usize = lead.iter().product();
    if r == 0 {
        return Err(Error::Arg(format!("{what}: the factor must be positive")));
    }
    let t = if down {
        if h % r != 0 || w % r != 0 {
            return Err(Error::Arg(format!("{what}: height {h} and width {w} must be divisible by {r}")));
        }
        let t = x.t.reshape(vec![n, c, h / r, r, w / r, r])?;
        rearranged(&t, &[0, 1, 3, 5, 2, 4], lead, &[c * r * r, h / r, w / r])?
    } else {
        if c % (r * r) != 0 {
            return Err(Error::Arg(format!("{what}: {c} channels are not divisible by the factor squared ({})", r * r)));
        }
        let t = x.t.reshape(vec![n, c / (r * r), r, r, h, w])?;
        rearranged(&t, &[0, 1, 4, 2, 5, 3], lead, &[c / (r * r), h * r, w * r])?
    };
    one(ctx.out(t, x.dtype)?)
}

/// channel_shuffle: `(N, C, *)` with its channels in `groups` interleaved
/// (`(N, g, C/g, *)` transposed to `(N, C/g, g, *)`).
fn channel_shuffle(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let g = usize::try_from(b.int("groups")?).unwrap_or(0);
    let d = x.dims();
    if d.len() < 3 || g == 0 || d[1] % g != 0 {
        return Err(Error::Arg(format!("channel_shuffle: {} channels of an input of shape {d:?} in {g} groups", d.get(1).copied().unwrap_or(0))));
    }
    let rest: usize = d[2..].iter().product();
    let t = x.t.reshape(vec![d[0], g, d[1] / g, rest])?;
    let t = t.transpose(1, 2)?.contiguous()?.reshape(d)?;
    one(ctx.out(t, x.dtype)?)
}

/// The rearranging entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.pixel_shuffle", "Torch.pixel_shuffle"],
        sig: "input, upscale_factor",
        forward: |c, b| pixel_shuffle(c, b, false),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.pixel_unshuffle", "Torch.pixel_unshuffle"],
        sig: "input, downscale_factor",
        forward: |c, b| pixel_shuffle(c, b, true),
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.channel_shuffle", "Torch.channel_shuffle"],
        sig: "input, groups",
        forward: channel_shuffle,
        backward: true,
        standard: Standard::Exact,
        random: false,
        facts: &[],
    },
];
