//! One API replayed end to end: inputs realized once, the bench (f64) and
//! the tested side run (the dump's recorded device outputs, or the device
//! emulated in the dumped dtypes, per output and with the reason), every
//! output and gradient judged by the run's precision standard, rows
//! produced. Every row's Message says what was compared. Nothing here
//! panics on input: a call the runtime cannot replay is a `skip` row, and a
//! broken input (an unreadable tensor file) is returned as the error.

mod call;
mod quirks;

use crate::compare::Status;
use crate::dtype::TDType;
use crate::error::Result;
use crate::exec::guarded;
use crate::inputs::master;
use crate::limits::Limits;
use crate::ops::Standard as OpStandard;
use crate::report::{DetailRow, ResultRow};
use crate::spec::{DataMode, Replay, Spec};
use crate::standard::{judge, Case, Standard};
use crate::value::{Value, T};

use call::Call;

/// What the bench side is, in every compared row's Message.
const BENCH: &str = "bench: float64 recompute on the CPU";

/// The rows of one replay, all iterations.
#[derive(Debug, Default)]
pub struct Rows {
    /// Details rows, one per output (and per gradient).
    pub details: Vec<DetailRow>,
    /// Result rows, one per iteration.
    pub results: Vec<ResultRow>,
}

/// One tested value and what it is.
struct Tested {
    value: Value,
    /// `tested: ...`, for the Message.
    what: String,
    /// The op run in the tested dtype on the CPU (the emulated device), for
    /// the benchmark standard's ratios.
    reference: Option<Value>,
    /// The reference is this very value (the tested side is the emulated
    /// device): rules that compare with the reference cannot fail, and the
    /// Message says so.
    reference_is_self: bool,
}

/// Note on rows whose reference run is the tested value itself.
/// The Message of an output whose values are undefined (`torch.empty`):
/// what was judged instead. The scripts say the same.
const UNDEFINED_VALUES: &str = "values undefined (uninitialized memory): only the shape is compared";

