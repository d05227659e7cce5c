//! One API replayed end to end: inputs realized once ([`call`]), the bench
//! (f64) run, the plan of what is compared with what ([`plan`]: each
//! output and gradient is the dump's recorded device value, or the device
//! emulated in the dumped dtypes, with the reason), the emulated device run
//! when the plan needs it, every value judged by the run's precision
//! standard ([`judge`]), rows produced. Every row's Message says what was
//! compared ([`tested::TestedSource`]). Nothing here panics on input: a
//! call the runtime cannot replay is a `skip` row, and a broken input (an
//! unreadable tensor file) is returned as the error.

mod call;
mod complex;
mod effect;
mod judge;
mod magnitude;
mod plan;
mod quirks;
mod tested;

use std::borrow::Cow;

pub use judge::{SELF_REFERENCE, UNDEFINED_VALUES};

use crate::compare::Status;
use crate::error::Result;
use crate::exec::{guarded, Outcome};
use crate::limits::{Admitted, Limits};
use crate::report::{DetailRow, ResultRow};
use crate::spec::{DataMode, Replay};
use crate::standard::Standard;
use crate::value::{Value, T};

use call::{Call, Reads};
use judge::{judge_list, message};
use tested::{Direction, Tested};

/// The rows of one replay, all iterations.
#[derive(Debug, Default)]
pub struct Rows {
    /// Details rows, one per output (and per gradient).
    pub details: Vec<DetailRow>,
    /// Result rows, one per iteration.
    pub results: Vec<ResultRow>,
}

/// [`replay_within`] the default limits for the memory available now
/// ([`Limits::from_available_memory`]).
pub fn replay(r: &Replay) -> Result<Rows> {
    replay_within(r, &Limits::from_available_memory())
}

/// Replays `r` for all its iterations and returns the report rows, or the
/// error when an input is at fault ([`crate::error::Error::is_input`]: a
/// broken tensor file, or a tensor or the call over `limits`, checked
/// before anything is allocated). A call the runtime cannot replay is one
/// `skip` row.
pub fn replay_within(r: &Replay, limits: &Limits) -> Result<Rows> {
    limits.check(r)?;
    replay_checked(r, limits)
}

/// Replays a call its caller already admitted ([`Limits::admit`]): the
/// limits are not checked again.
pub fn replay_admitted(a: &Admitted) -> Result<Rows> {
    replay_checked(a.replay(), a.limits())
}

/// [`replay_within`] after the check.
fn replay_checked(r: &Replay, limits: &Limits) -> Result<Rows> {
    let mut rows = Rows::default();
    for iteration in 0..r.iterations.max(1) {
        // Reading inputs and comparing run outside `exec`'s guard: guard them too.
        let once = || match complex::lower(r)? {
            Some(l) => replay_once(&l.replay, iteration as u64, limits, Some(&l)),
            None => replay_once(r, iteration as u64, limits, None),
        };
        let (forward, backward) = match guarded(once) {
            Ok(x) => x,
            Err(e) if e.is_input() => return Err(e),
            Err(e) => {
                let direction = if r.grad_outputs.is_some() { Direction::Backward } else { Direction::Forward };
                let first = e.to_string().lines().next().unwrap_or("").to_string();
                let row = DetailRow::uncompared(format!("{}.{}", r.api, direction.as_str()), Status::Skip, format!("cannot replay here: {first}"));
                if r.grad_outputs.is_some() {
                    (vec![], vec![row])
                } else {
                    (vec![row], vec![])
                }
            }
        };
        let message: Vec<String> = forward
            .iter()
            .chain(&backward)
            .filter(|d| d.status != Status::Pass && !d.message.is_empty())
            .map(|d| format!("{}: {}", d.api_name, d.message))
            .collect();
        rows.results.push(ResultRow { api_name: r.api.to_string(), forward: verdict(&forward), backward: verdict(&backward), message: message.join("; ") });
        rows.details.extend(forward);
        rows.details.extend(backward);
        if r.data_mode == DataMode::Real {
            break; // real data is the same every time
        }
    }
    Ok(rows)
}

/// The worst status of some rows; `None` when there are none.
fn verdict(rows: &[DetailRow]) -> Option<Status> {
    rows.iter().map(|r| r.status).max()
}

/// One iteration: the forward rows and the backward rows; a complex call
/// runs `lowered` to float pairs, and its rows are labelled back.
fn replay_once(r: &Replay, iteration: u64, limits: &Limits, lowered: Option<&complex::Lowered>) -> Result<(Vec<DetailRow>, Vec<DetailRow>)> {
    let op = match lowered {
        Some(l) => l.op,
        None => crate::ops::require(r.framework, &r.api.name())?,
    };
    let mut call = Call::new(r, iteration, op)?;
    // A kernel may write a gradient the dump recorded transposed in that layout.
    let transposed = plan::transposed_grads(&call);
    call.bench.transposed_grads = transposed.clone();
    call.device.transposed_grads = transposed;
    if let Some(l) = lowered {
        call.bench.complex = l.params.clone();
        call.device.complex = l.params.clone();
        call.lowered = true;
    }
    let max_elements = usize::try_from(limits.tensor_bytes / crate::limits::BYTES_PER_ELEMENT).unwrap_or(usize::MAX);
    call.bench.max_elements = max_elements;
    call.device.max_elements = max_elements;
    let (mut forward, mut backward) = judged(&call, r)?;
    if let Some(l) = lowered {
        l.relabel(&mut forward, &mut backward, &call.differentiate);
    }
    Ok((forward, backward))
}

