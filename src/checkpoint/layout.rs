//! Where a Megatron-LM / MindSpeed checkpoint's files are: the iteration
//! folder (from `latest_checkpointed_iteration.txt`, or given), its rank
//! folders `mp_rank_TT[_PPP][_EEE]/model_optim_rng.pt`, and the parallel
//! sizes from the `args` of the first rank's file. Every rank file those
//! sizes name must exist, and no other rank folder may.

use std::path::{Path, PathBuf};

use runtime::io::{read_pt_index, Scalar};

use super::error::CheckpointError;
use crate::unreadable::Unreadable;

/// The file that names the latest iteration.
const TRACKER: &str = "latest_checkpointed_iteration.txt";

/// The file of each rank folder.
const RANK_FILE: &str = "model_optim_rng.pt";

/// One rank's file and its place in the model-parallel grid.
#[derive(Debug, Clone)]
pub struct Rank {
    /// Tensor-parallel rank.
    pub tp: usize,
    /// Pipeline stage.
    pub pp: usize,
    /// Expert-parallel rank.
    pub ep: usize,
    /// `<iteration>/mp_rank_.../model_optim_rng.pt`.
    pub file: PathBuf,
}

/// A checkpoint's iteration folder and parallel layout.
#[derive(Debug)]
pub struct Layout {
    /// The iteration folder read.
    pub iter_dir: PathBuf,
    /// `tensor_model_parallel_size`.
    pub tp: usize,
    /// `pipeline_model_parallel_size`.
    pub pp: usize,
    /// `expert_model_parallel_size`.
    pub ep: usize,
    /// `num_experts` (0 when None).
    pub num_experts: usize,
    /// `swiglu`: `linear_fc1` shards hold a gate half and an up half.
    pub swiglu: bool,
    /// Every rank file, ep-major, then pp, then tp.
    pub ranks: Vec<Rank>,
}

/// True when `path` is a checkpoint folder: it holds
/// `latest_checkpointed_iteration.txt`, or it is an iteration folder
/// holding `mp_rank_*` folders.
pub fn is_checkpoint_dir(path: &Path) -> bool {
    path.join(TRACKER).is_file() || rank_dirs(path).is_ok_and(|d| !d.is_empty())
}

/// The iteration folder of the checkpoint `path` and its layout.
pub fn layout(path: &Path) -> Result<Layout, CheckpointError> {
    let iter_dir = iteration_dir(path)?;
    let mut found = rank_dirs(&iter_dir).map_err(Unreadable::at(&iter_dir, "cannot list"))?;
    found.sort();
    if found.is_empty() {
        if iter_dir.join(".metadata").is_file() {
            return Err(CheckpointError::layout(
                &iter_dir,
                "is a torch_dist (.distcp) checkpoint; only the legacy format with mp_rank_* folders is read (as msprobe)",
            ));
        }
        return Err(CheckpointError::layout(&iter_dir, "expected mp_rank_* folders (a Megatron iteration folder), found none"));
    }
    let first = iter_dir.join(&found[0]).join(RANK_FILE);
    let index = read_pt_index(&first)?;
    let arg = |key: &str| index.scalars.iter().find(|(k, _)| k.strip_prefix("args.") == Some(key)).map(|(_, v)| v);
    let size = |key: &str, default: Option<usize>| match (arg(key), default) {
        (Some(Scalar::Int(n)), _) if *n >= 1 => Ok(*n as usize),
        (None | Some(Scalar::None), Some(d)) => Ok(d),
        (v, _) => Err(CheckpointError::layout(&first, format!("key 'args.{key}': expected an integer of at least 1, got {v:?}"))),
    };
    let (tp, pp, ep) = (size("tensor_model_parallel_size", None)?, size("pipeline_model_parallel_size", None)?, size("expert_model_parallel_size", Some(1))?);
    let num_experts = match arg("num_experts") {
        Some(Scalar::Int(n)) if *n >= 0 => *n as usize,
        None | Some(Scalar::None) => 0,
        Some(v) => return Err(CheckpointError::layout(&first, format!("key 'args.num_experts': expected an integer or None, got {v:?}"))),
    };
    if num_experts > 0 && num_experts % ep != 0 {
        return Err(CheckpointError::layout(&first, format!("expected num_experts ({num_experts}) to be a multiple of expert_model_parallel_size ({ep})")));
    }
    let swiglu = matches!(arg("swiglu"), Some(Scalar::Bool(true)));
    let mut ranks = vec![];
    for e in 0..ep {
        for p in 0..pp {
            for t in 0..tp {
                let mut name = if pp > 1 { format!("mp_rank_{t:02}_{p:03}") } else { format!("mp_rank_{t:02}") };
                if ep > 1 {
                    name.push_str(&format!("_{e:03}"));
                }
                let file = iter_dir.join(&name).join(RANK_FILE);
                if !file.is_file() {
                    return Err(CheckpointError::layout(
                        &file,
                        format!("expected this rank file (args of {}: tp {tp}, pp {pp}, ep {ep}), it is missing", found[0]),
                    ));
                }
                ranks.push(Rank { tp: t, pp: p, ep: e, file });
            }
        }
    }
    if found.len() != ranks.len() {
        let expected: Vec<String> =
            ranks.iter().map(|r| r.file.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()).collect();
        let extra: Vec<&String> = found.iter().filter(|f| !expected.contains(f)).collect();
        return Err(CheckpointError::layout(&iter_dir, format!("expected {} rank folders for tp {tp}, pp {pp}, ep {ep}, found also {extra:?}", ranks.len())));
    }
    Ok(Layout { iter_dir, tp, pp, ep, num_experts, swiglu, ranks })
}

/// The `mp_rank_*` folder names of `dir`.
fn rank_dirs(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut names = vec![];
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("mp_rank_") && entry.path().is_dir() {
            names.push(name);
        }
    }
    Ok(names)
}

/// The iteration folder: `iter_{N:07}` (or `release`) named by the
/// tracker file, else `path` itself.
fn iteration_dir(path: &Path) -> Result<PathBuf, CheckpointError> {
    if !path.is_dir() {
        let what = if path.exists() { "is not a folder" } else { "does not exist" };
        return Err(CheckpointError::layout(
            path,
            format!("{what}; expected a checkpoint folder (holding {TRACKER}) or an iteration folder (holding mp_rank_* folders)"),
        ));
    }
    let tracker = path.join(TRACKER);
    if !tracker.is_file() {
        return Ok(path.to_path_buf());
    }
    let text = std::fs::read_to_string(&tracker).map_err(Unreadable::at(&tracker, "cannot read"))?;
    let text = text.trim();
    let dir = match text {
        "release" => path.join("release"),
        t => match t.parse::<u64>() {
            Ok(n) => path.join(format!("iter_{n:07}")),
            Err(_) => return Err(CheckpointError::layout(&tracker, format!("expected `release` or an iteration number, got {t:?}"))),
        },
    };
    if !dir.is_dir() {
        return Err(CheckpointError::layout(&dir, format!("expected the iteration folder that {TRACKER} names, it does not exist")));
    }
    Ok(dir)
}
