//! The rounding magnitudes of one call: per element of each forward output
//! and each gradient, the magnitude that rounding in the device's precision
//! acts on, computed on the bench (f64) by the op's class
//! ([`crate::ops::Rounding`]): the op on absolute values (Terms, Sums),
//! a selection's absolute values and the backward of `|dy|` (Selects),
//! central differences along each input (Smooth), and for Composite also
//! the op computed in float32 ([`Ctx::probe`]). The scripts compute the
//! same (`python/msprobe_rs/repro/`'s magnitudes). The `api`, `bound` and
//! `default` standards ask for them; an output they cannot be computed for
//! has none (the row says what judged it instead).

use crate::bind::{param_names, param_position};
use crate::ctx::Ctx;
use crate::error::Result;
use crate::exec::Outcome;
use crate::ops::{chain, Rest, Rounding, OPERANDS};
use crate::value::{Value, T};

use super::call::{Call, Reads};

/// The relative perturbation of Smooth's central differences (2^-20):
/// large against f64's rounding, small against any curvature that matters.
const H: f64 = 1.0 / 1048576.0;
/// float32's unit roundoff: the probe's errors in its units.
const U32: f64 = 1.0 / 16777216.0;

/// The magnitudes of one call, aligned with the bench's outputs and gradients.
#[derive(Debug, Default)]
pub(super) struct Magnitudes {
    /// Per forward output; `None` where there is none (not a float tensor, or not computable).
    pub outputs: Vec<Option<Vec<f64>>>,
    /// Per gradient, in the bench's order.
    pub grads: Vec<Option<Vec<f64>>>,
}

/// The values of a float tensor, else `None`.
fn values(v: &Value) -> Option<Vec<f64>> {
    match v {
        Value::Tensor(t) if t.dtype.is_float() => t.to_f64_vec().ok(),
        _ => None,
    }
}

/// Zeros shaped like each value (none where there is none).
fn zeros(values: &[Option<Vec<f64>>]) -> Vec<Option<Vec<f64>>> {
    values.iter().map(|v| v.as_ref().map(|v| vec![0.0; v.len()])).collect()
}

/// Absolute values of every element.
fn abs_all(v: Option<Vec<f64>>) -> Option<Vec<f64>> {
    v.map(|x| x.into_iter().map(f64::abs).collect())
}

/// The values of each output and gradient of one run.
fn flat(o: &Outcome) -> (Vec<Option<Vec<f64>>>, Vec<Option<Vec<f64>>>) {
    let outputs = o.outputs.iter().map(values).collect();
    let grads = o.grads.iter().flatten().map(|g| g.to_f64_vec().ok()).collect();
    (outputs, grads)
}

/// `acc += |x - y| * scale` element for element; `None` when the shapes differ or a side is missing.
fn add_difference(acc: &mut [Option<Vec<f64>>], x: &[Option<Vec<f64>>], y: &[Option<Vec<f64>>], scale: f64) {
    for (i, slot) in acc.iter_mut().enumerate() {
        let (Some(a), Some(Some(x)), Some(Some(y))) = (slot.as_mut(), x.get(i), y.get(i)) else {
            *slot = None;
            continue;
        };
        if a.len() != x.len() || x.len() != y.len() {
            *slot = None;
            continue;
        }
        for ((a, x), y) in a.iter_mut().zip(x).zip(y) {
            *a += (x - y).abs() * scale;
        }
    }
}

/// The perturbations of an input: all elements alike (the first-order
/// condition of elementwise functions), and, for composites, two fixed sign
/// patterns that break the invariances a uniform scaling keeps (a norm's
/// output does not change when its whole input is scaled): alternating
/// signs, and the Thue-Morse sequence (the parity of the element index's bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pattern {
    Uniform,
    Alternating,
    ThueMorse,
}

impl Pattern {
    /// The sign of element `j`.
    fn sign(self, j: usize) -> f64 {
        let odd = match self {
            Pattern::Uniform => false,
            Pattern::Alternating => j % 2 == 1,
            Pattern::ThueMorse => j.count_ones() % 2 == 1,
        };
        if odd {
            -1.0
        } else {
            1.0
        }
    }
}

