//! One model from a checkpoint's shards, as msprobe's `megatron_loader`
//! merges them, with its bugs fixed (README, checkpoint differences): the
//! weights of every rank file (`model`, or `model0`, `model1`, ... for
//! virtual pipeline chunks) are renamed to Megatron core's names, joined
//! across tensor-parallel ranks, and their layer and expert indices made
//! global. [`plan`] reads only the pickles; [`materialize`] reads one
//! parameter's shards.

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use ndarray::{ArrayD, ArrayViewD, Axis, Slice};
use regex::Regex;
use runtime::io::{read_pt_index, PtTensor};

use super::error::CheckpointError;
use super::layout::Layout;

/// msprobe's `name_mapping.yaml`, applied in this order to every occurrence.
const NAME_MAPPING: &[(&str, &str)] = &[
    ("self_attention.linear_qkv.layer_norm_", "input_layernorm."),
    ("language_model.", ""),
    ("encoder", "decoder"),
    (".input_norm.", ".input_layernorm."),
    ("query_key_value", "linear_qkv"),
    (".dense.", ".linear_proj."),
    ("post_attention_norm", "pre_mlp_layernorm"),
    ("dense_h_to_4h", "linear_fc1"),
    ("dense_4h_to_h", "linear_fc2"),
    ("mlp.local_experts", "mlp.experts.local_experts"),
    ("final_norm", "final_layernorm"),
    ("word_embeddings_for_head", "output_layer"),
];

/// Names whose TP shards are split along dim 0 (biases too).
const AXIS0: &[&str] = &["linear_qkv", "linear_fc1", "word_embeddings.weight", "output_layer.weight"];

/// Names whose TP shards are split along dim 1.
const AXIS1: &[&str] = &["linear_fc2.weight", "linear_proj.weight"];

static LAYER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"layers\.(\d+)\.").expect("a valid regex"));
static EXPERT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"experts\.(\d+)\.").expect("a valid regex"));
static GROUPED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"experts\.linear_fc[12]\.(?:weight|bias)(\d+)$").expect("a valid regex"));

/// How the TP shards of a parameter become one tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Join {
    /// Concatenated along this dim.
    Concat(usize),
    /// SwiGLU `linear_fc1`: each shard is [gate; up] along dim 0; the gates
    /// are concatenated, then the ups.
    Swiglu,
    /// The same on every rank: rank 0's is taken, the others are checked.
    Replicated,
}

/// One parameter of the merged model: its TP shards in rank order.
#[derive(Debug)]
pub struct Param {
    /// The global name (`decoder.layers.5.mlp.linear_fc1.weight`).
    pub name: String,
    /// How the shards join.
    pub join: Join,
    /// One tensor per TP rank.
    pub shards: Vec<PtTensor>,
}

/// A parameter's merged values.
#[derive(Debug)]
pub struct Merged {
    /// The shape.
    pub shape: Vec<usize>,
    /// The values in row-major order, as `float32`.
    pub values: Vec<f32>,
    /// A replicated parameter whose TP ranks differ (not `np.allclose`).
    pub inconsistent: bool,
}

/// A rank's weight before the layer and expert indices are made global.
struct Local {
    name: String,
    vpp: usize,
    pp: usize,
    ep: usize,
    shards: Vec<PtTensor>,
}

