//! Convolutions. All run through candle's conv2d, whose gradients are
//! correct (its conv1d backward is wrong for batches > 1): a 1-D
//! convolution is a 2-D one over a height of 1. Padding is applied
//! explicitly, so each side may differ, and the padded input is cut to the
//! extent the kernel reaches (candle's backward infers one output padding
//! for both dims from the height, wrong when the width leaves another
//! remainder); stride and dilation must be the same in both spatial dims
//! (candle takes one value for both). A transposed convolution is the
//! convolution of the stride-dilated, padded input with the flipped kernel.

use candle_core::Tensor;

use super::{node_grads, Fact, Op, Rounding, Slicing, Standard};
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

/// mindspore.ops.conv2d: `pad_mode` 'valid' (no padding), 'same' (the
/// output size is `ceil(in / stride)`, the padding split evenly with the
/// odd one at the bottom and right, any stride) or 'pad' (`padding`: an
/// int or a (height, width) pair).
fn ms_conv2d(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, w) = (b.tensor("input")?, b.tensor("weight")?);
    let groups = b.int("groups")?.max(1) as usize;
    let stride = per_dim(b, "stride", 2)?;
    let dilation = per_dim(b, "dilation", 2)?;
    let padding = per_dim(b, "padding", 2)?;
    let mode = b.str("pad_mode")?;
    if mode != "pad" && padding.iter().any(|&p| p != 0) {
        return Err(Error::Arg(format!("conv2d: padding must be 0 with pad_mode {mode:?}, got {padding:?}")));
    }
    let pads = match mode {
        "valid" => vec![(0, 0); 2],
        "pad" => padding.iter().map(|&p| (p, p)).collect(),
        "same" => {
            if x.rank() < 2 || w.rank() != 4 {
                return Err(Error::Arg(format!("conv2d: input of rank {} and weight of rank {}", x.rank(), w.rank())));
            }
            let (sizes, kernel) = (&x.dims()[x.rank() - 2..], &w.dims()[2..]);
            (0..2)
                .map(|i| {
                    let out = sizes[i].div_ceil(stride[i]);
                    let total = ((out.max(1) - 1) * stride[i] + dilation[i] * (kernel[i].max(1) - 1) + 1).saturating_sub(sizes[i]);
                    (total / 2, total - total / 2)
                })
                .collect()
        }
        other => return Err(Error::Arg(format!("conv2d: pad_mode must be 'valid', 'same' or 'pad', got {other:?}"))),
    };
    conv_padded(ctx, x, w, b, &Geometry { n: 2, pads, stride, dilation, groups })
}

/// `t` with `before` and `after` elements added (zeros) or, when negative,
/// removed at each end of dim `d`.
fn pad_or_crop(t: &Tensor, d: usize, before: i64, after: i64) -> Result<Tensor> {
    let len = t.dims()[d] as i64;
    let (cut_before, cut_after) = ((-before).max(0), (-after).max(0));
    if cut_before + cut_after > len {
        return Err(Error::Arg(format!("conv_transpose: padding removes more than the {len} elements of a dim")));
    }
    let t = t.narrow(d, cut_before as usize, (len - cut_before - cut_after) as usize)?;
    Ok(t.pad_with_zeros(d, before.max(0) as usize, after.max(0) as usize)?)
}