/// `acc += parts` element for element (nothing when there are no parts);
/// `None` when the lengths differ.
fn add_parts(acc: Option<&mut Option<Vec<f64>>>, parts: Vec<f64>) {
    let Some(slot) = acc else { return };
    if parts.is_empty() {
        return;
    }
    match slot {
        Some(a) if a.len() == parts.len() => a.iter_mut().zip(parts).for_each(|(a, p)| *a += p),
        _ => *slot = None,
    }
}

/// A float tensor (or each float tensor of a list) with element `j`
/// multiplied by `1 + h·sign(j)`; anything else as it is.
fn perturbed(v: Value, h: f64, pattern: Pattern) -> Result<Value> {
    Ok(match v {
        Value::Tensor(t) if t.dtype.is_float() => Value::Tensor(perturbed_tensor(t, h, pattern)?),
        Value::List(items) => Value::List(items.into_iter().map(|i| perturbed(i, h, pattern)).collect::<Result<_>>()?),
        v => v,
    })
}

/// A value with its floats made non-negative (`negate`: non-positive), and
/// its integers too where it is an `operand` ([`OPERANDS`]: an integer `dim`
/// keeps its sign).
fn absolute(v: Value, negate: bool, operand: bool) -> Result<Value> {
    let sign = if negate { -1.0 } else { 1.0 };
    Ok(match v {
        Value::Tensor(t) if t.dtype.is_float() => Value::Tensor(T { t: if negate { t.t.abs()?.affine(-1.0, 0.0)? } else { t.t.abs()? }, dtype: t.dtype }),
        Value::Float(x) => Value::Float(sign * x.abs()),
        Value::Int(x) if negate => Value::Int(-x.abs()),
        Value::Int(x) if operand => Value::Int(x.abs()),
        Value::List(items) => Value::List(items.into_iter().map(|i| absolute(i, negate, operand)).collect::<Result<_>>()?),
        v => v,
    })
}

/// A float tensor with element `j` multiplied by `1 + h·sign(j)`.
fn perturbed_tensor(t: T, h: f64, pattern: Pattern) -> Result<T> {
    if pattern == Pattern::Uniform {
        return Ok(T { t: t.t.affine(1.0 + h, 0.0)?, dtype: t.dtype });
    }
    let values = t.to_f64_vec()?.into_iter().enumerate().map(|(j, x)| x * (1.0 + h * pattern.sign(j))).collect();
    T::from_f64(values, t.dims(), t.dtype, t.t.dtype(), t.t.device())
}

/// Whether a top-level argument holds a float tensor to perturb.
fn perturbable(v: &Value) -> bool {
    match v {
        Value::Tensor(t) => t.dtype.is_float(),
        Value::List(items) => items.iter().any(perturbable),
        _ => false,
    }
}

/// The magnitudes of `call`, whose bench run gave `bench`; empty when the
/// op's class cannot be evaluated here (the rows then have none). With
/// [`Reads::Gradients`] the outputs' may be left out (none), where the op
/// gives its gradients without its forward.
pub(super) fn magnitudes(call: &Call, bench: &Outcome, reads: Reads) -> Magnitudes {
    let class = call.op.rounding();
    let (outputs, grads) = if call.identity {
        let (outputs, grads) = flat(bench);
        (outputs.into_iter().map(abs_all).collect(), grads.into_iter().map(abs_all).collect())
    } else {
        compute(call, class, bench, reads).unwrap_or_default()
    };
    Magnitudes { outputs, grads }
}

type Flat = (Vec<Option<Vec<f64>>>, Vec<Option<Vec<f64>>>);