/// Every parameter of the checkpoint, in the order msprobe's dict holds
/// them (by EP rank, stage, then file order; a later stage's parameter of
/// the same name replaces an earlier one in place, as the dict does).
pub fn plan(layout: &Layout) -> Result<Vec<Param>, CheckpointError> {
    let mut locals: Vec<Local> = vec![];
    for group in layout.ranks.chunks(layout.tp) {
        let start = locals.len();
        let mut slot: HashMap<(String, usize), usize> = HashMap::new();
        for rank in group {
            let weights = model_weights(&rank.file)?;
            for (name, vpp, tensor) in weights {
                match slot.get(&(name.clone(), vpp)) {
                    Some(&i) if locals[i].shards.len() == rank.tp => locals[i].shards.push(tensor),
                    Some(_) => return Err(CheckpointError::layout(&rank.file, format!("expected {name} once per model chunk, found it twice"))),
                    None if rank.tp == 0 => {
                        slot.insert((name.clone(), vpp), locals.len());
                        locals.push(Local { name, vpp, pp: rank.pp, ep: rank.ep, shards: vec![tensor] });
                    }
                    None => return Err(CheckpointError::layout(&rank.file, format!("expected TP rank 0 of this stage to hold {name} too, it does not"))),
                }
            }
        }
        if let Some((local, rank)) = locals[start..].iter().find_map(|l| group.get(l.shards.len()).map(|r| (l, r))) {
            return Err(CheckpointError::layout(&rank.file, format!("expected {} (held by TP rank 0 of this stage), it is missing", local.name)));
        }
    }
    let offsets = layer_offsets(&locals, layout.pp);
    let per_ep = if layout.num_experts > 0 { layout.num_experts / layout.ep } else { 0 };
    let mut params: Vec<Param> = vec![];
    let mut at: HashMap<String, usize> = HashMap::new();
    for l in locals {
        let mut name = reindex(&l.name, &LAYER, offsets.get(&(l.vpp * layout.pp + l.pp)).copied().unwrap_or(0), true);
        if per_ep > 0 {
            name = reindex(&name, &EXPERT, l.ep * per_ep, false);
            name = reindex(&name, &GROUPED, l.ep * per_ep, false);
        }
        let param = Param { join: join_for(&name, layout.swiglu), name, shards: l.shards };
        match at.get(&param.name) {
            Some(&i) => params[i] = param,
            None => {
                at.insert(param.name.clone(), params.len());
                params.push(param);
            }
        }
    }
    Ok(params)
}

/// The weights of one rank file: (mapped name, virtual pipeline index, tensor).
fn model_weights(file: &Path) -> Result<Vec<(String, usize, PtTensor)>, CheckpointError> {
    let index = read_pt_index(file)?;
    let has_model = index.tensors.iter().any(|(k, _)| k.starts_with("model."));
    let mut out = vec![];
    for (key, tensor) in index.tensors {
        let Some((chunk, name)) = key.split_once('.') else { continue };
        let vpp = match chunk.strip_prefix("model") {
            Some("") => 0,
            Some(n) if !has_model && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => match n.parse() {
                Ok(v) => v,
                Err(_) => continue,
            },
            _ => continue,
        };
        let name = NAME_MAPPING.iter().fold(name.to_string(), |n, (from, to)| n.replace(from, to));
        out.push((name, vpp, tensor));
    }
    if out.is_empty() {
        return Err(CheckpointError::layout(file, "expected a 'model' (or 'model0', 'model1', ...) state dict holding tensors, found none"));
    }
    Ok(out)
}

/// The first global layer index of each model chunk `vpp * PP + pp`: the
/// layers of all earlier chunks (each chunk's count is its highest local
/// index + 1), so uneven pipeline splits get the right indices. MTP layers
/// (`mtp.layers.N`) are not counted.
fn layer_offsets(locals: &[Local], pp: usize) -> HashMap<usize, usize> {
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for l in locals.iter().filter(|l| l.ep == 0) {
        let chunk = l.vpp * pp + l.pp;
        let count = counts.entry(chunk).or_default();
        if let Some(i) = local_index(&l.name, &LAYER, true) {
            *count = (*count).max(i.saturating_add(1));
        }
    }
    let mut chunks: Vec<usize> = counts.keys().copied().collect();
    chunks.sort_unstable();
    let mut offsets = HashMap::new();
    let mut total = 0usize;
    for c in chunks {
        offsets.insert(c, total);
        total = total.saturating_add(counts[&c]);
    }
    offsets
}

/// The index the first match of `re` captures (not under `mtp.` when `skip_mtp`).
fn local_index(name: &str, re: &Regex, skip_mtp: bool) -> Option<usize> {
    let caps = re.captures(name)?;
    let whole = caps.get(0)?;
    if skip_mtp && name[..whole.start()].ends_with("mtp.") {
        return None;
    }
    caps.get(1)?.as_str().parse().ok()
}

