//! torch_npu's own spellings of functions the table already holds
//! (`torch_npu.npu_transpose`, `npu_reshape`, `npu_convolution`,
//! `npu_indexing`, `npu_add_rms_norm`, ...), dumped `NPU.X`: each rebinds
//! its call to the entry that computes it ([`super::rebind`], or the
//! MindSpore entry of the same Ascend kernel: `npu_indexing` is
//! `strided_slice`, `npu_bounding_box_encode` is `bounding_box_encode`),
//! so the arithmetic and its gradient have one home. Their cases:
//! runtime/tests/npu/oracles.py, against torch compositions of torch_npu's
//! documented formulas (compositions.py).

use super::ms_array::{scatter_nd_into, slice, strided_slice, Combine};
use super::ms_math::{decode_boxes, encode_boxes};
use super::{rebind, Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

fn input(b: &Bound) -> Value {
    b.value("input").clone()
}

/// `npu_transpose(self, perm, require_contiguous=True)`.
fn transpose(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    rebind(ctx, "Torch.permute", vec![input(b), b.value("perm").clone()], &[])
}

/// `npu_reshape(self, shape, can_refresh=False)`.
fn reshape(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    rebind(ctx, "Torch.reshape", vec![input(b), b.value("shape").clone()], &[])
}

/// `npu_bmmV2(self, mat2, output_sizes)`: the batched product (the output sizes only say its shape).
fn bmm_v2(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    rebind(ctx, "Torch.matmul", vec![input(b), b.value("mat2").clone()], &[])
}

/// `npu_format_cast(self, acl_format)` and its in-place form: the values
/// unchanged (only the device's memory layout changes).
fn format_cast(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    rebind(ctx, "Torch.clone", vec![input(b)], &[])
}

/// `one_(self)`: ones of its shape and dtype.
fn one_(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    rebind(ctx, "Torch.ones_like", vec![input(b)], &[])
}

/// `empty_with_format(size, dtype, ..., acl_format)`: uninitialized memory.
fn empty_with_format(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    rebind(ctx, "Torch.empty", vec![b.value("size").clone()], &[("dtype", b.value("dtype").clone())])
}

/// The convolution of the weight's rank: 1-, 2- or 3-D.
fn by_rank(b: &Bound, names: [&'static str; 3]) -> Result<&'static str> {
    match b.tensor("weight")?.rank() {
        3 => Ok(names[0]),
        4 => Ok(names[1]),
        5 => Ok(names[2]),
        r => Err(Error::Arg(format!("a convolution weight of rank {r}"))),
    }
}

/// `npu_convolution(input, weight, bias, stride, padding, dilation, groups)`.
fn convolution(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let api = by_rank(b, ["Functional.conv1d", "Functional.conv2d", "Functional.conv3d"])?;
    let args = ["input", "weight", "bias", "stride", "padding", "dilation", "groups"].map(|p| b.value(p).clone());
    rebind(ctx, api, args.to_vec(), &[])
}

/// `npu_conv_transpose2d`/`npu_convolution_transpose(input, weight, bias,
/// padding, output_padding, stride, dilation, groups)`: torch's order is
/// stride, padding, output_padding, groups, dilation.
fn convolution_transpose(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let api = by_rank(b, ["Functional.conv_transpose1d", "Functional.conv_transpose2d", "Functional.conv_transpose3d"])?;
    let args = ["input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"].map(|p| b.value(p).clone());
    rebind(ctx, api, args.to_vec(), &[])
}

/// `npu_slice(self, offsets, size)`: MindSpore's `slice` (the same kernel).
fn npu_slice(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    slice(ctx, &b.renamed("offsets", "begin"))
}

/// `npu_add_rms_norm(x1, x2, gamma, epsilon=1e-6)`: x = x1 + x2, then
/// `npu_rms_norm(x, gamma, epsilon)`; returns y, rstd and x.
fn add_rms_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let sum = rebind(ctx, "Torch.add", vec![b.value("x1").clone(), b.value("x2").clone()], &[])?.remove(0);
    let mut out = rebind(ctx, "NPU.npu_rms_norm", vec![sum.clone(), b.value("gamma").clone()], &[("epsilon", b.value("epsilon").clone())])?;
    out.push(sum);
    Ok(out)
}

/// `npu_bounding_box_encode(anchor_box, ground_truth_box, means0..3, stds0..3)`.
fn box_encode(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (means, stds) = (four(b, "means")?, four(b, "stds")?);
    encode_boxes(ctx, b.tensor("anchor_box")?, b.tensor("ground_truth_box")?, means, stds)
}

/// `npu_bounding_box_decode(rois, deltas, means0..3, stds0..3, max_shape, wh_ratio_clip)`.
fn box_decode(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let shape = b.ints("max_shape")?;
    let [h, w] = shape[..] else { return Err(Error::Arg("npu_bounding_box_decode: max_shape is (height, width)".into())) };
    decode_boxes(ctx, b.tensor("rois")?, b.tensor("deltas")?, four(b, "means")?, four(b, "stds")?, (h, w), b.float("wh_ratio_clip")?, 1.0)
}

/// `npu_max`/`npu_min(self, dim, keepdim=False)`: torch's, with int32 indices.
fn extreme(ctx: &Ctx, b: &Bound, api: &str) -> Result<Vec<Value>> {
    let mut out = rebind(ctx, api, vec![input(b), b.value("dim").clone(), b.value("keepdim").clone()], &[])?;
    if let Some(Value::Tensor(i)) = out.get(1) {
        out[1] = Value::Tensor(ctx.cast(i, TDType::I32)?);
    }
    Ok(out)
}

/// `npu_one_hot(self, num_classes=-1, depth=1, on_value=1, off_value=0)`:
/// `depth` classes on a new last axis (`num_classes` names the axis; only
/// the last is replayed), float32; an index outside [0, depth) a row of `off_value`.
fn one_hot(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if b.int("num_classes")? != -1 {
        return Err(Error::Unsupported("npu_one_hot on another axis than the last is not replayed".into()));
    }
    let depth = b.int("depth")?.max(0) as usize;
    let (on, off) = (b.float("on_value")?, b.float("off_value")?);
    let v: Vec<f64> = x.to_f64_vec()?.iter().flat_map(|&i| (0..depth).map(move |c| if i as i64 == c as i64 { on } else { off })).collect();
    let shape = [x.dims(), &[depth]].concat();
    ctx.fits(&shape)?;
    Ok(vec![Value::Tensor(T::from_f64(v, &shape, TDType::F32, ctx.compute, &ctx.device)?)])
}

/// `npu_softmax_cross_entropy_with_logits(self, labels)`: per row,
/// −Σ labels · log_softmax(features) over the last axis (labels as given).
fn softmax_cross_entropy(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let logp = rebind(ctx, "Functional.log_softmax", vec![input(b), Value::Int(-1)], &[])?.remove(0);
    let prod = rebind(ctx, "Torch.mul", vec![logp, b.value("labels").clone()], &[])?.remove(0);
    let sum = rebind(ctx, "Torch.sum", vec![prod, Value::Int(-1)], &[])?.remove(0);
    rebind(ctx, "Torch.neg", vec![sum], &[])
}

/// `npu_pad(input, paddings)`: zero (before, after) pairs from dim 0 on,
/// the reverse of `F.pad`'s order.
fn pad(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let p = b.ints("paddings")?;
    if p.len() % 2 != 0 {
        return Err(Error::Arg("npu_pad: paddings are (before, after) pairs".into()));
    }
    let torch_order: Vec<Value> = p.chunks(2).rev().flat_map(|c| [Value::Int(c[0]), Value::Int(c[1])]).collect();
    rebind(ctx, "Functional.pad", vec![input(b), Value::List(torch_order)], &[])
}

/// `npu_geglu(self, dim=-1, approximate=1, activate_left=False)`: the
/// halves a, b along `dim`; `a·gelu(b)` (or `gelu(a)·b`) and the gelu
/// itself, tanh's approximation for `approximate` 1.
fn geglu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let halves = rebind(ctx, "Torch.chunk", vec![input(b), Value::Int(2), b.value("dim").clone()], &[])?;
    let [first, second] = <[Value; 2]>::try_from(halves).map_err(|_| Error::Arg("npu_geglu: an even split".into()))?;
    let (active, other) = if b.bool("activate_left")? { (first, second) } else { (second, first) };
    let approximate = Value::Str(if b.int("approximate")? == 1 { "tanh" } else { "none" }.into());
    let gelu = rebind(ctx, "Functional.gelu", vec![active], &[("approximate", approximate)])?.remove(0);
    let y = rebind(ctx, "Torch.mul", vec![other, gelu.clone()], &[])?.remove(0);
    Ok(vec![y, gelu])
}

/// `npu_anti_quant(x, scale, *, offset=None, dst_dtype=None, src_dtype=None)`:
/// (x + offset)·scale along the last axis, as float16 unless `dst_dtype`
/// says otherwise (int8 inputs; packed int4 is not replayed).
fn anti_quant(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    if x.dtype != TDType::I8 {
        return Err(Error::Unsupported(format!("npu_anti_quant of {} (only int8 is replayed)", x.dtype.name())));
    }
    let dst = match b.value("dst_dtype") {
        Value::None => TDType::F16,
        Value::DType(d) => *d,
        v => return Err(Error::Arg(format!("npu_anti_quant: dst_dtype is a dtype, got {}", v.kind()))),
    };
    let wide = Value::Tensor(ctx.cast(x, TDType::F32)?);
    let shifted = if b.is_none("offset") { wide } else { rebind(ctx, "Torch.add", vec![wide, b.value("offset").clone()], &[])?.remove(0) };
    let scaled = rebind(ctx, "Torch.mul", vec![shifted, b.value("scale").clone()], &[])?.remove(0);
    Ok(vec![Value::Tensor(ctx.cast(scaled.tensor("npu_anti_quant")?, dst)?)])
}

/// `scatter_update(self, indices, updates, axis)`: per batch entry i, the
/// updates written along `axis` from offset `indices[i]` (or, for [n, 2]
/// indices, into batch `indices[i][0]` from offset `indices[i][1]`): the
/// KV-cache write.
fn scatter_update(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, idx, upd) = (b.tensor("input")?, b.tensor("indices")?, b.tensor("updates")?);
    let axis = crate::ctx::dim(b.int("axis")?, x.rank())?;
    if axis == 0 || upd.rank() != x.rank() {
        return Err(Error::Arg("scatter_update: updates of the data's rank, written along an axis past 0".into()));
    }
    let pairs: Vec<(usize, usize)> = match idx.dims() {
        [n] => idx.to_f64_vec()?.iter().take(*n).enumerate().map(|(i, &o)| (i, o as usize)).collect(),
        [_, 2] => idx.to_f64_vec()?.chunks(2).map(|c| (c[0] as usize, c[1] as usize)).collect(),
        d => return Err(Error::Arg(format!("scatter_update: indices of shape {d:?}"))),
    };
    let len = upd.dims()[axis];
    let mut t = x.t.clone();
    for (i, &(batch, offset)) in pairs.iter().enumerate() {
        if batch >= x.dims()[0] || offset + len > x.dims()[axis] {
            return Err(Error::Arg(format!("scatter_update: batch {batch} at offset {offset} is outside the data")));
        }
        let row = t.narrow(0, batch, 1)?;
        let src = upd.t.narrow(0, i, 1)?.to_dtype(t.dtype())?;
        let parts = [row.narrow(axis, 0, offset)?, src, row.narrow(axis, offset + len, x.dims()[axis] - offset - len)?];
        let written = candle_core::Tensor::cat(&parts, axis)?;
        t = candle_core::Tensor::cat(&[t.narrow(0, 0, batch)?, written, t.narrow(0, batch + 1, x.dims()[0] - batch - 1)?], 0)?;
    }
    Ok(vec![Value::Tensor(ctx.out(t, x.dtype)?)])
}