/// The magnitudes of `class`; the bench's values are copied out only for
/// the classes that read them (Terms and Sums run the op again instead).
fn compute(call: &Call, class: Rounding, bench: &Outcome, reads: Reads) -> Result<Flat> {
    match class {
        Rounding::Terms { negated } => on_absolute_values(call, negated, reads),
        Rounding::Sums => {
            let output = match bench.outputs.first() {
                Some(Value::Tensor(t)) => t.t.elem_count(),
                _ => 0,
            };
            Ok(chained(call, output, on_absolute_values(call, None, reads)?))
        }
        Rounding::Selects => selections(call, flat(bench).0),
        Rounding::Smooth => {
            let (outputs, grads) = flat(bench);
            first_order(call, &outputs, &grads, &[Pattern::Uniform])
        }
        Rounding::Parts(parts) => {
            let (outputs, grads) = flat(bench);
            let (mut o, mut g) = match parts.rest {
                Rest::Composite => composite(call, &outputs, &grads)?,
                Rest::Smooth => first_order(call, &outputs, &grads, &[Pattern::Uniform])?,
                Rest::Nothing => (zeros(&outputs), zeros(&grads)),
            };
            let dy = call.grad_outputs(&call.bench)?.and_then(|g| g.into_iter().next().flatten());
            let (forward, backward) = (parts.magnitude)(&call.bound(&call.bench)?, dy.as_ref())?;
            let given = forward.len();
            for (slot, m) in o.iter_mut().zip(forward) {
                add_parts(Some(slot), m);
            }
            let params = call.gradient_params();
            let mut named = vec![false; g.len()];
            for ((slot, param), named) in g.iter_mut().zip(params).zip(named.iter_mut()) {
                if let Some((_, m)) = backward.iter().find(|(name, _)| Some(*name) == param) {
                    add_parts(Some(slot), m.clone());
                    *named = true;
                }
            }
            if parts.rest == Rest::Nothing {
                // What the parts do not give has no magnitude (not a zero one).
                o.iter_mut().skip(given).for_each(|slot| *slot = None);
                g.iter_mut().zip(named).filter(|(_, named)| !named).for_each(|(slot, _)| *slot = None);
            }
            Ok((o, g))
        }
        Rounding::Composite => {
            let (outputs, grads) = flat(bench);
            composite(call, &outputs, &grads)
        }
    }
}

/// Composite: the first-order terms along each input uniformly and along
/// the sign patterns, the gradients' along the output gradients' sign
/// patterns too (a gradient that sums `dy`, a bias's, does not depend on
/// the inputs), plus the float32 probe's error in units of its roundoff.
fn composite(call: &Call, outputs: &[Option<Vec<f64>>], grads: &[Option<Vec<f64>>]) -> Result<Flat> {
    let (mut o, mut g) = first_order(call, outputs, grads, &[Pattern::Uniform, Pattern::Alternating, Pattern::ThueMorse])?;
    if !g.is_empty() {
        for pattern in [Pattern::Alternating, Pattern::ThueMorse] {
            let at = |h: f64| call.run_with(&call.bench, Reads::Everything, |_, _, v| Ok(v), |dy| perturbed_tensor(dy, h, pattern));
            // One statement each: a run's tensors (and its graph) are freed before the next run.
            let plus = flat(&at(H)?);
            let minus = flat(&at(-H)?);
            add_difference(&mut g, &plus.1, &minus.1, 0.5 / H);
        }
    }
    if let Some((po, pg)) = probe(call)? {
        add_difference(&mut o, &po, outputs, 1.0 / U32);
        add_difference(&mut g, &pg, grads, 1.0 / U32);
    }
    Ok((o, g))
}

/// The output gradient `|dy|` of Terms', Sums' and Selects' backward.
fn absolute_dy(g: T) -> Result<T> {
    Ok(T { t: g.t.abs()?, dtype: g.dtype })
}

/// Selects: the outputs' absolute values, and the gradients of the
/// backward of `|dy|` (the same places chosen, their gradients summed as
/// absolute values).
fn selections(call: &Call, outputs: Vec<Option<Vec<f64>>>) -> Result<Flat> {
    let run = call.run_with(&call.bench, Reads::Everything, |_, _, v| Ok(v), absolute_dy)?;
    Ok((outputs.into_iter().map(abs_all).collect(), flat(&run).1.into_iter().map(abs_all).collect()))
}

