//! The axes a call can be cut along: from its op's [`Slicing`], each axis
//! is a length and the dimension it takes in every tensor it cuts (inputs
//! and outputs; the gradients then mirror them). An axis is kept only when
//! it cuts every tensor the device's values are recorded in (each output,
//! each gradient): a recorded tensor it does not cut would be a sum over
//! what was cut away, which the dump has no slice of.

use crate::bind::parameters;
use crate::ops::{Op, Slicing, Whole};
use crate::spec::{Replay, Spec, TensorSpec};

/// A top-level tensor of a call, by where it sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// Positional argument i.
    Arg(usize),
    /// Keyword argument i (in the call's order).
    Kwarg(usize),
    /// Forward output i.
    Output(usize),
    /// The recorded gradient of output i (the backward's input).
    GradOutput(usize),
    /// The recorded gradient of positional argument i.
    GradInput(usize),
}

impl Slot {
    /// The spec at this slot of `r`.
    pub fn spec(self, r: &Replay) -> Option<&Spec> {
        match self {
            Slot::Arg(i) => r.args.get(i),
            Slot::Kwarg(i) => r.kwargs.get(i).map(|(_, s)| s),
            Slot::Output(i) => r.outputs.get(i),
            Slot::GradOutput(i) => r.grad_outputs.as_ref().and_then(|g| g.get(i)),
            Slot::GradInput(i) => r.grad_inputs.get(i),
        }
    }

    /// The spec at this slot of `r`, mutable.
    pub fn spec_mut(self, r: &mut Replay) -> Option<&mut Spec> {
        match self {
            Slot::Arg(i) => r.args.get_mut(i),
            Slot::Kwarg(i) => r.kwargs.get_mut(i).map(|(_, s)| s),
            Slot::Output(i) => r.outputs.get_mut(i),
            Slot::GradOutput(i) => r.grad_outputs.as_mut().and_then(|g| g.get_mut(i)),
            Slot::GradInput(i) => r.grad_inputs.get_mut(i),
        }
    }

    /// The tensor at this slot of `r`, mutable.
    pub fn tensor_mut(self, r: &mut Replay) -> Option<&mut TensorSpec> {
        match self.spec_mut(r) {
            Some(Spec::Tensor(t)) => Some(t),
            _ => None,
        }
    }
}

/// The tensor at `slot` of `r`.
pub fn tensor(r: &Replay, slot: Slot) -> Option<&TensorSpec> {
    match slot.spec(r) {
        Some(Spec::Tensor(t)) => Some(t),
        _ => None,
    }
}

/// One way to cut a call: `len` positions, taken at dimension `dim` of
/// each tensor in `cuts`, and through a window of each tensor in `spans`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// The positions along the axis.
    pub len: usize,
    /// Each tensor it cuts position for position, and at which dimension.
    pub cuts: Vec<(Slot, usize)>,
    /// Each tensor whose positions `a..b` of the axis read a window of
    /// it, at which dimension, and which ([`Span`]).
    pub spans: Vec<(Slot, usize, Span)>,
    /// Only windows that start at position 0 are the call's (a causal
    /// band's queries, whose keys are the ones before them).
    pub prefix: bool,
    /// Int arguments that count the positions (npu_fusion_attention's
    /// `head_num`): set to the window's length.
    pub counts: Vec<Slot>,
}

/// The window of a tensor that positions `a..b` of an axis read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// From `a * step` to `(b - 1) * step + reach + 1`: a convolution's
    /// input rows (its stride, its dilated kernel's extent less one), or a
    /// head's columns of a `[.., H]` layout (`step` the head size, `reach`
    /// one less).
    Affine {
        /// Positions of the tensor per position of the axis.
        step: usize,
        /// Positions beyond the last one's start that it reads.
        reach: usize,
    },
    /// From 0 to `min(cap, b + extra)`: the keys a causal band lets the
    /// queries before `b` attend.
    Prefix {
        /// Keys a query attends beyond its own position.
        extra: usize,
        /// The keys there are.
        cap: usize,
    },
}

impl Span {
    /// The window positions `a..b` read.
    pub fn window(self, a: usize, b: usize) -> (usize, usize) {
        match self {
            Span::Affine { step, reach } => (a * step, (b - 1) * step + reach + 1),
            Span::Prefix { extra, cap } => (0, (b + extra).min(cap)),
        }
    }

