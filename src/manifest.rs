//! `manifest.json`: what a batch generated, with a content hash per script,
//! so `--check` can tell drifted, missing and extra files apart.
//!
//! A batch over a large dump lists millions of scripts, so the manifest is
//! never held whole: [`write`] serialises the scripts from an iterator
//! straight into the atomic writer, and [`read`] hands the scripts of the
//! file on disk to a callback one at a time.

use std::cell::RefCell;
use std::fmt;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use runtime::atomic::{write_atomic_with, WriteOptions};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use sha2::{Digest, Sha256};

use crate::output::WriteError;
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

/// The fields of a manifest (of one output folder, or of one shard of it)
/// before its lists: `scripts` (every script, sorted by file name) and
/// `modules` (the shared module the scripts import with `--shared-module`;
/// absent otherwise) follow them in the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ManifestHead {
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
}

/// A module the scripts import (`op_generate --shared-module`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleEntry {
    /// File name inside the output folder.
    pub file: String,
    /// SHA-256 of the file's bytes, hex.
    pub sha256: String,
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// A digest in hex, as the manifest writes it.
pub fn hex(digest: &[u8; 32]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&sha256(bytes))
}

/// `manifest.json`, or `manifest.shard-I-of-N.json` for a shard, so shards
/// sharing an output folder never overwrite each other's manifest.
pub fn file_name(shard: Option<Shard>) -> String {
    match shard {
        None => "manifest.json".into(),
        Some(s) => format!("manifest.shard-{}-of-{}.json", s.index, s.count),
    }
}

/// The document as written: the head's fields, then the lists.
#[derive(Serialize)]
struct Document<'a, S: Serialize> {
    #[serde(flatten)]
    head: &'a ManifestHead,
    scripts: S,
    #[serde(skip_serializing_if = "<[ModuleEntry]>::is_empty")]
    modules: &'a [ModuleEntry],
}

/// The scripts, serialised from an iterator as they come.
struct Streamed<I>(RefCell<Option<I>>);

impl<I: Iterator<Item = ManifestEntry>> Serialize for Streamed<I> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.borrow_mut().take().expect("a manifest is serialised once"))
    }
}

/// Writes the manifest atomically (pretty JSON, trailing newline), its
/// scripts taken from `scripts` in order.
pub fn write(path: &Path, head: &ManifestHead, scripts: impl Iterator<Item = ManifestEntry>, modules: &[ModuleEntry]) -> Result<(), WriteError> {
    let doc = Document { head, scripts: Streamed(RefCell::new(Some(scripts))), modules };
    write_atomic_with(path, WriteOptions::GENERATED, &mut |file| {
        let mut out = BufWriter::with_capacity(1 << 16, file);
        serde_json::to_writer_pretty(&mut out, &doc)?;
        out.write_all(b"\n")?;
        out.flush()
    })
}

/// Reads the manifest at `path` streaming: `each` gets its scripts in
/// order. Its head and modules, or `None` when there is no readable,
/// well-formed manifest (`each` may have seen some scripts by then).
pub fn read(path: &Path, each: &mut dyn FnMut(ManifestEntry)) -> Option<(ManifestHead, Vec<ModuleEntry>)> {
    let file = std::fs::File::open(path).ok()?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 16, file));
    let read = DeserializeSeed::deserialize(Doc { each }, &mut de).ok()?;
    de.end().ok()?;
    Some(read)
}

/// The manifest document, its scripts going to `each`.
struct Doc<'a> {
    each: &'a mut dyn FnMut(ManifestEntry),
}

/// The `scripts` list, each entry going to the callback.
struct Scripts<'a>(&'a mut dyn FnMut(ManifestEntry));

impl<'de> DeserializeSeed<'de> for Doc<'_> {
    type Value = (ManifestHead, Vec<ModuleEntry>);
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// Sets a field read once; a repeated key is an error.
fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &'static str) -> Result<(), E> {
    if slot.replace(value).is_some() {
        return Err(E::duplicate_field(key));
    }
    Ok(())
}

