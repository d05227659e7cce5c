//! One API replayed end to end: inputs realized once, the bench (f64) and
//! the device (emulated in the dumped dtypes, or the recorded outputs of a
//! tensor dump) run, every output and gradient compared, rows produced.
//! Nothing here panics on input: every failure becomes an `error` row.

use crate::compare::{compare, Status};
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::exec::{guarded, run, Outcome};
use crate::inputs::{master, realize, Realized};
use crate::ops::{lookup, Op, Standard};
use crate::report::{DetailRow, ResultRow};
use crate::spec::{DataMode, Replay, Spec};
use crate::value::{Value, T};

/// Message of backward rows whose tested gradients had to be emulated.
const GRADIENTS_EMULATED: &str = "the dump's gradients do not line up with the inputs; gradients compared with an emulated device run";

/// The rows of one replay, all iterations.
#[derive(Debug, Default)]
pub struct Rows {
    /// Details rows, one per output (and per gradient).
    pub details: Vec<DetailRow>,
    /// Result rows, one per iteration.
    pub results: Vec<ResultRow>,
}

/// Whether a tensor input is differentiated: float tensors the dump marks
/// `requires_grad`, or all float tensors when it marks none.
fn differentiate(inputs: &[&Realized]) -> Vec<bool> {
    let any_marked = inputs.iter().any(|r| matches!(r, Realized::Tensor(_, Some(true))));
    inputs
        .iter()
        .map(|r| match r {
            Realized::Tensor(m, marked) if m.dtype.is_float() => !any_marked || *marked == Some(true),
            _ => false,
        })
        .collect()
}

/// The bench's dtype label: floats are computed in float64.
fn bench_dtype(d: TDType) -> TDType {
    if d.is_float() {
        TDType::F64
    } else {
        d
    }
}

fn error_row(name: String, message: String) -> DetailRow {
    DetailRow { api_name: name, bench_dtype: None, tested_dtype: None, shape: None, cosine: None, max_abs: None, max_rel: None, status: Status::Error, message }
}

/// Compares one tested value with one bench value.
fn compare_values(r: &Replay, name: String, tested: &Value, bench: &Value, standard: Standard) -> DetailRow {
    let fw = r.framework;
    match (tested, bench) {
        (Value::Tensor(t), Value::Tensor(b)) => {
            let mut row = DetailRow {
                api_name: name,
                bench_dtype: Some(fw.dtype_name(bench_dtype(b.dtype))),
                tested_dtype: Some(fw.dtype_name(t.dtype)),
                shape: Some(b.dims().to_vec()),
                cosine: None,
                max_abs: None,
                max_rel: None,
                status: Status::Error,
                message: String::new(),
            };
            if t.dims() != b.dims() {
                row.message = format!("shape mismatch: tested {:?}, bench {:?}", t.dims(), b.dims());
                return row;
            }
            let (tv, bv) = match (t.to_f64_vec(), b.to_f64_vec()) {
                (Ok(x), Ok(y)) => (x, y),
                (Err(e), _) | (_, Err(e)) => {
                    row.message = e.to_string();
                    return row;
                }
            };
            match compare(&tv, &bv) {
                Ok(m) => {
                    let (mut status, mut message) = m.status(r.cosine_threshold, r.max_abs_err_threshold);
                    if m.len > 0 {
                        row.cosine = Some(m.cosine);
                        row.max_abs = Some(m.max_abs);
                        row.max_rel = Some(m.max_rel);
                    }
                    let exact = standard == Standard::Exact || !b.dtype.is_float();
                    if exact && status == Status::Pass && (m.max_abs != 0.0 || m.nonfinite_differ) {
                        status = Status::Error;
                        message = format!("values differ (max absolute error {:e}) where they must be identical", m.max_abs);
                    }
                    row.status = status;
                    row.message = message;
                }
                Err(e) => row.message = e.to_string(),
            }
            row
        }
        (t, b) => match (t.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => {
                let equal = x == y || (x.is_nan() && y.is_nan());
                let close = (x - y).abs() < r.max_abs_err_threshold;
                DetailRow {
                    api_name: name,
                    bench_dtype: Some(b.kind().to_string()),
                    tested_dtype: Some(t.kind().to_string()),
                    shape: Some(vec![]),
                    cosine: None,
                    max_abs: Some((x - y).abs()),
                    max_rel: None,
                    status: if equal || close { Status::Pass } else { Status::Error },
                    message: if equal || close { String::new() } else { format!("values differ: tested {x}, bench {y}") },
                }
            }
            _ if matches!((t, b), (Value::None, Value::None)) => DetailRow { status: Status::Pass, message: "both None".into(), ..error_row(name, String::new()) },
            _ => error_row(name, format!("output of type {} / {} is not comparable", t.kind(), b.kind())),
        },
    }
}