/// `name` with the index of the first match of `re` increased by `offset`
/// (only that match, not every occurrence of its text as msprobe's `replace`).
fn reindex(name: &str, re: &Regex, offset: usize, skip_mtp: bool) -> String {
    let Some(local) = local_index(name, re, skip_mtp) else { return name.to_string() };
    let Some(digits) = re.captures(name).and_then(|c| c.get(1)) else { return name.to_string() };
    format!("{}{}{}", &name[..digits.start()], local.saturating_add(offset), &name[digits.end()..])
}

/// msprobe's TP rule by name, except that Transformer Engine's fused norm
/// weights (`mlp.linear_fc1.layer_norm_weight`) are replicated, and that
/// SwiGLU `linear_fc1` shards are split into their gate and up halves.
fn join_for(name: &str, swiglu: bool) -> Join {
    if name.contains("layer_norm_") {
        Join::Replicated
    } else if AXIS0.iter().any(|k| name.contains(k)) {
        if swiglu && name.contains("linear_fc1") {
            Join::Swiglu
        } else {
            Join::Concat(0)
        }
    } else if AXIS1.iter().any(|k| name.contains(k)) {
        Join::Concat(1)
    } else {
        Join::Replicated
    }
}

/// Reads a parameter's shards and joins them.
pub fn materialize(p: &Param) -> Result<Merged, CheckpointError> {
    let file = p.shards[0].file();
    let shapes: Vec<&[usize]> = p.shards.iter().map(|s| s.shape()).collect();
    let shape_error = |what: &str| CheckpointError::layout(file, format!("{}: expected TP shards {what}, got shapes {shapes:?}", p.name));
    if p.shards.len() == 1 {
        return Ok(Merged { shape: shapes[0].to_vec(), values: p.shards[0].read_f32()?, inconsistent: false });
    }
    match p.join {
        Join::Replicated => {
            let values = p.shards[0].read_f32()?;
            let mut inconsistent = false;
            for s in &p.shards[1..] {
                inconsistent |= s.shape() != shapes[0] || !allclose(&values, &s.read_f32()?);
            }
            Ok(Merged { shape: shapes[0].to_vec(), values, inconsistent })
        }
        Join::Concat(_) | Join::Swiglu => {
            let axis = if let Join::Concat(a) = p.join { a } else { 0 };
            let base = shapes[0];
            if base.len() <= axis || shapes.iter().any(|s| s.len() != base.len() || s.iter().enumerate().any(|(d, &n)| d != axis && n != base[d])) {
                return Err(shape_error(&format!("of one rank ({}-d at least) that differ only in dim {axis}", axis + 1)));
            }
            if p.join == Join::Swiglu && shapes.iter().any(|s| s[0] % 2 != 0) {
                return Err(shape_error("with an even dim 0 (SwiGLU gate and up halves)"));
            }
            let mut shape = base.to_vec();
            shape[axis] = shapes.iter().try_fold(0usize, |n, s| n.checked_add(s[axis])).ok_or_else(|| shape_error("whose joined dim fits in 64 bits"))?;
            let shards = p.shards.iter().map(|s| s.read_f32()).collect::<Result<Vec<_>, _>>()?;
            let views = shards
                .iter()
                .zip(&shapes)
                .map(|(v, s)| ArrayViewD::from_shape(*s, v))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| shape_error("whose values fill their shapes"))?;
            let values = if p.join == Join::Swiglu {
                let halves = views.into_iter().map(|v| {
                    let half = v.len_of(Axis(0)) / 2;
                    v.split_at(Axis(0), half)
                });
                let (gates, ups): (Vec<_>, Vec<_>) = halves.unzip();
                join(Axis(0), &[gates, ups].concat())
            } else {
                join(Axis(axis), &views)
            };
            Ok(Merged { shape, values, inconsistent: false })
        }
    }
}

