//! `config_op.json`: what to extract and how the generated script runs.
//!
//! Same keys as msprobe 8.3.2, with its documented defaults actually applied
//! and its validation bugs fixed (see README, "Differences from msprobe").

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::model::{ApiName, Direction, NameError};
/// random_data / real_data: the runtime's type, shared by config, flags and scripts.
pub use runtime::spec::DataMode;
/// The device a dump was recorded on: the runtime's type, shared by config and flags.
pub use runtime::spec::DumpDevice;
use runtime::standard::Standard;

/// `--propagation`: one direction, or both (batch `op_generate` and `replay --dump`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Propagation {
    /// The call only.
    Forward,
    /// The call and its gradient.
    Backward,
    /// Forward and backward.
    Both,
}

impl Propagation {
    /// The one direction, or `None` for both.
    pub fn direction(self) -> Option<Direction> {
        match self {
            Propagation::Forward => Some(Direction::Forward),
            Propagation::Backward => Some(Direction::Backward),
            Propagation::Both => None,
        }
    }

    /// The flag spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Forward => "forward",
            Propagation::Backward => "backward",
            Propagation::Both => "both",
        }
    }
}

impl From<Direction> for Propagation {
    fn from(d: Direction) -> Propagation {
        match d {
            Direction::Forward => Propagation::Forward,
            Direction::Backward => Propagation::Backward,
        }
    }
}

/// Where the calls come from: a dump (with, optionally, an extract file to
/// write), or an extract file an earlier run wrote.
#[derive(Debug, Clone, PartialEq)]
pub enum DumpInput {
    /// `dump_json_path`: a `dump.json`, a rank folder, or a step folder of ranks.
    Dump {
        /// The path as configured.
        path: PathBuf,
        /// `extract_api_path`: where to save the extracted entries.
        extract_to: Option<PathBuf>,
    },
    /// Only `extract_api_path`: the small dump an earlier run extracted.
    Extract(PathBuf),
}

impl DumpInput {
    /// The path to read.
    pub fn path(&self) -> &Path {
        match self {
            DumpInput::Dump { path, .. } | DumpInput::Extract(path) => path,
        }
    }
}

/// A validated `config_op.json`, with the command line's overrides applied.
#[derive(Debug, Clone, PartialEq)]
pub struct OpConfig {
    /// The dump to read.
    pub input: DumpInput,
    /// `Prefix.op.N`; `None` only when batch flags select APIs instead.
    pub api_name: Option<ApiName>,
    /// Forward or backward.
    pub propagation: Direction,
    /// random_data or real_data.
    pub data_mode: DataMode,
    /// Seed of every random stream in the script.
    pub random_seed: u64,
    /// Replays per run (forced to 1 for real_data).
    pub iter_times: u32,
    /// A row passes when cosine similarity is above this.
    pub cosine_threshold: f64,
    /// ... and the max absolute error below this.
    pub max_abs_err_threshold: f64,
    /// The precision standard rows are judged by (`standard`: `default`, `msprobe`, `api` or `bound`).
    pub standard: Standard,
    /// The device the dump was recorded on (`dump_device`: `cpu`, `cuda` or `npu`).
    pub dump_device: DumpDevice,
}

/// What the command line overrides in a config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// `replay --dump`: the dump to read.
    pub dump: Option<PathBuf>,
    /// `--propagation forward|backward`.
    pub propagation: Option<Direction>,
    /// `--data-mode`.
    pub data_mode: Option<DataMode>,
    /// `--standard`.
    pub standard: Option<Standard>,
    /// `--dump-device`.
    pub dump_device: Option<DumpDevice>,
}