    /// Whether the windows of different positions never overlap: what a
    /// position writes into such a tensor (its gradient) is its own.
    fn partitions(self) -> bool {
        matches!(self, Span::Affine { step, reach } if reach < step)
    }
}

impl Axis {
    /// An axis cutting `cuts` position for position.
    fn new(len: usize, cuts: Vec<(Slot, usize)>) -> Axis {
        Axis { len, cuts, spans: vec![], prefix: false, counts: vec![] }
    }

    /// Every tensor it cuts, with its dimension and window of positions `a..b`.
    pub fn windows(&self, a: usize, b: usize) -> impl Iterator<Item = (Slot, usize, (usize, usize))> + '_ {
        self.cuts.iter().map(move |&(s, d)| (s, d, (a, b))).chain(self.spans.iter().map(move |&(s, d, span)| (s, d, span.window(a, b))))
    }
}

/// A call's arguments by parameter name.
struct Params<'a> {
    r: &'a Replay,
    names: Vec<(Option<&'static str>, Slot)>,
}

impl<'a> Params<'a> {
    fn new(op: &Op, r: &'a Replay) -> Params<'a> {
        let keywords: Vec<&str> = r.kwargs.iter().map(|(k, _)| k.as_str()).collect();
        let slots = (0..r.args.len()).map(Slot::Arg).chain((0..r.kwargs.len()).map(Slot::Kwarg));
        Params { r, names: parameters(op.sig, r.args.len(), &keywords).into_iter().zip(slots).collect() }
    }

    fn spec(&self, name: &str) -> Option<&'a Spec> {
        self.names.iter().find(|(n, _)| *n == Some(name)).and_then(|(_, s)| s.spec(self.r))
    }

    fn tensor(&self, name: &str) -> Option<(Slot, &'a TensorSpec)> {
        let (_, slot) = self.names.iter().find(|(n, _)| *n == Some(name))?;
        tensor(self.r, *slot).map(|t| (*slot, t))
    }

    /// An int parameter, `default` when absent; `None` when it is something else.
    fn int(&self, name: &str, default: i64) -> Option<i64> {
        match self.spec(name) {
            None | Some(Spec::None) => Some(default),
            Some(Spec::Int(i)) => Some(*i),
            Some(Spec::Bool(b)) => Some(*b as i64),
            _ => None,
        }
    }

    /// An int-or-ints parameter of a convolution (`stride=2`, `padding=(1, 1)`,
    /// `padding='valid'`) as `n` ints, `default` when absent; `None` when
    /// it is something else.
    fn ints(&self, name: &str, default: usize, n: usize) -> Option<Vec<usize>> {
        let int = |s: &Spec| if let Spec::Int(i) = s { usize::try_from(*i).ok() } else { None };
        match self.spec(name) {
            None | Some(Spec::None) => Some(vec![default; n]),
            Some(Spec::Str(s)) if s == "valid" => Some(vec![0; n]),
            Some(Spec::Int(i)) => usize::try_from(*i).ok().map(|i| vec![i; n]),
            Some(Spec::List(items)) if items.len() == n => items.iter().map(int).collect(),
            _ => None,
        }
    }

    /// A number parameter, `default` when absent.
    fn float(&self, name: &str, default: f64) -> Option<f64> {
        match self.spec(name) {
            None | Some(Spec::None) => Some(default),
            Some(Spec::Float(x)) => Some(*x),
            Some(Spec::Int(i)) => Some(*i as f64),
            _ => None,
        }
    }

    /// Every top-level tensor input.
    fn inputs(&self) -> impl Iterator<Item = (Slot, &'a TensorSpec)> + '_ {
        self.names.iter().filter_map(|(_, s)| tensor(self.r, *s).map(|t| (*s, t)))
    }

    fn output(&self, i: usize) -> Option<&'a TensorSpec> {
        tensor(self.r, Slot::Output(i))
    }

    /// The tensor outputs of rank `rank`, with their slots.
    fn outputs_of_rank(&self, rank: usize) -> impl Iterator<Item = Slot> + '_ {
        (0..self.r.outputs.len()).filter(move |&j| self.output(j).is_some_and(|t| t.shape.len() == rank)).map(Slot::Output)
    }
}