/// `pieces` (equal but in `axis`) joined along `axis`, in row-major order.
/// Each piece is assigned into its slice of a row-major array: the one copy
/// the join needs, whatever the axis (`ndarray::concatenate` grows its result
/// along `axis`, which is row-major only for axis 0, and would need a second
/// copy for the others).
fn join(axis: Axis, pieces: &[ArrayViewD<'_, f32>]) -> Vec<f32> {
    let mut dim = pieces[0].raw_dim();
    dim[axis.index()] = pieces.iter().map(|p| p.len_of(axis)).sum();
    let mut joined = ArrayD::zeros(dim);
    let mut at = 0;
    for p in pieces {
        let n = p.len_of(axis);
        joined.slice_axis_mut(axis, Slice::from(at..at + n)).assign(p);
        at += n;
    }
    joined.into_raw_vec_and_offset().0
}

/// `np.allclose(a, b)` (rtol 1e-5, atol 1e-8; NaN is never close).
fn allclose(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| (f64::from(x) - f64::from(y)).abs() <= 1e-8 + 1e-5 * f64::from(y).abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_and_reindex_only_the_match() {
        let mapped = NAME_MAPPING.iter().fold("language_model.encoder.layers.1.self_attention.query_key_value.weight".to_string(), |n, (f, t)| n.replace(f, t));
        assert_eq!(mapped, "decoder.layers.1.self_attention.linear_qkv.weight");
        assert_eq!(reindex("decoder.layers.1.x.layers.12.w", &LAYER, 4, true), "decoder.layers.5.x.layers.12.w");
        assert_eq!(reindex("mtp.layers.0.w", &LAYER, 4, true), "mtp.layers.0.w");
        assert_eq!(
            reindex("decoder.layers.0.mlp.experts.local_experts.3.linear_fc1.weight", &EXPERT, 8, false),
            "decoder.layers.0.mlp.experts.local_experts.11.linear_fc1.weight"
        );
        assert_eq!(reindex("decoder.layers.0.mlp.experts.linear_fc2.weight3", &GROUPED, 8, false), "decoder.layers.0.mlp.experts.linear_fc2.weight11");
    }

    #[test]
    fn tp_rules() {
        assert_eq!(join_for("decoder.layers.0.self_attention.linear_qkv.bias", false), Join::Concat(0));
        assert_eq!(join_for("decoder.layers.0.mlp.linear_fc1.layer_norm_weight", false), Join::Replicated);
        assert_eq!(join_for("decoder.layers.0.mlp.linear_fc1.weight", true), Join::Swiglu);
        assert_eq!(join_for("decoder.layers.0.mlp.linear_fc2.weight", true), Join::Concat(1));
        assert_eq!(join_for("decoder.layers.0.mlp.linear_fc2.bias", false), Join::Replicated);
        assert!(allclose(&[1.0, 2.0], &[1.000001, 2.0]) && !allclose(&[f32::NAN], &[f32::NAN]));
    }

    #[test]
    fn joins_are_row_major_along_any_axis() {
        let view = |shape: &[usize], v: &'static [f32]| ArrayViewD::from_shape(shape, v).expect("values fill the shape");
        let a: &[f32] = &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(join(Axis(1), &[view(&[2, 3], a), view(&[2, 1], &[6.0, 7.0])]), [0.0, 1.0, 2.0, 6.0, 3.0, 4.0, 5.0, 7.0]);
        assert_eq!(join(Axis(0), &[view(&[2, 3], a), view(&[1, 3], &[6.0, 7.0, 8.0])]), [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        assert!(join(Axis(1), &[view(&[4, 0], &[]), view(&[4, 0], &[])]).is_empty());
    }

    #[test]
    fn uneven_chunks_get_cumulative_offsets() {
        let local = |name: &str, vpp, pp| Local { name: name.into(), vpp, pp, ep: 0, shards: vec![] };
        // PP 2, VPP 2: chunk order (vpp 0, pp 0), (0, 1), (1, 0), (1, 1) with 3, 2, 2, 1 layers.
        let locals = [local("layers.2.w", 0, 0), local("layers.1.w", 0, 1), local("layers.1.w", 1, 0), local("layers.0.w", 1, 1), local("embedding.w", 0, 0)];
        let offsets = layer_offsets(&locals, 2);
        assert_eq!([offsets[&0], offsets[&1], offsets[&2], offsets[&3]], [0, 3, 5, 7]);
    }
}