fn compare_lists(r: &Replay, direction: &str, tested: &[Value], bench: &[Value], standard: Standard) -> Vec<DetailRow> {
    let n = tested.len().max(bench.len());
    (0..n)
        .map(|i| {
            let name = format!("{}.{direction}.output.{i}", r.api);
            match (tested.get(i), bench.get(i)) {
                (Some(t), Some(b)) => compare_values(r, name, t, b, standard),
                _ => error_row(name, format!("output count differs: tested {}, bench {}", tested.len(), bench.len())),
            }
        })
        .collect()
}

/// The recorded tensors of a spec list, as device-side values.
fn recorded(specs: &[Spec], ctx: &Ctx) -> Result<Vec<Value>> {
    specs
        .iter()
        .map(|s| match s {
            Spec::Tensor(t) => {
                let m = master(t, DataMode::Real, (0, 0, 0))?;
                Ok(Value::Tensor(T::from_f64(m.values, &m.shape, m.dtype, ctx.compute)?))
            }
            _ => Ok(Value::None),
        })
        .collect()
}

fn verdict(rows: &[DetailRow]) -> Option<Status> {
    if rows.is_empty() {
        None
    } else if rows.iter().all(|r| r.status == Status::Pass) {
        Some(Status::Pass)
    } else {
        Some(Status::Error)
    }
}

