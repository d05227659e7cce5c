//! Complex tensors, computed as float pairs. msprobe's api standard has no
//! complex rules: a complex call's rows take its benchmark rule
//! (`crate::replay`'s judging). A complex call is lowered by
//! the replay (`crate::replay`'s complex lowering): each complex tensor
//! becomes a float tensor of its parts' dtype with a trailing dimension of
//! 2 (real, imaginary), and the parameters holding one are named in
//! [`Ctx::complex`]. The entries here are torch's complex semantics on those
//! pairs; a real operand (or Python number) takes part with a zero
//! imaginary part, as torch promotes it. Candle's autograd on the pairs
//! gives (∂L/∂re, ∂L/∂im) per element, which is PyTorch's convention for
//! the gradient of a complex tensor (`re + i·im` of the same values), and
//! the real part alone for a real input.
//!
//! On the emulated device every part computes in float32 (complex64's
//! parts), each primitive rounded as torch's kernels round them: products
//! and sums one at a time, division by Smith's scaling with c10::complex's
//! zero divisor, `abs` and `angle` once from their float64 values (a scaled
//! hypot, atan2).

use candle_core::Tensor;

use super::{entry, one, rebind, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{precise, result_type, Ctx};
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::spec::Framework;
use crate::value::{Value, T};

/// A complex value's two parts, each of the result's shape (or broadcastable to it).
struct Z {
    re: Tensor,
    im: Tensor,
}

/// The parts of a float-pair tensor (trailing dimension 2).
fn parts(t: &Tensor) -> Result<Z> {
    let last = t
        .rank()
        .checked_sub(1)
        .filter(|&l| t.dims()[l] == 2)
        .ok_or_else(|| Error::Arg(format!("a complex tensor as float pairs: shape {:?} has no trailing 2", t.dims())))?;
    Ok(Z { re: t.narrow(last, 0, 1)?.squeeze(last)?, im: t.narrow(last, 1, 1)?.squeeze(last)? })
}

/// The float-pair tensor of `z`, its parts broadcast to one shape.
fn pair(z: &Z) -> Result<Tensor> {
    let (re, im) = crate::ctx::broadcast2(&z.re, &z.im)?;
    let last = re.rank();
    Ok(Tensor::stack(&[re, im], last)?)
}

/// Parameter `name` as a complex value in the storage of `dtype` (the
/// parts' dtype of the result): a complex tensor's pairs, a real tensor
/// or Python number with a zero imaginary part.
fn operand(ctx: &Ctx, b: &Bound, name: &str, dtype: TDType) -> Result<Z> {
    let v = b.value(name);
    if matches!(v, Value::None) {
        return Err(Error::Unsupported(format!("{name}: a value the dump did not record (msprobe records a Python complex number as None)")));
    }
    if ctx.is_complex(name) {
        let t = v.tensor(name)?;
        return parts(&ctx.cast(t, dtype)?.t);
    }
    let re = crate::ctx::operand(ctx, v, dtype)?;
    let im = re.zeros_like()?;
    Ok(Z { re, im })
}

/// The parts' dtype of a result computed from `names`: torch's result
/// type of the operands, their complex tensors counted by their parts'
/// dtype and their own rank (a 0-d complex is held as `[2]`), floating (an
/// integer operand gives float32).
fn parts_dtype(ctx: &Ctx, b: &Bound, names: &[&str]) -> Result<TDType> {
    let mut values = vec![];
    for &name in names {
        match b.value(name) {
            Value::None => {}
            Value::Tensor(t) if ctx.is_complex(name) && t.rank() == 1 => values.push(Value::Tensor(T { t: t.t.narrow(0, 0, 1)?.squeeze(0)?, dtype: t.dtype })),
            v => values.push(v.clone()),
        }
    }
    Ok(super::float_of(result_type(&values.iter().collect::<Vec<_>>())?))
}

/// A complex result: the pairs of `z`, rounded to `dtype` per part on the device.
fn complex_out(ctx: &Ctx, z: &Z, dtype: TDType) -> Result<Vec<Value>> {
    one(ctx.out(pair(z)?, dtype)?)
}

fn add_like(ctx: &Ctx, b: &Bound, sign: f64) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input", "other"])?;
    let (x, y) = (operand(ctx, b, "input", dtype)?, operand(ctx, b, "other", dtype)?);
    let alpha = match b.value("alpha") {
        Value::None => return Err(Error::Unsupported("alpha: a value the dump did not record (msprobe records a Python complex number as None)".into())),
        v => v.as_f64().ok_or_else(|| Error::Arg(format!("alpha: expected a real number, got {}", v.kind())))?,
    } * sign;
    let scaled = |t: &Tensor| -> Result<Tensor> { Ok(if alpha == 1.0 { t.clone() } else { t.affine(alpha, 0.0)? }) };
    complex_out(ctx, &Z { re: x.re.broadcast_add(&scaled(&y.re)?)?, im: x.im.broadcast_add(&scaled(&y.im)?)? }, dtype)
}

