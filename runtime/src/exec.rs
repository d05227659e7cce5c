//! Running one op-table entry on one side: forward, and backward through
//! candle's autograd with the dumped gradient injected as `Σ out·g`, or
//! through the op's own gradients where it has them.

use std::panic::{catch_unwind, AssertUnwindSafe};

use candle_core::{DType, Tensor, Var};

use crate::bind::bind;
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::ops::Op;
use crate::value::{Value, T};

/// What one side computed.
#[derive(Debug)]
pub struct Outcome {
    /// Forward outputs, flattened (lists of results become separate outputs).
    pub outputs: Vec<Value>,
    /// Gradients w.r.t. the differentiated inputs, in input order (the
    /// tensors of a list argument in the list's order).
    pub grads: Option<Vec<T>>,
}

fn flatten(values: Vec<Value>, out: &mut Vec<Value>) {
    for v in values {
        match v {
            Value::List(items) => flatten(items, out),
            v => out.push(v),
        }
    }
}

/// Runs `f`, turning a panic inside it (candle asserts) into [`Error::Panic`].
pub(crate) fn guarded<R>(f: impl FnOnce() -> Result<R>) -> Result<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            Err(Error::Panic(msg))
        }
    }
}

/// Makes a floating `t` a variable of the backward, recorded in `vars`.
fn track(t: &mut T, vars: &mut Vec<(Var, TDType)>) -> Result<()> {
    if t.dtype.is_float() {
        let var = Var::from_tensor(&t.t)?;
        t.t = var.as_tensor().clone();
        vars.push((var, t.dtype));
    }
    Ok(())
}

/// Tracks every floating tensor of a list argument, in order, at any depth.
fn track_list(items: &mut [Value], vars: &mut Vec<(Var, TDType)>) -> Result<()> {
    for item in items {
        match item {
            Value::Tensor(t) => track(t, vars)?,
            Value::List(inner) => track_list(inner, vars)?,
            _ => {}
        }
    }
    Ok(())
}

/// Whether `v` is or holds a tensor (a list of them: autograd tracks
/// each; a list of ints, such as a shape, holds none).
fn holds_tensor(v: &Value) -> bool {
    match v {
        Value::Tensor(_) => true,
        Value::List(items) => items.iter().any(holds_tensor),
        _ => false,
    }
}

