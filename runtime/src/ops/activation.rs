//! Elementwise functions and activations, written so that their gradients
//! are torch's at the edges (relu'(0) = 0, abs'(0) = 0, a stable sigmoid).

use candle_core::Tensor;

use super::{float_of, one, Fact, Op, PartMagnitudes, Parts, Rest, Rounding, Slicing, Standard, Whole};
use crate::bind::Bound;
use crate::ctx::{precise, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::value::{Value, T};

fn unary(ctx: &Ctx, b: &Bound, keeps_int: bool, f: impl Fn(&Tensor) -> candle_core::Result<Tensor>) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = if keeps_int { x.dtype } else { float_of(x.dtype) };
    one(ctx.out(f(&x.t)?, dtype)?)
}

/// relu as a select: the gradient at 0 is 0 (candle's relu gives 1).
pub(super) fn relu_t(x: &Tensor) -> candle_core::Result<Tensor> {
    match super::relu_kernel::relu(x)? {
        Some(y) => Ok(y),
        None => x.gt(0.0)?.where_cond(x, &x.zeros_like()?),
    }
}

/// |x| as x·sign(x) with the sign constant: the gradient at 0 is 0.
pub(super) fn abs_t(x: &Tensor) -> candle_core::Result<Tensor> {
    x * x.sign()?.detach()
}

/// tanh's parts: kernels compute its gradient from the rounded output,
/// `dy·(1 - y²)`, which cancels where |y| → 1: `|dy|·(1 + y²)`.
fn tanh_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    output_gradient_parts(b, dy, f64::tanh, |y| 1.0 + y * y)
}

/// sigmoid's parts: its gradient `dy·y·(1 - y)` from the rounded output
/// cancels where y → 1: `|dy|·|y|·(1 + |y|)`.
fn sigmoid_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    output_gradient_parts(b, dy, |x| 1.0 / (1.0 + (-x).exp()), |y: f64| y.abs() * (1.0 + y.abs()))
}

/// The parts of a gradient computed from the output `y = f(x)`: `|dy|·parts(y)`
/// for the input's gradient; none forward (Smooth's terms cover it).
fn output_gradient_parts(b: &Bound, dy: Option<&T>, f: fn(f64) -> f64, parts: fn(f64) -> f64) -> Result<PartMagnitudes> {
    let x = b.tensor("input")?.to_f64_vec()?;
    let Some(dy) = dy else { return Ok((vec![], vec![])) };
    let dy = dy.to_f64_vec()?;
    if dy.len() != x.len() {
        return Ok((vec![], vec![]));
    }
    Ok((vec![], vec![("input", x.iter().zip(dy).map(|(&x, g)| g.abs() * parts(f(x))).collect())]))
}

/// sigmoid from exp(-|x|) in (0, 1]: finite everywhere, forward and backward.
/// (|x| as a select, so its slope is ±1 even at 0, unlike [`abs_t`].)
pub(super) fn sigmoid_t(x: &Tensor) -> candle_core::Result<Tensor> {
    let pos = x.ge(0.0)?;
    let z = pos.where_cond(x, &x.neg()?)?.neg()?.exp()?;
    let denom = (&z + 1.0)?;
    pos.where_cond(&denom.recip()?, &(&z / &denom)?)
}

/// prelu: `x` where `x > 0`, else `w·x`, `w` one slope or one per channel
/// (dimension 1; an input of fewer than two dimensions has one channel).
fn prelu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, w) = (b.tensor("input")?, b.tensor("weight")?);
    let dtype = super::nn::float_pair(x, w, "prelu")?;
    let channels = if x.rank() >= 2 { x.dims()[1] } else { 1 };
    let n = w.t.elem_count();
    if n != 1 && n != channels {
        return Err(Error::Arg(format!("prelu: {n} slopes for {channels} channels (one, or one per channel)")));
    }
    let slope = if n == 1 || x.rank() < 2 {
        w.t.flatten_all()?.reshape(vec![1; x.rank().max(1)])?
    } else {
        let mut shape = vec![1; x.rank()];
        shape[1] = n;
        w.t.reshape(shape)?
    };
    let slope = if x.rank() == 0 { slope.squeeze(0)? } else { slope };
    let out = x.t.gt(0.0)?.where_cond(&x.t, &x.t.broadcast_mul(&slope)?)?;
    one(ctx.out(out, dtype)?)
}

/// rrelu in evaluation: leaky_relu with the mean slope `(lower + upper) / 2`;
/// in training each element draws its slope, which no dump records.
fn rrelu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if b.bool("training")? {
        return Err(Error::Unsupported("rrelu in training draws a random slope per element, which the dump does not record".into()));
    }
    let slope = (b.float("lower")? + b.float("upper")?) / 2.0;
    unary(ctx, b, true, |x| x.gt(0.0)?.where_cond(x, &(x * slope)?))
}