fn add(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    add_like(ctx, b, 1.0)
}

fn sub(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    add_like(ctx, b, -1.0)
}

/// `(a + bi)(c + di) = (ac - bd) + (ad + bc)i`.
fn product(x: &Z, y: &Z) -> Result<Z> {
    Ok(Z {
        re: x.re.broadcast_mul(&y.re)?.broadcast_sub(&x.im.broadcast_mul(&y.im)?)?,
        im: x.re.broadcast_mul(&y.im)?.broadcast_add(&x.im.broadcast_mul(&y.re)?)?,
    })
}

fn mul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input", "other"])?;
    complex_out(ctx, &product(&operand(ctx, b, "input", dtype)?, &operand(ctx, b, "other", dtype)?)?, dtype)
}

/// `x / y` by Smith's scaling, as c10::complex divides: with `r = d/c`
/// where `|c| ≥ |d|`, `((a + b·r) + (b - a·r)i) / (c + d·r)`, else with
/// `r = c/d`, `((a·r + b) + (b·r - a)i) / (d + c·r)`; a zero divisor gives
/// `a/|c| + (b/|d|)i` (infinities and NaN, as c10). Each branch divides by
/// a denominator made safe where another branch is taken, so no infinity
/// of a branch not taken reaches the gradient.
fn quotient(x: &Z, y: &Z) -> Result<Z> {
    let (c, d) = crate::ctx::broadcast2(&y.re, &y.im)?;
    let zero = c.eq(0.0)?.mul(&d.eq(0.0)?)?;
    let first = c.abs()?.ge(&d.abs()?)?;
    let ones = c.ones_like()?;
    let c1 = zero.where_cond(&ones, &first.where_cond(&c, &ones)?)?;
    let d2 = first.where_cond(&ones, &d)?;
    let r1 = (&d / &c1)?;
    let s1 = (&c1 + (&d * &r1)?)?.recip()?;
    let r2 = (&c / &d2)?;
    let s2 = (&d2 + (&c * &r2)?)?.recip()?;
    let re1 = x.re.broadcast_add(&x.im.broadcast_mul(&r1)?)?.broadcast_mul(&s1)?;
    let im1 = x.im.broadcast_sub(&x.re.broadcast_mul(&r1)?)?.broadcast_mul(&s1)?;
    let re2 = x.re.broadcast_mul(&r2)?.broadcast_add(&x.im)?.broadcast_mul(&s2)?;
    let im2 = x.im.broadcast_mul(&r2)?.broadcast_sub(&x.re)?.broadcast_mul(&s2)?;
    let re0 = x.re.broadcast_div(&zero.where_cond(&c.abs()?, &ones)?)?;
    let im0 = x.im.broadcast_div(&zero.where_cond(&d.abs()?, &ones)?)?;
    let shape = crate::ctx::broadcast_shape(re1.dims(), re0.dims())?;
    let fit = |t: &Tensor| t.broadcast_as(shape.as_slice());
    let (pick, by_zero) = (fit(&first)?, fit(&zero)?);
    let re = by_zero.where_cond(&fit(&re0)?, &pick.where_cond(&fit(&re1)?, &fit(&re2)?)?)?;
    let im = by_zero.where_cond(&fit(&im0)?, &pick.where_cond(&fit(&im1)?, &fit(&im2)?)?)?;
    Ok(Z { re, im })
}