/// The axes `op`'s rule gives `r`, each completed with the gradients and
/// kept only when it cuts every recorded tensor ([`complete`]); or why
/// there are none.
pub fn axes(op: &Op, r: &Replay) -> Result<Vec<Axis>, String> {
    let Some(rule) = op.slicing() else { return Err(format!("{}: no dimension known to be independent (no slicing rule)", r.api.name())) };
    let p = Params::new(op, r);
    let raw = match rule {
        Slicing::Aligned(whole) => aligned(&p, whole),
        Slicing::Product { a, b } => product(&p, a, b),
        Slicing::Leading(name) => leading(&p, name),
        Slicing::Linear => linear(&p),
        Slicing::Conv => conv(&p),
        Slicing::Channels => channels(&p),
        Slicing::Attention => attention(&p),
        Slicing::FusionAttention => fusion_attention(&p),
        Slicing::Kept => vec![],
    };
    let raw: Vec<Axis> = raw.into_iter().filter(|a| a.len > 1).collect();
    if raw.is_empty() {
        return Err("under this call's arguments and shapes, no dimension of more than one position is independent".into());
    }
    let axes: Vec<Axis> = raw.into_iter().filter_map(|a| complete(a, r)).collect();
    match axes.is_empty() {
        true => Err("every independent dimension would leave a recorded output or gradient whole (a sum over what is cut away)".into()),
        false => Ok(axes),
    }
}

/// `t`'s dimension aligned from the right with dimension `d` of a rank-`rank` tensor.
fn right_aligned(t: &TensorSpec, d: usize, rank: usize) -> Option<usize> {
    (d + t.shape.len()).checked_sub(rank)
}

/// Cuts `t` at `dim` when it has `len` there; leaves it whole when it has
/// 1 (broadcast); `false` when it has another size (no such axis).
fn cut_or_broadcast(cuts: &mut Vec<(Slot, usize)>, slot: Slot, t: &TensorSpec, dim: usize, len: usize) -> bool {
    match t.shape.get(dim) {
        Some(&n) if n == len => {
            cuts.push((slot, dim));
            true
        }
        Some(1) | None => true,
        Some(_) => false,
    }
}

fn aligned(p: &Params, whole: Whole) -> Vec<Axis> {
    let Some(out) = p.output(0) else { return vec![] };
    let rank = out.shape.len();
    let normalize = |d: i64| if d < 0 { d + rank as i64 } else { d };
    let kept: Vec<i64> = match whole {
        Whole::Nothing => vec![],
        Whole::Last(n) => (rank.saturating_sub(n)..rank).map(|d| d as i64).collect(),
        Whole::Dim(name, default) => match p.spec(name) {
            Some(Spec::Int(d)) => vec![normalize(*d)],
            None | Some(Spec::None) if default.is_some() => vec![normalize(default.unwrap_or(0))],
            _ => return vec![],
        },
        Whole::Normalized(name) => {
            let n = match p.spec(name) {
                Some(Spec::List(items)) => items.len(),
                Some(Spec::Int(_)) => 1,
                _ => return vec![],
            };
            (rank.saturating_sub(n)..rank).map(|d| d as i64).collect()
        }
    };
    let mut axes = vec![];
    for (d, &len) in out.shape.iter().enumerate().filter(|(d, _)| !kept.contains(&(*d as i64))) {
        let mut cuts: Vec<(Slot, usize)> = p.outputs_of_rank(rank).map(|s| (s, d)).collect();
        let fits = p.inputs().all(|(slot, t)| right_aligned(t, d, rank).is_none_or(|e| cut_or_broadcast(&mut cuts, slot, t, e, len)));
        if fits {
            axes.push(Axis::new(len, cuts));
        }
    }
    axes
}