const SELF_REFERENCE: &str = "the reference run is the tested run itself, so this rule cannot fail here";

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
    let mut rows = Rows::default();
    for iteration in 0..r.iterations.max(1) {
        // Reading inputs and comparing run outside `exec`'s guard: guard them too.
        let (forward, backward) = match guarded(|| replay_once(r, iteration as u64, limits)) {
            Ok(x) => x,
            Err(e) if e.is_input() => return Err(e),
            Err(e) => {
                let direction = if r.grad_outputs.is_some() { "backward" } else { "forward" };
                let first = e.to_string().lines().next().unwrap_or("").to_string();
                let row = DetailRow::uncompared(format!("{}.{direction}", r.api), Status::Skip, format!("cannot replay here: {first}"));
                if r.grad_outputs.is_some() { (vec![], vec![row]) } else { (vec![row], vec![]) }
            }
        };
        let message: Vec<String> = forward.iter().chain(&backward).filter(|d| d.status != Status::Pass && !d.message.is_empty()).map(|d| format!("{}: {}", d.api_name, d.message)).collect();
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

/// The bench's dtype label: floats are computed in float64.
fn bench_dtype(d: TDType) -> TDType {
    if d.is_float() {
        TDType::F64
    } else {
        d
    }
}

/// Joins the non-empty parts of a Message with `"; "`.
fn message(parts: &[&str]) -> String {
    parts.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join("; ")
}

/// Judges one tested value against its bench value.
fn compare_values(call: &Call, name: String, backward: bool, tested: &Tested, bench: &Value, note: &str) -> DetailRow {
    let r = call.r;
    let fw = r.framework;
    let row = |status, text: String| DetailRow::uncompared(name.clone(), status, message(&[&text, note, &tested.what, BENCH]));
    match (&tested.value, bench) {
        (Value::Tensor(t), Value::Tensor(b)) => {
            let base = DetailRow {
                bench_dtype: Some(fw.dtype_name(bench_dtype(b.dtype))),
                tested_dtype: Some(fw.dtype_name(t.dtype)),
                shape: Some(b.dims().to_vec()),
                ..row(Status::Skip, String::new())
            };
            // Rows that cannot be judged are the tool's coverage: skips.
            if t.dims() != b.dims() {
                return DetailRow { message: message(&[&format!("cannot judge: shape mismatch: tested {:?}, bench {:?}", t.dims(), b.dims()), &tested.what, BENCH]), ..base };
            }
            if !backward && call.op.standard == OpStandard::Undefined {
                return DetailRow { status: Status::Pass, rule: "shape".into(), message: message(&[UNDEFINED_VALUES, &tested.what, BENCH]), ..base };
            }
            let values = |x: &T| x.to_f64_vec();
            let (tv, bv) = match (values(t), values(b)) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => return DetailRow { message: message(&[&format!("cannot judge: {e}"), &tested.what, BENCH]), ..base },
            };
            let reference = match &tested.reference {
                Some(Value::Tensor(x)) if x.dims() == b.dims() => values(x).ok(),
                _ => None,
            };
            let case = Case {
                api: &r.api.op,
                backward,
                // Data movement is exact forward; its gradients are sums and casts.
                exact_op: !backward && call.op.standard == OpStandard::Exact,
                dtype: t.dtype,
                tested: &tv,
                bench: &bv,
                reference: reference.as_deref(),
                cosine_threshold: r.cosine_threshold,
                max_abs_err_threshold: r.max_abs_err_threshold,
            };
            let mut judged = judge(r.standard, &case);
            if tested.reference_is_self && matches!(judged.rule, "benchmark" | "ulp") {
                judged.message = message(&[&judged.message, SELF_REFERENCE]);
            }
            let mut quirk = "";
            // Seen on gradients only: on a forward output it would hide a permutation bug.
            if backward && judged.status == Status::Error && call.op.standard == OpStandard::Exact && quirks::same_values_other_order(&tv, &bv) {
                let sorted = |x: &[f64]| {
                    let mut v = x.to_vec();
                    v.sort_by(f64::total_cmp);
                    v
                };
                let (ts, bs, rs) = (sorted(&tv), sorted(&bv), reference.as_deref().map(sorted));
                judged = judge(r.standard, &Case { tested: &ts, bench: &bs, reference: rs.as_deref(), ..case });
                judged.status = judged.status.max(Status::Warning);
                quirk = quirks::OTHER_LAYOUT;
            }
            let (cosine, max_abs, max_rel, hist) = match crate::compare::compare(&tv, &bv) {
                Ok(m) if m.len > 0 => (Some(m.cosine), Some(m.max_abs), Some(m.max_rel), Some(m.rel_hist.to_vec())),
                _ => (None, None, None, None),
            };
            DetailRow {
                cosine,
                hist,
                max_abs,
                max_rel,
                status: judged.status,
                message: message(&[&judged.message, quirk, note, &tested.what, BENCH]),
                rule: judged.rule.to_string(),
                metrics: judged.metrics,
                ..base
            }
        }
        // Python numbers are judged like one-element tensors of their type, as the scripts do.
        (t, b) => match (t.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => {
                let dtype = match t {
                    Value::Bool(_) => TDType::Bool,
                    Value::Int(_) => TDType::I64,
                    _ => TDType::F64,
                };
                let case = Case {
                    api: &r.api.op,
                    backward,
                    exact_op: false,
                    dtype,
                    tested: &[x],
                    bench: &[y],
                    reference: None,
                    cosine_threshold: r.cosine_threshold,
                    max_abs_err_threshold: r.max_abs_err_threshold,
                };
                let judged = judge(r.standard, &case);
                let m = crate::compare::compare(&[x], &[y]).ok();
                DetailRow {
                    bench_dtype: Some(b.kind().to_string()),
                    tested_dtype: Some(t.kind().to_string()),
                    shape: Some(vec![]),
                    cosine: m.as_ref().map(|m| m.cosine),
                    max_abs: m.as_ref().map(|m| m.max_abs),
                    max_rel: m.as_ref().map(|m| m.max_rel),
                    hist: m.as_ref().map(|m| m.rel_hist.to_vec()),
                    rule: judged.rule.to_string(),
                    metrics: judged.metrics,
                    ..row(judged.status, judged.message)
                }
            }
            _ => row(Status::Skip, format!("cannot judge: output of type {} / {} is not comparable", t.kind(), b.kind())),
        },
    }
}

