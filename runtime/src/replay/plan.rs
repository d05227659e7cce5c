//! Planning: what each tested value is, decided once before anything is
//! judged. Per bench output and gradient, the dump's recorded device value
//! or the emulated device (and why); whether the emulated device must run;
//! whether a recorded gradient may be an inner node's. Recorded gradients
//! are matched to the inputs by the dump's gradient layout
//! ([`recorded_places`], called from this one place): in input order, or
//! as the op's last autograd node lists them (PyTorch dumps of an op with
//! `Fact::NodeGradients`), each with the [`Transform`] that maps a computed
//! gradient into the recorded layout.

use std::borrow::Cow;

use candle_core::DType;
use rayon::prelude::*;

use crate::bind::parameters;
use crate::dtype::TDType;
use crate::error::Result;
use crate::exec::Outcome;
use crate::grad_layout::{recorded_places, GradInput, Place, Transform};
use crate::inputs::master;
use crate::spec::{DataMode, Framework, Replay, Spec};
use crate::standard::Standard;
use crate::value::{Value, T};

use super::call::{first_error, Call};
use super::tested::{Direction, Reason, Source};

/// What is compared with what in one replay.
pub(super) struct Plan {
    /// Per bench output, the tested side.
    pub outputs: Vec<Source>,
    /// Per bench gradient, the tested side (empty when forward only).
    pub grads: Vec<Source>,
    /// Whether the emulated device runs: some value is emulated, or the
    /// standard needs the reference run.
    pub needs_device: bool,
    /// Whether the emulated device's outputs are read when it runs: some
    /// output is emulated, or the rules judging the recorded ones read
    /// the reference run.
    pub device_outputs_read: bool,
    /// The gradients are the recorded ones and the first is there: it may
    /// be an inner node's ([`crate::ops::Op::inner_gradient`]).
    pub first_grad_recorded: bool,
}

impl Plan {
    /// Whether some tested value is the emulated device's.
    pub fn any_emulated(&self) -> bool {
        self.outputs.iter().chain(&self.grads).any(|s| matches!(s, Source::Emulated(_)))
    }

    /// Gradient `i` as computed (bench or emulated device) mapped into the
    /// layout its tested side was recorded in ([`Transform::apply`]).
    pub fn recorded_layout(&self, i: usize, grad: &T) -> Result<T> {
        match self.grads.get(i) {
            Some(Source::Recorded(_, transform)) => transform.apply(grad),
            _ => Ok(grad.clone()),
        }
    }

    /// [`Plan::recorded_layout`] of per-element values of gradient `i`
    /// shaped `dims` (its rounding magnitudes); `None` when they do not fit
    /// the shape.
    pub fn recorded_values<'v>(&self, i: usize, values: &'v [f64], dims: &[usize]) -> Option<Cow<'v, [f64]>> {
        if values.len() != dims.iter().product::<usize>() {
            return None;
        }
        // Laid out as computed: the values themselves, not a copy.
        let Some(Source::Recorded(_, transform @ Transform::Transposed)) = self.grads.get(i) else { return Some(Cow::Borrowed(values)) };
        let t = T::from_f64(values.to_vec(), dims, TDType::F64, DType::F64, &crate::device::host()).ok()?;
        transform.apply(&t).ok()?.to_f64_vec().ok().map(Cow::Owned)
    }
}

/// Why the whole call is emulated, when it is (random data, or asked to).
fn emulated_call(r: &Replay) -> Option<Reason> {
    match (r.data_mode, r.use_recorded) {
        (DataMode::Random, _) => Some(Reason::RandomData),
        (DataMode::Real, false) => Some(Reason::Requested),
        (DataMode::Real, true) => None,
    }
}

/// Plans the replay of `call`, whose bench side gave `bench`. Reading a
/// recorded tensor that exists but cannot be read is the input's error.
pub(super) fn plan(call: &Call, bench: &Outcome) -> Result<Plan> {
    let grad_count = bench.grads.as_ref().map(Vec::len);
    if let Some(why) = emulated_call(call.r) {
        let grads = vec![Source::Emulated(why.clone()); grad_count.unwrap_or(0)];
        let outputs = vec![Source::Emulated(why); bench.outputs.len()];
        return Ok(Plan { outputs, grads, needs_device: true, device_outputs_read: true, first_grad_recorded: false });
    }
    // The recorded files are read side by side: each is decoded on one thread.
    let (outputs, grads) = rayon::join(
        || first_error((0..bench.outputs.len()).into_par_iter().map(|i| recorded(call.r.outputs.get(i), call, Direction::Forward)).collect()),
        || match &call.r.grad_outputs {
            Some(_) => gradients(call, bench.grads.as_deref()),
            None => Ok((vec![], false)),
        },
    );
    let (outputs, (grads, grads_recorded)) = (outputs?, grads?);
    let emulated = |s: &Source| matches!(s, Source::Emulated(_));
    let grads_emulated = grad_count.is_some() && (!grads_recorded || grads.iter().any(emulated));
    // A recorded output's reference run is read by the rules of every standard but msprobe's.
    let device_outputs_read = outputs.iter().any(emulated) || call.r.standard.for_row(false) != Standard::Msprobe;
    Ok(Plan {
        needs_device: outputs.iter().any(emulated) || grads_emulated || call.r.standard == Standard::Api,
        device_outputs_read,
        first_grad_recorded: grads_recorded && matches!(grads.first(), Some(Source::Recorded(..))),
        outputs,
        grads,
    })
}

