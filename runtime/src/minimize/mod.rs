//! The smallest repro of a failing call (`replay --minimize`): the call's
//! tensors cut along the dimensions its op treats independently
//! ([`axes`], from the op table's [`crate::ops::Slicing`]), halving one
//! axis at a time and keeping the half whose replay still fails, at most a
//! budget of replays. The recorded device values (outputs, gradients) are
//! cut the same way, so the device's own values stay the evidence: nothing
//! is invented, and an axis that would leave a recorded tensor whole is
//! not taken. A call that fails in its forward is minimized forward only.

mod axes;
mod cut;

pub use axes::Slot;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::compare::Status;
use crate::error::{Error, Result};
use crate::io::{read_tensor_shaped, write_npy, HostTensor};
use crate::limits::Limits;
use crate::replay::{replay_within, Rows};
use crate::report::TestedOn;
use crate::spec::{Replay, Spec, TensorSpec};
use axes::{tensor, Axis};

/// A tensor file of the minimized call, as written beside its repro.
#[derive(Debug, Clone)]
pub struct Written {
    /// The dump's file it was cut from.
    pub original: PathBuf,
    /// The `.npy` file written.
    pub file: PathBuf,
    /// Its shape.
    pub shape: Vec<usize>,
    /// msprobe's Max, Min, Mean and Norm of it (`None`: empty).
    pub stats: Option<[f64; 4]>,
}

/// What minimizing one failing call found.
#[derive(Debug)]
pub struct Minimized {
    /// The smallest call found still failing (forward only when its
    /// forward failed), its tensors in the folder given.
    pub call: Replay,
    /// That call's rows.
    pub rows: Rows,
    /// Elements of its inputs (and of the output gradients it takes) before.
    pub before: u128,
    /// ... and after.
    pub after: u128,
    /// Replays used, the first verdict included.
    pub replays: u32,
    /// The window of each input and output, `name[0:1, :, 0:64]`
    /// (`output[0][...]` for the outputs).
    pub slices: Vec<String>,
    /// Why it kept its size, when it did.
    pub kept: Option<String>,
    /// The tensor files written for it (none when it kept its size).
    pub written: Vec<Written>,
    /// The int arguments the cut changed (a `head_num`), as `call` holds them.
    pub counts: Vec<Slot>,
}

/// A call minimized, or found passing (never minimized).
#[derive(Debug)]
pub enum Outcome {
    /// No row of the call judged on recorded device values is an `error`:
    /// it has nothing to shrink.
    Passing(Rows),
    /// The failing call and its smallest form.
    Failing(Box<Minimized>),
}

