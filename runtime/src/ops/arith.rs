//! Elementwise arithmetic, including the in-place optimizer ops (replayed as
//! their out-of-place result, in the dtype of `self`).

use candle_core::Tensor;

use super::{float_of, one, Fact, Op, Rounding, Slicing, Standard};
use crate::bind::Bound;
use crate::ctx::{broadcast2, broadcast_shape, operand, precise, result_type, Ctx};
use crate::dtype::{Category, TDType};
use crate::error::{Error, Result};
use crate::value::{Value, T};

/// `a (op) b` with promotion and broadcasting; `dtype` overrides the result type.
fn binary(ctx: &Ctx, a: &Value, b: &Value, f: impl Fn(&Tensor, &Tensor) -> candle_core::Result<Tensor>, dtype: Option<TDType>) -> Result<T> {
    let dtype = match dtype {
        Some(d) => d,
        None => result_type(&[a, b])?,
    };
    let (x, y) = broadcast2(&operand(ctx, a, dtype)?, &operand(ctx, b, dtype)?)?;
    ctx.out(f(&x, &y)?, dtype)
}

fn add(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let alpha = b.float("alpha")?;
    one(binary(ctx, b.value("input"), b.value("other"), |x, y| if alpha == 1.0 { x + y } else { x + (y * alpha)? }, None)?)
}

/// add's [`super::Gradients`] for two tensors of one shape and dtype, alpha
/// 1: each input's gradient is the output's summed into zeros (`dy + 0`),
/// as autograd gives it. A scalar, broadcasting, promotion or another
/// alpha are autograd's.
fn add_gradients(ctx: &Ctx, b: &Bound, dy: &[Option<T>]) -> Result<Option<Vec<(&'static str, Tensor)>>> {
    let (Value::Tensor(x), Value::Tensor(y), Some(Some(dy))) = (b.value("input"), b.value("other"), dy.first()) else { return Ok(None) };
    let alike = x.dims() == y.dims() && dy.dims() == x.dims() && x.dtype == y.dtype && x.t.dtype() == y.t.dtype() && dy.t.dtype() == x.t.dtype();
    if !alike || b.float("alpha")? != 1.0 || !ctx.keeps(&x.t, x.dtype) {
        return Ok(None);
    }
    let g = (&dy.t + 0.0)?;
    Ok(Some(vec![("input", g.clone()), ("other", g)]))
}

fn sub(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let alpha = b.float("alpha")?;
    one(binary(ctx, b.value("input"), b.value("other"), |x, y| if alpha == 1.0 { x - y } else { x - (y * alpha)? }, None)?)
}

/// `other - alpha·input` (`Tensor.__rsub__` has no alpha).
fn rsub(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let alpha = if b.is_none("alpha") { 1.0 } else { b.float("alpha")? };
    one(binary(ctx, b.value("other"), b.value("input"), |x, y| if alpha == 1.0 { x - y } else { x - (y * alpha)? }, None)?)
}

fn mul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    one(binary(ctx, b.value("input"), b.value("other"), |x, y| x * y, None)?)
}

fn div_values(ctx: &Ctx, num: &Value, den: &Value, mode: Option<&str>) -> Result<T> {
    let promoted = result_type(&[num, den])?;
    match mode {
        None => binary(ctx, num, den, |x, y| x / y, Some(float_of(promoted))),
        // Rounded toward an integer before the result is rounded to its
        // dtype (rounding the quotient to bfloat16 first turned -9.02 into
        // -9 where torch gives -10).
        Some("floor") => binary(ctx, num, den, |x, y| (x / y)?.floor(), Some(promoted)),
        Some("trunc") => binary(
            ctx,
            num,
            den,
            |x, y| {
                let q = (x / y)?;
                q.ge(0.0)?.where_cond(&q.floor()?, &q.ceil()?)
            },
            Some(promoted),
        ),
        Some(m) => Err(Error::Arg(format!("div: rounding_mode must be None, 'trunc' or 'floor', got {m:?}"))),
    }
}

