//! One row of a key's workbook: the arrays a [`Key`] names in each run,
//! read (under the path rule) and compared when both exist with the same
//! shape; otherwise the row says why it holds no figures.

use std::path::Path;

use runtime::dtype::TDType;
use runtime::io::{read_tensor, HostTensor};

use super::discover::Key;
use super::metrics::{compare, Metrics};
use super::CompareError;

/// Why a row has no figures, written in its `note` cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Note {
    /// Compared: the figures are there.
    Compared,
    /// The array exists in the first run only.
    OnlyInDir1,
    /// The array exists in the second run only.
    OnlyInDir2,
    /// The shapes differ; msprobe would compare a cut-down block.
    ShapesDiffer,
    /// Both arrays have no elements.
    Empty,
}

impl Note {
    /// The `note` cell (empty for a compared row).
    pub fn text(self) -> &'static str {
        match self {
            Note::Compared => "",
            Note::OnlyInDir1 => "only in dir1",
            Note::OnlyInDir2 => "only in dir2",
            Note::ShapesDiffer => "shapes differ: not compared",
            Note::Empty => "empty arrays: nothing to compare",
        }
    }
}

/// One row: the key, each side's shape (`None`: no such array), the
/// figures and the note.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// (step, rank, micro_step, id).
    pub key: Key,
    /// The first run's shape.
    pub shape1: Option<Vec<usize>>,
    /// The second run's shape.
    pub shape2: Option<Vec<usize>>,
    /// The figures, when compared.
    pub metrics: Option<Metrics>,
    /// Why there are no figures, or [`Note::Compared`].
    pub note: Note,
}

/// Whether float32 arithmetic holds the dtype exactly (msprobe compares
/// SingleSave's float32 files in float32).
fn single(dtype: TDType) -> bool {
    matches!(dtype, TDType::F16 | TDType::BF16 | TDType::F32)
}

/// Reads the arrays of `key` (at least one side given) and builds its row;
/// an unreadable, truncated or hostile file is an error naming it.
pub fn row(key: Key, file1: Option<&Path>, file2: Option<&Path>) -> Result<Row, CompareError> {
    let read = |f: Option<&Path>| f.map(read_tensor).transpose();
    let (a, b): (Option<HostTensor>, Option<HostTensor>) = (read(file1)?, read(file2)?);
    let (shape1, shape2) = (a.as_ref().map(|t| t.shape.clone()), b.as_ref().map(|t| t.shape.clone()));
    let (metrics, note) = match (&a, &b) {
        (Some(a), Some(b)) if a.shape != b.shape => (None, Note::ShapesDiffer),
        (Some(a), Some(_)) if a.data.is_empty() => (None, Note::Empty),
        (Some(a), Some(b)) => (Some(compare(&a.data, &b.data, single(a.dtype) && single(b.dtype))), Note::Compared),
        (Some(_), None) => (None, Note::OnlyInDir1),
        (None, _) => (None, Note::OnlyInDir2),
    };
    Ok(Row { key, shape1, shape2, metrics, note })
}