/// The four scalars `{prefix}0` .. `{prefix}3`.
fn four(b: &Bound, prefix: &str) -> Result<[f64; 4]> {
    let v = (0..4).map(|i| b.float(&format!("{prefix}{i}"))).collect::<Result<Vec<_>>>()?;
    Ok([v[0], v[1], v[2], v[3]])
}

/// An entry of its own signature and standard, differentiated where its base is.
const fn spelled(names: &'static [&'static str], sig: &'static str, forward: fn(&Ctx, &Bound) -> Result<Vec<Value>>, backward: bool, standard: Standard) -> Op {
    Op { names, sig, forward, backward, standard, random: false, facts: &[] }
}

/// The entries.
pub static OPS: &[Op] = &[
    spelled(&["NPU.npu_transpose"], "input, perm, require_contiguous=True", transpose, true, Standard::Exact),
    spelled(&["NPU.npu_reshape"], "input, shape, can_refresh=False", reshape, true, Standard::Exact),
    spelled(&["NPU.npu_bmmV2"], "input, mat2, output_sizes=None", bmm_v2, true, Standard::Accuracy),
    spelled(&["NPU.npu_format_cast", "NPU.npu_format_cast_"], "input, acl_format", format_cast, true, Standard::Exact),
    spelled(&["NPU.one_"], "input", one_, false, Standard::Exact),
    spelled(
        &["NPU.empty_with_format"],
        "size, dtype=None, layout=None, device=None, pin_memory=False, acl_format=2",
        empty_with_format,
        false,
        Standard::Undefined,
    ),
    spelled(&["NPU.npu_convolution"], "input, weight, bias, stride, padding, dilation, groups", convolution, true, Standard::Accuracy),
    spelled(
        &["NPU.npu_conv_transpose2d", "NPU.npu_convolution_transpose"],
        "input, weight, bias, padding, output_padding, stride, dilation, groups",
        convolution_transpose,
        true,
        Standard::Accuracy,
    ),
    spelled(&["NPU.npu_slice"], "input, offsets, size", npu_slice, true, Standard::Exact),
    spelled(
        &["NPU.npu_indexing"],
        "input, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0",
        strided_slice,
        true,
        Standard::Exact,
    ),
    spelled(
        &["NPU.npu_scatter_nd_update", "NPU.npu_scatter_nd_update_"],
        "input, indices, updates",
        |c, b| scatter_nd_into(c, b, Combine::Update),
        false,
        Standard::Exact,
    ),
    spelled(&["NPU.npu_add_rms_norm"], "x1, x2, gamma, epsilon=1e-06", add_rms_norm, true, Standard::Accuracy),
    spelled(&["NPU.npu_max"], "input, dim, keepdim=False", |c, b| extreme(c, b, "Torch.max"), true, Standard::Exact),
    spelled(&["NPU.npu_min"], "input, dim, keepdim=False", |c, b| extreme(c, b, "Torch.min"), true, Standard::Exact),
    spelled(&["NPU.npu_one_hot"], "input, num_classes=-1, depth=1, on_value=1, off_value=0", one_hot, false, Standard::Exact),
    spelled(&["NPU.npu_softmax_cross_entropy_with_logits"], "input, labels", softmax_cross_entropy, true, Standard::Accuracy),
    spelled(&["NPU.npu_pad"], "input, paddings", pad, true, Standard::Exact),
    spelled(&["NPU.npu_geglu"], "input, dim=-1, approximate=1, activate_left=False", geglu, true, Standard::Accuracy),
    spelled(&["NPU.npu_anti_quant"], "input, scale, *, offset=None, dst_dtype=None, src_dtype=None", anti_quant, false, Standard::Accuracy),
    spelled(&["NPU.scatter_update", "NPU.scatter_update_"], "input, indices, updates, axis", scatter_update, false, Standard::Exact),
    spelled(
        &["NPU.npu_bounding_box_encode"],
        "anchor_box, ground_truth_box, means0, means1, means2, means3, stds0, stds1, stds2, stds3",
        box_encode,
        false,
        Standard::Accuracy,
    ),
    spelled(
        &["NPU.npu_bounding_box_decode"],
        "rois, deltas, means0, means1, means2, means3, stds0, stds1, stds2, stds3, max_shape, wh_ratio_clip",
        box_decode,
        false,
        Standard::Accuracy,
    ),
];