/// Why a config is rejected: the file, the key and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("{}: cannot read config: {source}", path.display())]
    Io {
        /// The config file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{}: not a JSON object: {source}", path.display())]
    Json {
        /// The config file.
        path: PathBuf,
        /// What the parser said.
        source: serde_json::Error,
    },
    /// The file is JSON, but not an object.
    #[error("{}: not a JSON object: the top level must be an object", path.display())]
    NotAnObject {
        /// The config file.
        path: PathBuf,
    },
    /// A key has a bad value.
    #[error("{}: key \"{key}\": expected {expected}", path.display())]
    Key {
        /// The config file.
        path: PathBuf,
        /// The offending key.
        key: &'static str,
        /// What was expected.
        expected: String,
    },
    /// `api_name` is not an API name.
    #[error("{}: key \"api_name\": expected {source}", path.display())]
    ApiName {
        /// The config file.
        path: PathBuf,
        /// Why the name is not one.
        source: NameError,
    },
}

/// msprobe's documented default seed.
const DEFAULT_SEED: u64 = 42;
/// The documented default cosine threshold.
const DEFAULT_COSINE: f64 = 0.99;
/// The documented default max absolute error threshold (msprobe's code used 0.001).
const DEFAULT_MAX_ABS_ERR: f64 = 0.0001;

/// Keys this tool reads; others are reported as warnings.
const KNOWN_KEYS: &[&str] = &[
    "dump_json_path",
    "api_name",
    "extract_api_path",
    "propagation",
    "data_mode",
    "random_seed",
    "iter_times",
    "cosine_threshold",
    "max_abs_err_threshold",
    "standard",
    "dump_device",
];

impl OpConfig {
    /// Reads and validates the config at `path`; returns it with the unknown keys.
    pub fn load(path: &Path) -> Result<(OpConfig, Vec<String>), ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?;
        let v: Value = serde_json::from_str(&text).map_err(|source| ConfigError::Json { path: path.to_path_buf(), source })?;
        let obj = v.as_object().ok_or_else(|| ConfigError::NotAnObject { path: path.to_path_buf() })?;
        let base = path.parent().unwrap_or(Path::new(""));
        OpConfig::from_object(obj, path, base)
    }

    /// Validates a parsed config; relative paths that do not exist from the
    /// current directory are tried against `base` (the config's folder).
    pub fn from_object(obj: &Map<String, Value>, path: &Path, base: &Path) -> Result<(OpConfig, Vec<String>), ConfigError> {
        let bad = |key: &'static str, expected: &str| ConfigError::Key { path: path.to_path_buf(), key, expected: expected.to_string() };
        let get = |key: &str| obj.get(key).filter(|v| !v.is_null());
        let string = |key: &'static str| -> Result<Option<String>, ConfigError> {
            match get(key) {
                None => Ok(None),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(key, "a string")),
            }
        };
        let locate = |p: String| -> PathBuf {
            let p = PathBuf::from(p);
            if p.is_relative() && !p.exists() && base.join(&p).exists() {
                base.join(p)
            } else {
                p
            }
        };

        let dump_json_path = string("dump_json_path")?.map(locate);
        let api_name = match string("api_name")? {
            None => None,
            Some(s) => {
                // A full key (`...forward`) names the same call: accept it.
                let base_name = s.strip_suffix(".forward").or_else(|| s.strip_suffix(".backward")).unwrap_or(&s);
                // A config names a call to replay: a prefix no op table holds
                // (`Distributed`, `Primitive`) is refused like an unknown one.
                let name = ApiName::parse(base_name).and_then(|n| match n.prefix.not_replayed() {
                    Some(_) => Err(NameError::Prefix(n.prefix.as_str().to_string())),
                    None => Ok(n),
                });
                Some(name.map_err(|source| ConfigError::ApiName { path: path.to_path_buf(), source })?)
            }
        };
        let extract_api_path = string("extract_api_path")?;
        let propagation = match string("propagation")? {
            None => Direction::Forward,
            Some(p) => Direction::parse(&p).ok_or_else(|| bad("propagation", "\"forward\" or \"backward\""))?,
        };
        let data_mode = match string("data_mode")? {
            None => DataMode::Random,
            Some(m) => DataMode::ALL.into_iter().find(|d| d.as_str() == m).ok_or_else(|| bad("data_mode", "\"random_data\" or \"real_data\""))?,
        };
        let random_seed = match get("random_seed") {
            None => DEFAULT_SEED,
            Some(v) => v.as_u64().filter(|&s| s <= u32::MAX as u64).ok_or_else(|| bad("random_seed", "an integer from 0 to 4294967295"))?,
        };
        let iter_times = match get("iter_times") {
            None => 1,
            Some(v) => v.as_u64().filter(|n| (1..=1000).contains(n)).ok_or_else(|| bad("iter_times", "an integer from 1 to 1000"))? as u32,
        };
        let threshold = |key: &'static str, default: f64| -> Result<f64, ConfigError> {
            match get(key) {
                None => Ok(default),
                Some(v) => v.as_f64().filter(|x| x.is_finite() && *x >= 0.0).ok_or_else(|| bad(key, "a finite non-negative number")),
            }
        };
        let cosine_threshold = threshold("cosine_threshold", DEFAULT_COSINE)?;
        let max_abs_err_threshold = threshold("max_abs_err_threshold", DEFAULT_MAX_ABS_ERR)?;
        let standard = match string("standard")? {
            None => Standard::default(),
            Some(s) => Standard::ALL.into_iter().find(|x| x.as_str() == s).ok_or_else(|| bad("standard", "\"default\", \"msprobe\", \"api\" or \"bound\""))?,
        };
        let dump_device = match string("dump_device")? {
            None => DumpDevice::default(),
            Some(s) => DumpDevice::ALL.into_iter().find(|d| d.as_str() == s).ok_or_else(|| bad("dump_device", "\"cpu\", \"cuda\" or \"npu\""))?,
        };
        let input = match (dump_json_path, extract_api_path) {
            (Some(path), extract) => DumpInput::Dump { path, extract_to: extract.map(PathBuf::from) },
            (None, Some(extract)) => DumpInput::Extract(locate(extract)),
            (None, None) => return Err(bad("dump_json_path", "a dump.json path (or an extract_api_path written by an earlier run)")),
        };
        let unknown = obj.keys().filter(|k| !KNOWN_KEYS.contains(&k.as_str())).cloned().collect();
        let iter_times = if data_mode == DataMode::Real { 1 } else { iter_times };
        Ok((
            OpConfig { input, api_name, propagation, data_mode, random_seed, iter_times, cosine_threshold, max_abs_err_threshold, standard, dump_device },
            unknown,
        ))
    }
}