fn leaky_relu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let slope = b.float("negative_slope")?;
    unary(ctx, b, true, |x| x.gt(0.0)?.where_cond(x, &(x * slope)?))
}

/// rms_norm(input, normalized_shape, weight=None, eps=None): eps defaults to
/// the machine epsilon of the input's dtype, as in torch.
fn rms_norm(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let k = b.ints("normalized_shape")?.len();
    let eps = match b.opt_float("eps")? {
        Some(e) => e,
        None => match x.dtype {
            TDType::F64 => f64::EPSILON,
            TDType::F16 => 0.0009765625,
            TDType::BF16 => 0.0078125,
            _ => f32::EPSILON as f64,
        },
    };
    let dims: Vec<usize> = (x.rank().saturating_sub(k)..x.rank()).collect();
    let ms = x.t.sqr()?.mean_keepdim(dims)?;
    let mut y = x.t.broadcast_div(&(ms + eps)?.sqrt()?)?;
    if let Some(w) = b.opt_tensor("weight")? {
        y = y.broadcast_mul(&w.t)?;
    }
    one(ctx.out(y, x.dtype)?)
}

/// Where each edge of a piecewise activation belongs: torch puts a
/// breakpoint in the outer piece (its derivative there is the outer
/// one's), MindSpore in the middle piece (hardswish'(-3) = -0.5 and
/// hardswish'(3) = 1.5, relu6'(6) = 1; measured on MindSpore 2.10's CPU kernels).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Edges {
    /// torch.
    Outer,
    /// MindSpore.
    Middle,
}

/// A piecewise function of `x` on (-3, 3): `lo(x)` below, `hi(x)` above,
/// `mid(x)` within, each breakpoint in the piece `edges` says. The middle
/// piece sees `x` only within (0 elsewhere), so that an infinite `x` in
/// another piece does not turn its gradient into NaN.
fn pieces(x: &Tensor, edges: Edges, lo: &Tensor, mid: impl Fn(&Tensor) -> candle_core::Result<Tensor>, hi: &Tensor) -> candle_core::Result<Tensor> {
    let (below, above) = match edges {
        Edges::Outer => (x.le(-3.0)?, x.ge(3.0)?),
        Edges::Middle => (x.lt(-3.0)?, x.gt(3.0)?),
    };
    let outside = (below.to_dtype(candle_core::DType::F64)? + above.to_dtype(candle_core::DType::F64)?)?.gt(0.0)?;
    let within = outside.where_cond(&x.zeros_like()?, x)?;
    below.where_cond(lo, &above.where_cond(hi, &mid(&within)?)?)
}

/// hardswish as torch computes it, `x·min(max(x + 3, 0), 6) / 6`, piecewise
/// so that the gradient is torch's (or MindSpore's at the edges): 0 below
/// -3, (2x + 3)/6 within, 1 above 3.
fn hardswish_t(x: &Tensor, edges: Edges) -> candle_core::Result<Tensor> {
    pieces(x, edges, &(x * 0.0)?, |x| (x * (x + 3.0)?)? / 6.0, &((x * 6.0)? / 6.0)?)
}

/// hardsigmoid, `min(max(x + 3, 0), 6) / 6`: slope 1/6 strictly within
/// (-3, 3), where torch's kernel multiplies by `1.0f / 6.0f`, a float32
/// constant, in every dtype (so the bench's gradient is that too).
fn hardsigmoid_t(x: &Tensor) -> candle_core::Result<Tensor> {
    let sixth = (1.0f32 / 6.0) as f64;
    let mid = |x: &Tensor| {
        let slope = (x * sixth)?;
        ((x + 3.0)? / 6.0)?.detach() + (&slope - slope.detach())?
    };
    pieces(x, Edges::Outer, &x.zeros_like()?, mid, &x.ones_like()?)
}

/// relu6, `min(max(x, 0), 6)`: slope 1 strictly within (0, 6) in torch
/// (hardtanh), within (0, 6] in MindSpore.
fn relu6_t(x: &Tensor, edges: Edges) -> candle_core::Result<Tensor> {
    let upper = match edges {
        Edges::Outer => x.ge(6.0)?,
        Edges::Middle => x.gt(6.0)?,
    };
    let t = upper.where_cond(&(x.ones_like()? * 6.0)?, x)?;
    x.le(0.0)?.where_cond(&x.zeros_like()?, &t)
}