fn div(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !matches!(b.value("rounding_mode"), Value::None) {
        return Err(Error::Arg("rounding_mode: torch refuses a rounding mode for complex division".into()));
    }
    let dtype = parts_dtype(ctx, b, &["input", "other"])?;
    complex_out(ctx, &quotient(&operand(ctx, b, "input", dtype)?, &operand(ctx, b, "other", dtype)?)?, dtype)
}

/// `other - input` (`Tensor.__rsub__`).
fn rsub(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input", "other"])?;
    let (x, y) = (operand(ctx, b, "input", dtype)?, operand(ctx, b, "other", dtype)?);
    complex_out(ctx, &Z { re: y.re.broadcast_sub(&x.re)?, im: y.im.broadcast_sub(&x.im)? }, dtype)
}

/// `other / input` (`Tensor.__rtruediv__`).
fn rdiv(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input", "other"])?;
    complex_out(ctx, &quotient(&operand(ctx, b, "other", dtype)?, &operand(ctx, b, "input", dtype)?)?, dtype)
}

fn neg(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input"])?;
    let z = operand(ctx, b, "input", dtype)?;
    complex_out(ctx, &Z { re: z.re.neg()?, im: z.im.neg()? }, dtype)
}

fn conj(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input"])?;
    let z = operand(ctx, b, "input", dtype)?;
    complex_out(ctx, &Z { re: z.re, im: z.im.neg()? }, dtype)
}

/// `|z| = √(re² + im²)` computed in float64 and rounded once on the device
/// (exact enough for complex64's parts, whose squares float64 holds; a
/// complex128 beyond 1e154 overflows to inf, as torch's own kernel does);
/// 0 with a zero gradient at 0, as torch's `sgn(0) = 0`.
fn abs(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input"])?;
    let z = operand(ctx, b, "input", dtype)?;
    let (re, im) = (precise(&z.re)?, precise(&z.im)?);
    let squares = (re.sqr()? + im.sqr()?)?;
    let zero = squares.eq(0.0)?;
    let safe = zero.where_cond(&squares.ones_like()?, &squares)?;
    let r = zero.where_cond(&squares.zeros_like()?, &safe.sqrt()?)?;
    one(ctx.out(r, dtype)?)
}

/// Torch's real entry `api` on real `parts` of `dtype` (and `keywords`):
/// its tensor result, with the entry's own broadcasting and gradient.
fn real_entry(ctx: &Ctx, api: &str, parts: &[&Tensor], keywords: &[(&str, Value)], dtype: TDType) -> Result<Tensor> {
    let args = parts.iter().map(|&t| Value::Tensor(T { t: t.clone(), dtype })).collect();
    match rebind(ctx, api, args, keywords)?.into_iter().next() {
        Some(Value::Tensor(t)) => Ok(t.t),
        _ => Err(Error::Arg(format!("{api}: no tensor result"))),
    }
}

/// `angle(z) = atan2(im, re)`, torch's atan2 entry on the parts; 0 with a
/// zero gradient at 0, as torch (atan2's own gradient is 0/0 there).
fn angle(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input"])?;
    let z = operand(ctx, b, "input", dtype)?;
    let zero = z.re.eq(0.0)?.mul(&z.im.eq(0.0)?)?;
    let (re, im) = (zero.where_cond(&z.re.ones_like()?, &z.re)?, zero.where_cond(&z.im.zeros_like()?, &z.im)?);
    let theta = real_entry(ctx, "Torch.atan2", &[&im, &re], &[], dtype)?;
    one(T { t: zero.where_cond(&theta.zeros_like()?, &theta)?, dtype })
}

