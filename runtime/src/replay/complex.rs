//! A call with complex tensors, lowered to one on float pairs: each complex
//! tensor spec becomes a float spec of its parts' dtype (complex64's
//! float32) with a trailing dimension of 2 (the tensor readers read complex
//! files so), the call runs the complex entry of its API
//! ([`crate::ops::complex`]) with the complex parameters named in its
//! contexts, and every row of a complex value is labelled back: the
//! complex dtypes, the complex shape, and a Message saying the parts were
//! compared. Everything between (inputs, plan, runs, magnitudes, judging)
//! sees float tensors, and judges each part by its dtype.

use crate::bind::parameters;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::ops::{complex, Op};
use crate::report::DetailRow;
use crate::spec::{Replay, Spec, TensorSpec};

use super::judge::message;

/// A complex call lowered to float pairs.
pub(super) struct Lowered {
    /// The call on float pairs.
    pub replay: Replay,
    /// The API's complex entry.
    pub op: &'static Op,
    /// The parameters holding complex tensors ([`crate::ctx::Ctx::complex`]).
    pub params: Vec<String>,
    /// Per output, its complex dtype (`None`: a real output).
    outputs: Vec<Option<TDType>>,
    /// Per top-level input slot (positional, then keyword), its complex dtype.
    inputs: Vec<Option<TDType>>,
}

/// The complex dtype of a tensor spec.
fn complex_dtype(s: &Spec) -> Option<TDType> {
    match s {
        Spec::Tensor(t) if !t.dtype.is_computable() => Some(t.dtype),
        _ => None,
    }
}

/// The first complex dtype anywhere in `s` (lists included).
fn any_complex(s: &Spec) -> Option<TDType> {
    match s {
        Spec::List(items) => items.iter().find_map(any_complex),
        s => complex_dtype(s),
    }
}

/// `s` with every complex tensor as its float pairs. msprobe's Max of a
/// complex tensor is its largest modulus: random parts are drawn from
/// [-Max, Max].
fn lowered(s: &Spec) -> Spec {
    match s {
        Spec::Tensor(t) if !t.dtype.is_computable() => {
            let max = t.high.map(f64::abs);
            Spec::Tensor(TensorSpec {
                dtype: t.dtype.component(),
                shape: t.shape.iter().copied().chain([2]).collect(),
                low: max.map(|m| -m),
                high: max,
                ..t.clone()
            })
        }
        Spec::List(items) => Spec::List(items.iter().map(lowered).collect()),
        s => s.clone(),
    }
}

/// `r` lowered to float pairs, or `None` when it has no complex tensor. A
/// call whose API has no complex entry (MindSpore and MSAdapter dumps have
/// none), or that passes complex tensors in a list, is refused with the
/// names that are replayed.
pub(super) fn lower(r: &Replay) -> Result<Option<Lowered>> {
    let inputs = r.args.iter().chain(r.kwargs.iter().map(|(_, s)| s));
    let everything = inputs.clone().chain(&r.outputs).chain(r.grad_outputs.iter().flatten()).chain(&r.grad_inputs);
    let Some(found) = everything.clone().find_map(any_complex) else { return Ok(None) };
    let name = r.api.name();
    if crate::ops::reasons::reason(r.framework, &name).is_some() {
        return Ok(None); // its reason never to be replayed, as for any call
    }
    let refuse = |why: &str| {
        let names: Vec<&str> = complex::names().collect();
        Error::Unsupported(format!(
            "{} tensors {why}: the runtime computes complex tensors in {}; the call's op_generate script judges it at raised precision",
            found.name(),
            names.join(", ")
        ))
    };
    let op = complex::lookup(r.framework, &name).ok_or_else(|| refuse(&format!("in {name}")))?;
    if inputs.clone().any(|s| matches!(s, Spec::List(_)) && any_complex(s).is_some()) {
        return Err(refuse("in a list argument"));
    }
    let keywords: Vec<&str> = r.kwargs.iter().map(|(k, _)| k.as_str()).collect();
    let names = parameters(op.sig, r.args.len(), &keywords);
    let inputs: Vec<Option<TDType>> = inputs.map(complex_dtype).collect();
    let params = names.iter().zip(&inputs).filter_map(|(n, d)| d.and(*n)).map(str::to_string).collect();
    let replay = Replay {
        args: r.args.iter().map(lowered).collect(),
        kwargs: r.kwargs.iter().map(|(k, s)| (k.clone(), lowered(s))).collect(),
        outputs: r.outputs.iter().map(lowered).collect(),
        grad_outputs: r.grad_outputs.as_ref().map(|g| g.iter().map(lowered).collect()),
        grad_inputs: r.grad_inputs.iter().map(lowered).collect(),
        ..r.clone()
    };
    Ok(Some(Lowered { replay, op, params, outputs: r.outputs.iter().map(complex_dtype).collect(), inputs }))
}

impl Lowered {
    /// The rows of complex values labelled as such: forward rows by their
    /// output, backward rows by the input each gradient is of (the
    /// `differentiate`d slots, in order).
    pub fn relabel(&self, forward: &mut [DetailRow], backward: &mut [DetailRow], differentiate: &[bool]) {
        let gradients: Vec<Option<TDType>> = differentiate.iter().zip(&self.inputs).filter(|(&d, _)| d).map(|(_, c)| *c).collect();
        for (rows, dtypes) in [(forward, &self.outputs), (backward, &gradients)] {
            for row in rows.iter_mut() {
                let index = row.api_name.rsplit_once(".output.").and_then(|(_, i)| i.parse::<usize>().ok());
                if let Some(Some(dtype)) = index.and_then(|i| dtypes.get(i)) {
                    self.label(row, *dtype);
                }
            }
        }
    }

    /// One row of a complex value of `dtype`: its dtypes and shape, and the Message's note.
    fn label(&self, row: &mut DetailRow, dtype: TDType) {
        let fw = self.replay.framework;
        if row.tested_dtype.is_some() {
            row.tested_dtype = Some(fw.dtype_name(dtype));
        }
        if row.bench_dtype.is_some() {
            row.bench_dtype = Some(fw.dtype_name(TDType::C128));
        }
        if let Some(shape) = row.shape.as_mut().filter(|s| s.last() == Some(&2)) {
            shape.pop();
        }
        let note = format!("{} compared as its real and imaginary parts, each a {}", dtype.name(), dtype.component().name());
        row.message = message(&[&note, &row.message]);
    }
}
