//! The `op_generate` command: config -> dump entries -> typed call -> script.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::{ConfigError, DataMode, OpConfig, Propagation};
use crate::dump::{self, DumpError, DumpHeader};
use crate::model::{ApiCall, ApiName, Arg, Direction, Framework, ModelError};
use crate::output::{self, WriteError};
use crate::render::{RenderError, Renderer, ScriptContext};

/// Why `op_generate` failed. Each variant maps to one documented exit code.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// config_op.json is unreadable or invalid (exit 3).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The dump is unreadable or malformed (exit 4).
    #[error(transparent)]
    Dump(#[from] DumpError),
    /// An entry of the dump has an unexpected shape (exit 4).
    #[error("{}: {source}", file.display())]
    Model {
        /// The dump file.
        file: PathBuf,
        /// What is wrong, with the JSON path.
        source: ModelError,
    },
    /// The dump does not hold what the config asks for (exit 4).
    #[error("{}: {message}", file.display())]
    Selection {
        /// The dump file.
        file: PathBuf,
        /// What is missing or unsupported.
        message: String,
    },
    /// An output file could not be written (exit 5).
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A template failed: a bug in this tool (exit 6).
    #[error("internal error: {0}")]
    Render(#[from] RenderError),
}

impl Error {
    /// The process exit code for this error (see README, "Exit codes").
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Config(_) => 3,
            Error::Dump(_) | Error::Model { .. } | Error::Selection { .. } => 4,
            Error::Write(_) => 5,
            Error::Render(_) => 6,
        }
    }
}

/// What a successful run wrote.
#[derive(Debug)]
pub struct Generated {
    /// The script.
    pub script: PathBuf,
    /// The extract file, when the config names one.
    pub extract: Option<PathBuf>,
}

/// The entries of one API call as read from a dump.
struct Selected {
    file: PathBuf,
    header: DumpHeader,
    forward: Option<Value>,
    backward: Option<Value>,
}

fn select(file: &Path, name: &ApiName) -> Result<Selected, Error> {
    let (fkey, bkey) = (name.key(Direction::Forward), name.key(Direction::Backward));
    let (mut forward, mut backward) = (None, None);
    let header = dump::scan(file, &mut |k| k == fkey || k == bkey, &mut |k, v| {
        if k == fkey {
            forward = Some(v);
        } else {
            backward = Some(v);
        }
    })?;
    Ok(Selected { file: file.to_path_buf(), header, forward, backward })
}

fn framework_of(sel: &Selected, requested: Framework) -> Result<(), Error> {
    match sel.header.framework.as_deref() {
        None => Ok(()),
        Some(f) if f == requested.as_str() => Ok(()),
        Some("mindtorch") => Err(Error::Selection {
            file: sel.file.clone(),
            message: "key \"framework\": mindtorch (MSAdapter) dumps are not supported yet; expected pytorch or mindspore".into(),
        }),
        Some(f) => Err(Error::Selection {
            file: sel.file.clone(),
            message: format!("key \"framework\": the dump was made by {f:?}, but -f {} was given", requested.as_str()),
        }),
    }
}

/// The folder holding the dump's tensor files: `dump_data_dir` when it
/// exists, else `dump_tensor_data/` beside the dump (dumps move between machines).
fn data_dir(sel: &Selected) -> Option<PathBuf> {
    let recorded = sel.header.dump_data_dir.as_deref().map(PathBuf::from).filter(|p| p.is_dir());
    let beside = sel.file.parent().map(|p| p.join("dump_tensor_data")).filter(|p| p.is_dir());
    recorded.or(beside).map(|p| std::fs::canonicalize(&p).unwrap_or(p))
}

fn check_real_data(call: &ApiCall, propagation: Propagation, file: &Path) -> Result<(), Error> {
    let mut values: Vec<(String, &Arg)> = vec![];
    for (i, a) in call.forward.args.iter().enumerate() {
        values.push((format!("input_args[{i}]"), a));
    }
    for (k, a) in &call.forward.kwargs {
        values.push((format!("input_kwargs.{k}"), a));
    }
    if let (Propagation::Backward, Some(b)) = (propagation, &call.backward) {
        for (i, a) in b.grad_outputs.iter().enumerate() {
            values.push((format!("backward input[{i}]"), a));
        }
    }
    for (path, a) in values {
        if a.tensors().iter().any(|t| t.data_name.is_none()) {
            return Err(Error::Selection {
                file: file.to_path_buf(),
                message: format!(
                    "{}: {path} has no data_name; real_data needs a dump made with task \"tensor\" (or use data_mode random_data)",
                    call.name
                ),
            });
        }
    }
    Ok(())
}