/// `abs·cos(angle) + abs·sin(angle)i`, each factor rounded, as torch computes it.
fn polar(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["abs", "angle"])?;
    let (r, theta) = (operand(ctx, b, "abs", dtype)?.re, operand(ctx, b, "angle", dtype)?.re);
    let round = |t: Tensor| -> Result<Tensor> { Ok(ctx.out(t, dtype)?.t) };
    let (cos, sin) = (round(theta.cos()?)?, round(theta.sin()?)?);
    complex_out(ctx, &Z { re: r.broadcast_mul(&cos)?, im: r.broadcast_mul(&sin)? }, dtype)
}

/// `torch.complex(real, imag)`: the two tensors as the parts.
fn complex(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["real", "imag"])?;
    let (re, im) = (operand(ctx, b, "real", dtype)?.re, operand(ctx, b, "imag", dtype)?.re);
    let (re, im) = crate::ctx::broadcast2(&re, &im)?;
    complex_out(ctx, &Z { re, im }, dtype)
}

/// `view_as_real`: the pairs themselves, now a real tensor.
fn view_as_real(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    if !ctx.is_complex("input") {
        return Err(Error::Arg("view_as_real: expected a complex tensor".into()));
    }
    let t = b.tensor("input")?;
    one(T { t: t.t.copy()?, dtype: t.dtype })
}

/// `view_as_complex`: a real tensor whose last dimension is 2, as the pairs of a complex one.
fn view_as_complex(_: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let t = b.tensor("input")?;
    if !matches!(t.dtype, TDType::F32 | TDType::F64) || t.dims().last() != Some(&2) {
        return Err(Error::Arg(format!("view_as_complex: expected a float tensor whose last dimension is 2, got {} {:?}", t.dtype.name(), t.dims())));
    }
    one(T { t: t.t.copy()?, dtype: t.dtype })
}

/// `(A + Bi)(C + Di) = (AC - BD) + (AD + BC)i`, by torch's real matmul
/// entry on the parts (its broadcasting and gradients).
fn matmul(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let dtype = parts_dtype(ctx, b, &["input", "other"])?;
    let (x, y) = (operand(ctx, b, "input", dtype)?, operand(ctx, b, "other", dtype)?);
    let mm = |p: &Tensor, q: &Tensor| real_entry(ctx, "Torch.matmul", &[p, q], &[], dtype);
    let re = (mm(&x.re, &y.re)? - mm(&x.im, &y.im)?)?;
    let im = (mm(&x.re, &y.im)? + mm(&x.im, &y.re)?)?;
    complex_out(ctx, &Z { re, im }, dtype)
}

/// A reduction of each part by torch's real entry `api` (`sum`, `mean`:
/// linear, so the parts reduce alone), over the call's `dim` and `keepdim`.
fn partwise(ctx: &Ctx, b: &Bound, api: &str) -> Result<Vec<Value>> {
    if !matches!(b.value("dtype"), Value::None) {
        return Err(Error::Unsupported(format!("{api} of a complex tensor with a dtype argument")));
    }
    let dtype = parts_dtype(ctx, b, &["input"])?;
    let z = operand(ctx, b, "input", dtype)?;
    let keywords = [("dim", b.value("dim").clone()), ("keepdim", b.value("keepdim").clone())];
    let reduce = |t: &Tensor| real_entry(ctx, api, &[t], &keywords, dtype);
    complex_out(ctx, &Z { re: reduce(&z.re)?, im: reduce(&z.im)? }, dtype)
}

const IN_PLACE: &[super::Fact] = &[super::Fact::InPlace];