fn div(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let mode = if b.is_none("rounding_mode") { None } else { Some(b.str("rounding_mode")?) };
    one(div_values(ctx, b.value("input"), b.value("other"), mode)?)
}

fn rdiv(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    one(div_values(ctx, b.value("other"), b.value("input"), None)?)
}

fn neg(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    one(ctx.out(x.t.neg()?, x.dtype)?)
}

fn square(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    let dtype = if x.dtype == TDType::Bool { TDType::I64 } else { x.dtype };
    one(ctx.out(x.t.sqr()?, dtype)?)
}

fn pow(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    one(pow_values(ctx, b.value("input"), b.value("exponent"))?)
}

/// `other ** input` (`10000.0 ** t`).
fn rpow(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    one(pow_values(ctx, b.value("other"), b.value("input"))?)
}

/// pow with torch's sign rules: a negative base with an integral exponent
/// is fine (candle's `exp(b ln a)` would give NaN). An integer result is
/// rounded to the integer it approximates (`2 ** t` through exp and log).
fn pow_values(ctx: &Ctx, base: &Value, exp: &Value) -> Result<T> {
    let dtype = result_type(&[base, exp])?;
    if let Some(e) = exp.as_f64() {
        let x = base.tensor("input")?;
        let t = match e {
            2.0 => x.t.sqr()?,
            1.0 => x.t.clone(),
            0.0 => x.t.ones_like()?,
            0.5 => x.t.sqrt()?,
            e => precise(&x.t)?.powf(e)?,
        };
        return ctx.out(t, dtype);
    }
    let (a, e) = broadcast2(&precise(&operand(ctx, base, dtype)?)?, &precise(&operand(ctx, exp, dtype)?)?)?;
    let magnitude = (e.clone() * a.abs()?.log()?)?.exp()?;
    let integral = e.eq(&e.round()?)?;
    let odd = (e.clone() - ((e.clone() * 0.5)?.floor()? * 2.0)?)?.ne(0.0)?;
    let negative = a.lt(0.0)?;
    let nan = (a.ones_like()? * f64::NAN)?;
    let signed = odd.where_cond(&magnitude.neg()?, &magnitude)?;
    let neg_case = integral.where_cond(&signed, &nan)?;
    let t = negative.where_cond(&neg_case, &magnitude)?;
    let t = if dtype.is_float() { t } else { t.round()? };
    ctx.out(t, dtype)
}

/// outer(input, vec2): the product of every pair, of two 1-D tensors.
fn outer(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let (x, y) = (b.tensor("input")?, b.tensor("vec2")?);
    if x.rank() != 1 || y.rank() != 1 {
        return Err(Error::Arg(format!("outer: expects two 1-D tensors, got shapes {:?} and {:?}", x.dims(), y.dims())));
    }
    ctx.fits(&[x.dims()[0], y.dims()[0]])?;
    let dtype = result_type(&[b.value("input"), b.value("vec2")])?;
    let (u, v) = (operand(ctx, b.value("input"), dtype)?.unsqueeze(1)?, operand(ctx, b.value("vec2"), dtype)?.unsqueeze(0)?);
    one(ctx.out(u.broadcast_mul(&v)?, dtype)?)
}

fn unary_float(ctx: &Ctx, b: &Bound, f: impl Fn(&Tensor) -> candle_core::Result<Tensor>) -> Result<Vec<Value>> {
    let x = b.tensor("input")?;
    one(ctx.out(f(&x.t)?, float_of(x.dtype))?)
}

fn sqrt(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    unary_float(ctx, b, |t| t.sqrt())
}

fn rsqrt(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    unary_float(ctx, b, |t| t.sqrt()?.recip())
}

fn reciprocal(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    unary_float(ctx, b, |t| t.recip())
}

