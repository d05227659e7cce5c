//! One call with its inputs realized once, ready to run on the bench, on
//! the emulated device, or (for a dropout msprobe dumped as an identity) as
//! the identity it was recorded as.

use std::sync::Arc;

use rayon::prelude::*;

use crate::bind::{bind, param_names, Bound};
use crate::ctx::Ctx;
use crate::dtype::TDType;
use crate::error::{Error, Result};
use crate::exec::{gradients_only, run, Outcome};
use crate::inputs::{master, numbered, realize, Realized};
use crate::ops::{Op, TokenKeys};
use crate::spec::{DataMode, Replay, Spec};
use crate::value::{Value, T};

use super::quirks;

/// What the caller of a run reads of its outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reads {
    /// The outputs and the gradients.
    Everything,
    /// The gradients only: every output is judged on its recorded value.
    Gradients,
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

/// One call, inputs realized, both sides' contexts made.
pub(super) struct Call<'a> {
    /// The replay this call is one iteration of: its dump data, standard and thresholds.
    pub r: &'a Replay,
    /// `Prefix.op`, the op table's name of the API.
    name: String,
    /// The op-table entry of the API: its semantics and facts.
    pub op: &'static Op,
    args: Vec<Realized>,
    kwargs: Vec<(String, Realized)>,
    grads: Option<Vec<Realized>>,
    /// Which top-level inputs (positional, then keyword) get gradients.
    pub differentiate: Vec<bool>,
    /// The bench side's context (float64, the reference semantics).
    pub bench: Ctx,
    /// The emulated device's context (the dumped dtypes).
    pub device: Ctx,
    /// msprobe dumped this dropout as an identity (recorded output == input):
    /// both sides replay it as one.
    pub identity: bool,
    /// Notes on how a random op's mask was recovered, for backward rows.
    pub mask_note: Option<String>,
    /// Whether a random op's mask is known from its recorded output (or it
    /// was recorded as an identity).
    pub mask_known: bool,
    /// How an autocast region was recognised and replayed, for every row.
    pub autocast_note: Option<String>,
    /// A cast to the input's own dtype ([`quirks::is_noop_cast`]): its
    /// recorded gradients are not its own.
    pub noop_cast: bool,
    /// A call with complex tensors lowered to float pairs (`super::complex`).
    pub lowered: bool,
}

/// Every floating tensor of `r` wider than `to`, recast to `to` (as
/// autocast did before the op ran).
fn cast_down(r: &mut Realized, to: TDType) {
    match r {
        Realized::Tensor(m, _) if m.dtype.is_float() && m.dtype.bits() > to.bits() => m.dtype = to,
        Realized::List(items) => items.iter_mut().for_each(|i| cast_down(i, to)),
        _ => {}
    }
}

/// Random class targets ([`Op::class_targets`]: the second positional
/// argument, integer) drawn from a dumped range whose Min is the ignore
/// marker (-100) land between the marker and class 0, which torch and
/// MindSpore refuse: such values are folded into the classes
/// (`|v| mod (Max+1)`), and the marker itself is kept.
fn fold_class_targets(args: &mut [Realized], kwargs: &[(String, Realized)]) {
    let ignore = kwargs.iter().find(|(k, _)| k == "ignore_index").and_then(|(_, v)| match v {
        Realized::Value(v) => v.as_i64(),
        _ => None,
    });
    let ignore = ignore.unwrap_or(-100) as f64;
    if let Some(Realized::Tensor(t, _)) = args.get_mut(1) {
        if t.dtype.is_float() {
            return;
        }
        let max = t.values.iter().copied().fold(0.0f64, f64::max);
        for v in t.values.iter_mut().filter(|v| **v < 0.0 && **v != ignore) {
            *v = v.abs() % (max + 1.0);
        }
    }
}