/// The rows of one direction; outputs `None` on both sides have none (as in the scripts).
fn compare_lists(call: &Call, direction: &str, tested: &[Tested], bench: &[Value], note: &str) -> Vec<DetailRow> {
    let n = tested.len().max(bench.len());
    (0..n)
        .filter_map(|i| {
            let name = format!("{}.{direction}.output.{i}", call.r.api);
            match (tested.get(i), bench.get(i)) {
                (Some(Tested { value: Value::None, .. }), Some(Value::None)) => None,
                (Some(t), Some(b)) => Some(compare_values(call, name, direction == "backward", t, b, note)),
                _ => Some(DetailRow::uncompared(name, Status::Skip, message(&[&format!("cannot judge: output count differs: tested {}, bench {}", tested.len(), bench.len()), BENCH]))),
            }
        })
        .collect()
}

/// A recorded tensor, or why there is none.
fn recorded(spec: Option<&Spec>, call: &Call, what: &str) -> Result<std::result::Result<Value, String>> {
    Ok(match spec {
        Some(Spec::Tensor(t)) => match &t.data {
            // A path that exists but cannot be read (a folder) is a broken input.
            Some(p) if p.exists() => {
                let m = master(t, DataMode::Real, (0, 0, 0))?;
                Ok(Value::Tensor(T::from_f64(m.values, &m.shape, m.dtype, call.device.compute)?))
            }
            Some(p) => Err(format!("no recorded {what}: {} is missing", p.display())),
            None => Err(format!("no recorded {what}: the dump has no file for it")),
        },
        Some(Spec::None) => Err(format!("no recorded {what}: the dump recorded None")),
        Some(other) => Err(format!("no recorded {what}: the dump recorded a {}", spec_kind(other))),
        None => Err(format!("the dump's {what}s do not line up with the call's")),
    })
}

/// Where each positional input's gradient sits in the dump's list of input
/// gradients (`None` for inputs without one), for the first layout whose
/// length matches the list: PyTorch dumps list the floating tensors marked
/// `requires_grad` (batch_norm's running statistics have none); older dumps
/// and unmarked ones, every floating tensor (none for layer_norm's
/// normalized_shape or cross_entropy's target); MindSpore dumps, every
/// tensor (a `null` slot for an integer target). `None` when no layout fits.
fn gradient_slots(r: &Replay) -> Option<Vec<Option<usize>>> {
    let marked = |s: &Spec| matches!(s, Spec::Tensor(t) if t.dtype.is_float() && t.requires_grad == Some(true));
    let float = |s: &Spec| matches!(s, Spec::Tensor(t) if t.dtype.is_float());
    let tensor = |s: &Spec| matches!(s, Spec::Tensor(_));
    let layouts: [&dyn Fn(&Spec) -> bool; 3] = [&marked, &float, &tensor];
    layouts.iter().find_map(|keep| {
        let mut next = 0;
        let slots: Vec<Option<usize>> = r
            .args
            .iter()
            .map(|s| {
                keep(s).then(|| {
                    next += 1;
                    next - 1
                })
            })
            .collect();
        (next == r.grad_inputs.len() && next > 0).then_some(slots)
    })
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

/// `tested: emulated device ...` with the reason.
fn emulated(why: &str) -> String {
    format!("tested: emulated device in the dumped dtypes ({why})")
}

/// Why the whole call is emulated, when it is (random data, or asked to).
fn emulated_call(r: &Replay) -> Option<&'static str> {
    match (r.data_mode, r.use_recorded) {
        (DataMode::Random, _) => Some("random_data has no device values"),
        (DataMode::Real, false) => Some("emulation requested"),
        (DataMode::Real, true) => None,
    }
}