/// Runs `op` as `api` on `ctx`'s side. `differentiate[i]` marks which
/// top-level tensor inputs (positional, then keyword) get gradients; the
/// floating tensors inside a list argument (`cat`, `stack`) always do, as
/// torch.autograd.grad gives them for a list's tensors (a list carries no
/// flag of its own). With `grad_outputs` (one per output, `None` where none
/// was dumped) the backward runs too, and the gradients come back one per
/// differentiated tensor, in input order (a list's tensors in its order).
pub fn run(
    op: &Op,
    api: &str,
    mut args: Vec<Value>,
    mut kwargs: Vec<(String, Value)>,
    differentiate: &[bool],
    grad_outputs: Option<&[Option<T>]>,
    ctx: &Ctx,
) -> Result<Outcome> {
    guarded(|| {
        if let (Some(grads), Some(gradients)) = (grad_outputs, op.gradients()) {
            if let Some(outcome) = direct(op, api, gradients, (&args, &kwargs), (differentiate, grads), ctx, Forward::Run)? {
                return Ok(outcome);
            }
        }
        let mut vars: Vec<(Var, TDType)> = vec![];
        if grad_outputs.is_some() {
            if !op.backward {
                return Err(Error::Unsupported(format!("{api} has no backward in the runtime (an in-place or non-differentiable op)")));
            }
            let slots = args.iter_mut().chain(kwargs.iter_mut().map(|(_, v)| v));
            for (slot, &wanted) in slots.zip(differentiate.iter().chain(std::iter::repeat(&false))) {
                match slot {
                    Value::Tensor(t) if wanted => track(t, &mut vars)?,
                    Value::List(items) => track_list(items, &mut vars)?,
                    _ => {}
                }
            }
            if vars.is_empty() {
                return Err(Error::Arg("backward: no floating-point input to differentiate".into()));
            }
        }
        let bound = bind(api, op.sig, args, kwargs)?;
        let mut results = (op.forward)(ctx, &bound)?;
        if op.in_place() {
            // `self` is the first parameter.
            let this = bound.tensor(crate::bind::param_names(op.sig)[0])?;
            results = crate::ops::derive::into_self_shaped(ctx, this.dtype, Some(this.dims()), results)?;
        }
        let mut outputs = vec![];
        flatten(results, &mut outputs);
        let Some(grads) = grad_outputs else {
            return Ok(Outcome { outputs, grads: None });
        };
        let mut loss: Option<Tensor> = None;
        for (out, g) in outputs.iter().zip(grads) {
            let (Value::Tensor(o), Some(g)) = (out, g) else { continue };
            if !o.dtype.is_float() {
                continue;
            }
            let term = o.t.apply_op1(Seed(output_gradient(o, g)?))?;
            loss = Some(match loss {
                Some(l) => (l + term)?,
                None => term,
            });
        }
        let loss = loss.ok_or_else(|| Error::Arg("backward: no floating-point output has a dumped gradient".into()))?;
        let store = loss.backward()?;
        let grads = vars
            .iter()
            .map(|(var, dtype)| {
                let g = match store.get(var.as_tensor()) {
                    Some(g) => g.clone(),
                    None => var.as_tensor().zeros_like()?,
                };
                ctx.out(g, *dtype)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Outcome { outputs: outputs.into_iter().map(detach).collect(), grads: Some(grads) })
    })
}

/// [`run`] for a caller that reads only the gradients (the outputs are
/// judged on recorded values): an op with [`crate::ops::Gradients`] gives
/// them from its inputs and the dumped output gradients without running
/// its forward, and the outcome has no outputs; any other call runs whole.
pub fn gradients_only(
    op: &Op,
    api: &str,
    args: Vec<Value>,
    kwargs: Vec<(String, Value)>,
    differentiate: &[bool],
    grad_outputs: &[Option<T>],
    ctx: &Ctx,
) -> Result<Outcome> {
    if let Some(gradients) = op.gradients() {
        if let Some(outcome) = guarded(|| direct(op, api, gradients, (&args, &kwargs), (differentiate, grad_outputs), ctx, Forward::Skip))? {
            return Ok(outcome);
        }
    }
    run(op, api, args, kwargs, differentiate, Some(grad_outputs), ctx)
}

/// Whether [`direct`] runs the op's forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Forward {
    /// Run: its outputs are returned, and each dumped gradient is shaped as its output.
    Run,
    /// Skipped: no outputs, and the gradients take the dumped ones as read.
    Skip,
}

/// The dumped gradient `g` of output `o`, in the output's shape and storage dtype.
fn output_gradient(o: &T, g: &T) -> Result<Tensor> {
    let g = if g.dims() == o.dims() {
        g.t.clone()
    } else if g.t.elem_count() == o.t.elem_count() {
        g.t.reshape(o.dims())?
    } else {
        return Err(Error::Arg(format!("backward: dumped gradient of shape {:?} for an output of shape {:?}", g.dims(), o.dims())));
    };
    Ok(g.to_dtype(o.t.dtype())?)
}

