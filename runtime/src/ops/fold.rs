//! unfold (im2col) and fold (col2im): the sliding blocks of a batched
//! `[N, C, H, W]` input as columns `[N, C·kh·kw, L]`, and those columns
//! summed back into an image. One table of flat positions in the padded
//! image serves both: unfold gathers at it (its backward sums the overlaps
//! back, as torch's), fold adds at it (its backward gathers).

use candle_core::Tensor;

use super::pool::Geometry;
use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::Value;

/// Argument `name`: a non-negative int or pair of them, as a pair.
fn pair(b: &Bound, name: &str, api: &str) -> Result<[usize; 2]> {
    match b.ints(name)?.as_slice() {
        [x] if *x >= 0 => Ok([*x as usize; 2]),
        [x, y] if *x >= 0 && *y >= 0 => Ok([*x as usize, *y as usize]),
        v => Err(Error::Arg(format!("{api}: {name} must be an int or a pair, got {v:?}"))),
    }
}

/// The blocks' kernel, dilation, padding and stride, each an int or a pair.
fn geometry(b: &Bound, api: &str) -> Result<Geometry> {
    let pair = |name: &str| pair(b, name, api);
    let g = Geometry { k: pair("kernel_size")?, s: pair("stride")?, p: pair("padding")?, d: pair("dilation")? };
    if g.k.contains(&0) || g.d.contains(&0) || g.s.contains(&0) {
        return Err(Error::Arg(format!("{api}: kernel_size, dilation and stride must be positive")));
    }
    Ok(g)
}

/// The blocks along each dim of an `h × w` image, or why none fit.
fn count(g: &Geometry, h: usize, w: usize, api: &str) -> Result<[usize; 2]> {
    let mut out = [0; 2];
    for (i, n) in [h, w].into_iter().enumerate() {
        let (padded, span) = (n + 2 * g.p[i], g.d[i] * (g.k[i] - 1) + 1);
        if span > padded {
            return Err(Error::Arg(format!("{api}: a block spanning {span} does not fit the padded size {padded}")));
        }
        out[i] = (padded - span) / g.s[i] + 1;
    }
    Ok(out)
}

/// For block `l` (row-major over the blocks) and kernel element `kk`
/// (row-major over the kernel), in that order, the flat position in the
/// padded image of width `w`.
fn positions(g: &Geometry, w: usize, blocks: [usize; 2]) -> Vec<u32> {
    let wp = w + 2 * g.p[1];
    let mut at = Vec::with_capacity(blocks[0] * blocks[1] * g.k[0] * g.k[1]);
    for y in 0..blocks[0] {
        for x in 0..blocks[1] {
            for i in 0..g.k[0] {
                for j in 0..g.k[1] {
                    at.push(((y * g.s[0] + i * g.d[0]) * wp + x * g.s[1] + j * g.d[1]) as u32);
                }
            }
        }
    }
    at
}

/// unfold: `[N, C, H, W]` (or unbatched `[C, H, W]`) to `[N, C·kh·kw, L]`.
fn unfold(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let g = geometry(b, "unfold")?;
    let unbatched = x.rank() == 3;
    let t = match x.rank() {
        4 => x.t.clone(),
        3 => x.t.unsqueeze(0)?,
        r => return Err(Error::Arg(format!("unfold: input of rank {r} (expected 3 or 4)"))),
    };
    let (n, c, h, w) = t.dims4()?;
    let blocks = count(&g, h, w, "unfold")?;
    let (l, kk) = (blocks[0] * blocks[1], g.k[0] * g.k[1]);
    let padded = t.pad_with_zeros(2, g.p[0], g.p[0])?.pad_with_zeros(3, g.p[1], g.p[1])?;
    let (hp, wp) = (padded.dims()[2], padded.dims()[3]);
    let at = Tensor::from_vec(positions(&g, w, blocks), (1, l * kk), t.device())?.broadcast_as((n * c, l * kk))?.contiguous()?;
    let picked = padded.reshape((n * c, hp * wp))?.contiguous()?.gather(&at, 1)?;
    let columns = picked.reshape((n, c, l, kk))?.transpose(2, 3)?.reshape((n, c * kk, l))?;
    one(ctx.out(if unbatched { columns.squeeze(0)? } else { columns }, x.dtype)?)
}

/// fold: `[N, C·kh·kw, L]` (or unbatched `[C·kh·kw, L]`) summed into
/// `[N, C, H, W]` for `output_size` `(H, W)`.
fn fold(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let g = geometry(b, "fold")?;
    let size = pair(b, "output_size", "fold")?;
    let unbatched = x.rank() == 2;
    let t = match x.rank() {
        3 => x.t.clone(),
        2 => x.t.unsqueeze(0)?,
        r => return Err(Error::Arg(format!("fold: input of rank {r} (expected 2 or 3)"))),
    };
    let (n, ckk, l) = t.dims3()?;
    let blocks = count(&g, size[0], size[1], "fold")?;
    let kk = g.k[0] * g.k[1];
    if ckk % kk != 0 || l != blocks[0] * blocks[1] {
        return Err(Error::Arg(format!("fold: input {:?} for kernel {:?} and {} blocks", x.dims(), g.k, blocks[0] * blocks[1])));
    }
    let c = ckk / kk;
    let (hp, wp) = (size[0] + 2 * g.p[0], size[1] + 2 * g.p[1]);
    let at = Tensor::from_vec(positions(&g, size[1], blocks), l * kk, t.device())?;
    let source = t.reshape((n * c, kk, l))?.transpose(1, 2)?.reshape((n * c, l * kk))?.contiguous()?;
    let image = Tensor::zeros((n * c, hp * wp), t.dtype(), t.device())?.index_add(&at, &source, 1)?;
    let image = image.reshape((n, c, hp, wp))?.narrow(2, g.p[0], size[0])?.narrow(3, g.p[1], size[1])?;
    one(ctx.out(if unbatched { image.squeeze(0)? } else { image }, x.dtype)?)
}

/// The unfold and fold entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.unfold"],
        sig: "input, kernel_size, dilation=1, padding=0, stride=1",
        forward: unfold,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.fold"],
        sig: "input, output_size, kernel_size, dilation=1, padding=0, stride=1",
        forward: fold,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
];