/// The rows of one iteration of `call`.
fn judged(call: &Call, r: &Replay) -> Result<(Vec<DetailRow>, Vec<DetailRow>)> {
    let bench = call.run(&call.bench)?;
    let plan = plan::plan(call, &bench)?;
    let device_reads = if plan.device_outputs_read { Reads::Everything } else { Reads::Gradients };
    let device = if plan.needs_device { Some(call.run_reading(&call.device, device_reads)?) } else { None };
    let rounding = match r.standard {
        // The default standard bounds emulated rows; recorded ones only where they fail (below).
        Standard::Default => plan.any_emulated(),
        s => s.uses_rounding(),
    };
    // Recorded outputs judged by msprobe's rule read their magnitudes only to rescue a row that
    // does not pass (below): the bound's run may then skip the forward.
    let recorded_forward = r.standard == Standard::Default && !plan.device_outputs_read;
    let reads = if recorded_forward { Reads::Gradients } else { Reads::Everything };
    let magnitudes = if rounding { magnitude::magnitudes(call, &bench, reads) } else { magnitude::Magnitudes::default() };
    let rows = judge_call(call, &plan, &bench, device.as_ref(), &magnitudes)?;
    // The default standard judges a failing recorded row again with its elements within the
    // rounding bound counted as exact: the magnitudes are computed then, not for every call
    // (nor the outputs' where only the gradients were bounded).
    let within_bound_pass = r.standard == Standard::Default && crate::rulebook::get().default_standard.recorded_within_bound_pass;
    let failed = rows.0.iter().chain(&rows.1).any(|d| d.status == Status::Error);
    let unbounded_forward = rounding && reads == Reads::Gradients && rows.0.iter().any(|d| d.status != Status::Pass);
    if within_bound_pass && ((!rounding && failed) || unbounded_forward) {
        return judge_call(call, &plan, &bench, device.as_ref(), &magnitude::magnitudes(call, &bench, Reads::Everything));
    }
    Ok(rows)
}

/// The rows of one iteration's runs: `bench`, the emulated `device` (when it
/// ran), judged as `plan` says with the bench's rounding `magnitudes`.
fn judge_call(
    call: &Call,
    plan: &plan::Plan,
    bench: &Outcome,
    device: Option<&Outcome>,
    magnitudes: &magnitude::Magnitudes,
) -> Result<(Vec<DetailRow>, Vec<DetailRow>)> {
    let device_out = |i: usize| device.and_then(|d| d.outputs.get(i).cloned());
    let outputs: Vec<Tested> = plan.outputs.iter().enumerate().map(|(i, s)| Tested::new(s, device_out(i), Direction::Forward)).collect();
    let forward_note = message(&[if call.identity { quirks::DROPOUT_IDENTITY } else { "" }, call.autocast_note.as_deref().unwrap_or("")]);
    // The loss gradients of the outputs, for their effects: the call's recorded backward inputs.
    let dys: Option<Vec<Option<T>>> = call.grad_outputs(&call.bench)?;
    let output_magnitudes: Vec<Option<&[f64]>> = magnitudes.outputs.iter().map(Option::as_deref).collect();
    let forward = || judge_list(call, Direction::Forward, &outputs, &bench.outputs, &output_magnitudes, dys.as_deref(), &forward_note);
    let Some(bench_grads) = &bench.grads else { return Ok((forward(), vec![])) };

    // Computed gradients (and their rounding magnitudes) are compared in the layout msprobe recorded them in.
    let grad_magnitudes: Vec<Option<Cow<[f64]>>> =
        magnitudes.grads.iter().zip(bench_grads).enumerate().map(|(i, (m, g))| m.as_ref().and_then(|m| plan.recorded_values(i, m, g.dims()))).collect();
    let grad_magnitudes: Vec<Option<&[f64]>> = grad_magnitudes.iter().map(Option::as_deref).collect();
    let bench_grads: Vec<Value> = bench_grads.iter().enumerate().map(|(i, g)| plan.recorded_layout(i, g).map(Value::Tensor)).collect::<Result<_>>()?;
    let device_grad =
        |i: usize| device.and_then(|d| d.grads.as_ref()).and_then(|g| g.get(i)).map(|g| plan.recorded_layout(i, g).map(Value::Tensor)).transpose();
    let grads: Vec<Tested> = plan.grads.iter().enumerate().map(|(i, s)| Ok(Tested::new(s, device_grad(i)?, Direction::Backward))).collect::<Result<_>>()?;
    let note = message(&[&forward_note, call.mask_note.as_deref().unwrap_or("")]);
    // The two lists side by side: a row's one-thread passes (its loss effect) overlap the others'.
    let (forward, mut backward) = rayon::join(forward, || judge_list(call, Direction::Backward, &grads, &bench_grads, &grad_magnitudes, None, &note));
    if plan.first_grad_recorded {
        judge::inner_node_quirk(call, &grads, &mut backward)?;
    }
    Ok((forward, backward))
}
