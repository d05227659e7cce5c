//! The machine-readable record of a shard's work: `replay_parts/<set>/
//! part_I_of_N.json` (complete, written atomically; `<set>` names the
//! option set, [`set_dir`]) and its journal
//! `part_I_of_N.jsonl` (the same header on the first line, then one call
//! record per line as each call finishes; [`super::resume`]). A part holds
//! the shard, the dump's identity, the verdict-relevant options and every
//! call covered with its rows, exactly: floats round-trip as JSON numbers
//! (serde_json's `float_roundtrip`), NaN and infinities as the strings
//! `NaN`, `Infinity` and `-Infinity`.

use std::path::{Path, PathBuf};

use runtime::compare::Status;
use runtime::replay::Rows;
use runtime::report::{DetailRow, HtmlArg, HtmlFrame, ResultRow, TestedOn};
use serde::{Deserialize, Serialize};

/// The format tag of a part and of a journal's header.
pub const FORMAT: &str = "msprobe-rs replay part 4";

/// The folder of the parts in an output folder (one subfolder per option set).
pub fn dir(out: &Path) -> PathBuf {
    out.join("replay_parts")
}

/// The folder of the parts of `header`'s option set in `out`:
/// `replay_parts/set_<8 hex digits>`, a digest of the options and the
/// framework the dumps are read as. A rerun with other options (another
/// `--filter`, standard, data mode) into the same output folder keeps its
/// parts apart; one with the same options resumes from them. The root's
/// spelling is left out: shards mount the job where they can.
pub fn set_dir(out: &Path, header: &Header) -> PathBuf {
    use sha2::{Digest, Sha256};
    let key = serde_json::json!({"read_as": header.read_as, "whole": header.whole, "options": header.options});
    let digest = Sha256::digest(key.to_string().as_bytes());
    dir(out).join(format!("set_{}", super::dedupe::hex(&digest[..4])))
}

/// Whether `dir` holds a part or a journal (by name).
pub fn holds_parts(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|entries| entries.filter_map(Result::ok).any(|e| parse_name(&e.file_name().to_string_lossy()).is_some())).unwrap_or(false)
}

/// The option sets' folders under `out`'s parts folder that hold parts, sorted.
pub fn sets(out: &Path) -> Vec<PathBuf> {
    let mut sets: Vec<PathBuf> =
        std::fs::read_dir(dir(out)).map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| holds_parts(p)).collect()).unwrap_or_default();
    sets.sort();
    sets
}

/// The complete part of shard `index` of `count` in `parts`.
pub fn part_path(parts: &Path, index: u32, count: u32) -> PathBuf {
    parts.join(format!("part_{index}_of_{count}.json"))
}

/// The journal of shard `index` of `count` in `parts`.
pub fn journal_path(parts: &Path, index: u32, count: u32) -> PathBuf {
    parts.join(format!("part_{index}_of_{count}.jsonl"))
}

/// The shard a part file name stands for, and whether it is a journal:
/// `part_2_of_4.json` → (2, 4, false).
pub fn parse_name(name: &str) -> Option<(u32, u32, bool)> {
    let rest = name.strip_prefix("part_")?;
    let (rest, journal) = match rest.strip_suffix(".jsonl") {
        Some(r) => (r, true),
        None => (rest.strip_suffix(".json")?, false),
    };
    let (i, n) = rest.split_once("_of_")?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(i) && digits(n)).then_some(())?;
    Some((i.parse().ok()?, n.parse().ok()?, journal))
}

/// One dump.json of the job as a part identifies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DumpId {
    /// Its path relative to the dump root (`step0/rank1/dump.json`).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// The sha256 of its bytes, hex.
    pub sha256: String,
}

/// The options a verdict depends on (not the memory limits, which differ
/// per machine).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// `-f`.
    pub framework: String,
    /// The precision standard.
    pub standard: String,
    /// forward, backward or both.
    pub propagation: String,
    /// `--emulate`.
    pub emulate: bool,
    /// random_data or real_data.
    pub data_mode: String,
    /// `--filter`, when given.
    pub filter: Option<String>,
    /// The config's random_seed.
    pub random_seed: u64,
    /// The config's iter_times.
    pub iter_times: u32,
    /// The config's cosine_threshold.
    pub cosine_threshold: f64,
    /// The config's max_abs_err_threshold.
    pub max_abs_err_threshold: f64,
    /// The rulebook the verdicts were judged by: the sha256 of its rules
    /// as JSON, `rulebook_digest` in `replay/mod.rs`), so that parts judged by another
    /// (`MSPROBE_RS_RULEBOOK`) are kept apart and never merged or resumed.
    pub rulebook: String,
}