fn replay_once(r: &Replay, iteration: u64, limits: &Limits) -> Result<(Vec<DetailRow>, Vec<DetailRow>)> {
    let mut call = Call::new(r, iteration)?;
    let max_elements = usize::try_from(limits.tensor_bytes / crate::limits::BYTES_PER_ELEMENT).unwrap_or(usize::MAX);
    call.bench.max_elements = max_elements;
    call.device.max_elements = max_elements;
    let bench = call.run(&call.bench)?;
    let whole = emulated_call(r);
    // The recorded outputs and gradients, or why each is missing.
    let (rec_out, rec_grads) = match whole {
        Some(_) => (vec![], vec![]),
        None => {
            let outs = (0..bench.outputs.len()).map(|i| recorded(r.outputs.get(i), &call, "output")).collect::<Result<Vec<_>>>()?;
            let grads = if r.grad_outputs.is_some() {
                // The dump's list of input gradients, positional inputs only
                // (a differentiated keyword has none), laid out the way the
                // dump's length says (see `gradient_slots`).
                let slots = gradient_slots(r);
                let picked: Vec<Option<usize>> = call.differentiate.iter().enumerate().filter(|(_, &d)| d).map(|(i, _)| slots.as_ref().and_then(|s| s.get(i).copied().flatten())).collect();
                picked.iter().map(|&k| recorded(k.and_then(|k| r.grad_inputs.get(k)), &call, "gradient")).collect::<Result<Vec<_>>>()?
            } else {
                vec![]
            };
            (outs, grads)
        }
    };
    // Recorded gradients line up when the dump's list has a known layout,
    // every differentiated input is positional, and each recorded one has
    // its input's shape (a broadcast matmul's does not). A missing file is
    // fine: that gradient alone is emulated.
    let one_per_input = gradient_slots(r).is_some() && call.differentiate.iter().skip(r.args.len()).all(|d| !d);
    let aligned = match (&bench.grads, whole) {
        (Some(b), None) => one_per_input && rec_grads.len() == b.len() && rec_grads.iter().zip(b).all(|(g, b)| match g {
            Ok(Value::Tensor(t)) => t.dims() == b.dims(),
            Ok(_) => false,
            Err(_) => true,
        }),
        _ => false,
    };
    // A random op's mask is unknown without its recorded output: the
    // recorded gradients cannot be replayed then.
    let mask_unknown = call.op.random && whole.is_none() && !call.mask_known;
    let grads_recorded = aligned && !mask_unknown && !call.noop_cast;
    let need_device = whole.is_some()
        || rec_out.iter().any(|o| o.is_err())
        || (bench.grads.is_some() && !(grads_recorded && rec_grads.iter().all(|g| g.is_ok())))
        || r.standard == Standard::Api;
    let device = if need_device { Some(call.run(&call.device)?) } else { None };
    let device_out = |i: usize| device.as_ref().and_then(|d| d.outputs.get(i).cloned());
    let device_grad = |i: usize| device.as_ref().and_then(|d| d.grads.as_ref()).and_then(|g| g.get(i).cloned()).map(Value::Tensor);

    // A recorded value is judged against the emulated device as the
    // reference run; an emulated one is its own reference, and says so.
    let side = |recorded: std::result::Result<&Value, &str>, emulated_value: Option<Value>, kind: &str| -> Tested {
        match recorded {
            Ok(v) => Tested { value: v.clone(), what: format!("tested: device {kind} recorded in the dump"), reference: emulated_value, reference_is_self: false },
            Err(why) => Tested { value: emulated_value.clone().unwrap_or(Value::None), what: emulated(why), reference: emulated_value, reference_is_self: true },
        }
    };
    let pick = |rec: Option<&std::result::Result<Value, String>>| -> std::result::Result<Value, String> {
        match (rec, whole) {
            (Some(r), _) => r.clone(),
            (None, Some(why)) => Err(why.to_string()),
            (None, None) => Err("no recorded value".to_string()),
        }
    };
    let outputs: Vec<Tested> = (0..bench.outputs.len())
        .map(|i| {
            let rec = pick(rec_out.get(i));
            side(rec.as_ref().map_err(String::as_str), device_out(i), "output")
        })
        .collect();
    let forward_note = [if call.identity { quirks::DROPOUT_IDENTITY } else { "" }, call.autocast_note.as_deref().unwrap_or("")].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join("; ");
    let forward_note = forward_note.as_str();
    let forward = compare_lists(&call, "forward", &outputs, &bench.outputs, forward_note);

    let Some(bench_grads) = bench.grads.as_ref() else { return Ok((forward, vec![])) };
    let bench_grads: Vec<Value> = bench_grads.iter().cloned().map(Value::Tensor).collect();
    let grads: Vec<Tested> = (0..bench_grads.len())
        .map(|i| {
            let rec = if whole.is_some() || grads_recorded {
                pick(rec_grads.get(i))
            } else if mask_unknown {
                Err("a random op's mask is unknown without its recorded output".to_string())
            } else if call.noop_cast {
                Err(quirks::NOOP_CAST.to_string())
            } else {
                Err("the dump's gradients do not line up with the call's".to_string())
            };
            side(rec.as_ref().map_err(String::as_str), device_grad(i), "gradient")
        })
        .collect();
    let note = [forward_note, call.mask_note.as_deref().unwrap_or("")].iter().filter(|s| !s.is_empty()).copied().collect::<Vec<_>>().join("; ");
    let mut backward = compare_lists(&call, "backward", &grads, &bench_grads, &note);
    if grads_recorded && matches!(rec_grads.first(), Some(Ok(_))) {
        inner_node_quirk(&call, &grads, &mut backward)?;
    }
    Ok((forward, backward))
}