/// JSON text with the reader's sentinels turned back into msprobe's bare
/// `NaN` / `Infinity` tokens, so Python's json module reads the file too.
fn to_msprobe_json(v: &Value) -> String {
    let text = serde_json::to_string_pretty(v).expect("a JSON value always serialises");
    text.replace("\"\\u0000-Infinity\"", "-Infinity").replace("\"\\u0000Infinity\"", "Infinity").replace("\"\\u0000NaN\"", "NaN")
}

fn write_extract(path: &Path, sel: &Selected, framework: Framework, name: &ApiName) -> Result<(), Error> {
    let mut data = serde_json::Map::new();
    if let Some(f) = &sel.forward {
        data.insert(name.key(Direction::Forward), f.clone());
    }
    if let Some(b) = &sel.backward {
        data.insert(name.key(Direction::Backward), b.clone());
    }
    let doc = serde_json::json!({
        "task": sel.header.task,
        "level": sel.header.level,
        "framework": framework.as_str(),
        "dump_data_dir": sel.header.dump_data_dir,
        "data": data,
    });
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        output::create_dir(dir)?;
    }
    output::write_atomic(path, to_msprobe_json(&doc).as_bytes())?;
    Ok(())
}

/// Runs `op_generate` for one API: reads `config`, extracts the call from the
/// dump, writes the extract file (when configured) and the script into `out_dir`.
pub fn run(framework: Framework, config: &OpConfig, out_dir: &Path) -> Result<Generated, Error> {
    let source = match (&config.dump_json_path, &config.extract_api_path) {
        (Some(d), _) => dump::resolve_dump_file(d),
        (None, Some(e)) => e.clone(),
        (None, None) => unreachable!("config validation requires one of them"),
    };
    let Some(name) = &config.api_name else {
        return Err(Error::Config(ConfigError::Key {
            path: PathBuf::from("config_op.json"),
            key: "api_name",
            expected: "an API name such as Tensor.add.0".into(),
        }));
    };
    if !framework.accepts(name.prefix) {
        return Err(Error::Selection {
            file: source,
            message: format!("{name}: prefix {} is not replayable for {} dumps", name.prefix.as_str(), framework.as_str()),
        });
    }
    let sel = select(&source, name)?;
    framework_of(&sel, framework)?;
    let Some(forward) = &sel.forward else {
        return Err(Error::Selection { file: source, message: format!("API {name} not found (no key {:?})", name.key(Direction::Forward)) });
    };
    let backward = match (config.propagation, &sel.backward) {
        (Propagation::Backward, None) => {
            return Err(Error::Selection {
                file: source,
                message: format!("propagation is backward, but the dump has no {:?} entry", name.key(Direction::Backward)),
            })
        }
        (_, b) => b.as_ref(),
    };
    let call = ApiCall::from_entries(name.clone(), forward, backward).map_err(|source| Error::Model { file: sel.file.clone(), source })?;
    let data_dir = data_dir(&sel);
    if config.data_mode == DataMode::RealData {
        if data_dir.is_none() {
            return Err(Error::Selection {
                file: sel.file.clone(),
                message: "real_data: no tensor folder found (neither dump_data_dir nor dump_tensor_data/ beside the dump exists)".into(),
            });
        }
        check_real_data(&call, config.propagation, &sel.file)?;
    }

    let extract = match (&config.dump_json_path, &config.extract_api_path) {
        (Some(_), Some(p)) => {
            write_extract(p, &sel, framework, name)?;
            Some(p.clone())
        }
        _ => None,
    };
    let data_dir_text = data_dir.as_ref().map(|p| p.to_string_lossy().into_owned());
    let ctx = ScriptContext::new(&call, framework, config, data_dir_text.as_deref(), &source.to_string_lossy());
    let script = Renderer::new()?.python(framework, &ctx)?;
    output::create_dir(out_dir)?;
    let script_path = out_dir.join(format!("{}.py", ctx.api_full_name));
    output::write_atomic(&script_path, script.as_bytes())?;
    Ok(Generated { script: script_path, extract })
}