impl<'de> Visitor<'de> for Doc<'_> {
    type Value = (ManifestHead, Vec<ModuleEntry>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a manifest object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let each = self.each;
        let (mut generator, mut framework, mut dump, mut lang, mut propagation) = (None, None, None, None, None);
        let (mut filter, mut shard, mut scripts, mut modules) = (None, None, None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "generator" => once::<_, A::Error>(&mut generator, map.next_value()?, "generator")?,
                "framework" => once::<_, A::Error>(&mut framework, map.next_value()?, "framework")?,
                "dump" => once::<_, A::Error>(&mut dump, map.next_value()?, "dump")?,
                "lang" => once::<_, A::Error>(&mut lang, map.next_value()?, "lang")?,
                "propagation" => once::<_, A::Error>(&mut propagation, map.next_value()?, "propagation")?,
                "filter" => once::<_, A::Error>(&mut filter, map.next_value::<Option<String>>()?, "filter")?,
                "shard" => once::<_, A::Error>(&mut shard, map.next_value::<Option<String>>()?, "shard")?,
                "scripts" => {
                    let scripts_seen = scripts.replace(()).is_some();
                    if scripts_seen {
                        return Err(<A::Error as de::Error>::duplicate_field("scripts"));
                    }
                    map.next_value_seed(Scripts(&mut *each))?;
                }
                "modules" => once::<_, A::Error>(&mut modules, map.next_value::<Vec<ModuleEntry>>()?, "modules")?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let need = |v: Option<String>, key: &'static str| v.ok_or_else(|| <A::Error as de::Error>::missing_field(key));
        scripts.ok_or_else(|| <A::Error as de::Error>::missing_field("scripts"))?;
        let head = ManifestHead {
            generator: need(generator, "generator")?,
            framework: need(framework, "framework")?,
            dump: need(dump, "dump")?,
            lang: need(lang, "lang")?,
            propagation: need(propagation, "propagation")?,
            filter: filter.flatten(),
            shard: shard.flatten(),
        };
        Ok((head, modules.unwrap_or_default()))
    }
}

impl<'de> DeserializeSeed<'de> for Scripts<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Scripts<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of scripts")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(entry) = seq.next_element::<ManifestEntry>()? {
            (self.0)(entry);
        }
        Ok(())
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

    fn head() -> ManifestHead {
        ManifestHead {
            generator: "g".into(),
            framework: "pytorch".into(),
            dump: "d.json".into(),
            lang: "python".into(),
            propagation: "both".into(),
            filter: None,
            shard: Some("0/2".into()),
        }
    }

    fn entry(file: &str) -> ManifestEntry {
        ManifestEntry { file: file.into(), api: "Tensor.add.0".into(), direction: "forward".into(), sha256: sha256_hex(file.as_bytes()) }
    }

    #[test]
    fn writes_pretty_json_and_reads_it_back_streaming() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        let scripts = [entry("a.py"), entry("b.py")];
        let modules = [ModuleEntry { file: "m.py".into(), sha256: "00".into() }];
        write(&path, &head(), scripts.iter().cloned(), &modules).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let expected = serde_json::json!({
            "generator": "g", "framework": "pytorch", "dump": "d.json", "lang": "python", "propagation": "both", "filter": null, "shard": "0/2",
            "scripts": scripts, "modules": modules,
        });
        assert_eq!(text, serde_json::to_string_pretty(&expected).unwrap() + "\n");
        let mut seen = vec![];
        assert_eq!(read(&path, &mut |e| seen.push(e)), Some((head(), modules.to_vec())));
        assert_eq!(seen, scripts);
        write(&path, &head(), std::iter::empty(), &[]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("\"shard\": \"0/2\",\n  \"scripts\": []\n}\n"), "{text}");
        assert_eq!(read(&path, &mut |_| panic!("no scripts")), Some((head(), vec![])));
    }

    #[test]
    fn a_malformed_manifest_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("manifest.json");
        assert_eq!(read(&path, &mut |_| {}), None);
        for bad in [
            r#"{"generator": "g"}"#,
            "[]",
            r#"{"generator": "g", "framework": "f", "dump": "d", "lang": "l", "propagation": "p", "scripts": [], "scripts": []}"#,
            "{} x",
        ] {
            std::fs::write(&path, bad).unwrap();
            assert_eq!(read(&path, &mut |_| {}), None, "{bad}");
        }
        std::fs::write(&path, r#"{"generator": "g", "framework": "f", "dump": "d", "lang": "l", "propagation": "p", "scripts": [], "extra": 1}"#).unwrap();
        assert_eq!(read(&path, &mut |_| {}).map(|(h, _)| h.filter), Some(None));
    }
}