/// The tested gradients (one per bench gradient; none without a backward)
/// and whether they are the recorded ones. The dump's list of input
/// gradients is laid out as [`recorded_places`] finds it: in input order
/// (positional inputs only: a differentiated keyword has none), or as the
/// op's last autograd node lists them, where some inputs' gradients are
/// not there at all (those rows are emulated and say why). They line up
/// when a layout fits, and each recorded one has the shape its input's
/// gradient takes in that layout (a broadcast matmul's does not); a missing
/// file is fine: that gradient alone is emulated. Every recorded gradient
/// file is read, as the outputs are.
fn gradients(call: &Call, bench: Option<&[T]>) -> Result<(Vec<Source>, bool)> {
    let r = call.r;
    let inputs = grad_inputs(call);
    let node = call.op.node_gradients(r.framework);
    let places = places(call, &inputs);
    let place = |i: usize| places.as_ref().and_then(|p| p.get(i).cloned()).unwrap_or(Place::Absent);
    let picked: Vec<Place> = call.differentiate.iter().enumerate().filter(|(_, &d)| d).map(|(i, _)| place(i)).collect();
    let recorded_grads = first_error(
        picked
            .into_par_iter()
            .map(|p| match p {
                Place::Recorded(k, transform) => Ok(match recorded(r.grad_inputs.get(k), call, Direction::Backward)? {
                    Source::Recorded(v, _) => Source::Recorded(v, transform),
                    emulated => emulated,
                }),
                Place::Elsewhere(why) => Ok(Source::Emulated(Reason::NotRecorded(why))),
                Place::Absent => recorded(None, call, Direction::Backward),
            })
            .collect(),
    )?;
    let Some(bench) = bench else { return Ok((vec![], false)) };
    // In input order, a differentiated keyword has no place.
    let keyword_differentiated = node.is_none() && call.differentiate.iter().skip(r.args.len()).any(|&d| d);
    let shapes_match = recorded_grads.iter().zip(bench).all(|(g, b)| match g {
        Source::Recorded(Value::Tensor(t), transform) => transform.dims(b.dims()).is_some_and(|d| d == t.dims()),
        Source::Recorded(..) => false,
        Source::Emulated(_) => true,
    });
    let aligned = places.is_some() && !keyword_differentiated && recorded_grads.len() == bench.len() && shapes_match;
    // A random op's mask is unknown without its recorded output: the
    // recorded gradients cannot be replayed then.
    let mask_unknown = call.op.random && !call.mask_known;
    let why = if mask_unknown {
        Reason::MaskUnknown
    } else if call.noop_cast {
        Reason::NoopCast
    } else if aligned {
        return Ok((placeholders(call, &inputs, recorded_grads, bench), true));
    } else {
        Reason::NotLinedUp(Direction::Backward)
    };
    Ok((vec![Source::Emulated(why); bench.len()], false))
}

/// Where each of `inputs`' gradients sits in the dump's list of input
/// gradients ([`recorded_places`]); `None` when no layout fits.
fn places(call: &Call, inputs: &[GradInput]) -> Option<Vec<Place>> {
    let r = call.r;
    let recorded_dims: Vec<Option<&[usize]>> = r.grad_inputs.iter().map(|s| if let Spec::Tensor(t) = s { Some(t.shape.as_slice()) } else { None }).collect();
    let incoming = r.grad_outputs.as_ref().and_then(|g| g.first()).and_then(|s| if let Spec::Tensor(t) = s { Some(t.shape.iter().product()) } else { None });
    recorded_places(inputs, &recorded_dims, incoming, call.op.node_gradients(r.framework))
}

