//! Running one op-table entry on one side: forward, and backward through
//! candle's autograd with the dumped gradient injected as `Σ out·g`.

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
            let g = if g.dims() == o.dims() {
                g.t.clone()
            } else if g.t.elem_count() == o.t.elem_count() {
                g.t.reshape(o.dims())?
            } else {
                return Err(Error::Arg(format!("backward: dumped gradient of shape {:?} for an output of shape {:?}", g.dims(), o.dims())));
            };
            let term = o.t.apply_op1(Seed(g.to_dtype(o.t.dtype())?))?;
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
