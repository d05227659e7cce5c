//! The checks of two packs, in msprobe's order (`env`, `pip`, `dataset`,
//! `weights`, `hyperparameters`, `random`). A check runs only when both
//! packs have its part (msprobe's `compare_ex`); its verdict and table
//! become one summary row and one sheet.

use serde_json::{Map, Value};

use super::error::ConfigCheckError;
use super::pack::Pack;
use super::{env, hyperparams, pip, random, stats};
use crate::xlsx::{Level, Table};

/// The checks that must pass for two runs to count as configured alike
/// (msprobe's documentation); `random` is informative.
pub const REQUIRED: [&str; 5] = ["env", "pip", "hyperparameters", "weights", "dataset"];

/// Every check, in sheet order.
pub const ALL: [&str; 6] = ["env", "pip", "dataset", "weights", "hyperparameters", "random"];

/// One check that ran.
#[derive(Debug)]
pub struct Check {
    /// Its part of the pack and its sheet's name.
    pub name: &'static str,
    /// Its verdict.
    pub level: Level,
    /// Its rows.
    pub table: Table,
}

/// Runs every check whose part both packs have.
pub fn checks(bench: &Pack, cmp: &Pack) -> Result<Vec<Check>, ConfigCheckError> {
    let mut out = Vec::new();
    for name in ALL.into_iter().filter(|n| bench.has(n) && cmp.has(n)) {
        let (level, table) = match name {
            "env" => {
                let t = env::compare(&object(bench, "env")?, &object(cmp, "env")?);
                (t.level(), t)
            }
            "pip" => {
                let t = pip::compare(&String::from_utf8_lossy(file(bench, "pip")?), &String::from_utf8_lossy(file(cmp, "pip")?));
                (t.level(), t)
            }
            "dataset" => stats::dataset(bench, cmp)?,
            "weights" => stats::weights(bench, cmp)?,
            "hyperparameters" => {
                let mut files = Vec::new();
                for f in hyperparams::FILES {
                    let entry = format!("hyperparameters/{f}");
                    if bench.file(&entry).is_some() && cmp.file(&entry).is_some() {
                        files.push(hyperparams::compare_file(f, &object(bench, &entry)?, &object(cmp, &entry)?));
                    }
                }
                let t = hyperparams::compare(files);
                (t.level(), t)
            }
            _ => random::compare(bench, cmp)?,
        };
        out.push(Check { name, level, table });
    }
    Ok(out)
}

fn file<'a>(pack: &'a Pack, name: &str) -> Result<&'a [u8], ConfigCheckError> {
    pack.file(name).ok_or_else(|| pack.error(name, "expected a file, found a folder"))
}

fn object(pack: &Pack, name: &str) -> Result<Map<String, Value>, ConfigCheckError> {
    match pack.json(name, file(pack, name)?)? {
        Value::Object(m) => Ok(m),
        _ => Err(pack.error(name, "expected a JSON object")),
    }
}