/// What a part and its journal say before any call: which shard, of which
/// job, with which options. Two parts merge only when all but the shard
/// index agree.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT`].
    pub format: String,
    /// This shard, 0-based.
    pub shard: u32,
    /// How many shards.
    pub shards: u32,
    /// The dump root as given to `--dump`.
    pub root: String,
    /// Whether the root is a job root or a step folder (rows carry their step and rank).
    pub whole: bool,
    /// The framework the dumps were read as (`pytorch`, `mindspore`, `mindtorch`).
    pub read_as: String,
    /// Every dump.json of the job, in job order.
    pub dumps: Vec<DumpId>,
    /// The options.
    pub options: Settings,
    /// How many calls the whole job replays (all shards).
    pub job_calls: usize,
}

impl Header {
    /// How `self` differs from `other` as a part of the same job (same
    /// dumps, options and selection; `shard_too`: the same shard as well),
    /// as what is different and in which way; `None` when it does not.
    /// The root's spelling may differ (shards mount the job where they can).
    pub fn differs(&self, other: &Header, shard_too: bool) -> Option<(&'static str, String)> {
        if self.format != other.format {
            return Some(("a part of another version", format!("format {:?}, not {:?}", self.format, other.format)));
        }
        if shard_too && (self.shard, self.shards) != (other.shard, other.shards) {
            return Some(("another shard", format!("{}/{}, not {}/{}", self.shard, self.shards, other.shard, other.shards)));
        }
        if self.dumps != other.dumps || self.whole != other.whole || self.read_as != other.read_as {
            let changed = self.dumps.iter().find(|d| !other.dumps.contains(d)).or_else(|| other.dumps.iter().find(|d| !self.dumps.contains(d)));
            let detail = match changed {
                Some(d) => format!("{} differs", d.path),
                None => format!("{} dumps read as {}, not {} read as {}", self.dumps.len(), self.read_as, other.dumps.len(), other.read_as),
            };
            return Some(("made from another dump", detail));
        }
        let (a, b) = (serde_json::to_value(&self.options).unwrap_or_default(), serde_json::to_value(&other.options).unwrap_or_default());
        if let (Some(a), Some(b)) = (a.as_object(), b.as_object()) {
            if let Some((key, x)) = a.iter().find(|(k, x)| b.get(*k) != Some(*x)) {
                return Some(("made with other options", format!("{key} {x}, not {}", b.get(key).cloned().unwrap_or_default())));
            }
        }
        if self.job_calls != other.job_calls {
            return Some(("made from another selection", format!("{} calls, not {}", self.job_calls, other.job_calls)));
        }
        None
    }
}

/// A float that round-trips exactly, NaN and infinities included.
mod exact {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    enum Float {
        Number(f64),
        Text(String),
    }

    pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match x {
            None => s.serialize_none(),
            Some(v) if v.is_finite() => s.serialize_f64(*v),
            Some(v) if v.is_nan() => s.serialize_str("NaN"),
            Some(v) => s.serialize_str(if *v > 0.0 { "Infinity" } else { "-Infinity" }),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        Ok(match Option::<Float>::deserialize(d)? {
            None => None,
            Some(Float::Number(v)) => Some(v),
            Some(Float::Text(t)) => Some(match t.as_str() {
                "NaN" => f64::NAN,
                "Infinity" => f64::INFINITY,
                "-Infinity" => f64::NEG_INFINITY,
                _ => return Err(serde::de::Error::custom(format!("expected a number, NaN, Infinity or -Infinity, got {t:?}"))),
            }),
        })
    }
}

/// A status by its CSV spelling.
mod status {
    use runtime::compare::Status;
    use serde::{Deserialize, Deserializer, Serializer};

    const ALL: [Status; 4] = [Status::Pass, Status::Warning, Status::Skip, Status::Error];

    pub fn parse(s: &str) -> Option<Status> {
        ALL.into_iter().find(|x| x.as_str() == s)
    }