/// clamp with scalar or tensor bounds; the gradient reaches `input` where it
/// lies within [min, max], bounds included.
fn clamp(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    b.tensor("input")?;
    let (lo, hi) = (b.value("min"), b.value("max"));
    if matches!((lo, hi), (Value::None, Value::None)) {
        return Err(Error::Arg("clamp: at least one of min and max must be given".into()));
    }
    let mut operands: Vec<&Value> = vec![b.value("input")];
    operands.extend([lo, hi].into_iter().filter(|v| !matches!(v, Value::None)));
    let dtype = result_type(&operands)?;
    let mut t = operand(ctx, b.value("input"), dtype)?;
    if !matches!(lo, Value::None) {
        let (v, m) = broadcast2(&t, &operand(ctx, lo, dtype)?)?;
        t = v.lt(&m)?.where_cond(&m, &v)?;
    }
    if !matches!(hi, Value::None) {
        let (v, m) = broadcast2(&t, &operand(ctx, hi, dtype)?)?;
        t = v.gt(&m)?.where_cond(&m, &v)?;
    }
    one(ctx.out(t, dtype)?)
}

/// In-place ops keep the dtype of `self`.
fn inplace(ctx: &Ctx, b: &Bound, f: impl Fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Result<Vec<Value>> {
    let dtype = b.tensor("input")?.dtype;
    super::derive::into_self(ctx, dtype, f(ctx, b)?)
}

/// `f(a, b, c)` with promotion and broadcasting, rounded once: a fused
/// three-operand kernel (its steps are not rounded to the dtype).
fn ternary(ctx: &Ctx, [a, b, c]: [&Value; 3], f: impl Fn(&Tensor, &Tensor, &Tensor) -> candle_core::Result<Tensor>) -> Result<T> {
    let dtype = result_type(&[a, b, c])?;
    let (x, y, z) = (operand(ctx, a, dtype)?, operand(ctx, b, dtype)?, operand(ctx, c, dtype)?);
    let shape = broadcast_shape(&broadcast_shape(x.dims(), y.dims())?, z.dims())?;
    let [x, y, z] = [x, y, z].map(|t| t.broadcast_as(shape.as_slice()));
    ctx.out(f(&x?, &y?, &z?)?, dtype)
}

/// `input + (value·tensor1)·tensor2`: the scaling in compute precision,
/// the rest one fused multiply-add, as torch computes it.
fn addcmul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let value = b.float("value")?;
    one(ternary(ctx, [b.value("input"), b.value("tensor1"), b.value("tensor2")], |x, t1, t2| precise(x)? + (precise(&(t1 * value)?)? * precise(t2)?)?)?)
}

/// `input + value·tensor1 / tensor2`, in torch's order.
fn addcdiv(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let value = b.float("value")?;
    one(ternary(ctx, [b.value("input"), b.value("tensor1"), b.value("tensor2")], |x, t1, t2| x + ((t1 * value)? / t2)?)?)
}

/// lerp as torch computes it: `input + weight·(end − input)` where
/// |weight| < 0.5, else `end − (end − input)·(1 − weight)`; the difference
/// in compute precision, the rest one fused multiply-add.
fn lerp(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    one(ternary(ctx, [b.value("input"), b.value("end"), b.value("weight")], |s, e, w| {
        let d = precise(&(e - s)?)?;
        let (s, e, w) = (precise(s)?, precise(e)?, precise(w)?);
        let small = (&s + (&w * &d)?)?;
        let large = (&e - (&d * w.affine(-1.0, 1.0)?)?)?;
        w.abs()?.lt(0.5)?.where_cond(&small, &large)
    })?)
}

/// An in-place op that torch defines for floating tensors only.
fn float_inplace(ctx: &Ctx, b: &Bound, f: impl Fn(&Ctx, &Bound) -> Result<Vec<Value>>) -> Result<Vec<Value>> {
    if b.tensor("input")?.dtype.category() != Category::Float {
        return Err(Error::Unsupported("this in-place op needs a floating tensor".into()));
    }
    inplace(ctx, b, f)
}

