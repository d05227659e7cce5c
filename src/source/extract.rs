//! The extract file (`extract_api_path`): the entries of one call in a small
//! dump of its own, in msprobe's dump layout with its bare non-finite
//! tokens, so msprobe and this tool both read it. (msprobe 8.3.2's own
//! extract files put the API keys at the top level; `crate::dump` reads
//! those too.)

use std::path::Path;

use serde_json::Value;

use super::Entries;
use crate::dump::{nonfinite, DumpHeader};
use crate::model::{Direction, Framework};
use crate::output::{self, WriteError};

/// Writes `e` as an extract file at `path` (atomically, folders created).
pub(super) fn write(path: &Path, header: &DumpHeader, framework: Framework, e: &Entries) -> Result<(), WriteError> {
    let mut data = serde_json::Map::new();
    data.insert(e.name.key(Direction::Forward), e.forward.clone());
    if let Some(b) = &e.backward {
        data.insert(e.name.key(Direction::Backward), b.clone());
    }
    let doc = serde_json::json!({
        "task": header.task,
        "level": header.level,
        "framework": framework.as_str(),
        "dump_data_dir": header.dump_data_dir,
        "data": Value::Object(data),
    });
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        output::create_dir(dir)?;
    }
    output::write(path, nonfinite::to_msprobe_json(&doc).as_bytes())?;
    Ok(())
}