    pub fn serialize<S: Serializer>(x: &Status, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(x.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let s = String::deserialize(d)?;
        parse(&s).ok_or_else(|| serde::de::Error::custom(format!("expected pass, warning, skip or error, got {s:?}")))
    }

    pub mod optional {
        use super::*;

        pub fn serialize<S: Serializer>(x: &Option<Status>, s: S) -> Result<S::Ok, S::Error> {
            match x {
                Some(v) => s.serialize_str(v.as_str()),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Status>, D::Error> {
            Option::<String>::deserialize(d)?
                .map(|s| parse(&s).ok_or_else(|| serde::de::Error::custom(format!("expected pass, warning, skip or error, got {s:?}"))))
                .transpose()
        }
    }
}

/// A details row as a part stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Detail {
    api_name: String,
    bench_dtype: Option<String>,
    tested_dtype: Option<String>,
    shape: Option<Vec<usize>>,
    #[serde(with = "exact")]
    cosine: Option<f64>,
    #[serde(with = "exact")]
    max_abs: Option<f64>,
    #[serde(with = "exact")]
    max_rel: Option<f64>,
    #[serde(with = "status")]
    status: Status,
    message: String,
    rule: String,
    metrics: String,
    hist: Option<Vec<u64>>,
    tested_on: Option<TestedOn>,
    #[serde(with = "exact")]
    effect: Option<f64>,
    #[serde(with = "exact")]
    effect_noise: Option<f64>,
    effect_note: String,
    loss: Option<(f64, f64)>,
}

/// A result row as a part stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Result_ {
    api_name: String,
    #[serde(with = "status::optional")]
    forward: Option<Status>,
    #[serde(with = "status::optional")]
    backward: Option<Status>,
    message: String,
}

/// An argument as the HTML report shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Argument {
    name: String,
    dtype: String,
    shape: String,
    min: String,
    max: String,
}

/// A frame of a call stack.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Frame {
    file: String,
    line: u64,
    function: String,
    code: String,
    user: bool,
}

/// One call of the job as a part records it: where it is in the job, its
/// rows, and what the HTML report shows of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    /// Where it is in the job (its fields first in the part's JSON).
    #[serde(flatten)]
    pub place: Place,
    /// The ordinal of the identical call whose verdict it shares.
    pub shares: Option<usize>,
    /// The identity of its call and inputs ([`super::dedupe`]), hex, when known.
    pub key: Option<String>,
    details: Vec<Detail>,
    results: Vec<Result_>,
    args: Vec<Argument>,
    stack: Vec<Frame>,
    /// The seconds its replay took (reading its tensors, running and judging
    /// it; its entry was read and checked up front, untimed), overlapping
    /// the calls replayed at the same time unless run with `-j 1`; none for
    /// a call that shares another's verdict. Not a verdict: a rerun times it
    /// again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<f64>,
}

/// A call's place in the job.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Place {
    /// Its place in the job order, 0-based.
    pub ordinal: usize,
    /// Its step folder's number (job roots and step folders).
    pub step: Option<u64>,
    /// Its rank folder's number (job roots and step folders).
    pub rank: Option<u64>,
    /// `Prefix.op.N`.
    pub api: String,
    /// The direction it was replayed in.
    pub direction: String,
}

impl CallRecord {
    /// The record of a call replayed (or sharing a verdict, `shares`).
    pub fn new(place: Place, key: Option<String>, shares: Option<usize>, rows: &Rows, args: &[HtmlArg], stack: &[HtmlFrame]) -> CallRecord {
        let details = rows
            .details
            .iter()
            .map(|r| Detail {
                api_name: r.api_name.clone(),
                bench_dtype: r.bench_dtype.clone(),
                tested_dtype: r.tested_dtype.clone(),
                shape: r.shape.clone(),
                cosine: r.cosine,
                max_abs: r.max_abs,
                max_rel: r.max_rel,
                status: r.status,
                message: r.message.clone(),
                rule: r.rule.clone(),
                metrics: r.metrics.clone(),
                hist: r.hist.clone(),
                tested_on: r.tested_on,
                effect: r.effect,
                effect_noise: r.effect_noise,
                effect_note: r.effect_note.clone(),
                loss: r.loss,
            })
            .collect();
        let results = rows
            .results
            .iter()
            .map(|r| Result_ { api_name: r.api_name.clone(), forward: r.forward, backward: r.backward, message: r.message.clone() })
            .collect();
        let args = args
            .iter()
            .map(|a| Argument { name: a.name.clone(), dtype: a.dtype.clone(), shape: a.shape.clone(), min: a.min.clone(), max: a.max.clone() })
            .collect();
        let stack =
            stack.iter().map(|f| Frame { file: f.file.clone(), line: f.line, function: f.function.clone(), code: f.code.clone(), user: f.user }).collect();
        CallRecord { place, shares, key, details, results, args, stack, seconds: None }
    }