fn product(p: &Params, a: &str, b: &str) -> Vec<Axis> {
    let (Some((sa, ta)), Some((sb, tb)), Some(out)) = (p.tensor(a), p.tensor(b), p.output(0)) else { return vec![] };
    let (ra, rb, rank) = (ta.shape.len(), tb.shape.len(), out.shape.len());
    if ra < 2 || rb < 2 || rank < 2 {
        return vec![];
    }
    let mut axes = vec![];
    for (d, &len) in out.shape.iter().enumerate().take(rank - 2) {
        let mut cuts = vec![(Slot::Output(0), d)];
        let fits = [(sa, ta), (sb, tb)].iter().all(|&(s, t)| right_aligned(t, d, rank).is_none_or(|e| cut_or_broadcast(&mut cuts, s, t, e, len)));
        if fits {
            axes.push(Axis::new(len, cuts));
        }
    }
    axes.push(Axis::new(out.shape[rank - 2], vec![(Slot::Output(0), rank - 2), (sa, ra - 2)]));
    axes.push(Axis::new(out.shape[rank - 1], vec![(Slot::Output(0), rank - 1), (sb, rb - 1)]));
    axes.retain(|a| a.cuts.iter().all(|&(s, d)| tensor(p.r, s).is_some_and(|t| t.shape[d] == a.len)));
    // What is added to the product (addmm's input) is aligned to the output.
    let added: Vec<(Slot, &TensorSpec)> = p.inputs().filter(|&(s, _)| s != sa && s != sb).collect();
    axes.retain_mut(|a| {
        let d = a.cuts[0].1;
        added.iter().all(|&(s, t)| right_aligned(t, d, rank).is_none_or(|e| cut_or_broadcast(&mut a.cuts, s, t, e, a.len)))
    });
    axes
}

fn leading(p: &Params, name: &str) -> Vec<Axis> {
    let (Some((si, input)), Some(out)) = (p.tensor(name), p.output(0)) else { return vec![] };
    if out.shape.len() < input.shape.len() || out.shape[..input.shape.len()] != input.shape[..] {
        return vec![];
    }
    (0..input.shape.len()).map(|d| Axis::new(input.shape[d], vec![(Slot::Output(0), d), (si, d)])).collect()
}

fn linear(p: &Params) -> Vec<Axis> {
    let (Some((si, input)), Some((sw, weight)), Some(out)) = (p.tensor("input"), p.tensor("weight"), p.output(0)) else { return vec![] };
    let rank = out.shape.len();
    if rank == 0 || input.shape.len() != rank || weight.shape.len() != 2 {
        return vec![];
    }
    let mut axes: Vec<Axis> = (0..rank - 1).map(|d| Axis::new(out.shape[d], vec![(Slot::Output(0), d), (si, d)])).collect();
    let mut features = vec![(Slot::Output(0), rank - 1), (sw, 0)];
    if let Some((sb, _)) = p.tensor("bias") {
        features.push((sb, 0));
    }
    axes.push(Axis::new(out.shape[rank - 1], features));
    axes
}

fn conv(p: &Params) -> Vec<Axis> {
    let (Some((si, input)), Some((sw, weight)), Some(out)) = (p.tensor("input"), p.tensor("weight"), p.output(0)) else { return vec![] };
    // An unbatched input has one dimension less than the weight.
    if input.shape.len() != weight.shape.len() || out.shape.len() != input.shape.len() {
        return vec![];
    }
    let mut axes = vec![Axis::new(out.shape[0], vec![(Slot::Output(0), 0), (si, 0)])];
    if p.int("groups", 1) == Some(1) {
        let mut channels = vec![(Slot::Output(0), 1), (sw, 0)];
        if let Some((sb, _)) = p.tensor("bias") {
            channels.push((sb, 0));
        }
        axes.push(Axis::new(out.shape[1], channels));
    }
    // Without padding, output rows a..b read input rows a*stride .. (b-1)*stride + (kernel-1)*dilation + 1.
    let spatial = input.shape.len() - 2;
    let (Some(padding), Some(stride), Some(dilation)) = (p.ints("padding", 0, spatial), p.ints("stride", 1, spatial), p.ints("dilation", 1, spatial)) else {
        return axes;
    };
    if padding.iter().all(|&x| x == 0) {
        for i in 0..spatial {
            let (d, span) = (2 + i, Span::Affine { step: stride[i], reach: (weight.shape[2 + i].saturating_sub(1)) * dilation[i] });
            let mut axis = Axis::new(out.shape[d], vec![(Slot::Output(0), d)]);
            match span {
                Span::Affine { step: 1, reach: 0 } => axis.cuts.push((si, d)),
                _ => axis.spans.push((si, d, span)),
            }
            axes.push(axis);
        }
    }
    axes
}