/// A random integer or bool mask in sparse_mode 0 ([`Op::token_mask`]:
/// `atten_mask`, `attn_mask`) becomes the mask of its token band: 1 (not
/// attended) where `j - i > next` or `i - j > pre` over its last two dims.
fn band_mask(kwargs: &mut [(String, Realized)], keys: &TokenKeys) {
    let int = |name: &str, default: i64| {
        kwargs.iter().find(|(k, _)| k == name).map_or(Some(default), |(_, v)| match v {
            Realized::Value(v) => v.as_i64(),
            _ => None,
        })
    };
    let (Some(0), Some(pre), Some(next)) = (int("sparse_mode", 0), int(keys.pre, 2147483647), int(keys.next, 2147483647)) else { return };
    let Some((_, Realized::Tensor(m, _))) = kwargs.iter_mut().find(|(k, _)| k == keys.mask) else { return };
    let [.., s1, s2] = m.shape[..] else { return };
    if m.dtype.is_float() || s1 * s2 == 0 {
        return;
    }
    for (at, v) in m.values.iter_mut().enumerate() {
        let (i, j) = (((at / s2) % s1) as i64, (at % s2) as i64);
        *v = f64::from(u8::from(j - i > next || i - j > pre));
    }
}

/// The floating tensors of a list argument, at any depth (each gets a gradient).
fn float_tensors(items: &[Realized]) -> usize {
    items
        .iter()
        .map(|r| match r {
            Realized::Tensor(m, _) => usize::from(m.dtype.is_float()),
            Realized::List(inner) => float_tensors(inner),
            Realized::Value(_) => 0,
        })
        .sum()
}

/// Each tensor of `r` settled ([`crate::inputs::Master::settle`]): the
/// call's adjustments are done, and its runs read tensors only.
fn settle(r: &mut Realized) -> Result<()> {
    match r {
        Realized::Tensor(m, _) => m.settle(),
        Realized::List(items) => items.iter_mut().try_for_each(settle),
        Realized::Value(_) => Ok(()),
    }
}

/// The dtypes of every tensor of `r`.
fn dtypes(r: &Realized, out: &mut Vec<TDType>) {
    match r {
        Realized::Tensor(m, _) => out.push(m.dtype),
        Realized::List(items) => items.iter().for_each(|i| dtypes(i, out)),
        Realized::Value(_) => {}
    }
}

/// The values made side by side, or the first of their errors in the
/// items' order (whatever thread met one first): a call's inputs, and its
/// recorded outputs and gradients ([`super::plan`]).
pub(super) fn first_error<V>(made: Vec<Result<V>>) -> Result<Vec<V>> {
    made.into_iter().collect()
}