/// [`run`] for an op with [`crate::ops::Gradients`]: its forward on the
/// inputs as they are (no autograd graph; none with [`Forward::Skip`]),
/// then its gradients by name, in the order autograd's would come. `None` where they do not take the call
/// (a list holding a tensor, an in-place op, an argument no parameter takes, a
/// differentiated input this side rounds to a narrower dtype, no output
/// gradient, a differentiated input they give no gradient for, or the op's
/// own `None`): autograd runs it instead, and reports what is wrong with it.
fn direct(
    op: &Op,
    api: &str,
    gradients: crate::ops::Gradients,
    (args, kwargs): (&[Value], &[(String, Value)]),
    (differentiate, grad_outputs): (&[bool], &[Option<T>]),
    ctx: &Ctx,
    forward: Forward,
) -> Result<Option<Outcome>> {
    let slots: Vec<&Value> = args.iter().chain(kwargs.iter().map(|(_, v)| v)).collect();
    if op.in_place() || slots.iter().any(|v| matches!(v, Value::List(_)) && holds_tensor(v)) {
        return Ok(None);
    }
    // Each slot's parameter, keywords through their aliases, as `bind` names them.
    let keys: Vec<&str> = kwargs.iter().map(|(k, _)| k.as_str()).collect();
    let names = crate::bind::parameters(op.sig, args.len(), &keys);
    let mut wanted: Vec<(&str, &T)> = vec![];
    for (i, slot) in slots.into_iter().enumerate() {
        match slot {
            Value::Tensor(t) if t.dtype.is_float() && differentiate.get(i).copied().unwrap_or(false) => match names.get(i).copied().flatten() {
                // An input rounded to a narrower dtype on this side has its result rounded too.
                Some(name) if ctx.keeps(&t.t, t.dtype) => wanted.push((name, t)),
                _ => return Ok(None),
            },
            _ => {}
        }
    }
    if wanted.is_empty() {
        return Ok(None);
    }
    let bound = bind(api, op.sig, args.to_vec(), kwargs.to_vec())?;
    let mut outputs = vec![];
    let dys = match forward {
        Forward::Run => {
            flatten((op.forward)(ctx, &bound)?, &mut outputs);
            outputs
                .iter()
                .zip(grad_outputs)
                .map(|(out, g)| match (out, g) {
                    (Value::Tensor(o), Some(g)) if o.dtype.is_float() => Ok(Some(T { t: output_gradient(o, g)?, dtype: o.dtype })),
                    _ => Ok(None),
                })
                .collect::<Result<Vec<_>>>()?
        }
        Forward::Skip => grad_outputs.to_vec(),
    };
    if dys.iter().all(Option::is_none) {
        return Ok(None);
    }
    let Some(named) = gradients(ctx, &bound, &dys)? else { return Ok(None) };
    let mut grads = Vec::with_capacity(wanted.len());
    for (name, t) in wanted {
        // A differentiated input the op gives no gradient for: autograd's, not a guess.
        let Some((_, g)) = named.iter().find(|(n, _)| *n == name) else { return Ok(None) };
        grads.push(ctx.out(g.clone(), t.dtype)?);
    }
    Ok(Some(Outcome { outputs, grads: Some(grads) }))
}

/// The backward's seed for one output: a scalar whose gradient with
/// respect to the output is the dumped gradient itself. It stands for
/// `Σ output·grad` (whose gradient is the same) without the product and
/// the sum over the whole output that autograd does not need.
struct Seed(Tensor);

impl candle_core::CustomOp1 for Seed {
    fn name(&self) -> &'static str {
        "backward-seed"
    }

    fn cpu_fwd(&self, storage: &candle_core::CpuStorage, _layout: &candle_core::Layout) -> candle_core::Result<(candle_core::CpuStorage, candle_core::Shape)> {
        use candle_core::{backend::BackendStorage, CpuStorage};
        let zero = match storage.dtype() {
            DType::F64 => CpuStorage::F64(vec![0.0]),
            DType::F32 => CpuStorage::F32(vec![0.0]),
            other => return Err(candle_core::Error::Msg(format!("backward seed of a {other:?} output"))),
        };
        Ok((zero, candle_core::Shape::from(())))
    }

    /// The dumped gradient, times the seed's own gradient (1 from the sum of seeds).
    fn bwd(&self, _arg: &Tensor, _res: &Tensor, grad_res: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let one = grad_res.to_dtype(DType::F64)?.to_scalar::<f64>()? == 1.0;
        Ok(Some(if one { self.0.clone() } else { self.0.broadcast_mul(grad_res)? }))
    }
}

