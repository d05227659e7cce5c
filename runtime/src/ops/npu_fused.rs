//! torch_npu's fused elementwise and normalization kernels (`NPU.` names),
//! each with torch_npu's documented signature and outputs, composed from
//! candle primitives in the bench's float64 so that their gradients are
//! autograd's: npu_rms_norm, npu_swiglu, npu_fast_gelu (also `fast_gelu`),
//! npu_mish, npu_rotary_mul, npu_scaled_masked_softmax. The attention
//! kernel is in `npu_attention.rs`.

use candle_core::Tensor;

use super::activation::sigmoid_t;
use super::nn::softmax_t;
use super::{float_of, one, Fact, Op, Rounding, Slicing, Standard, Whole};
use crate::bind::Bound;
use crate::ctx::{dim, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// npu_rms_norm(x, gamma, epsilon=1e-06) -> (y, rstd) (MindSpore's
/// rms_norm takes the same): over the trailing dims that `gamma` has,
/// `rstd = 1/sqrt(mean(x²) + ε)` (float32, those dims kept as 1) and
/// `y = x·rstd·γ` in x's dtype.
pub(super) fn rms_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, gamma) = (b.tensor("x")?, b.tensor("gamma")?);
    let k = gamma.rank();
    if k == 0 || k > x.rank() || x.dims()[x.rank() - k..] != *gamma.dims() {
        return Err(Error::Arg(format!("rms_norm: gamma of shape {:?} must be the trailing dims of x {:?}", gamma.dims(), x.dims())));
    }
    let dims: Vec<usize> = (x.rank() - k..x.rank()).collect();
    let rstd = (x.t.sqr()?.mean_keepdim(dims)? + b.float("epsilon")?)?.sqrt()?.recip()?;
    let y = x.t.broadcast_mul(&rstd)?.broadcast_mul(&gamma.t)?;
    Ok(vec![Value::Tensor(ctx.out(y, x.dtype)?), Value::Tensor(ctx.out(rstd, TDType::F32)?)])
}

/// The two halves of `x` along `d` (its size must be even).
fn halves(x: &T, d: i64, what: &str) -> Result<(Tensor, Tensor, usize)> {
    let d = dim(d, x.rank())?;
    let n = x.dims()[d];
    if !n.is_multiple_of(2) {
        return Err(Error::Arg(format!("{what}: dim {d} of shape {:?} is odd; it must split into two halves", x.dims())));
    }
    Ok((x.t.narrow(d, 0, n / 2)?, x.t.narrow(d, n / 2, n / 2)?, d))
}

/// npu_swiglu(x, dim=-1): [`swiglu_of`].
fn swiglu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    swiglu_of(ctx, b.tensor("x")?, b.int("dim")?, "npu_swiglu")
}

/// `silu(a)·b` for the halves `a, b` of x along `dim` (`what` names the API in errors).
pub(super) fn swiglu_of(ctx: &Ctx, x: &T, dim: i64, what: &str) -> Result<Vec<Value>> {
    let (a, g, _) = halves(x, dim, what)?;
    one(ctx.out(((&a * sigmoid_t(&a)?)? * g)?, float_of(x.dtype))?)
}

/// npu_fast_gelu(input): torch_npu's `x / (1 + exp(-1.702|x|)) · exp(0.851(x - |x|))`,
/// which is `x·sigmoid(1.702x)` for either sign of x.
fn fast_gelu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    fast_gelu_of(ctx, b.tensor("input")?)
}

/// `x·sigmoid(1.702x)` (MindSpore's fast_gelu documents the same formula).
pub(super) fn fast_gelu_of(ctx: &Ctx, x: &T) -> Result<Vec<Value>> {
    let alpha = crate::rulebook::get().npu_references.fast_gelu_alpha;
    one(ctx.out((&x.t * sigmoid_t(&(&x.t * alpha)?)?)?, float_of(x.dtype))?)
}

/// npu_mish(input): `x·tanh(softplus(x))`, softplus as `log(1 + exp(-|x|)) + max(x, 0)`.
fn mish(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = &b.tensor("input")?.t;
    let pos = x.ge(0.0)?;
    let abs = pos.where_cond(x, &x.neg()?)?;
    let softplus = ((abs.neg()?.exp()? + 1.0)?.log()? + pos.where_cond(x, &x.zeros_like()?)?)?;
    one(ctx.out((x * softplus.tanh()?)?, float_of(b.tensor("input")?.dtype))?)
}

