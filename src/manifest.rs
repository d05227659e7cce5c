//! `manifest.json`: what a batch generated, with a content hash per script,
//! so `--check` can tell drifted, missing and extra files apart.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::output::{self, WriteError};
use crate::select::Shard;

/// One generated script.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// File name inside the output folder.
    pub file: String,
    /// `Prefix.op.N`.
    pub api: String,
    /// `forward` / `backward`.
    pub direction: String,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
}

/// The whole manifest of one output folder (or of one shard of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// `msprobe-rs <version>`.
    pub generator: String,
    /// `pytorch` / `mindspore`.
    pub framework: String,
    /// The dump, relative to the manifest's folder.
    pub dump: String,
    /// `python` or `rust`.
    pub lang: String,
    /// `forward`, `backward` or `both`.
    pub propagation: String,
    /// The `--filter` regex, if any.
    pub filter: Option<String>,
    /// The shard, `I/N`, if any.
    pub shard: Option<String>,
    /// Every script, sorted by file name.
    pub scripts: Vec<ManifestEntry>,
    /// The shared module the scripts import (`--shared-module`); absent otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<ModuleEntry>,
}

/// A module the scripts import (`op_generate --shared-module`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleEntry {
    /// File name inside the output folder.
    pub file: String,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `manifest.json`, or `manifest.shard-I-of-N.json` for a shard, so shards
/// sharing an output folder never overwrite each other's manifest.
pub fn file_name(shard: Option<Shard>) -> String {
    match shard {
        None => "manifest.json".into(),
        Some(s) => format!("manifest.shard-{}-of-{}.json", s.index, s.count),
    }
}

impl Manifest {
    /// The manifest at `path`, if there is a readable one.
    pub fn read(path: &Path) -> Option<Manifest> {
        serde_json::from_slice(&std::fs::read(path).ok()?).ok()
    }

    /// Serialised form (pretty JSON, trailing newline).
    fn to_bytes(&self) -> Vec<u8> {
        let mut text = serde_json::to_string_pretty(self).expect("a manifest always serialises");
        text.push('\n');
        text.into_bytes()
    }

    /// Writes the manifest atomically.
    pub fn write(&self, path: &Path) -> Result<(), WriteError> {
        output::write(path, &self.to_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_and_names() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(file_name(Some(Shard { index: 2, count: 8 })), "manifest.shard-2-of-8.json");
    }
}