fn channels(p: &Params) -> Vec<Axis> {
    let (Some((si, input)), Some(out)) = (p.tensor("input"), p.output(0)) else { return vec![] };
    if input.shape.len() < 2 || out.shape != input.shape {
        return vec![];
    }
    let mut cuts = vec![(Slot::Output(0), 1), (si, 1)];
    for name in ["running_mean", "running_var", "weight", "bias"] {
        if let Some((s, t)) = p.tensor(name) {
            if t.shape.len() != 1 {
                return vec![];
            }
            cuts.push((s, 0));
        }
    }
    vec![Axis::new(input.shape[1], cuts)]
}

fn attention(p: &Params) -> Vec<Axis> {
    let (Some((sq, q)), Some(out)) = (p.tensor("query"), p.output(0)) else { return vec![] };
    let rank = q.shape.len();
    if rank < 3 || out.shape.len() != rank {
        return vec![];
    }
    let others: Vec<(Slot, &TensorSpec)> = ["key", "value", "attn_mask"].iter().filter_map(|n| p.tensor(n)).collect();
    let mut axes = vec![];
    for d in 0..rank - 2 {
        let len = q.shape[d];
        let mut cuts = vec![(Slot::Output(0), d), (sq, d)];
        if others.iter().all(|&(s, t)| right_aligned(t, d, rank).is_none_or(|e| cut_or_broadcast(&mut cuts, s, t, e, len))) {
            axes.push(Axis::new(len, cuts));
        }
    }
    let causal = matches!(p.spec("is_causal"), Some(Spec::Bool(true)));
    let no_dropout = p.float("dropout_p", 0.0) == Some(0.0);
    if causal && no_dropout && p.tensor("attn_mask").is_none() {
        // torch's causal mask is top-left: the first b queries attend the first b keys.
        let (len, keys) = (q.shape[rank - 2], others.first().map_or(0, |(_, k)| k.shape[rank - 2]));
        let mut axis = Axis::new(len, vec![(Slot::Output(0), rank - 2), (sq, rank - 2)]);
        axis.prefix = true;
        axis.spans.extend(others.iter().filter(|(_, t)| t.shape.len() == rank).map(|&(s, _)| (s, rank - 2, Span::Prefix { extra: 0, cap: keys })));
        axes.push(axis);
    }
    if !causal && no_dropout {
        let len = q.shape[rank - 2];
        let mut cuts = vec![(Slot::Output(0), rank - 2), (sq, rank - 2)];
        let mask_fits = match p.tensor("attn_mask") {
            Some((s, m)) if m.shape.len() >= 2 => cut_or_broadcast(&mut cuts, s, m, m.shape.len() - 2, len),
            _ => true,
        };
        if mask_fits {
            axes.push(Axis::new(len, cuts));
        }
    }
    axes
}

