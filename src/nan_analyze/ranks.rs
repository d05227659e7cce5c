//! Which ranks a step folder holds: every folder `rank<N>` (`rank` alone is
//! rank 0), each with its `dump.json`, `construct.json` and `stack.json`,
//! sorted by rank number.

use std::path::{Path, PathBuf};

use super::error::AnalyzeError;
use crate::unreadable::Unreadable;

/// One rank's folder and its three files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankDir {
    /// The rank number.
    pub rank: i64,
    /// `dump.json`.
    pub dump: PathBuf,
    /// `construct.json`.
    pub construct: PathBuf,
    /// `stack.json`.
    pub stack: PathBuf,
}

/// The rank number a folder name stands for: `rank` is 0, `rank<digits>`
/// is the number; anything else is no rank folder. (msprobe 8.3.2 strips
/// the letters r, a, n, k from both ends, so `rankk1` or `rank1a` count as
/// rank 1 there.)
fn rank_number(name: &str) -> Option<i64> {
    let digits = name.strip_prefix("rank")?;
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The rank folders of the step folder `step`, sorted by rank; an error when
/// `step` is no folder, holds no rank folder, two folders are the same
/// rank, or a rank folder lacks one of its files.
pub fn discover(step: &Path) -> Result<Vec<RankDir>, AnalyzeError> {
    if !step.is_dir() {
        let what = if step.exists() { "is not a folder" } else { "does not exist" };
        return Err(AnalyzeError::input(step, format!("{what}; -i expects a step folder holding rank folders (rank0, rank1, ...)")));
    }
    let unlisted = Unreadable::at(step, "cannot list the folder");
    let entries = std::fs::read_dir(step).map_err(&unlisted)?;
    let mut found: Vec<(i64, PathBuf)> = vec![];
    for entry in entries {
        let entry = entry.map_err(&unlisted)?;
        let Some(rank) = entry.file_name().to_str().and_then(rank_number) else { continue };
        if entry.path().is_dir() {
            found.push((rank, entry.path()));
        }
    }
    found.sort();
    if let Some(w) = found.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(AnalyzeError::input(step, format!("{} and {} are both rank {}", w[0].1.display(), w[1].1.display(), w[0].0)));
    }
    if found.is_empty() {
        return Err(AnalyzeError::input(step, "holds no rank folder (rank, rank0, rank1, ...); -i expects a step folder"));
    }
    found
        .into_iter()
        .map(|(rank, dir)| {
            let file = |name: &str| {
                let p = dir.join(name);
                if p.is_file() {
                    Ok(p)
                } else {
                    Err(AnalyzeError::input(&dir, format!("no {name}: a rank folder needs dump.json, construct.json and stack.json")))
                }
            };
            Ok(RankDir { rank, dump: file("dump.json")?, construct: file("construct.json")?, stack: file("stack.json")? })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_names_are_a_prefix_and_digits() {
        let got: Vec<Option<i64>> =
            ["rank", "rank0", "rank12", "rank01", "rankk1", "rank1a", "ranks", "proc0", "rank-1"].iter().map(|n| rank_number(n)).collect();
        assert_eq!(got, [Some(0), Some(0), Some(12), Some(1), None, None, None, None, None]);
    }

    #[test]
    fn ranks_are_sorted_by_number_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        for r in ["rank10", "rank2", "rankx", "other"] {
            std::fs::create_dir(dir.path().join(r)).unwrap();
            for f in ["dump.json", "construct.json", "stack.json"] {
                std::fs::write(dir.path().join(r).join(f), "{}").unwrap();
            }
        }
        let got: Vec<(i64, PathBuf)> = discover(dir.path()).unwrap().into_iter().map(|r| (r.rank, r.dump)).collect();
        assert_eq!(got, [(2, dir.path().join("rank2/dump.json")), (10, dir.path().join("rank10/dump.json"))]);
        std::fs::remove_file(dir.path().join("rank10/stack.json")).unwrap();
        let e = discover(dir.path()).unwrap_err().to_string();
        assert_eq!(e, format!("{}: no stack.json: a rank folder needs dump.json, construct.json and stack.json", dir.path().join("rank10").display()));
        std::fs::create_dir(dir.path().join("rank02")).unwrap();
        let e = discover(dir.path()).unwrap_err().to_string();
        assert!(e.ends_with("rank02 and ") || e.contains("are both rank 2"), "{e}");
    }
}