/// `where(x > 0, x, neg(x))` with `neg` seeing only `min(x, 0)` (its slope
/// at 0 is `neg`'s, as torch's), so that a
/// large `x` cannot make the unused branch's gradient NaN.
fn split_at_zero(x: &Tensor, neg: impl Fn(&Tensor) -> candle_core::Result<Tensor>) -> candle_core::Result<Tensor> {
    let low = x.le(0.0)?.where_cond(x, &x.zeros_like()?)?;
    x.gt(0.0)?.where_cond(x, &neg(&low)?)
}

/// softplus with torch's threshold: `x` where `β·x > threshold`, else `ln(1 + e^(β·x)) / β`.
pub(super) fn softplus_t(x: &Tensor, beta: f64, threshold: f64) -> candle_core::Result<Tensor> {
    let bx = (x * beta)?;
    let soft = ((bx.minimum(threshold)?.exp()? + 1.0)?.log()? / beta)?;
    bx.gt(threshold)?.where_cond(x, &soft)
}

/// `x` where `keep`, else `value`; the gradient reaches `x` where kept.
fn kept(x: &Tensor, keep: &Tensor, value: f64) -> candle_core::Result<Tensor> {
    keep.where_cond(x, &(x.zeros_like()? + value)?)
}

/// glu(input, dim=-1): the first half times the sigmoid of the second.
fn glu(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let d = crate::ctx::dim(b.int("dim")?, x.rank())?;
    let n = x.dims()[d];
    if n % 2 != 0 {
        return Err(crate::error::Error::Arg(format!("glu: halving dim {d} of odd size {n}")));
    }
    let (a, g) = (x.t.narrow(d, 0, n / 2)?, x.t.narrow(d, n / 2, n / 2)?);
    one(ctx.out((a * sigmoid_t(&g)?)?, float_of(x.dtype))?)
}

/// softmin(input, dim=None, _stacklevel=3, dtype=None): softmax of `-input`
/// (an implicit dim as torch's legacy rule: 0 for ranks 0, 1 and 3, else 1).
fn softmin(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = b.opt_dtype("dtype")?.unwrap_or(x.dtype);
    if x.rank() == 0 {
        return one(ctx.out(x.t.ones_like()?, dtype)?);
    }
    let d = match b.opt_int("dim")? {
        Some(d) => crate::ctx::dim(d, x.rank())?,
        None if matches!(x.rank(), 1 | 3) => 0,
        None => 1,
    };
    let t = ctx.cast(x, dtype)?.t;
    one(ctx.out(super::nn::softmax_t(&t.neg()?, d)?, dtype)?)
}

const SELU_ALPHA: f64 = 1.6732632423543772;
const SELU_SCALE: f64 = 1.0507009873554805;