fn detach(v: Value) -> Value {
    match v {
        Value::Tensor(t) => Value::Tensor(T { t: t.t.detach(), dtype: t.dtype }),
        v => v,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{lookup, Fact};
    use crate::spec::Framework;

    fn tensor(ctx: &Ctx, dims: &[usize], dtype: TDType, k: f64) -> Value {
        let n: usize = dims.iter().product();
        let values = (0..n).map(|i| ((i as f64 * k).sin() * 7.0).round() / 8.0 + (i as f64 * 0.31).cos() * 1e-3).collect();
        Value::Tensor(T::from_f64(values, dims, dtype, ctx.compute, &ctx.device).unwrap())
    }

    fn bits(grads: &[T]) -> Vec<Vec<u64>> {
        grads.iter().map(|g| g.t.flatten_all().unwrap().to_dtype(DType::F64).unwrap().to_vec1::<f64>().unwrap().iter().map(|v| v.to_bits()).collect()).collect()
    }

    /// `op` with autograd's gradients only.
    fn by_autograd(op: &'static Op) -> Op {
        let facts: Vec<Fact> = op.facts.iter().filter(|f| !matches!(f, Fact::Gradients(_))).copied().collect();
        Op { names: op.names, sig: op.sig, forward: op.forward, backward: true, standard: op.standard, random: false, facts: facts.leak() }
    }

    /// `api`'s own gradients take the call and give autograd's outputs and
    /// gradients bit for bit, for each set of differentiated inputs.
    fn agrees(api: &str, ctx: &Ctx, args: &[Value], kwargs: &[(String, Value)], dy: Value) {
        agrees_on(api, ctx, args, kwargs, vec![dy]);
    }

    /// [`agrees`] with a gradient for each of the op's outputs.
    fn agrees_on(api: &str, ctx: &Ctx, args: &[Value], kwargs: &[(String, Value)], dys: Vec<Value>) {
        let op = lookup(Framework::PyTorch, api).unwrap();
        let (gradients, autograd) = (op.gradients().unwrap(), by_autograd(op));
        let dys: Vec<Option<T>> = dys.into_iter().map(|dy| if let Value::Tensor(dy) = dy { Some(dy) } else { unreachable!() }).collect();
        let mut compared = 0;
        for differentiate in [vec![true, true, true], vec![true, false, false], vec![false, true, true]] {
            let what = format!("{api} {:?} {differentiate:?}", ctx.side);
            let slots = args.iter().chain(kwargs.iter().map(|(_, v)| v));
            let wanted = slots.zip(&differentiate).filter(|(a, &d)| d && matches!(a, Value::Tensor(_))).count();
            if wanted == 0 {
                continue;
            }
            compared += 1;
            assert!(
                direct(op, api, gradients, (args, kwargs), (&differentiate, &dys), ctx, Forward::Run).unwrap().is_some(),
                "{what}: its own gradients take it"
            );
            let run_with = |op: &Op| run(op, api, args.to_vec(), kwargs.to_vec(), &differentiate, Some(&dys), ctx).unwrap();
            let (own, auto) = (run_with(op), run_with(&autograd));
            assert_eq!(own.grads.as_ref().unwrap().len(), wanted, "{what}");
            assert_eq!(bits(own.grads.as_ref().unwrap()), bits(auto.grads.as_ref().unwrap()), "{what}");
            let outputs = |o: &Outcome| bits(&o.outputs.iter().map(|v| if let Value::Tensor(t) = v { t.clone() } else { unreachable!() }).collect::<Vec<_>>());
            assert_eq!(outputs(&own), outputs(&auto), "{what}");
            // Without the forward: no outputs, the same gradients; an op without its own runs whole.
            let (skipped, whole) = (
                gradients_only_of(op, api, args, kwargs, &differentiate, &dys, ctx),
                gradients_only_of(&autograd, api, args, kwargs, &differentiate, &dys, ctx),
            );
            assert!(skipped.outputs.is_empty(), "{what}: the forward ran");
            assert_eq!(bits(skipped.grads.as_ref().unwrap()), bits(auto.grads.as_ref().unwrap()), "{what}: without the forward");
            assert_eq!((outputs(&whole), bits(whole.grads.as_ref().unwrap())), (outputs(&auto), bits(auto.grads.as_ref().unwrap())), "{what}: autograd's");
        }
        assert!(compared > 0, "{api}: no differentiated input");
    }

    fn gradients_only_of(op: &Op, api: &str, args: &[Value], kwargs: &[(String, Value)], differentiate: &[bool], dys: &[Option<T>], ctx: &Ctx) -> Outcome {
        gradients_only(op, api, args.to_vec(), kwargs.to_vec(), differentiate, dys, ctx).unwrap()
    }

    /// linear's own gradients are autograd's, with and without a bias, in
    /// float64 (the bench) and float32 (the emulated device), for 1- to 3-D
    /// inputs, given by keyword under an alias (`x`), and where every
    /// product is -0 (autograd's sum into zeros makes it +0), and the same
    /// gradients without the forward ([`gradients_only`]). A bfloat16
    /// call, whose output is rounded on its way out, and a dumped gradient
    /// not shaped as the output, when the forward is skipped, are left to
    /// autograd.
    #[test]
    fn own_gradients_are_autograds() {
        for (ctx, dtype) in [(Ctx::bench(0), TDType::F32), (Ctx::device(TDType::F32, 0), TDType::F32)] {
            let t = |dims: &[usize], k: f64| tensor(&ctx, dims, dtype, k);
            for bias in [true, false] {
                for (x, out) in [(vec![4], vec![5]), (vec![3, 4], vec![3, 5]), (vec![2, 3, 4], vec![2, 3, 5])] {
                    let args = vec![t(&x, 0.37), t(&[5, 4], 0.11), if bias { t(&[5], 0.71) } else { Value::None }];
                    agrees("Functional.linear", &ctx, &args, &[], t(&out, 0.23));
                }
            }
            let kwargs = vec![("x".to_string(), t(&[3, 4], 0.37)), ("weight".to_string(), t(&[5, 4], 0.11))];
            agrees("Functional.linear", &ctx, &[], &kwargs, t(&[3, 5], 0.23));
            let exact = |values: Vec<f64>, dims: &[usize]| Value::Tensor(T::from_f64(values, dims, dtype, ctx.compute, &ctx.device).unwrap());
            let (x, w) = (exact(vec![-1.0, -2.0, -3.0, -4.0], &[4]), exact(vec![-0.5; 12], &[3, 4]));
            agrees("Functional.linear", &ctx, &[x, w], &[], exact(vec![0.0; 3], &[3]));
        }
        // matmul's of two matrices, with products of -0.
        for (ctx, dtype) in [(Ctx::bench(0), TDType::F32), (Ctx::device(TDType::F32, 0), TDType::F32)] {
            let t = |dims: &[usize], k: f64| tensor(&ctx, dims, dtype, k);
            agrees("Torch.matmul", &ctx, &[t(&[3, 4], 0.37), t(&[4, 5], 0.11)], &[], t(&[3, 5], 0.23));
            let exact = |values: Vec<f64>, dims: &[usize]| Value::Tensor(T::from_f64(values, dims, dtype, ctx.compute, &ctx.device).unwrap());
            agrees("Torch.matmul", &ctx, &[exact(vec![-1.0; 6], &[2, 3]), exact(vec![-0.5; 6], &[3, 2])], &[], exact(vec![0.0; 4], &[2, 2]));
            agrees("Torch.matmul", &ctx, &[exact(vec![-1.0; 6], &[2, 3]), exact(vec![-0.5; 3], &[3, 1])], &[], exact(vec![0.0; 2], &[2, 1]));
            agrees("Torch.matmul", &ctx, &[exact(vec![-1.0; 3], &[1, 3]), exact(vec![-0.5; 6], &[3, 2])], &[], exact(vec![0.0; 2], &[1, 2]));
        }
        // batch_norm's in training, 2- to 4-D, and where a negative weight
        // times a zero gradient makes -0 (autograd's sum into zeros: +0).
        for (ctx, dtype) in [(Ctx::bench(0), TDType::F32), (Ctx::device(TDType::F32, 0), TDType::F32)] {
            let t = |dims: &[usize], k: f64| tensor(&ctx, dims, dtype, k);
            let exact = |values: Vec<f64>, dims: &[usize]| Value::Tensor(T::from_f64(values, dims, dtype, ctx.compute, &ctx.device).unwrap());
            let params = |w: Value, b: Value| {
                let named = [("weight", w), ("bias", b), ("running_mean", Value::None), ("running_var", Value::None), ("training", Value::Bool(true))];
                named.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Vec<_>>()
            };
            for dims in [vec![4, 3], vec![2, 3, 4], vec![2, 3, 2, 2]] {
                agrees("Functional.batch_norm", &ctx, &[t(&dims, 0.37)], &params(t(&[3], 0.11), t(&[3], 0.71)), t(&dims, 0.23));
            }
            agrees("Functional.batch_norm", &ctx, &[t(&[2, 3, 4], 0.37)], &params(exact(vec![-0.5; 3], &[3]), t(&[3], 0.71)), exact(vec![0.0; 24], &[2, 3, 4]));
        }
        // mse_loss's under each reduction, and where the input equals the target under a negative gradient.
        for (ctx, dtype) in [(Ctx::bench(0), TDType::F32), (Ctx::device(TDType::F32, 0), TDType::F32)] {
            let t = |dims: &[usize], k: f64| tensor(&ctx, dims, dtype, k);
            let exact = |values: Vec<f64>, dims: &[usize]| Value::Tensor(T::from_f64(values, dims, dtype, ctx.compute, &ctx.device).unwrap());
            for (reduction, dy) in [
                ("mean", exact(vec![2.9], &[])),
                ("mean", exact(vec![1.3], &[])),
                ("mean", exact(vec![-0.75], &[])),
                ("sum", t(&[], 0.3)),
                ("none", t(&[2, 3], 0.23)),
            ] {
                let kwargs = vec![("reduction".to_string(), Value::Str(reduction.into()))];
                agrees("Functional.mse_loss", &ctx, &[t(&[2, 3], 0.37), t(&[2, 3], 0.11)], &kwargs, dy);
            }
            let same = t(&[2, 3], 0.37);
            agrees("Functional.mse_loss", &ctx, &[same.clone(), same], &[], exact(vec![-0.75], &[]));
        }
        // layer_norm's on the bench (float64: the emulated float32 device keeps the composite),
        // with its normalized shape, a list of ints, beside the tensors.
        let ctx = Ctx::bench(0);
        let t = |dims: &[usize], k: f64| tensor(&ctx, dims, TDType::F32, k);
        for (dims, shape) in [(vec![3, 4], vec![4]), (vec![2, 3, 4], vec![3, 4])] {
            let normalized = Value::List(shape.iter().map(|&d| Value::Int(d as i64)).collect());
            let kwargs = vec![("weight".to_string(), t(&shape, 0.11)), ("bias".to_string(), t(&shape, 0.71)), ("normalized_shape".to_string(), normalized)];
            agrees("Functional.layer_norm", &ctx, &[t(&dims, 0.37)], &kwargs, t(&dims, 0.23));
        }
        let op = lookup(Framework::PyTorch, "Functional.linear").unwrap();
        let ctx = Ctx::device(TDType::BF16, 0);
        let args = vec![tensor(&ctx, &[3, 4], TDType::BF16, 0.37), tensor(&ctx, &[5, 4], TDType::BF16, 0.11)];
        let Value::Tensor(dy) = tensor(&ctx, &[3, 5], TDType::BF16, 0.23) else { unreachable!() };
        let gradients = op.gradients().unwrap();
        assert!(
            direct(op, "Functional.linear", gradients, (&args, &[]), (&[true, true], &[Some(dy.clone())]), &ctx, Forward::Run).unwrap().is_none(),
            "a rounded output is autograd's"
        );
        // A dumped gradient of another shape than the output's (the forward skipped): autograd's, which reports it.
        let (ctx, dtype) = (Ctx::bench(0), TDType::F32);
        let args = vec![tensor(&ctx, &[3, 4], dtype, 0.37), tensor(&ctx, &[5, 4], dtype, 0.11)];
        let Value::Tensor(dy) = tensor(&ctx, &[15], dtype, 0.23) else { unreachable!() };
        assert!(direct(op, "Functional.linear", gradients, (&args, &[]), (&[true, true], &[Some(dy.clone())]), &ctx, Forward::Skip).unwrap().is_none());
        let whole = gradients_only(op, "Functional.linear", args, vec![], &[true, true], &[Some(dy)], &ctx).unwrap();
        assert_eq!(whole.outputs.len(), 1, "the forward ran");
    }

    /// add's (two tensors of one shape) and the data-movement ops'
    /// (transpose, reshape and view, split into pieces of one size or of
    /// listed sizes) own gradients are autograd's bit for bit, on the bench
    /// and the emulated float32 device, with a gradient of -0 among the
    /// others (autograd's sum into zeros makes it +0).
    #[test]
    fn movement_and_add_gradients_are_autograds() {
        for (ctx, dtype) in [(Ctx::bench(0), TDType::F32), (Ctx::device(TDType::F32, 0), TDType::F32)] {
            let t = |dims: &[usize], k: f64| tensor(&ctx, dims, dtype, k);
            let with_zeros = |dims: &[usize], k: f64| {
                let n: usize = dims.iter().product();
                let values = (0..n).map(|i| if i % 3 == 1 { -0.0 } else { ((i as f64 * k).sin() * 7.0).round() / 8.0 + 1e-3 }).collect();
                Value::Tensor(T::from_f64(values, dims, dtype, ctx.compute, &ctx.device).unwrap())
            };
            agrees("Tensor.__add__", &ctx, &[t(&[2, 3, 4], 0.37), t(&[2, 3, 4], 0.11)], &[], with_zeros(&[2, 3, 4], 0.23));
            agrees("Torch.add", &ctx, &[t(&[3, 4], 0.37), t(&[3, 4], 0.11)], &[("alpha".to_string(), Value::Int(1))], with_zeros(&[3, 4], 0.23));
            for (d0, d1, out) in [(0, 2, [4, 3, 2]), (-1, 1, [2, 4, 3]), (1, 1, [2, 3, 4])] {
                agrees("Tensor.transpose", &ctx, &[t(&[2, 3, 4], 0.37), Value::Int(d0), Value::Int(d1)], &[], with_zeros(&out, 0.23));
            }
            agrees("Tensor.reshape", &ctx, &[t(&[2, 3, 4], 0.37), Value::Int(6), Value::Int(-1)], &[], with_zeros(&[6, 4], 0.23));
            agrees("Tensor.view", &ctx, &[t(&[2, 3, 4], 0.37), Value::Int(24)], &[], with_zeros(&[24], 0.23));
            let split = |dims: &[usize], size: Value, dim: i64, pieces: &[&[usize]]| {
                let dys = pieces.iter().enumerate().map(|(i, p)| with_zeros(p, 0.23 + i as f64)).collect();
                agrees_on("Tensor.split", &ctx, &[t(dims, 0.37), size], &[("dim".to_string(), Value::Int(dim))], dys);
            };
            split(&[5, 4], Value::Int(2), 0, &[&[2, 4], &[2, 4], &[1, 4]]);
            split(&[2, 7], Value::List(vec![Value::Int(3), Value::Int(4)]), -1, &[&[2, 3], &[2, 4]]);
        }
        // Broadcasting, a scalar and another alpha are autograd's.
        let ctx = Ctx::bench(0);
        let t = |dims: &[usize], k: f64| tensor(&ctx, dims, TDType::F32, k);
        let op = lookup(Framework::PyTorch, "Torch.add").unwrap();
        let Value::Tensor(dy) = t(&[3, 4], 0.23) else { unreachable!() };
        let alpha = |a: f64| vec![("alpha".to_string(), Value::Float(a))];
        for (args, kwargs) in [
            (vec![t(&[3, 4], 0.37), t(&[4], 0.11)], vec![]),
            (vec![t(&[3, 4], 0.37), Value::Float(0.5)], vec![]),
            (vec![t(&[3, 4], 0.37), t(&[3, 4], 0.11)], alpha(2.0)),
        ] {
            let own = direct(op, "Torch.add", op.gradients().unwrap(), (&args, &kwargs), (&[true, true], &[Some(dy.clone())]), &ctx, Forward::Run).unwrap();
            assert!(own.is_none(), "{args:?} {kwargs:?}");
        }
    }
}