impl OpConfig {
    /// The config as `config_op.json` holds it, naming its call and its
    /// dump as `dump_json_path` (the one writer of the format: `replay
    /// --minimize` writes one beside each minimized call, which
    /// `op_generate -i` and `replay -i` then read).
    pub fn to_json(&self, dump_json_path: &str) -> Value {
        serde_json::json!({
            "dump_json_path": dump_json_path,
            "api_name": self.api_name.as_ref().map(ToString::to_string),
            "propagation": self.propagation.as_str(),
            "data_mode": self.data_mode.as_str(),
            "random_seed": self.random_seed,
            "iter_times": self.iter_times,
            "cosine_threshold": self.cosine_threshold,
            "max_abs_err_threshold": self.max_abs_err_threshold,
            "standard": self.standard.as_str(),
            "dump_device": self.dump_device.as_str(),
        })
    }
}

impl OpConfig {
    /// The documented defaults for `input` (seed 42, forward, random_data,
    /// 1 iteration, thresholds 0.99 / 0.0001), e.g. for `replay --dump`
    /// without a config file.
    pub fn defaults(input: DumpInput) -> OpConfig {
        OpConfig {
            input,
            api_name: None,
            propagation: Direction::Forward,
            data_mode: DataMode::Random,
            random_seed: DEFAULT_SEED,
            iter_times: 1,
            cosine_threshold: DEFAULT_COSINE,
            max_abs_err_threshold: DEFAULT_MAX_ABS_ERR,
            standard: Standard::default(),
            dump_device: DumpDevice::default(),
        }
    }

