//! Judging: one planned tested value against its bench value, by the run's
//! precision standard, into a details row whose Message says what was
//! compared. Rows that cannot be judged (shapes or kinds that differ) are
//! the tool's coverage: `skip`s.

use rayon::prelude::*;

use crate::compare::{Metrics, Status};
use crate::dtype::TDType;
use crate::report::{DetailRow, TestedOn};
use crate::spec::Framework;
use crate::standard::{judge, Case, Judged, Rounding, Rule};
use crate::value::{Value, T};

use super::call::Call;
use super::effect::{self, Effect};
use super::quirks;
use super::tested::{Direction, Tested, BENCH};

/// The Message of an output whose values are undefined (`torch.empty`):
/// what was judged instead (rendered into the scripts' tables too).
pub const UNDEFINED_VALUES: &str = "values undefined (uninitialized memory): only the shape is compared";

/// Note on rows whose reference run is the tested value itself (rendered
/// into the scripts' tables too).
pub const SELF_REFERENCE: &str = "the reference run is the tested run itself, so this rule cannot fail here";

/// The op name a lowered complex call is judged under: in no api standard
/// set, so its rows take the benchmark rule.
const COMPLEX_CALL: &str = "complex call";

/// Joins the non-empty parts of a Message with `"; "`.
pub(super) fn message(parts: &[&str]) -> String {
    parts.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join("; ")
}

/// The bench's dtype label: floats are computed in float64.
fn bench_dtype(d: TDType) -> TDType {
    if d.is_float() {
        TDType::F64
    } else {
        d
    }
}

/// The loss gradients of a call's forward outputs, as the dump recorded
/// them: `None` when the call has no backward entry (forward rows then
/// say so), else one per output (`None` where there is none).
pub(super) type LossGrads<'a> = Option<&'a [Option<T>]>;

/// The rows of one direction; outputs `None` on both sides have none (as
/// in the scripts). `magnitudes` are the bench values' rounding magnitudes
/// (empty when the standard uses none); `dys` the forward outputs' loss
/// gradients (backward rows: `None`).
pub(super) fn judge_list(
    call: &Call,
    direction: Direction,
    tested: &[Tested],
    bench: &[Value],
    magnitudes: &[Option<&[f64]>],
    dys: LossGrads,
    note: &str,
) -> Vec<DetailRow> {
    let n = tested.len().max(bench.len());
    // Rows are judged apart, on rayon's threads, and kept in order.
    (0..n)
        .into_par_iter()
        .filter_map(|i| {
            let name = format!("{}.{}.output.{i}", call.r.api, direction.as_str());
            match (tested.get(i), bench.get(i)) {
                (Some(Tested { value: Value::None, .. }), Some(Value::None)) => None,
                (Some(t), Some(b)) => {
                    let row = judge_value(call, name, direction, t, b, magnitudes.get(i).copied().flatten(), note);
                    Some(if direction == Direction::Forward { with_effect(call, row, t, b, dys.map(|d| d.get(i).and_then(Option::as_ref))) } else { row })
                }
                _ => Some(DetailRow::uncompared(
                    name,
                    Status::Skip,
                    message(&[&format!("cannot judge: output count differs: tested {}, bench {}", tested.len(), bench.len()), BENCH]),
                )),
            }
        })
        .collect()
}

/// Judges one tested value against its bench value (whose rounding
/// magnitude is `magnitude`, when there is one).
pub(super) fn judge_value(call: &Call, name: String, direction: Direction, tested: &Tested, bench: &Value, magnitude: Option<&[f64]>, note: &str) -> DetailRow {
    match (&tested.value, bench) {
        (Value::Tensor(t), Value::Tensor(b)) => judge_tensor(call, name, direction, tested, (t, b), magnitude, note),
        // Python numbers are judged like one-element tensors of their type, as the scripts do.
        (t, b) => match (t.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => {
                let dtype = match t {
                    Value::Bool(_) => TDType::Bool,
                    Value::Int(_) => TDType::I64,
                    _ => TDType::F64,
                };
                let judged = judge(call.r.standard, &case(call, (direction, tested.reference_is_self()), false, dtype, &[x], (&[y], &[]), None, None));
                let row = DetailRow {
                    bench_dtype: Some(b.kind().to_string()),
                    tested_dtype: Some(t.kind().to_string()),
                    shape: Some(vec![]),
                    ..DetailRow::uncompared(name, Status::Skip, String::new())
                };
                judged_row(row, &judged, judged.measured.as_ref(), tested, &[note, &tested.source.text(call.r.framework)])
            }
            _ => DetailRow::uncompared(
                name,
                Status::Skip,
                message(&[&format!("cannot judge: output of type {} / {} is not comparable", t.kind(), b.kind()), note, &tested.source.text(call.r.framework)]),
            ),
        },
    }
}