/// Terms and Sums: the op (and its backward, with `|dy|`) on the absolute
/// values of its floats, the `negated` parameter made non-positive.
fn on_absolute_values(call: &Call, negated: Option<&'static str>, reads: Reads) -> Result<Flat> {
    let position = negated.and_then(|n| param_position(call.op.sig, n));
    let is_negated = |slot: usize, key: Option<&str>| match key {
        Some(k) => negated == Some(k),
        None => position == Some(slot),
    };
    let names = param_names(call.op.sig);
    let is_operand = |slot: usize, key: Option<&str>| key.or_else(|| names.get(slot).copied()).is_some_and(|n| OPERANDS.contains(&n));
    let run = call.run_with(&call.bench, reads, |slot, key, v| absolute(v, is_negated(slot, key), is_operand(slot, key)), absolute_dy)?;
    let (o, g) = flat(&run);
    Ok((o.into_iter().map(abs_all).collect(), g.into_iter().map(abs_all).collect()))
}

/// Sums: each result of a contraction whose accumulation chain is longer
/// than the rulebook's `chain_covered` ([`crate::ops::chain`]), its
/// magnitudes grown by `√(n / covered)`: a device summing its terms one
/// after another leaves that much more where they share a sign. `output`
/// is the number of elements of the call's first output.
fn chained(call: &Call, output: usize, (mut o, mut g): Flat) -> Flat {
    let Some(slicing) = call.op.slicing() else { return (o, g) };
    let Some(chains) = chain::lengths(slicing, &|name| call.param_shape(name), output, &call.gradient_params()) else { return (o, g) };
    let covered = crate::rulebook::get().rounding.chain_covered;
    let grow = |slot: Option<&mut Option<Vec<f64>>>, n: Option<usize>| {
        if let (Some(Some(m)), Some(n)) = (slot, n) {
            let f = chain::factor(n, covered);
            if f > 1.0 {
                m.iter_mut().for_each(|x| *x *= f);
            }
        }
    };
    grow(o.first_mut(), chains.output);
    for (slot, n) in g.iter_mut().zip(chains.grads) {
        grow(Some(slot), n);
    }
    (o, g)
}

/// `|y| + Σⱼ Σₚ |y(xⱼ(1+h·p)) - y(xⱼ(1-h·p))| / 2h` for the outputs and
/// (with the same `dy`) the gradients: each floating input perturbed alone,
/// by each of `patterns`.
fn first_order(call: &Call, outputs: &[Option<Vec<f64>>], grads: &[Option<Vec<f64>>], patterns: &[Pattern]) -> Result<Flat> {
    let mut o: Vec<Option<Vec<f64>>> = outputs.iter().cloned().map(abs_all).collect();
    let mut g: Vec<Option<Vec<f64>>> = grads.iter().cloned().map(abs_all).collect();
    let inert = call.inert_slots();
    for j in call.slots_where(perturbable).into_iter().filter(|j| !inert.contains(j)) {
        for &pattern in patterns {
            let at = |h: f64| call.run_with(&call.bench, Reads::Everything, |slot, _, v| if slot == j { perturbed(v, h, pattern) } else { Ok(v) }, Ok);
            // One statement each: a run's tensors (and its graph) are freed before the next run.
            let plus = flat(&at(H)?);
            let minus = flat(&at(-H)?);
            add_difference(&mut o, &plus.0, &minus.0, 0.5 / H);
            add_difference(&mut g, &plus.1, &minus.1, 0.5 / H);
        }
    }
    Ok((o, g))
}

/// The op computed in float32 without its final rounding ([`Ctx::probe`]);
/// `None` for float64 calls, whose device computes in float64.
fn probe(call: &Call) -> Result<Option<Flat>> {
    if call.device.compute == candle_core::DType::F64 {
        return Ok(None);
    }
    let ctx = Ctx {
        keep_mask: call.bench.keep_mask.clone(),
        max_elements: call.bench.max_elements,
        complex: call.bench.complex.clone(),
        ..Ctx::probe(call.bench.seed)
    };
    Ok(Some(flat(&call.run_with(&ctx, Reads::Everything, |_, _, v| Ok(v), Ok)?)))
}