    /// Applies the command line's overrides; real_data runs once.
    pub fn apply(&mut self, o: &Overrides) {
        if let Some(dump) = &o.dump {
            self.input = DumpInput::Dump { path: dump.clone(), extract_to: None };
        }
        if let Some(p) = o.propagation {
            self.propagation = p;
        }
        if let Some(m) = o.data_mode {
            self.data_mode = m;
        }
        if let Some(s) = o.standard {
            self.standard = s;
        }
        if let Some(d) = o.dump_device {
            self.dump_device = d;
        }
        if self.data_mode == DataMode::Real {
            self.iter_times = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(v: Value) -> Result<OpConfig, String> {
        OpConfig::from_object(v.as_object().unwrap(), Path::new("cfg.json"), Path::new("")).map(|(c, _)| c).map_err(|e| e.to_string())
    }

    #[test]
    fn applies_documented_defaults() {
        let c = load(json!({"dump_json_path": "d.json", "api_name": "Tensor.add.0"})).unwrap();
        assert_eq!((c.propagation, c.data_mode, c.random_seed, c.iter_times), (Direction::Forward, DataMode::Random, 42, 1));
        assert_eq!(c, OpConfig { api_name: c.api_name.clone(), ..OpConfig::defaults(DumpInput::Dump { path: "d.json".into(), extract_to: None }) });
        assert_eq!((c.cosine_threshold, c.max_abs_err_threshold), (0.99, 0.0001));
        let c = load(json!({"dump_json_path": "d.json", "api_name": "Tensor.add.0.backward", "data_mode": "real_data", "iter_times": 5})).unwrap();
        assert_eq!((c.api_name.unwrap().to_string(), c.iter_times), ("Tensor.add.0".to_string(), 1));
    }

    #[test]
    fn names_file_key_and_expectation() {
        let e = load(json!({"dump_json_path": "d.json", "api_name": "../../etc/passwd.0"})).unwrap_err();
        assert!(e.starts_with("cfg.json: key \"api_name\": expected <Prefix>.<op>.<N>"), "{e}");
        assert_eq!(load(json!({"dump_json_path": "d.json", "iter_times": 0})).unwrap_err(), "cfg.json: key \"iter_times\": expected an integer from 1 to 1000");
        assert_eq!(
            load(json!({"dump_json_path": "d.json", "random_seed": true})).unwrap_err(),
            "cfg.json: key \"random_seed\": expected an integer from 0 to 4294967295"
        );
        assert_eq!(
            load(json!({"dump_json_path": "d.json", "propagation": "sideways"})).unwrap_err(),
            "cfg.json: key \"propagation\": expected \"forward\" or \"backward\""
        );
        assert!(load(json!({"api_name": "Tensor.add.0"})).unwrap_err().contains("key \"dump_json_path\""));
    }

    #[test]
    fn overrides_apply_and_real_data_runs_once() {
        let mut c = load(json!({"extract_api_path": "e.json", "iter_times": 4})).unwrap();
        assert_eq!(c.input, DumpInput::Extract("e.json".into()));
        c.apply(&Overrides {
            dump: Some("d".into()),
            propagation: Some(Direction::Backward),
            data_mode: Some(DataMode::Real),
            standard: None,
            dump_device: Some(DumpDevice::Npu),
        });
        assert_eq!((c.input.path(), c.propagation, c.iter_times, c.dump_device), (Path::new("d"), Direction::Backward, 1, DumpDevice::Npu));
    }

    #[test]
    fn dump_device_is_cpu_unless_the_config_names_another() {
        assert_eq!(load(json!({"dump_json_path": "d.json"})).unwrap().dump_device, DumpDevice::Cpu);
        assert_eq!(load(json!({"dump_json_path": "d.json", "dump_device": "npu"})).unwrap().dump_device, DumpDevice::Npu);
        assert!(load(json!({"dump_json_path": "d.json", "dump_device": "tpu"})).unwrap_err().contains("key \"dump_device\""));
    }
}