/// The complex entries, by torch's names (PyTorch dumps).
pub static OPS: &[Op] = &[
    Op {
        facts: &[super::Fact::Rounding(Rounding::Terms { negated: None })],
        ..entry(&["Torch.add", "Tensor.add", "Tensor.__add__", "Tensor.__radd__"], "input, other, *, alpha=1", add, true, Standard::Accuracy)
    },
    Op {
        facts: &[super::Fact::Rounding(Rounding::Terms { negated: Some("other") })],
        ..entry(&["Torch.sub", "Tensor.sub", "Tensor.__sub__", "Torch.subtract", "Tensor.subtract"], "input, other, *, alpha=1", sub, true, Standard::Accuracy)
    },
    Op {
        facts: &[super::Fact::Rounding(Rounding::Terms { negated: Some("input") })],
        ..entry(&["Tensor.__rsub__"], "input, other", rsub, true, Standard::Accuracy)
    },
    entry(
        &["Torch.mul", "Tensor.mul", "Tensor.__mul__", "Tensor.__rmul__", "Torch.multiply", "Tensor.multiply"],
        "input, other",
        mul,
        true,
        Standard::Accuracy,
    ),
    entry(
        &["Torch.div", "Tensor.div", "Tensor.__truediv__", "Torch.true_divide", "Torch.divide", "Tensor.divide"],
        "input, other, *, rounding_mode=None",
        div,
        true,
        Standard::Accuracy,
    ),
    entry(&["Tensor.__rtruediv__"], "input, other", rdiv, true, Standard::Accuracy),
    Op {
        facts: &[super::Fact::Rounding(Rounding::Terms { negated: None })],
        ..entry(&["Torch.neg", "Tensor.neg", "Tensor.__neg__"], "input", neg, true, Standard::Accuracy)
    },
    // In-place forms: the out-of-place result written into `self`; torch differentiates them as their bases.
    Op { facts: IN_PLACE, ..entry(&["Tensor.add_", "Tensor.__iadd__"], "input, other, *, alpha=1", add, true, Standard::Accuracy) },
    Op { facts: IN_PLACE, ..entry(&["Tensor.sub_", "Tensor.__isub__"], "input, other, *, alpha=1", sub, true, Standard::Accuracy) },
    Op { facts: IN_PLACE, ..entry(&["Tensor.mul_", "Tensor.__imul__"], "input, other", mul, true, Standard::Accuracy) },
    Op { facts: IN_PLACE, ..entry(&["Tensor.div_", "Tensor.__itruediv__"], "input, other, *, rounding_mode=None", div, true, Standard::Accuracy) },
    Op { facts: IN_PLACE, ..entry(&["Tensor.neg_"], "input", neg, true, Standard::Accuracy) },
    entry(&["Torch.conj", "Tensor.conj", "Torch.conj_physical", "Tensor.conj_physical"], "input", conj, true, Standard::Exact),
    entry(&["Torch.abs", "Tensor.abs", "Tensor.__abs__", "Torch.absolute", "Tensor.absolute"], "input", abs, true, Standard::Accuracy),
    entry(&["Torch.angle", "Tensor.angle"], "input", angle, true, Standard::Accuracy),
    entry(&["Torch.polar"], "abs, angle", polar, true, Standard::Accuracy),
    entry(&["Torch.complex"], "real, imag", complex, true, Standard::Exact),
    entry(&["Torch.view_as_real"], "input", view_as_real, true, Standard::Exact),
    entry(&["Torch.view_as_complex"], "input", view_as_complex, true, Standard::Exact),
    Op {
        facts: &[super::Fact::NodeGradients(super::node_grads::complex_matmul)],
        ..entry(&["Torch.matmul", "Tensor.matmul", "Tensor.__matmul__"], "input, other", matmul, true, Standard::Accuracy)
    },
    Op {
        facts: &[super::Fact::Rounding(Rounding::Sums)],
        ..entry(&["Torch.sum", "Tensor.sum"], "input, dim=None, keepdim=False, *, dtype=None", |c, b| partwise(c, b, "Torch.sum"), true, Standard::Accuracy)
    },
    Op {
        facts: &[super::Fact::Rounding(Rounding::Sums)],
        ..entry(&["Torch.mean", "Tensor.mean"], "input, dim=None, keepdim=False, *, dtype=None", |c, b| partwise(c, b, "Torch.mean"), true, Standard::Accuracy)
    },
];