/// A recorded cross_entropy (l1_loss) input gradient that fails against the
/// op's gradient but matches the gradient w.r.t. the inner `log_softmax`
/// (`abs`) output is judged against the latter, and says so.
fn inner_node_quirk(call: &Call, grads: &[Tested], rows: &mut [DetailRow]) -> Result<()> {
    type InnerGrad = fn(&crate::bind::Bound, &T) -> Result<Option<Vec<f64>>>;
    let (inner_grad, note): (InnerGrad, &str) = match call.r.api.op.rsplit('.').next() {
        Some("cross_entropy") => (quirks::cross_entropy_inner_grad, quirks::CROSS_ENTROPY_INNER),
        Some("l1_loss") => (quirks::l1_loss_inner_grad, quirks::L1_LOSS_INNER),
        _ => return Ok(()),
    };
    let (Some(row), Some(tested)) = (rows.first_mut(), grads.first()) else { return Ok(()) };
    if row.status <= Status::Warning || !call.differentiate.first().copied().unwrap_or(false) {
        return Ok(());
    }
    let (bound, g) = (call.bound(&call.bench)?, call.grad_outputs(&call.bench)?);
    let Some(Some(g)) = g.and_then(|g| g.into_iter().next()) else { return Ok(()) };
    let Some(inner) = inner_grad(&bound, &g)? else { return Ok(()) };
    let x = bound.tensor("input")?;
    let inner = Value::Tensor(T::from_f64(inner, x.dims(), x.dtype, call.bench.compute)?);
    let candidate = compare_values(call, row.api_name.clone(), true, tested, &inner, note);
    if candidate.status <= Status::Warning {
        *row = candidate;
    }
    Ok(())
}