/// Replays `r` for all its iterations and returns the report rows.
pub fn replay(r: &Replay) -> Rows {
    let mut rows = Rows::default();
    for iteration in 0..r.iterations.max(1) {
        // Reading inputs and comparing run outside `exec`'s guard: guard them too.
        let (forward, backward) = match guarded(|| replay_once(r, iteration as u64)) {
            Ok(x) => x,
            Err(e) => {
                let direction = if r.grad_outputs.is_some() { "backward" } else { "forward" };
                let row = error_row(format!("{}.{direction}", r.api), e.to_string().lines().next().unwrap_or("").to_string());
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
    rows
}

/// One call with its inputs realized once, ready to run on either side.
struct Call<'a> {
    r: &'a Replay,
    op: &'static Op,
    args: Vec<Realized>,
    kwargs: Vec<(String, Realized)>,
    grads: Option<Vec<Realized>>,
    /// Which top-level inputs (positional, then keyword) get gradients.
    differentiate: Vec<bool>,
    bench: Ctx,
    device: Ctx,
}

impl<'a> Call<'a> {
    fn new(r: &'a Replay, iteration: u64) -> Result<Call<'a>> {
        let op = lookup(r.framework, &r.api.op).ok_or_else(|| Error::UnknownOp(r.api.op.clone()))?;
        // Tensors are numbered across the call (arguments, keywords, gradients):
        // each gets its own random stream.
        let mut ordinal = 0;
        let mut one = |s: &Spec| realize(s, r.data_mode, r.seed, iteration, &mut ordinal);
        let args = r.args.iter().map(&mut one).collect::<Result<Vec<_>>>()?;
        let kwargs = r.kwargs.iter().map(|(k, s)| Ok((k.clone(), one(s)?))).collect::<Result<Vec<_>>>()?;
        let grads = match &r.grad_outputs {
            Some(g) => Some(g.iter().map(&mut one).collect::<Result<Vec<_>>>()?),
            None => None,
        };
        let slots: Vec<&Realized> = args.iter().chain(kwargs.iter().map(|(_, v)| v)).collect();
        let differentiate = differentiate(&slots);
        let widest = slots.iter().filter_map(|s| s.widest_float()).max_by_key(|d| d.bits()).unwrap_or(TDType::F32);
        let seed = r.seed ^ iteration;
        let (mut bench, mut device) = (Ctx::bench(seed), Ctx::device(widest, seed));
        // A random op replayed against a tensor dump reuses the recorded mask:
        // dropout zeroes exactly the elements that are zero in its recorded output.
        if op.random && r.use_recorded && r.data_mode == DataMode::Real {
            if let Some(Spec::Tensor(t)) = r.outputs.first() {
                let out = master(t, DataMode::Real, (0, 0, 0))?;
                let mask: Vec<bool> = out.values.iter().map(|&v| v != 0.0).collect();
                bench.keep_mask = Some(std::sync::Arc::new(mask));
                device.keep_mask = bench.keep_mask.clone();
            }
        }
        Ok(Call { r, op, args, kwargs, grads, differentiate, bench, device })
    }

    /// Runs the op on one side (forward, and backward when gradients were dumped).
    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        let args = self.args.iter().map(|a| a.on(ctx)).collect::<Result<Vec<_>>>()?;
        let kwargs = self.kwargs.iter().map(|(k, v)| Ok((k.clone(), v.on(ctx)?))).collect::<Result<Vec<_>>>()?;
        let grads = match &self.grads {
            Some(g) => Some(
                g.iter()
                    .map(|x| match x.on(ctx)? {
                        Value::Tensor(t) => Ok(Some(t)),
                        _ => Ok(None),
                    })
                    .collect::<Result<Vec<Option<T>>>>()?,
            ),
            None => None,
        };
        run(self.op, &self.r.api.op, args, kwargs, &self.differentiate, grads.as_deref(), ctx)
    }

    /// Whether the dump recorded every output as a readable file, so the
    /// recorded run can be the tested side. In-place APIs record `None`, and
    /// trimmed dumps may lack the files: those are emulated.
    fn has_recorded_outputs(&self) -> bool {
        let r = self.r;
        r.use_recorded
            && r.data_mode == DataMode::Real
            && !r.outputs.is_empty()
            && r.outputs.iter().all(|s| matches!(s, Spec::Tensor(t) if t.data.as_ref().is_some_and(|p| p.is_file())))
    }
}

/// The tested side's results, and a note for its backward rows.
struct Tested {
    outputs: Vec<Value>,
    grads: Option<Vec<Value>>,
    note: Option<&'static str>,
}

fn tensors(grads: Option<Vec<T>>) -> Option<Vec<Value>> {
    grads.map(|g| g.into_iter().map(Value::Tensor).collect())
}

/// Strategy 1: the device emulated in the dumped dtypes.
fn emulated(call: &Call) -> Result<Tested> {
    let device = call.run(&call.device)?;
    Ok(Tested { outputs: device.outputs, grads: tensors(device.grads), note: None })
}

/// Strategy 2: the dump's recorded outputs (and gradients, when they line
/// up with the differentiated inputs; else gradients are emulated, with a note).
fn recorded_run(call: &Call, bench: &Outcome) -> Result<Tested> {
    let outputs = recorded(&call.r.outputs, &call.device)?;
    let Some(bench_grads) = bench.grads.as_ref().filter(|_| call.r.grad_outputs.is_some()) else {
        return Ok(Tested { outputs, grads: None, note: None });
    };
    // Missing files (trimmed dumps) make the recorded gradients unusable too.
    let rec = recorded(&call.r.grad_inputs, &call.device).unwrap_or_default();
    // The dump's backward output lists one gradient per positional input,
    // but PyTorch dumps do not always follow the inputs: use them only
    // when every one matches its input's gradient in shape.
    let picked: Vec<Value> = call.differentiate.iter().enumerate().filter(|(_, &d)| d).map(|(i, _)| rec.get(i).cloned().unwrap_or(Value::None)).collect();
    let usable = picked.len() == bench_grads.len() && picked.iter().zip(bench_grads).all(|(p, b)| matches!(p, Value::Tensor(t) if t.dims() == b.dims()));
    if usable {
        return Ok(Tested { outputs, grads: Some(picked), note: None });
    }
    let device = call.run(&call.device)?;
    Ok(Tested { outputs, grads: tensors(device.grads), note: Some(GRADIENTS_EMULATED) })
}

fn replay_once(r: &Replay, iteration: u64) -> Result<(Vec<DetailRow>, Vec<DetailRow>)> {
    let call = Call::new(r, iteration)?;
    let bench = call.run(&call.bench)?;
    let tested = if call.has_recorded_outputs() { recorded_run(&call, &bench)? } else { emulated(&call)? };
    let forward = compare_lists(r, "forward", &tested.outputs, &bench.outputs, call.op.standard);
    let backward = match (tested.grads, tensors(bench.grads)) {
        (Some(t), Some(b)) => {
            let mut rows = compare_lists(r, "backward", &t, &b, Standard::Accuracy);
            if let Some(note) = tested.note {
                for row in rows.iter_mut().filter(|row| row.message.is_empty()) {
                    row.message = note.to_string();
                }
            }
            rows
        }
        _ => vec![],
    };
    Ok((forward, backward))
}