/// The complex entry of `api` in a dump of `framework`: torch's names, for
/// PyTorch dumps (MindSpore's and MSAdapter's `.npy` tensors hold no complex
/// dtype the readers decode).
pub fn lookup(framework: Framework, api: &str) -> Option<&'static Op> {
    if framework != Framework::PyTorch {
        return None;
    }
    OPS.iter().find(|op| op.names.contains(&api))
}

/// The names only complex calls have (their results or inputs are always
/// complex): the op table's lookup finds their entries for any call. The
/// other entries here serve only calls the replay lowered, since on real
/// tensors their names mean the real table's ops (or none).
const COMPLEX_ONLY: &[&str] = &["Torch.polar", "Torch.complex", "Torch.view_as_real", "Torch.view_as_complex"];

/// [`lookup`] of a name only complex calls have ([`COMPLEX_ONLY`]).
pub fn complex_only(framework: Framework, api: &str) -> Option<&'static Op> {
    COMPLEX_ONLY.contains(&api).then(|| lookup(framework, api)).flatten()
}

/// Every name this file replays, for the skip that names them.
pub fn names() -> impl Iterator<Item = &'static str> {
    OPS.iter().flat_map(|op| op.names.iter().copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs complex entry `api` on the bench with complex float pairs `inputs` (name, pairs, shape).
    fn bench(api: &str, inputs: &[(&str, Vec<f64>, &[usize])]) -> Vec<f64> {
        let op = lookup(Framework::PyTorch, api).unwrap();
        let ctx = Ctx { complex: inputs.iter().map(|(n, ..)| n.to_string()).collect(), ..Ctx::bench(0) };
        let args = inputs
            .iter()
            .map(|(_, v, shape)| Value::Tensor(T::from_f64(v.clone(), shape, TDType::F64, candle_core::DType::F64, &ctx.device).unwrap()))
            .collect();
        let b = crate::bind::bind(api, op.sig, args, vec![]).unwrap();
        match (op.forward)(&ctx, &b).unwrap().remove(0) {
            Value::Tensor(t) => t.to_f64_vec().unwrap(),
            v => panic!("{}", v.kind()),
        }
    }

    #[test]
    fn only_complex_names_reach_the_table_lookup() {
        let pt = Framework::PyTorch;
        assert!(super::super::lookup(pt, "Torch.polar").is_some() && super::super::lookup(pt, "Torch.view_as_real").is_some());
        // On real tensors these mean the real table's ops, which have no entry: never the complex one.
        for name in ["Tensor.__itruediv__", "Tensor.conj", "Torch.conj_physical"] {
            assert!(super::super::lookup(pt, name).is_none() && lookup(pt, name).is_some(), "{name}");
        }
    }

    #[test]
    fn abs_is_zero_at_zero_and_holds_complex64s_extremes() {
        let got = bench("Torch.abs", &[("input", vec![0.0, 0.0, 3e38, 3e38, 1e-45, -1e-45, 3.0, 4.0], &[4, 2])]);
        let sqrt2 = std::f64::consts::SQRT_2;
        assert_eq!(got, [0.0, 3e38 * sqrt2, 1e-45 * sqrt2, 5.0]);
    }

    #[test]
    fn a_zero_divisor_gives_c10s_infinities() {
        let got = bench(
            "Torch.div",
            &[("input", vec![1.0, 1.0, 1.0, 0.0, -1.0, 2.0, 2.0, -1.0], &[4, 2]), ("other", vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5], &[4, 2])],
        );
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        for (g, w) in got.iter().zip([inf, inf, inf, nan, -inf, inf, 1.2, -1.6]) {
            assert!(g == &w || (g.is_nan() && w.is_nan()) || (g - w).abs() < 1e-15, "{got:?}");
        }
    }
}
