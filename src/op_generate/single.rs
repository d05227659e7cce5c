//! Single mode: one API, as msprobe's op_generate did.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Error, Source};
use crate::config::{ConfigError, OpConfig, Propagation};
use crate::dump::{self, DumpHeader};
use crate::model::{Direction, Framework};
use crate::output;
use crate::render::{Lang, Renderer};

/// What a successful run wrote (or, with `check`, compared).
#[derive(Debug)]
pub struct Generated {
    /// The files: the script, or a Rust project's Cargo.toml and src/main.rs.
    pub files: Vec<PathBuf>,
    /// The extract file, when the config names one.
    pub extract: Option<PathBuf>,
    /// With `check`: the files whose content on disk differs (or is missing).
    pub drifted: Vec<PathBuf>,
}

/// JSON text with the reader's sentinels turned back into msprobe's bare
/// `NaN` / `Infinity` tokens, so Python's json module reads the file too.
fn to_msprobe_json(v: &Value) -> String {
    let text = serde_json::to_string_pretty(v).expect("a JSON value always serialises");
    text.replace("\"\\u0000-Infinity\"", "-Infinity").replace("\"\\u0000Infinity\"", "Infinity").replace("\"\\u0000NaN\"", "NaN")
}

fn write_extract(path: &Path, header: &DumpHeader, framework: Framework, entries: &[(String, Value)]) -> Result<(), Error> {
    let data: serde_json::Map<String, Value> = entries.iter().cloned().collect();
    let doc = serde_json::json!({
        "task": header.task,
        "level": header.level,
        "framework": framework.as_str(),
        "dump_data_dir": header.dump_data_dir,
        "data": data,
    });
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        output::create_dir(dir)?;
    }
    output::write_atomic(path, to_msprobe_json(&doc).as_bytes())?;
    Ok(())
}

/// Runs `op_generate` for the config's API: extracts the call from the dump,
/// writes the extract file (when configured) and the script into `out_dir`.
/// With `check`, nothing is written: the files are compared with the ones on disk.
pub fn run(framework: Framework, config: &OpConfig, out_dir: &Path, check: bool, lang: Lang) -> Result<Generated, Error> {
    let file = match (&config.dump_json_path, &config.extract_api_path) {
        (Some(d), _) => {
            let files = dump::resolve_dump_files(d);
            if files.len() > 1 {
                let list: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
                return Err(Error::Selection {
                    file: d.clone(),
                    message: format!("holds several dumps ({}); point dump_json_path at one, or use --all", list.join(", ")),
                });
            }
            files.into_iter().next().expect("resolve_dump_files returns at least one path")
        }
        (None, Some(e)) => e.clone(),
        (None, None) => unreachable!("config validation requires one of them"),
    };
    let Some(name) = &config.api_name else {
        return Err(Error::Config(ConfigError::Key {
            path: PathBuf::from("config_op.json"),
            key: "api_name",
            expected: "an API name such as Tensor.add.0 (or pass --all / --filter)".into(),
        }));
    };
    if !framework.accepts(name.prefix) {
        return Err(Error::Selection {
            file,
            message: format!("{name}: prefix {} is not replayable for {} dumps", name.prefix.as_str(), framework.as_str()),
        });
    }
    let (fkey, bkey) = (name.key(Direction::Forward), name.key(Direction::Backward));
    let mut entries: Vec<(String, Value)> = vec![];
    let header = dump::scan(&file, &mut |k| k == fkey || k == bkey, &mut |k, v| entries.push((k, v)))?;
    let source = Source::new(&file, &header, framework, config.data_mode)?;
    let find = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v);
    let Some(forward) = find(&fkey) else {
        return Err(Error::Selection { file, message: format!("API {name} not found (no key {fkey:?})") });
    };
    let backward = find(&bkey);
    if config.propagation == Propagation::Backward && backward.is_none() {
        return Err(Error::Selection { file, message: format!("propagation is backward, but the dump has no {bkey:?} entry") });
    }
    if !check {
        output::create_dir(out_dir)?;
    }
    let rendered = source.render(&Renderer::new()?, framework, config, config.propagation, lang, name, (forward, backward), out_dir)?;
    let files: Vec<(PathBuf, String)> = rendered.into_iter().map(|(rel, text)| (out_dir.join(rel), text)).collect();
    if check {
        let drifted = files.iter().filter(|(p, text)| std::fs::read(p).ok().as_deref() != Some(text.as_bytes())).map(|(p, _)| p.clone()).collect();
        return Ok(Generated { files: files.into_iter().map(|(p, _)| p).collect(), extract: None, drifted });
    }
    let extract = match (&config.dump_json_path, &config.extract_api_path) {
        (Some(_), Some(p)) => {
            write_extract(p, &header, framework, &entries)?;
            Some(p.clone())
        }
        _ => None,
    };
    for (path, text) in &files {
        if let Some(parent) = path.parent() {
            output::create_dir(parent)?;
        }
        output::write_atomic(path, text.as_bytes())?;
    }
    Ok(Generated { files: files.into_iter().map(|(p, _)| p).collect(), extract, drifted: vec![] })
}
