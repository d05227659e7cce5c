//! Choosing APIs in batch: a name filter and a stable shard of the result
//! (`replay --dump` partitions its job by work instead, with the shard
//! [`shard_from_env`] takes from a job engine when `--shard` is not given).

use std::fmt;
use std::str::FromStr;

use regex::Regex;

use crate::model::ApiName;

/// `--shard I/N`: this process takes shard `I` (0-based) of `N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u32,
    /// How many shards.
    pub count: u32,
}

impl FromStr for Shard {
    type Err = String;
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("expected I/N with 0 <= I < N (e.g. 0/4), got {s:?}");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The shard a job engine gives this process when `--shard` is not given:
/// a Slurm job array's `SLURM_ARRAY_TASK_ID` (less `SLURM_ARRAY_TASK_MIN`
/// when set) of `SLURM_ARRAY_TASK_COUNT`, else a Kubernetes Indexed Job's
/// `JOB_COMPLETION_INDEX` of `JOB_COMPLETIONS`; `None` when neither pair is
/// set. One of a pair without the other, a value that is not a number, or
/// an index not below the count is an error naming the variables.
pub fn shard_from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, String> {
    let number = |key: &str| -> Result<Option<u64>, String> {
        get(key).map(|v| v.trim().parse::<u64>().map_err(|_| format!("{key}={v:?}: expected a whole number"))).transpose()
    };
    let pair = |(index, count): (&str, &str), min: Option<&str>| -> Result<Option<Shard>, String> {
        let (i, n) = match (number(index)?, number(count)?) {
            (None, None) => return Ok(None),
            (Some(_), None) => return Err(format!("{index} is set but {count} is not: set both, or pass --shard I/N")),
            (None, Some(_)) => return Err(format!("{count} is set but {index} is not: set both, or pass --shard I/N")),
            (Some(i), Some(n)) => (i, n),
        };
        let low = match min {
            Some(m) => number(m)?.unwrap_or(0),
            None => 0,
        };
        let within = match min {
            Some(m) if low > 0 => format!("{index}={i} minus {m}={low}"),
            _ => format!("{index}={i}"),
        };
        match i.checked_sub(low) {
            Some(k) if k < n => Ok(Some(Shard { index: k as u32, count: n as u32 })),
            _ => Err(format!("{within} is not an index below {count}={n}: expected 0 <= index < count, or pass --shard I/N")),
        }
    };
    match pair(("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT"), Some("SLURM_ARRAY_TASK_MIN"))? {
        Some(s) => Ok(Some(s)),
        None => pair(("JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"), None),
    }
}

/// FNV-1a, 64 bit: a hash that is the same on every machine and release,
/// so shards never move between runs.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3))
}

impl Shard {
    /// Whether the API belongs to this shard (by its `Prefix.op.N` name, so
    /// its forward and backward scripts always land in the same shard).
    pub fn contains(&self, name: &ApiName) -> bool {
        fnv1a(name.to_string().as_bytes()) % self.count as u64 == self.index as u64
    }
}

/// Which APIs a batch takes: those whose `Prefix.op.N` matches the filter
/// (all when none) and that fall into the shard (all when none).
#[derive(Debug, Clone, Default)]
pub struct ApiSelector {
    /// `--filter REGEX`, searched in `Prefix.op.N`.
    pub filter: Option<Regex>,
    /// `--shard I/N`.
    pub shard: Option<Shard>,
}

impl ApiSelector {
    /// Exactly the one API `name`.
    pub fn exactly(name: &ApiName) -> ApiSelector {
        let pattern = format!("^{}$", regex::escape(&name.to_string()));
        ApiSelector { filter: Some(Regex::new(&pattern).expect("an escaped name is a valid regex")), shard: None }
    }

    /// Whether the name passes the filter (the shard is applied separately,
    /// after grouping, so that counts can be reported per shard).
    pub fn matches(&self, name: &ApiName) -> bool {
        self.filter.as_ref().is_none_or(|re| re.is_match(&name.to_string()))
    }

    /// Whether the name belongs to this process's shard.
    pub fn in_shard(&self, name: &ApiName) -> bool {
        self.shard.is_none_or(|s| s.contains(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_shards() {
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
        for bad in ["4/4", "1/0", "x/2", "3", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn job_engines_give_the_shard() {
        let env = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            shard_from_env(move |k| vars.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone()))
        };
        assert_eq!(env(&[]), Ok(None));
        assert_eq!(env(&[("SLURM_ARRAY_TASK_ID", "2"), ("SLURM_ARRAY_TASK_COUNT", "4")]), Ok(Some(Shard { index: 2, count: 4 })));
        assert_eq!(
            env(&[("SLURM_ARRAY_TASK_ID", "3"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "4")]),
            Ok(Some(Shard { index: 2, count: 4 }))
        );
        assert_eq!(env(&[("JOB_COMPLETION_INDEX", "0"), ("JOB_COMPLETIONS", "3")]), Ok(Some(Shard { index: 0, count: 3 })));
        assert_eq!(
            env(&[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_COUNT", "2"), ("JOB_COMPLETION_INDEX", "0"), ("JOB_COMPLETIONS", "3")]),
            Ok(Some(Shard { index: 1, count: 2 }))
        );
        assert_eq!(
            env(&[("SLURM_ARRAY_TASK_ID", "1")]),
            Err("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: set both, or pass --shard I/N".into())
        );
        assert_eq!(env(&[("JOB_COMPLETIONS", "3")]), Err("JOB_COMPLETIONS is set but JOB_COMPLETION_INDEX is not: set both, or pass --shard I/N".into()));
        assert_eq!(
            env(&[("JOB_COMPLETION_INDEX", "3"), ("JOB_COMPLETIONS", "3")]),
            Err("JOB_COMPLETION_INDEX=3 is not an index below JOB_COMPLETIONS=3: expected 0 <= index < count, or pass --shard I/N".into())
        );
        assert_eq!(
            env(&[("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_ARRAY_TASK_MIN", "1"), ("SLURM_ARRAY_TASK_COUNT", "4")]),
            Err("SLURM_ARRAY_TASK_ID=0 minus SLURM_ARRAY_TASK_MIN=1 is not an index below SLURM_ARRAY_TASK_COUNT=4: expected 0 <= index < count, or pass --shard I/N".into())
        );
        assert_eq!(env(&[("JOB_COMPLETION_INDEX", "x"), ("JOB_COMPLETIONS", "3")]), Err("JOB_COMPLETION_INDEX=\"x\": expected a whole number".into()));
    }

    #[test]
    fn shards_partition_names() {
        let names: Vec<ApiName> = (0..500).map(|i| ApiName::parse(&format!("Tensor.add.{i}")).unwrap()).collect();
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        for n in &names {
            assert_eq!(shards.iter().filter(|s| s.contains(n)).count(), 1);
        }
        let sizes: Vec<usize> = shards.iter().map(|s| names.iter().filter(|n| s.contains(n)).count()).collect();
        assert!(sizes.iter().all(|&c| c > 120), "{sizes:?}");
        // Stable across releases: FNV-1a's published test vector.
        assert_eq!(fnv1a(b"a"), 0xaf63dc4c8601ec8c);
    }
}