/// Shrinks `r` while a replay of it still has an `error`, judged on the
/// recorded device values, in a row that had one, using at most `budget` replays under `limits`; the minimized call's
/// tensors are written into `dir` (scratch attempts under `dir/.attempt`,
/// removed after).
pub fn minimize(r: &Replay, budget: u32, limits: &Limits, dir: &Path) -> Result<Outcome> {
    let rows = replay_within(r, limits)?;
    let failing: Vec<String> = failing(&rows);
    if failing.is_empty() {
        return Ok(Outcome::Passing(rows));
    }
    let forward: Vec<String> = failing.iter().filter(|n| n.contains(".forward.")).cloned().collect();
    let (base, failing) = if !forward.is_empty() && r.grad_outputs.is_some() {
        (Replay { grad_outputs: None, grad_inputs: vec![], ..r.clone() }, forward)
    } else {
        (r.clone(), failing)
    };
    let before = input_elements(&base);
    let op = crate::ops::require(r.framework, &r.api.name())?;
    let kept = |why: String, replays| Minimized {
        call: base.clone(),
        rows: Rows::default(),
        before,
        after: before,
        replays,
        slices: vec![],
        kept: Some(why),
        written: vec![],
        counts: vec![],
    };
    let complex =
        base.args.iter().chain(base.kwargs.iter().map(|(_, s)| s)).chain(&base.outputs).any(|s| matches!(s, Spec::Tensor(t) if !t.dtype.is_computable()));
    if complex {
        return Ok(Outcome::Failing(Box::new(Minimized { rows, ..kept("a call with complex tensors is not cut".into(), 1) })));
    }
    let axes = match axes::axes(op, &base) {
        Ok(axes) => axes,
        Err(why) => return Ok(Outcome::Failing(Box::new(Minimized { rows, ..kept(why, 1) }))),
    };
    let full = read_cut_tensors(&base, &axes)?;
    let scratch = dir.join(".attempt");
    crate::atomic::create_dir(&scratch).map_err(|e| Error::Input(e.to_string()))?;
    let mut search = Search { base: &base, axes: &axes, full: &full, limits, failing: &failing, replays: 1, budget };
    let found = search.run(&scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    let (windows, rows) = match found? {
        Some(x) => x,
        None => return Ok(Outcome::Failing(Box::new(Minimized { rows, ..kept("no cut along any axis kept the error".into(), search.replays) }))),
    };
    let (call, written) = write_call(&base, &axes, &windows, &full, dir)?;
    let slices = slices(op, &base, &axes, &windows);
    let counts = axes.iter().zip(&windows).filter(|(a, &(s, e))| (s, e) != (0, a.len)).flat_map(|(a, _)| a.counts.iter().copied()).collect();
    let after = input_elements(&call);
    Ok(Outcome::Failing(Box::new(Minimized { before, after, call, rows, replays: search.replays, slices, kept: None, written, counts })))
}

/// The names of the rows that are errors judged on the device's recorded
/// values: an emulated row's error has no device value to keep as evidence.
fn failing(rows: &Rows) -> Vec<String> {
    rows.details.iter().filter(|d| d.status == Status::Error && d.tested_on == Some(TestedOn::Device)).map(|d| d.api_name.clone()).collect()
}

/// Elements of a call's inputs: its arguments, and the output gradients a backward takes.
fn input_elements(r: &Replay) -> u128 {
    let specs = r.args.iter().chain(r.kwargs.iter().map(|(_, s)| s)).chain(r.grad_outputs.iter().flatten());
    specs.flat_map(Spec::tensors).map(|t| t.shape.iter().map(|&d| d as u128).product::<u128>()).sum()
}

/// The whole tensors of every slot some axis cuts, read once.
fn read_cut_tensors(r: &Replay, axes: &[Axis]) -> Result<HashMap<Slot, HostTensor>> {
    let mut full = HashMap::new();
    for (slot, _, _) in axes.iter().flat_map(|a| a.windows(0, a.len)) {
        if full.contains_key(&slot) {
            continue;
        }
        let t = tensor(r, slot).ok_or_else(|| Error::Input(format!("{slot:?}: not a tensor")))?;
        let path = t.data.as_ref().ok_or_else(|| Error::Input(format!("{slot:?}: minimizing needs the tensor files of a tensor dump")))?;
        full.insert(slot, read_tensor_shaped(path, &t.shape)?);
    }
    Ok(full)
}

/// The halving search over the axes, within the replay budget.
struct Search<'a> {
    base: &'a Replay,
    axes: &'a [Axis],
    full: &'a HashMap<Slot, HostTensor>,
    limits: &'a Limits,
    failing: &'a [String],
    replays: u32,
    budget: u32,
}

/// One window `start..end` per axis.
type Windows = Vec<(usize, usize)>;

impl Search<'_> {
    /// The smallest windows found still failing and their rows; `None`
    /// when no cut kept the error.
    fn run(&mut self, scratch: &Path) -> Result<Option<(Windows, Rows)>> {
        let mut windows: Windows = self.axes.iter().map(|a| (0, a.len)).collect();
        let mut best: Option<Rows> = None;
        let mut order: Vec<usize> = (0..self.axes.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.axes[i].len));
        for i in order {
            if self.axes[i].prefix {
                // The smallest failing prefix, by bisection of its end.
                let (mut fails, mut passes) = (windows[i].1, 0);
                while fails - passes > 1 && self.replays < self.budget {
                    let mid = passes + (fails - passes) / 2;
                    let mut w = windows.clone();
                    w[i] = (0, mid);
                    match self.still_fails(&w, scratch)? {
                        Some(rows) => (windows, best, fails) = (w, Some(rows), mid),
                        None => passes = mid,
                    }
                }
                continue;
            }
            while windows[i].1 - windows[i].0 > 1 && self.replays < self.budget {
                let (lo, hi) = windows[i];
                let mid = lo + (hi - lo) / 2;
                let mut shrunk = false;
                for half in [(lo, mid), (mid, hi)] {
                    if self.replays >= self.budget {
                        break;
                    }
                    let mut w = windows.clone();
                    w[i] = half;
                    if let Some(rows) = self.still_fails(&w, scratch)? {
                        (windows, best, shrunk) = (w, Some(rows), true);
                        break;
                    }
                }
                if !shrunk {
                    break;
                }
            }
        }
        Ok(best.map(|rows| (windows, rows)))
    }

    /// Replays the call cut to `w`: its rows when a row that failed still does.
    fn still_fails(&mut self, w: &Windows, scratch: &Path) -> Result<Option<Rows>> {
        let call = cut_call(self.base, self.axes, w, self.full, scratch)?;
        self.replays += 1;
        // A cut the op cannot run (its other arguments name sizes) keeps nothing.
        let Ok(rows) = replay_within(&call, self.limits) else { return Ok(None) };
        let now = failing(&rows);
        Ok(self.failing.iter().any(|n| now.contains(n)).then_some(rows))
    }
}

