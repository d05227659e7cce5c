//! Elementwise functions and activations, written so that their gradients
//! are torch's at the edges (relu'(0) = 0, abs'(0) = 0, a stable sigmoid).

use candle_core::Tensor;

use super::{one, float_of, Op, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, operand, precise, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::Result;
use crate::value::Value;



fn unary(ctx: &Ctx, b: &Bound, keeps_int: bool, f: impl Fn(&Tensor) -> candle_core::Result<Tensor>) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = if keeps_int { x.dtype } else { float_of(x.dtype) };
    one(ctx.out(f(&x.t)?, dtype)?)
}

/// relu as a select: the gradient at 0 is 0 (candle's relu gives 1).
fn relu_t(x: &Tensor) -> candle_core::Result<Tensor> {
    x.gt(0.0)?.where_cond(x, &x.zeros_like()?)
}

/// |x| as x·sign(x) with the sign constant: the gradient at 0 is 0.
fn abs_t(x: &Tensor) -> candle_core::Result<Tensor> {
    x * x.sign()?.detach()
}

/// sigmoid from exp(-|x|) in (0, 1]: finite everywhere, forward and backward.
/// (|x| as a select, so its slope is ±1 even at 0, unlike [`abs_t`].)
fn sigmoid_t(x: &Tensor) -> candle_core::Result<Tensor> {
    let pos = x.ge(0.0)?;
    let z = pos.where_cond(x, &x.neg()?)?.neg()?.exp()?;
    let denom = (&z + 1.0)?;
    pos.where_cond(&denom.recip()?, &(&z / &denom)?)
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

/// torch.where(condition, input, other), broadcasting all three.
fn where_(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let cond = b.tensor("condition")?;
    let (x, y) = (b.value("input"), b.value("other"));
    let dtype = result_type(&[x, y])?;
    let (xt, yt) = broadcast2(&operand(ctx, x, dtype)?, &operand(ctx, y, dtype)?)?;
    let (c, xt) = broadcast2(&cond.t.ne(0.0)?, &xt)?;
    let (_, yt) = broadcast2(&c, &yt)?;
    one(ctx.out(c.where_cond(&xt, &yt)?, dtype)?)
}

/// The activation and elementwise-math entries.
pub static OPS: &[Op] = &[
    Op { names: &["Functional.relu", "Torch.relu", "Tensor.relu", "Mint.relu", "MintFunctional.relu"], sig: "input, inplace=False", forward: |c, b| unary(c, b, true, relu_t), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Functional.leaky_relu", "MintFunctional.leaky_relu"], sig: "input, negative_slope=0.01, inplace=False", forward: leaky_relu, backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Functional.sigmoid", "Torch.sigmoid", "Tensor.sigmoid", "Mint.sigmoid", "MintFunctional.sigmoid"], sig: "input", forward: |c, b| unary(c, b, false, |x| sigmoid_t(&precise(x)?)), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Functional.tanh", "Torch.tanh", "Tensor.tanh", "Mint.tanh"], sig: "input", forward: |c, b| unary(c, b, false, |x| x.tanh()), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.exp", "Tensor.exp", "Mint.exp"], sig: "input", forward: |c, b| unary(c, b, false, |x| x.exp()), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.log", "Tensor.log", "Mint.log"], sig: "input", forward: |c, b| unary(c, b, false, |x| x.log()), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.sin", "Tensor.sin", "Mint.sin"], sig: "input", forward: |c, b| unary(c, b, false, |x| x.sin()), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.cos", "Tensor.cos", "Mint.cos"], sig: "input", forward: |c, b| unary(c, b, false, |x| x.cos()), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.erf", "Tensor.erf", "Mint.erf"], sig: "input", forward: |c, b| unary(c, b, false, |x| x.erf()), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.abs", "Tensor.abs", "Tensor.__abs__", "Mint.abs"], sig: "input", forward: |c, b| unary(c, b, true, abs_t), backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Functional.rms_norm", "MintFunctional.rms_norm"], sig: "input, normalized_shape, weight=None, eps=None", forward: rms_norm, backward: true, standard: Standard::Accuracy, random: false },
    Op { names: &["Torch.where", "Mint.where"], sig: "condition, input, other", forward: where_, backward: true, standard: Standard::Accuracy, random: false },
];