fn fusion_attention(p: &Params) -> Vec<Axis> {
    // (batch, sequence, heads) dimensions of the query's layout; heads `None`: merged into H.
    let (layout, batch, seq, heads) = match p.spec("input_layout") {
        Some(Spec::Str(l)) if l == "BSH" => ("BSH", 0, 1, None),
        Some(Spec::Str(l)) if l == "BSND" => ("BSND", 0, 1, Some(2)),
        Some(Spec::Str(l)) if l == "SBH" => ("SBH", 1, 0, None),
        Some(Spec::Str(l)) if l == "BNSD" => ("BNSD", 0, 2, Some(1)),
        _ => return vec![],
    };
    // Inputs laid out otherwise (a positional bias, padding, per-batch lengths) are not cut.
    let extra = ["pse", "padding_mask", "prefix", "actual_seq_qlen", "actual_seq_kvlen"].iter().any(|n| !matches!(p.spec(n), None | Some(Spec::None)));
    let (Some((sq, q)), Some(out)) = (p.tensor("query"), p.output(0)) else { return vec![] };
    if extra || p.float("keep_prob", 1.0) != Some(1.0) || out.shape != q.shape || q.shape.len() != layout.len() {
        return vec![];
    }
    let kv: Vec<(Slot, &TensorSpec)> = ["key", "value"].iter().filter_map(|n| p.tensor(n)).collect();
    let mask = p.tensor("atten_mask");
    // softmax_max and softmax_sum: [B, N, S1, 8], or laid out as the query.
    let stats: Vec<Slot> = p.outputs_of_rank(4).filter(|&s| s != Slot::Output(0) && tensor(p.r, s).is_some_and(|t| t.shape != q.shape)).collect();
    let like_query: Vec<Slot> = (1..p.r.outputs.len()).map(Slot::Output).filter(|&s| tensor(p.r, s).is_some_and(|t| t.shape == q.shape)).collect();
    let with_outputs = |cuts: &mut Vec<(Slot, usize)>, d: usize, stat_dim: usize| {
        cuts.push((Slot::Output(0), d));
        cuts.extend(stats.iter().map(|&s| (s, stat_dim)));
        cuts.extend(like_query.iter().map(|&s| (s, d)));
    };
    let mut axes = vec![];
    let len = q.shape[batch];
    let mut cuts = vec![(sq, batch)];
    with_outputs(&mut cuts, batch, 0);
    let mut fits = kv.iter().all(|&(s, t)| cut_or_broadcast(&mut cuts, s, t, batch, len));
    if let Some((s, m)) = mask.filter(|(_, m)| m.shape.len() == 4) {
        fits &= cut_or_broadcast(&mut cuts, s, m, 0, len);
    }
    if fits {
        axes.push(Axis::new(len, cuts));
    }
    axes.extend(fusion_heads(p, (sq, q), &kv, mask, heads, &stats, &like_query));
    let (pre, next) = (p.int("pre_tockens", 2147483647), p.int("next_tockens", 2147483647));
    let (Some(pre), Some(next), Some(0)) = (pre, next, p.int("sparse_mode", 0)) else { return axes };
    let (s1, s2) = (q.shape[seq], kv.first().map_or(q.shape[seq], |(_, k)| k.shape[seq]));
    let mut cuts = vec![(sq, seq)];
    with_outputs(&mut cuts, seq, 2);
    let mut axis = Axis::new(s1, cuts);
    if pre >= 2147483647 && next >= 2147483647 {
        // No band: every query row is its own.
        let fits = match mask {
            Some((s, m)) if m.shape.len() >= 2 => cut_or_broadcast(&mut axis.cuts, s, m, m.shape.len() - 2, s1),
            _ => true,
        };
        if fits {
            axes.push(axis);
        }
    } else if next >= 0 {
        // A band (Megatron's causal call: next_tockens 0): the first b queries attend only the
        // first b + next keys, positions counted from 0 in the whole call and in the cut alike.
        let keys = Span::Prefix { extra: usize::try_from(next).unwrap_or(usize::MAX), cap: s2 };
        axis.prefix = true;
        axis.spans.extend(kv.iter().map(|&(s, _)| (s, seq, keys)));
        let fits = match mask {
            Some((s, m)) if m.shape.len() >= 2 && m.shape[m.shape.len() - 1] == s2 => {
                axis.spans.push((s, m.shape.len() - 1, keys));
                cut_or_broadcast(&mut axis.cuts, s, m, m.shape.len() - 2, s1)
            }
            Some(_) => false,
            None => true,
        };
        if fits {
            axes.push(axis);
        }
    }
    axes
}

/// npu_fusion_attention's heads: each attends with its own columns of q, k
/// and v (a dimension N, or H's columns in blocks of its size), its
/// `head_num` the window's length; the mask shared by every head or its
/// own. Grouped keys and values (fewer heads than the query's) are not cut.
fn fusion_heads(
    p: &Params,
    (sq, q): (Slot, &TensorSpec),
    kv: &[(Slot, &TensorSpec)],
    mask: Option<(Slot, &TensorSpec)>,
    heads_dim: Option<usize>,
    stats: &[Slot],
    like_query: &[Slot],
) -> Option<Axis> {
    let count = p.names.iter().find(|(n, _)| *n == Some("head_num")).map(|&(_, s)| s)?;
    let n = usize::try_from(p.int("head_num", 0)?).ok().filter(|&n| n > 1)?;
    let mut axis = Axis::new(n, stats.iter().map(|&s| (s, 1)).collect());
    axis.counts.push(count);
    match heads_dim {
        Some(d) => {
            let all = [(sq, q)].into_iter().chain(kv.iter().copied());
            if !all.clone().all(|(_, t)| t.shape[d] == n) {
                return None;
            }
            axis.cuts.extend(all.map(|(s, _)| (s, d)));
            axis.cuts.extend(std::iter::once(Slot::Output(0)).chain(like_query.iter().copied()).map(|s| (s, d)));
        }
        None => {
            let h = *q.shape.last()?;
            if h % n != 0 || kv.iter().any(|(_, t)| t.shape.last() != Some(&h)) {
                return None;
            }
            let span = Span::Affine { step: h / n, reach: h / n - 1 };
            let last = q.shape.len() - 1;
            let all = [sq, Slot::Output(0)].into_iter().chain(kv.iter().map(|&(s, _)| s)).chain(like_query.iter().copied());
            axis.spans.extend(all.map(|s| (s, last, span)));
        }
    }
    match mask {
        Some((s, m)) if m.shape.len() == 4 => cut_or_broadcast(&mut axis.cuts, s, m, 1, n).then_some(axis),
        _ => Some(axis),
    }
}