/// The `(dimension, start, end)` cuts of `slot` under windows `w`.
fn cuts_of(slot: Slot, axes: &[Axis], w: &Windows) -> Vec<(usize, usize, usize)> {
    axes.iter().zip(w).flat_map(|(a, &(s, e))| a.windows(s, e).filter(move |c| c.0 == slot).map(|(_, d, (s, e))| (d, s, e))).collect()
}

/// The file name a tensor gets in the minimized call's folder: its dump file's stem, as `.npy`.
fn npy_name(path: &Path) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "tensor".into());
    PathBuf::from(format!("{stem}.npy"))
}

/// `base` cut to `w`, each cut tensor written into `dir`.
fn cut_call(base: &Replay, axes: &[Axis], w: &Windows, full: &HashMap<Slot, HostTensor>, dir: &Path) -> Result<Replay> {
    let mut call = base.clone();
    for (axis, &(s, e)) in axes.iter().zip(w) {
        for &slot in &axis.counts {
            if let Some(spec) = slot.spec_mut(&mut call) {
                *spec = Spec::Int((e - s) as i64);
            }
        }
    }
    for (&slot, whole) in full {
        let t = cut::window(whole, &cuts_of(slot, axes, w));
        let spec = slot.tensor_mut(&mut call).ok_or_else(|| Error::Input(format!("{slot:?}: not a tensor")))?;
        let path = dir.join(npy_name(spec.data.as_deref().unwrap_or(Path::new("tensor"))));
        write_npy(&path, &t).map_err(|e| Error::Input(e.to_string()))?;
        spec.shape.clone_from(&t.shape);
        spec.data = Some(path);
    }
    Ok(call)
}

/// Calls `f` on every tensor of `spec`, depth first.
fn each_tensor(spec: &mut Spec, f: &mut dyn FnMut(&mut TensorSpec) -> Result<()>) -> Result<()> {
    match spec {
        Spec::Tensor(t) => f(t),
        Spec::List(items) => items.iter_mut().try_for_each(|s| each_tensor(s, f)),
        _ => Ok(()),
    }
}

/// The minimized call with every tensor file (cut or whole) written into
/// `dir`, so that its repro stands alone.
fn write_call(base: &Replay, axes: &[Axis], w: &Windows, full: &HashMap<Slot, HostTensor>, dir: &Path) -> Result<(Replay, Vec<Written>)> {
    let mut call = cut_call(base, axes, w, full, dir)?;
    let mut written: Vec<Written> = vec![];
    let originals: HashMap<PathBuf, PathBuf> = full.keys().filter_map(|&s| Some((tensor(&call, s)?.data.clone()?, tensor(base, s)?.data.clone()?))).collect();
    let mut record = |t: &mut TensorSpec| -> Result<()> {
        let Some(path) = t.data.clone() else { return Ok(()) };
        let (host, original) = match originals.get(&path) {
            Some(o) => (read_tensor_shaped(&path, &t.shape)?, o.clone()),
            None => {
                let host = read_tensor_shaped(&path, &t.shape)?;
                let file = dir.join(npy_name(&path));
                write_npy(&file, &host).map_err(|e| Error::Input(e.to_string()))?;
                t.data = Some(file);
                (host, path)
            }
        };
        if !written.iter().any(|x| x.original == original) {
            written.push(Written { original, file: t.data.clone().unwrap_or_default(), shape: t.shape.clone(), stats: cut::stats(&host) });
        }
        Ok(())
    };
    let grads = call.grad_outputs.iter_mut().flatten();
    let specs =
        call.args.iter_mut().chain(call.kwargs.iter_mut().map(|(_, s)| s)).chain(call.outputs.iter_mut()).chain(grads).chain(call.grad_inputs.iter_mut());
    for spec in specs {
        each_tensor(spec, &mut record)?;
    }
    Ok((call, written))
}

/// Each input's and output's window as `name[0:1, :, 0:64]` (`:` where whole).
fn slices(op: &crate::ops::Op, r: &Replay, axes: &[Axis], w: &Windows) -> Vec<String> {
    axes::tensor_names(op, r)
        .into_iter()
        .filter_map(|(slot, name)| {
            let t = tensor(r, slot)?;
            let cuts = cuts_of(slot, axes, w);
            let dims: Vec<String> = (0..t.shape.len())
                .map(|d| match cuts.iter().find(|c| c.0 == d) {
                    Some(&(_, s, e)) if (s, e) != (0, t.shape[d]) => format!("{s}:{e}"),
                    _ => ":".into(),
                })
                .collect();
            Some(format!("{name}[{}]", dims.join(", ")))
        })
        .collect()
}