/// The parameters whose recorded gradient, a tensor file that exists, is
/// laid out transposed ([`crate::ctx::Ctx::transposed_grads`]), known
/// before anything runs: none when the replay takes no recorded gradient
/// (random data, emulation asked for, no backward).
pub(super) fn transposed_grads(call: &Call) -> Vec<String> {
    if emulated_call(call.r).is_some() || call.r.grad_outputs.is_none() {
        return vec![];
    }
    let inputs = grad_inputs(call);
    let Some(places) = places(call, &inputs) else { return vec![] };
    let in_a_file = |k: usize| matches!(call.r.grad_inputs.get(k), Some(Spec::Tensor(t)) if t.data.as_ref().is_some_and(|p| p.exists()));
    places
        .iter()
        .zip(&inputs)
        .filter_map(|(p, input)| match p {
            Place::Recorded(k, Transform::Transposed) if in_a_file(*k) => input.param.map(str::to_string),
            _ => None,
        })
        .collect()
}

/// The recorded gradients with MindSpore's placeholders taken out: a
/// gradient recorded as all zeros for an input the dump does not mark
/// `requires_grad`, where the bench's is not zero, is what MindSpore's
/// autodiff (and MSAdapter's, on it) returns for an input it does not
/// differentiate, not the device's gradient: that row is the emulated
/// device's, and says why. A zero gradient of an input marked
/// `requires_grad` is judged as recorded.
fn placeholders(call: &Call, inputs: &[GradInput], grads: Vec<Source>, bench: &[T]) -> Vec<Source> {
    if !matches!(call.r.framework, Framework::MindSpore | Framework::MindTorch) {
        return grads;
    }
    let all_zero = |t: &T| t.to_f64_vec().is_ok_and(|v| v.iter().all(|&x| x == 0.0));
    let differentiated = call.differentiate.iter().enumerate().filter(|(_, &d)| d).map(|(i, _)| i);
    grads
        .into_iter()
        .zip(differentiated)
        .zip(bench)
        .map(|((g, i), b)| match &g {
            Source::Recorded(Value::Tensor(t), _) if inputs.get(i).is_some_and(|x| !x.marked) && all_zero(t) && !all_zero(b) => {
                Source::Emulated(Reason::Placeholder)
            }
            _ => g,
        })
        .collect()
}

/// A recorded tensor, or why there is none.
fn recorded(spec: Option<&Spec>, call: &Call, direction: Direction) -> Result<Source> {
    let why = match spec {
        Some(Spec::Tensor(t)) => match &t.data {
            // A path that exists but cannot be read (a folder) is a broken input.
            Some(p) if p.exists() => {
                let m = master(t, DataMode::Real, (0, 0, 0))?;
                // Held in float64, whatever its dtype: the judge reads a recorded value as
                // float64 (the metrics, the loss effect), and borrows this storage where it
                // widened a float32 copy for each; values read exactly take no pass at all.
                let made = if m.is_exact() { T::from_exact_f64 } else { T::from_f64 };
                return Ok(Source::Recorded(Value::Tensor(made(m.values, &m.shape, m.dtype, DType::F64, &call.device.device)?), Transform::Same));
            }
            Some(p) => Reason::FileMissing(direction, p.clone()),
            None => Reason::NoFile(direction),
        },
        Some(Spec::None) => Reason::RecordedNone(direction),
        Some(other) => Reason::RecordedKind(direction, spec_kind(other)),
        None => Reason::NotLinedUp(direction),
    };
    Ok(Source::Emulated(why))
}

fn spec_kind(s: &Spec) -> &'static str {
    match s {
        Spec::Int(_) => "int",
        Spec::Float(_) => "float",
        Spec::Bool(_) => "bool",
        Spec::List(_) => "list",
        _ => "non-tensor value",
    }
}

/// The call's inputs (positional, then keyword) as [`recorded_places`]
/// sees them: each with the parameter it binds to.
fn grad_inputs<'a>(call: &Call<'a>) -> Vec<GradInput<'a>> {
    let r = call.r;
    let keywords: Vec<&str> = r.kwargs.iter().map(|(k, _)| k.as_str()).collect();
    let params = parameters(call.op.sig, r.args.len(), &keywords);
    let specs = r.args.iter().map(|s| (s, false)).chain(r.kwargs.iter().map(|(_, s)| (s, true)));
    specs
        .zip(params)
        .map(|((s, keyword), param)| match s {
            Spec::Tensor(t) => {
                GradInput { tensor: true, float: t.dtype.is_float(), marked: t.requires_grad == Some(true), param, keyword, shape: Some(t.shape.as_slice()) }
            }
            _ => GradInput { tensor: false, float: false, marked: false, param, keyword, shape: None },
        })
        .collect()
}