/// `axis` with the gradients mirroring what it cuts (an output's gradient
/// as the output, a positional input's recorded gradient as the input when
/// they have one shape), or `None` when a tensor the dump recorded (an
/// output, a gradient) would stay whole: its values over the whole axis
/// are not what the cut call gives.
fn complete(mut axis: Axis, r: &Replay) -> Option<Axis> {
    let mirror = |slot: Slot| match slot {
        Slot::Output(j) => Some((Slot::GradOutput(j), slot)),
        Slot::Arg(k) => Some((Slot::GradInput(k), slot)),
        _ => None,
    };
    let same = |(m, o): (Slot, Slot)| tensor(r, m).zip(tensor(r, o)).is_some_and(|(m, o)| m.shape == o.shape);
    let cuts: Vec<(Slot, usize)> = axis.cuts.iter().filter_map(|&(slot, d)| mirror(slot).filter(|&p| same(p)).map(|(m, _)| (m, d))).collect();
    let spans: Vec<(Slot, usize, Span)> =
        axis.spans.iter().filter(|s| s.2.partitions()).filter_map(|&(slot, d, span)| mirror(slot).filter(|&p| same(p)).map(|(m, _)| (m, d, span))).collect();
    axis.cuts.extend(cuts);
    axis.spans.extend(spans);
    let grad_outputs = r.grad_outputs.as_ref().map_or(0, Vec::len);
    let recorded: Vec<Slot> = (0..r.outputs.len())
        .map(Slot::Output)
        .chain((0..grad_outputs).map(Slot::GradOutput))
        .chain((0..r.grad_inputs.len()).map(Slot::GradInput))
        .filter(|&s| tensor(r, s).is_some_and(|t| t.shape.iter().product::<usize>() > 0))
        .collect();
    let cut = |slot: Slot| axis.cuts.iter().any(|&(s, _)| s == slot) || axis.spans.iter().any(|&(s, _, span)| s == slot && span.partitions());
    recorded.into_iter().all(cut).then_some(axis)
}

/// The top-level tensors of `r` with the names reports give them: an
/// input's parameter name (else the keyword, or its slot), `output[i]`.
pub fn tensor_names(op: &Op, r: &Replay) -> Vec<(Slot, String)> {
    let p = Params::new(op, r);
    let outputs = (0..r.outputs.len()).filter(|&i| tensor(r, Slot::Output(i)).is_some()).map(|i| (Slot::Output(i), format!("output[{i}]")));
    p.names
        .iter()
        .filter(|(_, s)| tensor(r, *s).is_some())
        .map(|&(name, slot)| {
            let shown = match (name, slot) {
                (Some(n), _) => n.to_string(),
                (None, Slot::Kwarg(i)) => r.kwargs[i].0.clone(),
                (None, _) => format!("{slot:?}"),
            };
            (slot, shown)
        })
        .chain(outputs)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_the_windows_of_their_positions() {
        // A 3x3 convolution of stride 2: output rows 1..3 read input rows 2..7.
        let conv = Span::Affine { step: 2, reach: 2 };
        assert_eq!((conv.window(1, 3), conv.partitions()), ((2, 7), false));
        // Heads of 128 columns: heads 2..4 are columns 256..512, each head's own.
        let heads = Span::Affine { step: 128, reach: 127 };
        assert_eq!((heads.window(2, 4), heads.partitions()), ((256, 512), true));
        // A causal band with next_tockens 0 over 512 keys: the first 10 queries attend keys 0..10.
        let keys = Span::Prefix { extra: 0, cap: 512 };
        assert_eq!((keys.window(0, 10), keys.window(0, 600), keys.partitions()), ((0, 10), (0, 512), false));
    }
}