    /// Its rows.
    pub fn rows(&self) -> Rows {
        Rows {
            details: self
                .details
                .iter()
                .map(|d| DetailRow {
                    api_name: d.api_name.clone(),
                    bench_dtype: d.bench_dtype.clone(),
                    tested_dtype: d.tested_dtype.clone(),
                    shape: d.shape.clone(),
                    cosine: d.cosine,
                    max_abs: d.max_abs,
                    max_rel: d.max_rel,
                    status: d.status,
                    message: d.message.clone(),
                    rule: d.rule.clone(),
                    metrics: d.metrics.clone(),
                    hist: d.hist.clone(),
                    tested_on: d.tested_on,
                    effect: d.effect,
                    effect_noise: d.effect_noise,
                    effect_note: d.effect_note.clone(),
                    loss: d.loss,
                })
                .collect(),
            results: self
                .results
                .iter()
                .map(|r| ResultRow { api_name: r.api_name.clone(), forward: r.forward, backward: r.backward, message: r.message.clone() })
                .collect(),
        }
    }

    /// Its arguments as the HTML report shows them.
    pub fn args(&self) -> Vec<HtmlArg> {
        self.args
            .iter()
            .map(|a| HtmlArg { name: a.name.clone(), dtype: a.dtype.clone(), shape: a.shape.clone(), min: a.min.clone(), max: a.max.clone() })
            .collect()
    }

    /// Its forward call stack.
    pub fn stack(&self) -> Vec<HtmlFrame> {
        self.stack.iter().map(|f| HtmlFrame { file: f.file.clone(), line: f.line, function: f.function.clone(), code: f.code.clone(), user: f.user }).collect()
    }
}

/// A complete part: the header, the notes on call stacks its dumps lack,
/// and every call of the shard in job order.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Part {
    /// Which shard of which job, with which options.
    #[serde(flatten)]
    pub header: Header,
    /// Why some dumps show no call stacks (for the HTML report).
    pub stack_notes: Vec<String>,
    /// The shard's calls, in job order.
    pub calls: Vec<CallRecord>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_floats_round_trip() {
        assert_eq!(parse_name("part_2_of_4.json"), Some((2, 4, false)));
        assert_eq!(parse_name("part_0_of_1.jsonl"), Some((0, 1, true)));
        for bad in ["part_2_of_4.csv", "part__of_4.json", "part_x_of_4.json", "other.json", "part_1_of_.json"] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
        let values = [0.1, 1e-300, f64::MIN_POSITIVE / 3.0, -0.0, 0.1 + 0.2, f64::NAN, f64::INFINITY, f64::NEG_INFINITY];
        let row = |x: f64| DetailRow {
            cosine: Some(x),
            max_abs: None,
            max_rel: Some(-x),
            hist: Some(vec![1, 2]),
            ..DetailRow::uncompared("Torch.add.0.forward.output.0".into(), Status::Warning, "m".into())
        };
        let rows = Rows {
            details: values.iter().map(|&x| row(x)).collect(),
            results: vec![ResultRow { api_name: "Torch.add.0".into(), forward: Some(Status::Error), backward: None, message: String::new() }],
        };
        let place = Place { ordinal: 3, step: Some(1), rank: None, api: "Torch.add.0".into(), direction: "forward".into() };
        let record = CallRecord::new(place, None, None, &rows, &[], &[]);
        let text = serde_json::to_string(&record).unwrap();
        let back: CallRecord = serde_json::from_str(&text).unwrap();
        let got = back.rows();
        for (a, b) in got.details.iter().zip(&rows.details) {
            assert!(a.cosine.unwrap().to_bits() == b.cosine.unwrap().to_bits() || (a.cosine.unwrap().is_nan() && b.cosine.unwrap().is_nan()), "{text}");
            assert_eq!((a.max_abs, &a.hist, a.status), (None, &b.hist, Status::Warning));
        }
        assert_eq!(got.results, rows.results);
        assert!(text.contains("\"NaN\"") && text.contains("\"-Infinity\""), "{text}");
    }
}