/// conv_transpose1d/2d/3d over the last `n` dims: the input with `stride - 1`
/// zeros between elements, padded by `dilation * (k - 1) - padding` on
/// each side (plus `output_padding` after), convolved (stride 1) with the
/// kernel flipped in space and its in/out channels swapped per group.
fn conv_transpose(ctx: &Ctx, b: &Bound, n: usize) -> Result<Vec<Value>> {
    let (x, w) = (b.tensor("input")?, b.tensor("weight")?);
    let groups = b.int("groups")?.max(1) as usize;
    let (stride, padding) = (per_dim(b, "stride", n)?, per_dim(b, "padding", n)?);
    let (output_padding, dilation) = (per_dim(b, "output_padding", n)?, per_dim(b, "dilation", n)?);
    let unbatched = x.rank() == n + 1;
    if !(x.rank() == n + 2 || unbatched) || w.rank() != n + 2 {
        return Err(Error::Arg(format!("conv_transpose{n}d: input of rank {} and weight of rank {}", x.rank(), w.rank())));
    }
    let (cin, per_group) = (w.dims()[0], w.dims()[1]);
    let channels = x.dims()[if unbatched { 0 } else { 1 }];
    if cin != channels || cin % groups != 0 {
        return Err(Error::Arg(format!("conv_transpose{n}d: weight of shape {:?} for {channels} input channels in {groups} groups", w.dims())));
    }
    for i in 0..n {
        if stride[i] == 0 || dilation[i] == 0 || output_padding[i] >= stride[i].max(dilation[i]) {
            return Err(Error::Arg(format!(
                "conv_transpose{n}d: output_padding {output_padding:?} must be smaller than stride {stride:?} or dilation {dilation:?}"
            )));
        }
    }
    let kernel = w.dims()[2..].to_vec();
    let mut t = if unbatched { x.t.unsqueeze(0)? } else { x.t.clone() };
    for i in 0..n {
        let d = 2 + i;
        let (len, s) = (t.dims()[d], stride[i]);
        if s > 1 && len > 0 {
            // [.., L, ..] -> [.., L, s, ..] (zeros after each element) -> [.., L*s, ..], cut to (L-1)*s+1.
            let mut shape = t.dims().to_vec();
            shape[d] = len * s;
            t = t.unsqueeze(d + 1)?.pad_with_zeros(d + 1, 0, s - 1)?.reshape(shape)?.narrow(d, 0, (len - 1) * s + 1)?;
        }
        let edge = (dilation[i] * (kernel[i].max(1) - 1)) as i64 - padding[i] as i64;
        t = pad_or_crop(&t, d, edge, edge + output_padding[i] as i64)?;
    }
    // [Cin, Cout/g, k..] -> [g, Cin/g, Cout/g, k..] -> [g, Cout/g, Cin/g, k..] -> [Cout, Cin/g, k..], flipped.
    let grouped: Vec<usize> = [vec![groups, cin / groups, per_group], kernel.clone()].concat();
    let conv_shape: Vec<usize> = [vec![groups * per_group, cin / groups], kernel].concat();
    let k = w.t.reshape(grouped)?.transpose(1, 2)?.contiguous()?.reshape(conv_shape)?.flip(&(2..n + 2).collect::<Vec<_>>())?;
    let mut out = conv_nd(&t, &k, n, 1, same_in_all(&dilation, "dilation")?, groups)?;
    if let Some(bias) = b.opt_tensor("bias")? {
        out = match super::bias_kernel::bias_add(&out, &bias.t, 1)? {
            Some(sum) => sum,
            None => {
                let shape: Vec<usize> = (0..out.rank()).map(|i| if i == 1 { bias.dims()[0] } else { 1 }).collect();
                out.broadcast_add(&bias.t.reshape(shape)?)?
            }
        };
    }
    if unbatched {
        out = out.squeeze(0)?;
    }
    Ok(vec![Value::Tensor(ctx.out(out, x.dtype)?)])
}

/// The convolution of a batched, already padded input over its last `n`
/// (1, 2 or 3) dims, the input cut to the extent the kernel reaches: by
/// samples ([`super::conv_kernel`]) for one group, candle's otherwise; a
/// 3-D one as the sum over the depth taps of the 2-D convolutions of the
/// depth slices each tap reads.
fn conv_nd(t: &Tensor, k: &Tensor, n: usize, stride: usize, dilation: usize, groups: usize) -> Result<Tensor> {
    if n == 3 {
        return conv_3d(t, k, stride, dilation, groups);
    }
    let (mut t, mut k) = (t.clone(), k.clone());
    if n == 1 {
        t = t.unsqueeze(2)?;
        k = k.unsqueeze(2)?;
    }
    for d in 2..4 {
        let (len, span) = (t.dims()[d], dilation * (k.dims()[d].max(1) - 1) + 1);
        if len < span || stride == 0 {
            return Err(Error::Arg(format!("conv: a kernel spanning {span} does not fit the padded input of size {len} (stride {stride})")));
        }
        t = t.narrow(d, 0, (len - span) / stride * stride + span)?;
    }
    let by_samples = if groups == 1 { super::conv_kernel::conv2d(&t, &k, stride, dilation)? } else { None };
    let out = match by_samples {
        Some(out) => out,
        None => t.contiguous()?.conv2d(&k.contiguous()?, 0, stride, dilation, groups)?,
    };
    Ok(if n == 1 { out.squeeze(2)? } else { out })
}