/// A forward row with its loss effect ([`effect`]): `dy` is `None` when
/// the call has no backward entry, `Some(None)` when the entry lacks this
/// output's gradient.
fn with_effect(call: &Call, row: DetailRow, tested: &Tested, bench: &Value, dy: Option<Option<&T>>) -> DetailRow {
    let (Value::Tensor(t), Value::Tensor(b)) = (&tested.value, bench) else { return row };
    if !t.dtype.is_float() || row.shape.is_none() || t.dims() != b.dims() {
        return row;
    }
    let op = call.r.api.op.as_str();
    let recorded = tested.on() == TestedOn::Device;
    // The values are read again only where an effect or a loss is to be had.
    let wanted = recorded && (matches!(dy, Some(Some(_))) || crate::rulebook::get().loss_effect.is_loss(op));
    let (loss, e) = match (dy, recorded) {
        (None, _) => (loss_of(op, t, wanted, None), Effect::none(effect::NO_BACKWARD)),
        (_, false) => (None, Effect::none(effect::NOT_RECORDED)),
        (Some(None), _) => (loss_of(op, t, wanted, None), Effect::none(effect::NO_GRADIENT)),
        (Some(Some(dy)), _) => {
            let both = dy.with_f64(|dy| t.with_f64(|tv| b.with_f64(|bv| (effect::loss(op, tv, Some(dy)), effect::of(op, t.dtype, tv, bv, dy)))));
            match both {
                Ok(Ok(Ok(x))) => x,
                _ => (None, Effect::none("no loss effect: the values cannot be read")),
            }
        }
    };
    DetailRow { effect: e.value, effect_noise: e.noise, effect_note: e.note, loss, ..row }
}

/// The recorded loss of a loss op's output `t` without a loss gradient
/// (`wanted`: the row is recorded and the op a loss).
fn loss_of(op: &str, t: &T, wanted: bool, dy: Option<&[f64]>) -> Option<(f64, f64)> {
    if !wanted {
        return None;
    }
    t.with_f64(|tv| effect::loss(op, tv, dy)).ok().flatten()
}

/// The case of one value for the standard; `emulated` says whether the
/// tested side is the emulated device.
#[allow(clippy::too_many_arguments)]
fn case<'a>(
    call: &'a Call,
    (direction, emulated): (Direction, bool),
    exact_op: bool,
    dtype: TDType,
    tested: &'a [f64],
    (bench, shape): (&'a [f64], &'a [usize]),
    reference: Option<&'a [f64]>,
    magnitude: Option<&'a [f64]>,
) -> Case<'a> {
    let r = call.r;
    Case {
        // msprobe's api standard has no complex rules: a lowered complex call takes the benchmark rule.
        op: if call.lowered { COMPLEX_CALL } else { &r.api.op },
        backward: direction == Direction::Backward,
        exact_op,
        dtype,
        tested,
        bench,
        shape,
        reference,
        cosine_threshold: r.cosine_threshold,
        max_abs_err_threshold: r.max_abs_err_threshold,
        rounding: magnitude.map(|magnitude| {
            let (k, compute) = call.op.rounding().factors(dtype, direction == Direction::Backward);
            let common_error = call.op.common_error().map(|c| (c.float32_epsilons, c.source));
            Rounding { magnitude, k, compute, common_error, operands: (!emulated).then(|| reduced_operands(call, dtype)).flatten() }
        }),
        emulated,
    }
}

/// The rounding of a float32 row's operands the dump's device adds, as
/// (k, u, source): the rulebook's `reduced_operands` of the op's kind
/// (PyTorch's settings: torch_npu's and cuDNN's) on `dump_device`.
fn reduced_operands(call: &Call, dtype: TDType) -> Option<(f64, f64, &'static str)> {
    let r = call.r;
    if dtype != TDType::F32 || r.framework != Framework::PyTorch {
        return None;
    }
    let o = crate::rulebook::get().reduced_operands.get(call.op.reduced_operands()?, r.dump_device.as_str())?;
    Some((o.k, 2f64.powi(-(o.mantissa + 1)), o.source.as_str()))
}

/// `row` with the verdict of `judged` on `tested`, the columns of
/// `measured`, and the Message's parts after the verdict's own.
fn judged_row(row: DetailRow, judged: &Judged, measured: Option<&Metrics>, tested: &Tested, after: &[&str]) -> DetailRow {
    let parts: Vec<&str> = std::iter::once(judged.message.as_str()).chain(after.iter().copied()).collect();
    DetailRow {
        cosine: measured.map(|m| m.cosine),
        max_abs: measured.map(|m| m.max_abs),
        max_rel: measured.map(|m| m.max_rel),
        hist: measured.map(|m| m.rel_hist.to_vec()),
        status: judged.status,
        message: message(&parts),
        rule: judged.rule.name().to_string(),
        metrics: judged.metrics.clone(),
        tested_on: Some(tested.on()),
        ..row
    }
}