/// The activation and elementwise-math entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Functional.relu", "Torch.relu", "Tensor.relu", "Mint.relu", "MintFunctional.relu"],
        sig: "input, inplace=False",
        forward: |c, b| unary(c, b, true, relu_t),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        // Each output is its input or 0, and each gradient its output's or 0: selections, exact
        // wherever computed (one magnitude run, the backward of |dy|, where Smooth's central
        // differences took two), elementwise.
        facts: &[Fact::Rounding(Rounding::Selects), Fact::Slicing(Slicing::Aligned(Whole::Nothing))],
    },
    Op {
        names: &["Functional.prelu", "Torch.prelu"],
        sig: "input, weight",
        forward: prelu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Autocast],
    },
    // torch.rrelu's fifth parameter is `generator`, never read here, as `inplace` is not.
    Op {
        names: &["Functional.rrelu", "Torch.rrelu"],
        sig: "input, lower=0.125, upper=0.3333333333333333, training=False, inplace=False, generator=None",
        forward: rrelu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Functional.leaky_relu", "MintFunctional.leaky_relu"],
        sig: "input, negative_slope=0.01, inplace=False",
        forward: leaky_relu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.sigmoid", "Torch.sigmoid", "Tensor.sigmoid", "Mint.sigmoid", "MintFunctional.sigmoid"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| sigmoid_t(&precise(x)?)),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Parts(Parts { name: "sigmoid", rest: Rest::Smooth, magnitude: sigmoid_parts }))],
    },
    Op {
        names: &["Functional.tanh", "Torch.tanh", "Tensor.tanh", "Mint.tanh", "MintFunctional.tanh"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x.tanh()),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Parts(Parts { name: "tanh", rest: Rest::Smooth, magnitude: tanh_parts }))],
    },
    Op {
        names: &["Torch.exp", "Tensor.exp", "Mint.exp"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x.exp()),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.log", "Tensor.log", "Mint.log"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x.log()),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.sin", "Tensor.sin", "Mint.sin", "MS.Functional.sin"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x.sin()),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.cos", "Tensor.cos", "Mint.cos"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x.cos()),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.erf", "Tensor.erf", "Mint.erf"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x.erf()),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.abs", "Tensor.abs", "Tensor.__abs__", "Mint.abs"],
        sig: "input",
        forward: |c, b| unary(c, b, true, abs_t),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.rms_norm", "MintFunctional.rms_norm"],
        sig: "input, normalized_shape, weight=None, eps=None",
        forward: rms_norm,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Normalized("normalized_shape")))],
    },
    Op {
        names: &["Functional.hardswish"],
        sig: "input, inplace=False",
        forward: |c, b| unary(c, b, false, |x| hardswish_t(x, Edges::Outer)),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["MS.Functional.hardswish", "MintFunctional.hardswish"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| hardswish_t(x, Edges::Middle)),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.hardsigmoid", "MintFunctional.hardsigmoid"],
        sig: "input, inplace=False",
        forward: |c, b| unary(c, b, false, hardsigmoid_t),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.relu6", "MintFunctional.relu6"],
        sig: "input, inplace=False",
        forward: |c, b| unary(c, b, true, |x| relu6_t(x, Edges::Outer)),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["MS.Functional.relu6"],
        sig: "input",
        forward: |c, b| unary(c, b, true, |x| relu6_t(x, Edges::Middle)),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.elu"],
        sig: "input, alpha=1.0, inplace=False",
        forward: |c, b| {
            let alpha = b.float("alpha")?;
            unary(c, b, false, |x| split_at_zero(x, |l| (l.exp()? - 1.0)? * alpha))
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.selu", "Torch.selu"],
        sig: "input, inplace=False",
        forward: |c, b| unary(c, b, false, |x| split_at_zero(x, |l| (l.exp()? - 1.0)? * SELU_ALPHA)? * SELU_SCALE),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.celu", "Torch.celu"],
        sig: "input, alpha=1.0, inplace=False",
        forward: |c, b| {
            let alpha = b.float("alpha")?;
            unary(c, b, false, |x| split_at_zero(x, |l| ((l / alpha)?.exp()? - 1.0)? * alpha))
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.softplus"],
        sig: "input, beta=1.0, threshold=20.0",
        forward: |c, b| {
            let (beta, threshold) = (b.float("beta")?, b.float("threshold")?);
            unary(c, b, false, |x| softplus_t(x, beta, threshold))
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.softsign"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x / (abs_t(x)? + 1.0)?),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.logsigmoid"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| softplus_t(&x.neg()?, 1.0, 20.0)?.neg()),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.tanhshrink"],
        sig: "input",
        forward: |c, b| unary(c, b, false, |x| x - x.tanh()?),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.mish"],
        sig: "input, inplace=False",
        forward: |c, b| unary(c, b, false, |x| x * softplus_t(x, 1.0, 20.0)?.tanh()?),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.hardshrink", "Torch.hardshrink", "MS.Tensor.hardshrink"],
        sig: "input, lambd=0.5",
        forward: |c, b| {
            let l = b.float("lambd")?;
            unary(c, b, true, |x| kept(x, &abs_t(x)?.gt(l)?, 0.0))
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.softshrink"],
        sig: "input, lambd=0.5",
        forward: |c, b| {
            let l = b.float("lambd")?;
            unary(c, b, true, |x| x.gt(l)?.where_cond(&(x - l)?, &kept(&(x + l)?, &x.lt(-l)?, 0.0)?))
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    // The gradient reaches `input` strictly between the bounds, as torch's.
    Op {
        names: &["Functional.hardtanh"],
        sig: "input, min_val=-1.0, max_val=1.0, inplace=False",
        forward: |c, b| {
            let (lo, hi) = (b.float("min_val")?, b.float("max_val")?);
            unary(c, b, true, |x| kept(&kept(x, &x.gt(lo)?, lo)?, &x.lt(hi)?, hi))
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.threshold", "Torch.threshold"],
        sig: "input, threshold, value, inplace=False",
        forward: |c, b| {
            let (t, v) = (b.float("threshold")?, b.float("value")?);
            unary(c, b, true, |x| kept(x, &x.gt(t)?, v))
        },
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.glu"],
        sig: "input, dim=-1",
        forward: glu,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", Some(-1)))), Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Functional.softmin"],
        sig: "input, dim=None, _stacklevel=3, dtype=None",
        forward: softmin,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", None)))],
    },
    // mindspore.ops.softmin(x, axis=-1, *, dtype=None): the last axis by default.
    Op {
        names: &["MS.Functional.softmin"],
        sig: "input, dim=-1, *, dtype=None",
        forward: softmin,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Aligned(Whole::Dim("dim", None)))],
    },
];
