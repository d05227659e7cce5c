//! affine_grid (and `torch.affine_grid_generator`): the sampling grid of a
//! batch of affine matrices, as torch builds it: a base grid of normalized
//! coordinates in `[-1, 1]` (x along the last dim, then y, then z, then a
//! column of ones) times each matrix transposed.

use candle_core::Tensor;

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::Value;

/// torch's `linspace_from_neg_one`: `linspace(-1, 1, n)`, times
/// `(n - 1) / n` without `align_corners`; a single step is `0`.
fn coordinates(n: usize, align_corners: bool) -> Vec<f64> {
    if n <= 1 {
        return vec![0.0; n];
    }
    let points = super::create::linspace_values(-1.0, 1.0, n);
    if align_corners {
        return points;
    }
    points.into_iter().map(|v| v * (n - 1) as f64 / n as f64).collect()
}

/// The grid `[N, (D,) H, W, 2 or 3]` of `theta` `[N, 2, 3]` or `[N, 3, 4]`
/// for an output of `size` `[N, C, (D,) H, W]`.
fn affine_grid(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let theta = b.tensor("theta")?;
    let size: Vec<usize> = b.ints("size")?.iter().map(|&n| usize::try_from(n).unwrap_or(usize::MAX)).collect();
    let align_corners = !b.is_none("align_corners") && b.bool("align_corners")?;
    let nd = size.len().saturating_sub(2);
    let batch = size.first().copied().unwrap_or(0);
    if !(2..=3).contains(&nd) || size.contains(&usize::MAX) || theta.dims() != [batch, nd, nd + 1] {
        return Err(Error::Arg(format!(
            "affine_grid: theta {:?} for size {:?} (expected [N, 2, 3] with [N, C, H, W], or [N, 3, 4] with [N, C, D, H, W])",
            theta.dims(),
            b.ints("size")?
        )));
    }
    if !theta.dtype.is_float() {
        return Err(Error::Arg(format!("affine_grid: theta must be a float tensor, got {}", theta.dtype.name())));
    }
    let spatial = &size[2..];
    let axes: Vec<Vec<f64>> = spatial.iter().map(|&n| coordinates(n, align_corners)).collect();
    let count: usize = spatial.iter().product();
    let mut base = Vec::with_capacity(count * (nd + 1));
    for flat in 0..count {
        let mut rest = flat;
        let mut at = vec![0; nd];
        for d in (0..nd).rev() {
            at[d] = rest % spatial[d];
            rest /= spatial[d];
        }
        base.extend((0..nd).rev().map(|d| axes[d][at[d]]));
        base.push(1.0);
    }
    let base = Tensor::from_vec(base, (1, count, nd + 1), theta.t.device())?.to_dtype(theta.t.dtype())?;
    let grid = base.broadcast_matmul(&theta.t.transpose(1, 2)?)?;
    let shape: Vec<usize> = [&[batch][..], spatial, &[nd]].concat();
    one(ctx.out(grid.reshape(shape)?, theta.dtype)?)
}

/// The affine grid entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.affine_grid"],
        sig: "theta, size, align_corners=None",
        forward: affine_grid,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
    Op {
        names: &["Torch.affine_grid_generator"],
        sig: "theta, size, align_corners",
        forward: affine_grid,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums)],
    },
];

#[cfg(test)]
mod tests {
    use super::coordinates;

    #[test]
    fn coordinates_are_torchs_linspace_from_neg_one() {
        assert_eq!(coordinates(1, true), vec![0.0]);
        assert_eq!(coordinates(3, true), vec![-1.0, 0.0, 1.0]);
        assert_eq!(coordinates(4, false), vec![-0.75, -0.25, 0.25, 0.75]);
        let c = coordinates(7, true);
        assert!(c.iter().zip(c.iter().rev()).all(|(a, b)| *a == -b), "symmetric, each half from its end: {c:?}");
    }
}