/// The arithmetic entries.
pub static OPS: &[Op] = &[
    Op {
        names: &["Torch.add", "Tensor.add", "Tensor.__add__", "Tensor.__radd__", "Mint.add", "MS.Functional.add"],
        sig: "input, other, *, alpha=1",
        forward: add,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None }), Fact::Gradients(add_gradients)],
    },
    // torch differentiates an in-place add of a non-leaf: as add.
    Op {
        names: &["Tensor.add_", "Tensor.__iadd__"],
        sig: "input, other, *, alpha=1",
        forward: |c, b| inplace(c, b, add),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.sub", "Tensor.sub", "Tensor.__sub__", "Mint.sub", "MS.Functional.sub"],
        sig: "input, other, *, alpha=1",
        forward: sub,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: Some("other") })],
    },
    Op {
        names: &["Torch.rsub"],
        sig: "input, other, *, alpha=1",
        forward: rsub,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: Some("input") })],
    },
    Op {
        names: &["Tensor.__rsub__"],
        sig: "input, other",
        forward: rsub,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: Some("input") })],
    },
    Op {
        names: &["Torch.mul", "Tensor.mul", "Tensor.__mul__", "Tensor.__rmul__", "Mint.mul"],
        sig: "input, other",
        forward: mul,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Tensor.mul_", "Tensor.__imul__"],
        sig: "input, other",
        forward: |c, b| inplace(c, b, mul),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.div", "Tensor.div", "Tensor.__truediv__", "Mint.div", "Torch.true_divide", "MS.Functional.true_divide"],
        sig: "input, other, *, rounding_mode=None",
        forward: div,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Tensor.__rtruediv__"],
        sig: "input, other",
        forward: rdiv,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.neg", "Tensor.neg", "Tensor.__neg__", "Mint.neg"],
        sig: "input",
        forward: neg,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.square", "Tensor.square", "Mint.square"],
        sig: "input",
        forward: square,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.pow", "Tensor.pow", "Tensor.__pow__", "Mint.pow"],
        sig: "input, exponent",
        forward: pow,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Tensor.__rpow__"],
        sig: "input, other",
        forward: rpow,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.outer", "Tensor.outer", "Mint.outer", "MS.Functional.outer"],
        sig: "input, vec2",
        forward: outer,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Slicing(Slicing::Kept), Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.sqrt", "Tensor.sqrt", "Mint.sqrt", "MS.Functional.sqrt"],
        sig: "input",
        forward: sqrt,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.rsqrt", "Tensor.rsqrt", "Mint.rsqrt", "MS.Functional.rsqrt"],
        sig: "input",
        forward: rsqrt,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.reciprocal", "Tensor.reciprocal", "Mint.reciprocal", "MS.Functional.inv"],
        sig: "input",
        forward: reciprocal,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.clamp", "Tensor.clamp", "Mint.clamp", "Torch.clip", "MS.Functional.clip_by_value"],
        sig: "input, min=None, max=None",
        forward: clamp,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Tensor.clamp_"],
        sig: "input, min=None, max=None",
        forward: |c, b| inplace(c, b, clamp),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Tensor.div_"],
        sig: "input, other, *, rounding_mode=None",
        forward: |c, b| inplace(c, b, div),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Tensor.rsqrt_"],
        sig: "input",
        forward: |c, b| inplace(c, b, rsqrt),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Tensor.square_"],
        sig: "input",
        forward: |c, b| inplace(c, b, square),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Tensor.addcmul_"],
        sig: "input, tensor1, tensor2, *, value=1",
        forward: |c, b| float_inplace(c, b, addcmul),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Tensor.addcdiv_"],
        sig: "input, tensor1, tensor2, *, value=1",
        forward: |c, b| float_inplace(c, b, addcdiv),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Tensor.lerp_"],
        sig: "input, end, weight",
        forward: |c, b| float_inplace(c, b, lerp),
        backward: false,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
    Op {
        names: &["Torch.addcmul", "Tensor.addcmul"],
        sig: "input, tensor1, tensor2, *, value=1",
        forward: addcmul,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.addcdiv", "Tensor.addcdiv"],
        sig: "input, tensor1, tensor2, *, value=1",
        forward: addcdiv,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Terms { negated: None })],
    },
    Op {
        names: &["Torch.lerp", "Tensor.lerp", "MS.Functional.lerp"],
        sig: "input, end, weight",
        forward: lerp,
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[Fact::Rounding(Rounding::Smooth)],
    },
];