impl<'a> Call<'a> {
    /// Iteration `iteration` of `r`: its op looked up, its inputs realized
    /// once (random streams numbered across the call), the recording quirks
    /// the data shows applied (autocast's cast-down inputs, folded class
    /// targets, a dropout's recorded mask), both sides' contexts made.
    pub fn new(r: &'a Replay, iteration: u64, op: &'static Op) -> Result<Call<'a>> {
        let name = r.api.name();
        // Tensors are numbered across the call (arguments, keywords, gradients):
        // each gets its own random stream. Each spec is realized from its
        // first number, side by side (each tensor file decoded on one thread);
        // the first error in that order is the call's.
        let specs: Vec<&Spec> = r.args.iter().chain(r.kwargs.iter().map(|(_, s)| s)).chain(r.grad_outputs.iter().flatten()).collect();
        let firsts = specs.iter().scan(0, |next, s| Some(std::mem::replace(next, *next + numbered(s))));
        let realized =
            specs.par_iter().zip(firsts.collect::<Vec<_>>()).map(|(s, mut ordinal)| realize(s, r.data_mode, r.seed, iteration, &mut ordinal)).collect();
        let mut realized = first_error(realized)?.into_iter();
        let mut args: Vec<Realized> = realized.by_ref().take(r.args.len()).collect();
        let mut kwargs: Vec<(String, Realized)> = r.kwargs.iter().map(|(k, _)| k.clone()).zip(realized.by_ref()).collect();
        let grads: Option<Vec<Realized>> = r.grad_outputs.as_ref().map(|_| realized.collect());
        let mut input_dtypes = vec![];
        args.iter().chain(kwargs.iter().map(|(_, v)| v)).for_each(|s| dtypes(s, &mut input_dtypes));
        let output = match r.outputs.first() {
            Some(Spec::Tensor(t)) => Some(t.dtype),
            _ => None,
        };
        let autocast = quirks::autocast_dtype(op, output, &input_dtypes);
        let noop_cast = quirks::is_noop_cast(op, input_dtypes.first().copied(), output);
        let autocast_note = autocast.map(|to| {
            args.iter_mut().chain(kwargs.iter_mut().map(|(_, v)| v)).for_each(|s| cast_down(s, to));
            let widest = input_dtypes.iter().copied().filter(|d| d.is_float()).max_by_key(|d| d.bits()).unwrap_or(to);
            let name = |d| r.framework.dtype_name(d);
            format!(
                "msprobe quirk: the call ran under autocast (inputs dumped as {}, output {}); replayed on the inputs cast to {}",
                name(widest),
                name(to),
                name(to)
            )
        });
        if r.data_mode == DataMode::Random && op.class_targets() {
            fold_class_targets(&mut args, &kwargs);
        }
        if let Some(keys) = op.token_mask().filter(|_| r.data_mode == DataMode::Random) {
            band_mask(&mut kwargs, keys);
        }
        let slots: Vec<&Realized> = args.iter().chain(kwargs.iter().map(|(_, v)| v)).collect();
        let differentiate = differentiate(&slots);
        let widest = slots.iter().filter_map(|s| s.widest_float()).max_by_key(|d| d.bits()).unwrap_or(TDType::F32);
        let seed = r.seed ^ iteration;
        let mut call = Call {
            r,
            name,
            op,
            args,
            kwargs,
            grads,
            differentiate,
            bench: Ctx::bench(seed),
            device: Ctx::device(widest, seed),
            identity: false,
            mask_note: None,
            mask_known: false,
            autocast_note,
            noop_cast,
            lowered: false,
        };
        if op.random && r.use_recorded && r.data_mode == DataMode::Real {
            call.recover_mask()?;
        }
        let grads = call.grads.iter_mut().flatten();
        for slot in call.args.iter_mut().chain(call.kwargs.iter_mut().map(|(_, v)| v)).chain(grads) {
            settle(slot)?;
        }
        Ok(call)
    }

    /// A random op replayed against a tensor dump reuses the recorded mask:
    /// dropout keeps exactly the elements that are non-zero in its recorded
    /// output. Where the input itself is zero the output says nothing, and
    /// the recorded gradient decides. An output equal to its input is
    /// msprobe's identity dropout.
    fn recover_mask(&mut self) -> Result<()> {
        let (Some(Spec::Tensor(out)), Some(Realized::Tensor(input, _))) = (self.r.outputs.first(), self.args.first()) else {
            return Ok(());
        };
        if !out.data.as_ref().is_some_and(|p| p.exists()) {
            return Ok(());
        }
        let recorded = master(out, DataMode::Real, (0, 0, 0))?.values;
        if recorded.len() != input.values.len() {
            return Ok(());
        }
        self.mask_known = true;
        if quirks::dropout_is_identity(&input.values, &recorded, self.drop_probability()) {
            self.identity = true;
            return Ok(());
        }
        let grad = match self.r.grad_inputs.first() {
            Some(Spec::Tensor(g)) if self.r.grad_outputs.is_some() && g.data.as_ref().is_some_and(|p| p.is_file()) => {
                Some(master(g, DataMode::Real, (0, 0, 0))?.values)
            }
            _ => None,
        };
        let (mask, note) = quirks::dropout_mask(&input.values, &recorded, grad.as_deref());
        self.bench.keep_mask = Some(Arc::new(mask));
        self.device.keep_mask = self.bench.keep_mask.clone();
        self.mask_note = note;
        Ok(())
    }

    /// Dropout's `p` when it is in training mode (`None` when it does not drop).
    fn drop_probability(&self) -> Option<f64> {
        let b = self.bound(&self.bench).ok()?;
        let p = b.float("p").ok()?;
        (b.bool("training").unwrap_or(true) && p > 0.0).then_some(p)
    }

    /// The call's positional and keyword arguments as values on `ctx`'s side.
    fn arguments(&self, ctx: &Ctx) -> Result<(Vec<Value>, Vec<(String, Value)>)> {
        let args = self.args.iter().map(|a| a.on(ctx)).collect::<Result<Vec<_>>>()?;
        let kwargs = self.kwargs.iter().map(|(k, v)| Ok((k.clone(), v.on(ctx)?))).collect::<Result<Vec<_>>>()?;
        Ok((args, kwargs))
    }

    /// The call's arguments bound to its signature on `ctx`'s side.
    pub fn bound(&self, ctx: &Ctx) -> Result<Bound> {
        let (args, kwargs) = self.arguments(ctx)?;
        bind(&self.name, self.op.sig, args, kwargs)
    }

    /// The dumped output gradients on `ctx`'s side (`None` where none was dumped).
    pub fn grad_outputs(&self, ctx: &Ctx) -> Result<Option<Vec<Option<T>>>> {
        let Some(g) = &self.grads else { return Ok(None) };
        let one = |x: &Realized| match x.on(ctx)? {
            Value::Tensor(t) => Ok(Some(t)),
            _ => Ok(None),
        };
        Ok(Some(g.iter().map(one).collect::<Result<Vec<_>>>()?))
    }

    /// Runs the op on one side (forward, and backward when gradients were dumped).
    pub fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        self.run_reading(ctx, Reads::Everything)
    }

    /// [`Call::run`] for a caller that reads what `reads` says: with
    /// [`Reads::Gradients`], a call whose gradients come without its
    /// forward ([`gradients_only`]) has no outputs.
    pub fn run_reading(&self, ctx: &Ctx, reads: Reads) -> Result<Outcome> {
        if self.identity {
            return self.run_identity(ctx);
        }
        self.run_with(ctx, reads, |_, _, v| Ok(v), Ok)
    }

    /// Runs the op on `ctx`'s side with each top-level argument passed
    /// through `arg` (its slot: positionals, then keywords; its keyword, if
    /// any) and each dumped output gradient through `grad`: the rounding
    /// magnitudes' variations of the call. `reads` as in [`Call::run_reading`].
    pub fn run_with(
        &self,
        ctx: &Ctx,
        reads: Reads,
        arg: impl Fn(usize, Option<&str>, Value) -> Result<Value>,
        grad: impl Fn(T) -> Result<T>,
    ) -> Result<Outcome> {
        let (args, kwargs) = self.arguments(ctx)?;
        let n = args.len();
        let args = args.into_iter().enumerate().map(|(i, v)| arg(i, None, v)).collect::<Result<Vec<_>>>()?;
        let kwargs = kwargs.into_iter().enumerate().map(|(i, (k, v))| Ok((k.clone(), arg(n + i, Some(&k), v)?))).collect::<Result<Vec<_>>>()?;
        let grads = match self.grad_outputs(ctx)? {
            Some(g) => Some(g.into_iter().map(|g| g.map(&grad).transpose()).collect::<Result<Vec<_>>>()?),
            None => None,
        };
        match (reads, grads) {
            (Reads::Gradients, Some(grads)) => gradients_only(self.op, &self.name, args, kwargs, &self.differentiate, &grads, ctx),
            (_, grads) => run(self.op, &self.name, args, kwargs, &self.differentiate, grads.as_deref(), ctx),
        }
    }

    /// The shape of the tensor the call passes as parameter `name`, from
    /// its recorded spec (no tensor is made); `None` when it passes none.
    pub fn param_shape(&self, name: &str) -> Option<Vec<usize>> {
        let keys: Vec<&str> = self.kwargs.iter().map(|(k, _)| k.as_str()).collect();
        let slots = self.args.iter().chain(self.kwargs.iter().map(|(_, r)| r));
        let names = crate::bind::parameters(self.op.sig, self.args.len(), &keys);
        slots.zip(names).find(|(_, n)| *n == Some(name)).and_then(|(r, _)| match r {
            Realized::Tensor(m, _) => Some(m.shape.clone()),
            _ => None,
        })
    }

    /// The parameter each bench gradient is the gradient of, in the
    /// gradients' order (`None` for the tensors of a list argument).
    pub fn gradient_params(&self) -> Vec<Option<&'static str>> {
        let names = param_names(self.op.sig);
        let mut out = vec![];
        let slots = self
            .args
            .iter()
            .enumerate()
            .map(|(i, r)| (names.get(i).copied(), r))
            .chain(self.kwargs.iter().map(|(k, r)| (names.iter().copied().find(|n| n == k), r)));
        for ((name, r), &wanted) in slots.zip(self.differentiate.iter().chain(std::iter::repeat(&false))) {
            match r {
                Realized::Tensor(m, _) if wanted && m.dtype.is_float() => out.push(name),
                Realized::List(items) => out.extend(std::iter::repeat_n(None, float_tensors(items))),
                _ => {}
            }
        }
        out
    }

    /// The slots (as [`Call::run_with`] numbers them) of the parameters
    /// the op's [`crate::ops::Fact::Inert`] says the rounding magnitudes
    /// do not perturb in this call.
    pub fn inert_slots(&self) -> Vec<usize> {
        let Some(inert) = self.op.inert() else { return vec![] };
        let Ok((args, kwargs)) = self.arguments(&self.bench) else { return vec![] };
        let names = param_names(self.op.sig);
        let slots: Vec<(Option<&str>, &Value)> =
            args.iter().enumerate().map(|(i, v)| (names.get(i).copied(), v)).chain(kwargs.iter().map(|(k, v)| (Some(k.as_str()), v))).collect();
        if inert.when.is_some_and(|when| !slots.iter().any(|&(n, v)| n == Some(when) && matches!(v, Value::Bool(true)))) {
            return vec![];
        }
        slots.iter().enumerate().filter(|(_, (n, _))| n.is_some_and(|n| inert.params.contains(&n))).map(|(i, _)| i).collect()
    }

    /// The slots (as [`Call::run_with`] numbers them) whose value on the bench satisfies `keep`.
    pub fn slots_where(&self, keep: impl Fn(&Value) -> bool) -> Vec<usize> {
        let Ok((args, kwargs)) = self.arguments(&self.bench) else { return vec![] };
        args.iter().chain(kwargs.iter().map(|(_, v)| v)).enumerate().filter(|(_, v)| keep(v)).map(|(i, _)| i).collect()
    }

    /// The identity msprobe recorded: the input is the output, and the
    /// output's gradient the input's.
    fn run_identity(&self, ctx: &Ctx) -> Result<Outcome> {
        let input = self.args.first().ok_or_else(|| Error::Arg("dropout: no input".into()))?.on(ctx)?;
        let grads = match self.grad_outputs(ctx)? {
            Some(g) => {
                let g = g.into_iter().next().flatten().ok_or_else(|| Error::Arg("backward: no dumped gradient for the output".into()))?;
                let x = input.tensor("input")?;
                Some(vec![T { t: g.t.reshape(x.dims())?, dtype: x.dtype }])
            }
            None => None,
        };
        Ok(Outcome { outputs: vec![input], grads })
    }
}