/// [`conv_nd`] over `[N, C, D, H, W]`: for each depth tap `kd`, the slices
/// `z·stride + kd·dilation` as a batch of `N·D'` images, convolved in 2-D
/// with that tap's kernel, summed over the taps.
fn conv_3d(t: &Tensor, k: &Tensor, stride: usize, dilation: usize, groups: usize) -> Result<Tensor> {
    let (&[n, c, depth, h, w], &[cout, _, kd, ..]) = (t.dims(), k.dims()) else {
        return Err(Error::Arg(format!("conv3d: input {:?} and weight {:?} must be 5-D", t.dims(), k.dims())));
    };
    let span = dilation * (kd.max(1) - 1) + 1;
    if depth < span || stride == 0 {
        return Err(Error::Arg(format!("conv: a kernel spanning {span} does not fit the padded input of size {depth} (stride {stride})")));
    }
    let out_depth = (depth - span) / stride + 1;
    let mut sum: Option<Tensor> = None;
    for tap in 0..kd {
        let rows: Vec<u32> = (0..out_depth).map(|z| (z * stride + tap * dilation) as u32).collect();
        let rows = Tensor::new(rows.as_slice(), t.device())?;
        let slices = t.index_select(&rows, 2)?.permute((0, 2, 1, 3, 4))?.reshape((n * out_depth, c, h, w))?;
        let plane = conv_nd(&slices, &k.narrow(2, tap, 1)?.squeeze(2)?, 2, stride, dilation, groups)?;
        let (oh, ow) = (plane.dims()[2], plane.dims()[3]);
        let plane = plane.reshape((n, out_depth, cout, oh, ow))?.permute((0, 2, 1, 3, 4))?;
        sum = Some(match sum {
            None => plane,
            Some(s) => (s + plane)?,
        });
    }
    sum.map(|s| s.contiguous().map_err(Into::into)).unwrap_or_else(|| Err(Error::Arg("conv3d: a kernel of depth 0".into())))
}

fn conv_padded(ctx: &Ctx, x: &T, w: &T, b: &Bound, g: &Geometry) -> Result<Vec<Value>> {
    let n = g.n;
    let unbatched = x.rank() == n + 1;
    if !(x.rank() == n + 2 || unbatched) || w.rank() != n + 2 {
        return Err(Error::Arg(format!("conv{n}d: input of rank {} and weight of rank {}", x.rank(), w.rank())));
    }
    let mut t = if unbatched { x.t.unsqueeze(0)? } else { x.t.clone() };
    for (i, &(before, after)) in g.pads.iter().enumerate() {
        t = t.pad_with_zeros(2 + i, before, after)?;
    }
    let (s, dl) = (same_in_all(&g.stride, "stride")?, same_in_all(&g.dilation, "dilation")?);
    let mut out = conv_nd(&t, &w.t, n, s, dl, g.groups)?;
    if let Some(bias) = b.opt_tensor("bias")? {
        out = match super::bias_kernel::bias_add(&out, &bias.t, 1)? {
            Some(sum) => sum,
            None => {
                let shape: Vec<usize> = (0..out.rank()).map(|i| if i == 1 { bias.dims()[0] } else { 1 }).collect();
                out.broadcast_add(&bias.t.reshape(shape)?)?
            }
        };
    }
    if unbatched {
        out = out.squeeze(0)?;
    }
    Ok(vec![Value::Tensor(ctx.out(out, x.dtype)?)])
}

/// `torch.convolution(input, weight, bias, stride, padding, dilation,
/// transposed, output_padding, groups)` and `_convolution` (the same and
/// backend flags): the convolution or transposed convolution over the
/// weight's spatial dims.
fn convolution(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let n = b.tensor("weight")?.rank().saturating_sub(2);
    if !(1..=3).contains(&n) {
        return Err(Error::Arg(format!("convolution: a weight of rank {} (3 to 5 expected)", n + 2)));
    }
    if b.bool("transposed")? {
        conv_transpose(ctx, b, n)
    } else {
        conv(ctx, b, n)
    }
}

