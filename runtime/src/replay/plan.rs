//! Planning: what each tested value is, decided once before anything is
//! judged. Per bench output and gradient, the dump's recorded device value
//! or the emulated device (and why); whether the emulated device must run;
//! whether a recorded gradient may be an inner node's. Recorded gradients
//! are matched to the inputs by the dump's gradient layout
//! ([`gradient_slots`], called from this one place).

use crate::error::Result;
use crate::exec::Outcome;
use crate::inputs::master;
use crate::spec::{DataMode, Replay, Spec};
use crate::standard::Standard;
use crate::value::{Value, T};

use super::call::Call;
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
    /// The gradients are the recorded ones and the first is there: it may
    /// be an inner node's ([`crate::ops::Op::inner_gradient`]).
    pub first_grad_recorded: bool,
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
        return Ok(Plan { outputs: vec![Source::Emulated(why); bench.outputs.len()], grads, needs_device: true, first_grad_recorded: false });
    }
    let outputs = (0..bench.outputs.len()).map(|i| recorded(call.r.outputs.get(i), call, Direction::Forward)).collect::<Result<Vec<_>>>()?;
    let (grads, grads_recorded) = match &call.r.grad_outputs {
        Some(_) => gradients(call, bench.grads.as_deref())?,
        None => (vec![], false),
    };
    let emulated = |s: &Source| matches!(s, Source::Emulated(_));
    let grads_emulated = grad_count.is_some() && !(grads_recorded && !grads.iter().any(emulated));
    Ok(Plan {
        needs_device: outputs.iter().any(emulated) || grads_emulated || call.r.standard == Standard::Api,
        first_grad_recorded: grads_recorded && matches!(grads.first(), Some(Source::Recorded(_))),
        outputs,
        grads,
    })
}

/// The tested gradients (one per bench gradient; none without a backward)
/// and whether they are the recorded ones. The dump's list of input
/// gradients holds positional inputs only (a differentiated keyword has
/// none), laid out the way its length says ([`gradient_slots`]). They line
/// up when the layout is known, every differentiated input is positional,
/// and each recorded one has its input's shape (a broadcast matmul's does
/// not); a missing file is fine: that gradient alone is emulated. Every
/// recorded gradient file is read, as the outputs are.
fn gradients(call: &Call, bench: Option<&[T]>) -> Result<(Vec<Source>, bool)> {
    let r = call.r;
    let slots = gradient_slots(&grad_inputs(&r.args), r.grad_inputs.len());
    let slot = |i: usize| slots.as_ref().and_then(|s| s.get(i).copied().flatten());
    let picked = call.differentiate.iter().enumerate().filter(|(_, &d)| d).map(|(i, _)| slot(i));
    let recorded_grads = picked.map(|k| recorded(k.and_then(|k| r.grad_inputs.get(k)), call, Direction::Backward)).collect::<Result<Vec<_>>>()?;
    let Some(bench) = bench else { return Ok((vec![], false)) };
    let one_per_input = slots.is_some() && call.differentiate.iter().skip(r.args.len()).all(|d| !d);
    let shapes_match = recorded_grads.iter().zip(bench).all(|(g, b)| match g {
        Source::Recorded(Value::Tensor(t)) => t.dims() == b.dims(),
        Source::Recorded(_) => false,
        Source::Emulated(_) => true,
    });
    let aligned = one_per_input && recorded_grads.len() == bench.len() && shapes_match;
    // A random op's mask is unknown without its recorded output: the
    // recorded gradients cannot be replayed then.
    let mask_unknown = call.op.random && !call.mask_known;
    let why = if mask_unknown {
        Reason::MaskUnknown
    } else if call.noop_cast {
        Reason::NoopCast
    } else if aligned {
        return Ok((recorded_grads, true));
    } else {
        Reason::NotLinedUp(Direction::Backward)
    };
    Ok((vec![Source::Emulated(why); bench.len()], false))
}

/// A recorded tensor, or why there is none.
fn recorded(spec: Option<&Spec>, call: &Call, direction: Direction) -> Result<Source> {
    let why = match spec {
        Some(Spec::Tensor(t)) => match &t.data {
            // A path that exists but cannot be read (a folder) is a broken input.
            Some(p) if p.exists() => {
                let m = master(t, DataMode::Real, (0, 0, 0))?;
                return Ok(Source::Recorded(Value::Tensor(T::from_f64(m.values, &m.shape, m.dtype, call.device.compute)?)));
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

/// The positional inputs as [`gradient_slots`] sees them.
fn grad_inputs(args: &[Spec]) -> Vec<GradInput> {
    args.iter()
        .map(|s| match s {
            Spec::Tensor(t) => GradInput { tensor: true, float: t.dtype.is_float(), marked: t.requires_grad == Some(true) },
            _ => GradInput { tensor: false, float: false, marked: false },
        })
        .collect()
}

/// A positional input, as far as the dump's gradient layout cares.
pub(super) struct GradInput {
    /// It is a tensor.
    pub tensor: bool,
    /// A floating one.
    pub float: bool,
    /// Marked `requires_grad` in the dump.
    pub marked: bool,
}

/// Where each positional input's gradient sits in the dump's list of
/// `recorded` input gradients (`None` for inputs without one), for the
/// first layout whose length matches the list: PyTorch dumps list the
/// floating tensors marked `requires_grad` (batch_norm's running statistics
/// have none); older dumps and unmarked ones, every floating tensor (none
/// for layer_norm's normalized_shape or cross_entropy's target); MindSpore
/// dumps, every tensor (a `null` slot for an integer target). `None` when
/// no layout fits.
pub(super) fn gradient_slots(inputs: &[GradInput], recorded: usize) -> Option<Vec<Option<usize>>> {
    let layouts: [fn(&GradInput) -> bool; 3] = [|i| i.float && i.marked, |i| i.float, |i| i.tensor];
    layouts.iter().find_map(|keep| {
        let mut next = 0;
        let slots: Vec<Option<usize>> = inputs
            .iter()
            .map(|i| {
                keep(i).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        (next == recorded && next > 0).then_some(slots)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_layout_of_the_dumps_length_wins() {
        let input = |tensor, float, marked| GradInput { tensor, float, marked };
        // batch_norm: input and weight marked, running statistics not.
        let bn = [input(true, true, true), input(true, true, false), input(true, true, true)];
        assert_eq!(gradient_slots(&bn, 2), Some(vec![Some(0), None, Some(1)]));
        assert_eq!(gradient_slots(&bn, 3), Some(vec![Some(0), Some(1), Some(2)]));
        // cross_entropy from MindSpore: a null slot for the integer target.
        let ce = [input(true, true, false), input(true, false, false)];
        assert_eq!(gradient_slots(&ce, 1), Some(vec![Some(0), None]));
        assert_eq!(gradient_slots(&ce, 2), Some(vec![Some(0), Some(1)]));
        assert_eq!(gradient_slots(&ce, 3), None);
        assert_eq!(gradient_slots(&[input(false, false, false)], 0), None);
    }
}