/// npu_rotary_mul(input, r1, r2, rotary_mode='half'): `x·r1 + rot(x)·r2`,
/// with `rot(x) = cat(-x₂, x₁)` for the halves of the last dim ('half'),
/// or each pair `(x₂ᵢ, x₂ᵢ₊₁)` turned to `(-x₂ᵢ₊₁, x₂ᵢ)` ('interleave').
fn rotary_mul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, r1, r2) = (b.tensor("input")?, b.tensor("r1")?, b.tensor("r2")?);
    rotary_of(ctx, x, r1, r2, b.str("rotary_mode")?, "npu_rotary_mul")
}

/// `x·r1 + rot(x)·r2` by `mode` (`half`, `interleave`; `what` names the API in errors).
pub(super) fn rotary_of(ctx: &Ctx, x: &T, r1: &T, r2: &T, mode: &str, what: &str) -> Result<Vec<Value>> {
    let rotated = match mode {
        "half" => {
            let (x1, x2, d) = halves(x, -1, what)?;
            Tensor::cat(&[&x2.neg()?, &x1], d)?
        }
        "interleave" => {
            let (_, _, d) = halves(x, -1, what)?;
            let mut pairs = x.dims().to_vec();
            pairs[d] /= 2;
            pairs.push(2);
            let p = x.t.reshape(pairs.as_slice())?;
            let last = pairs.len() - 1;
            Tensor::cat(&[&p.narrow(last, 1, 1)?.neg()?, &p.narrow(last, 0, 1)?], last)?.reshape(x.dims())?
        }
        other => return Err(Error::Arg(format!("{what}: rotary_mode must be 'half' or 'interleave', got {other:?}"))),
    };
    let y = (x.t.broadcast_mul(&r1.t)? + rotated.broadcast_mul(&r2.t)?)?;
    one(ctx.out(y, float_of(x.dtype))?)
}

/// npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
/// softmax over the last dim of `x·scale` with the masked places (`mask`
/// true, or above the diagonal with `fixed_triu_mask`) set to -10000, as
/// the kernel does (a row masked entirely is then the softmax of -10000s:
/// uniform); the gradient is 0 at masked places.
fn scaled_masked_softmax(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, mask) = (b.tensor("x")?, b.tensor("mask")?);
    let masked = if b.bool("fixed_triu_mask")? {
        let (rows, cols) = match x.dims() {
            [.., r, c] => (*r, *c),
            _ => return Err(Error::Arg(format!("npu_scaled_masked_softmax: x of shape {:?} has no rows and columns", x.dims()))),
        };
        let upper: Vec<u8> = (0..rows).flat_map(|i| (0..cols).map(move |j| (j > i) as u8)).collect();
        Tensor::from_vec(upper, (rows, cols), x.t.device())?.broadcast_as(x.dims())?
    } else {
        mask.t.ne(0.0)?.broadcast_as(x.dims())?
    };
    let scaled = (&x.t * b.float("scale")?)?;
    let fill = crate::rulebook::get().npu_references.scaled_masked_softmax_fill;
    let logits = masked.where_cond(&ctx.full(x.dims(), fill, x.dtype)?, &scaled)?;
    one(ctx.out(softmax_t(&logits, x.rank().saturating_sub(1))?, float_of(x.dtype))?)
}

/// The entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["NPU.npu_rms_norm"],
        sig: "x, gamma, epsilon=1e-06",
        forward: rms_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(1)))],
    },
    Op {
        names: &["NPU.npu_swiglu"],
        sig: "x, dim=-1",
        forward: swiglu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", Some(-1))))],
    },
    Op {
        names: &["NPU.npu_fast_gelu", "NPU.fast_gelu"],
        sig: "input",
        forward: fast_gelu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["NPU.npu_mish"],
        sig: "input",
        forward: mish,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["NPU.npu_rotary_mul"],
        sig: "input, r1, r2, rotary_mode='half'",
        forward: rotary_mul,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(1)))],
    },
    Op {
        names: &["NPU.npu_scaled_masked_softmax"],
        sig: "x, mask, scale=1.0, fixed_triu_mask=False",
        forward: scaled_masked_softmax,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Last(1)))],
    },
];