/// conv_tbc (fairseq's time-first convolution): input `[T, B, C_in]`,
/// weight `[K, C_in, C_out]`, bias `[C_out]`, `pad` zeros on each side of
/// time: conv1d of the input as `[B, C_in, T]` with the weight as
/// `[C_out, C_in, K]`, the output back as `[T', B, C_out]`.
fn conv_tbc(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, w, bias) = (b.tensor("input")?, b.tensor("weight")?, b.tensor("bias")?);
    let pad = b.int("pad")?;
    if x.rank() != 3 || w.rank() != 3 || bias.rank() != 1 || pad < 0 {
        return Err(Error::Arg(format!(
            "conv_tbc: input {:?}, weight {:?}, bias {:?} and pad {pad} (expected [T, B, C_in], [K, C_in, C_out], [C_out] and pad >= 0)",
            x.dims(),
            w.dims(),
            bias.dims()
        )));
    }
    let pad = pad as usize;
    let t = x.t.permute((1, 2, 0))?.pad_with_zeros(2, pad, pad)?;
    let k = w.t.permute((2, 1, 0))?;
    let out = conv_nd(&t, &k, 1, 1, 1, 1)?.broadcast_add(&bias.t.reshape((1, bias.dims()[0], 1))?)?;
    Ok(vec![Value::Tensor(ctx.out(out.permute((2, 0, 1))?, x.dtype)?)])
}

/// What is known of torch's convolutions: sliced by sample and output
/// channel, sums of products, autocast to half precision, and their
/// gradients recorded as ConvolutionBackward0 lists them.
const CONV_FACTS: &[Fact] = &[
    Fact::Slicing(Slicing::Conv),
    Fact::Rounding(Rounding::Sums),
    Fact::Autocast,
    Fact::ReducedOperands("conv"),
    Fact::NodeGradients(node_grads::convolution),
];

/// The transposed convolutions': as [`CONV_FACTS`], with no slicing known.
const CONV_TRANSPOSE_FACTS: &[Fact] =
    &[Fact::Rounding(Rounding::Sums), Fact::Autocast, Fact::ReducedOperands("conv"), Fact::NodeGradients(node_grads::convolution)];

/// The convolution entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.conv_tbc", "Torch.conv_tbc"],
        sig: "input, weight, bias, pad=0",
        forward: conv_tbc,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Functional.conv1d", "Torch.conv1d", "MintFunctional.conv1d"],
        sig: "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1",
        forward: |c, b| conv(c, b, 1),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: CONV_FACTS,
    },
    Op {
        names: &["Functional.conv2d", "Torch.conv2d", "MintFunctional.conv2d", "NPU.npu_conv2d"],
        sig: "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1",
        forward: |c, b| conv(c, b, 2),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: CONV_FACTS,
    },
    Op {
        names: &["MS.Functional.conv2d"],
        sig: "input, weight, bias=None, stride=1, pad_mode='valid', padding=0, dilation=1, groups=1",
        forward: ms_conv2d,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Conv), Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch.convolution"],
        sig: "input, weight, bias, stride, padding, dilation, transposed, output_padding, groups",
        forward: convolution,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Torch._convolution"],
        sig: "input, weight, bias, stride, padding, dilation, transposed, output_padding, groups, benchmark, deterministic, cudnn_enabled, allow_tf32=True",
        forward: convolution,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Sums), Fact::Autocast],
    },
    Op {
        names: &["Functional.conv3d", "Torch.conv3d", "NPU.npu_conv3d"],
        sig: "input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1",
        forward: |c, b| conv(c, b, 3),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: CONV_FACTS,
    },
    Op {
        names: &["Functional.conv_transpose1d", "Torch.conv_transpose1d"],
        sig: "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1",
        forward: |c, b| conv_transpose(c, b, 1),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: CONV_TRANSPOSE_FACTS,
    },
    Op {
        names: &["Functional.conv_transpose2d", "Torch.conv_transpose2d", "MintFunctional.conv_transpose2d"],
        sig: "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1",
        forward: |c, b| conv_transpose(c, b, 2),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: CONV_TRANSPOSE_FACTS,
    },
    Op {
        names: &["Functional.conv_transpose3d", "Torch.conv_transpose3d"],
        sig: "input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1",
        forward: |c, b| conv_transpose(c, b, 3),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: CONV_TRANSPOSE_FACTS,
    },
];