/// Judges two tensors.
fn judge_tensor(call: &Call, name: String, direction: Direction, tested: &Tested, (t, b): (&T, &T), magnitude: Option<&[f64]>, note: &str) -> DetailRow {
    let fw = call.r.framework;
    let source = tested.source.text(fw);
    let base = DetailRow {
        bench_dtype: Some(fw.dtype_name(bench_dtype(b.dtype))),
        tested_dtype: Some(fw.dtype_name(t.dtype)),
        shape: Some(b.dims().to_vec()),
        ..DetailRow::uncompared(name, Status::Skip, String::new())
    };
    let skip = |why: String| DetailRow { message: message(&[&why, &source]), ..base.clone() };
    if t.dims() != b.dims() {
        return skip(format!("cannot judge: shape mismatch: tested {:?}, bench {:?}", t.dims(), b.dims()));
    }
    if direction == Direction::Forward && call.op.values_undefined() {
        let tested_on = Some(tested.on());
        return DetailRow { status: Status::Pass, rule: Rule::Shape.name().into(), message: message(&[UNDEFINED_VALUES, &source]), tested_on, ..base };
    }
    // An emulated row is its own reference: its values, read once below.
    let reference = match &tested.reference {
        Some(Value::Tensor(x)) if x.dims() == b.dims() && !tested.reference_is_self() => x.to_f64_vec().ok(),
        _ => None,
    };
    // Data movement is exact forward; its gradients are sums and casts.
    let movement = call.op.moves_data();
    let of_values = |tv: &[f64], bv: &[f64]| {
        let reference = if tested.reference_is_self() && matches!(&tested.reference, Some(Value::Tensor(_))) { Some(tv) } else { reference.as_deref() };
        let case =
            case(call, (direction, tested.reference_is_self()), movement && direction == Direction::Forward, t.dtype, tv, (bv, b.dims()), reference, magnitude);
        let first = judge(call.r.standard, &case);
        let mut judged = first.clone();
        if tested.reference_is_self() && matches!(judged.rule, Rule::Benchmark | Rule::Ulp) {
            judged.message = message(&[&judged.message, SELF_REFERENCE]);
        }
        let mut quirk = "";
        // Seen on gradients only: on a forward output it would hide a permutation bug.
        if direction == Direction::Backward && judged.status == Status::Error && movement && quirks::same_values_other_order(tv, bv) {
            judged = judge_sorted(call, &case);
            quirk = quirks::OTHER_LAYOUT;
        }
        // The columns are the metrics of the values as they are.
        let measured = first.measured.as_ref().filter(|m| m.len > 0);
        judged_row(base.clone(), &judged, measured, tested, &[quirk, note, &source])
    };
    match t.with_f64(|tv| b.with_f64(|bv| of_values(tv, bv))) {
        Ok(Ok(row)) => row,
        Ok(Err(e)) | Err(e) => skip(format!("cannot judge: {e}")),
    }
}

/// [`OTHER_LAYOUT`](quirks::OTHER_LAYOUT): the case judged on sorted
/// values, at least a `warning` (a device layout bug looks the same).
fn judge_sorted(call: &Call, case: &Case) -> Judged {
    let sorted = quirks::sorted;
    let (ts, bs, rs) = (sorted(case.tested), sorted(case.bench), case.reference.map(sorted));
    // The magnitudes are not sorted with the values: judged without them.
    let mut judged = judge(call.r.standard, &Case { tested: &ts, bench: &bs, reference: rs.as_deref(), rounding: None, ..*case });
    judged.status = judged.status.max(Status::Warning);
    judged
}

/// A recorded cross_entropy (l1_loss) input gradient that fails against the
/// op's gradient but matches the gradient w.r.t. the op's inner node
/// ([`crate::ops::Op::inner_gradient`]: `log_softmax`, `abs`) is judged
/// against the latter, and says so.
pub(super) fn inner_node_quirk(call: &Call, grads: &[Tested], rows: &mut [DetailRow]) -> crate::error::Result<()> {
    let Some(inner) = call.op.inner_gradient() else { return Ok(()) };
    let (Some(row), Some(tested)) = (rows.first_mut(), grads.first()) else { return Ok(()) };
    if row.status <= Status::Warning || !call.differentiate.first().copied().unwrap_or(false) {
        return Ok(());
    }
    let (bound, g) = (call.bound(&call.bench)?, call.grad_outputs(&call.bench)?);
    let Some(Some(g)) = g.and_then(|g| g.into_iter().next()) else { return Ok(()) };
    let Some(values) = (inner.grad)(&bound, &g)? else { return Ok(()) };
    let x = bound.tensor("input")?;
    let bench = Value::Tensor(T::from_f64(values, x.dims(), x.dtype, call.bench.compute, &call.bench.device)?);
    let candidate = judge_value(call, row.api_name.clone(), Direction::Backward, tested, &bench, None, inner.note);
    if candidate.status <= Status::Warning {
        *row = candidate;
    }
    Ok(())
}
