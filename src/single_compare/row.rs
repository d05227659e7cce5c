//! One row of a key's workbook: the arrays a [`Key`] names in each run,
//! read (under the path rule) and compared when both exist with the same
//! shape; otherwise the row says why it holds no figures. Its cells are
//! msprobe's (`save_excel`): numbers as numbers, shapes as `"[4, 8]"`, an
//! infinite error as the string `inf`, a missing value as an empty cell;
//! plus a `note` column.

use std::path::Path;

use runtime::dtype::TDType;
use runtime::io::{read_tensor, HostTensor};

use super::discover::{Id, Key};
use super::error::CompareError;
use super::metrics::{compare, Metrics};
use crate::xlsx::Cell;

/// msprobe's twelve columns, then `note` (why a row has no figures).
pub const HEADER: [&str; 13] = [
    "step",
    "rank",
    "micro_step",
    "id",
    "shape1",
    "shape2",
    "相同元素百分比(%)",
    "首个不匹配元素索引",
    "最大绝对误差",
    "最大相对误差",
    "误差在千分之一内元素占比(%)",
    "误差在百分之一内元素占比(%)",
    "note",
];

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

impl Row {
    /// The row's cells under [`HEADER`].
    pub fn cells(&self) -> Vec<Cell> {
        let k = &self.key;
        let int = |n: u64| Cell::Number(n as f64);
        let id = match &k.id {
            Id::Index(n) => int(*n),
            Id::Name(s) | Id::File(s) => Cell::text(s),
        };
        let shape = |s: &Option<Vec<usize>>| s.as_deref().map_or(Cell::Empty, |s| Cell::Text(shape_text(s)));
        let mut cells = vec![int(k.step), int(k.rank), int(k.micro_step), id, shape(&self.shape1), shape(&self.shape2)];
        match &self.metrics {
            Some(m) => cells.extend([
                Cell::Number(m.same_percent),
                m.first_mismatch.map_or(Cell::Empty, int),
                Cell::Number(m.max_abs),
                Cell::Number(m.max_rel),
                Cell::Number(m.within_thousandth),
                Cell::Number(m.within_hundredth),
            ]),
            None => cells.extend([(); 6].map(|_| Cell::Empty)),
        }
        let note = self.note.text();
        cells.push(if note.is_empty() { Cell::Empty } else { Cell::text(note) });
        cells
    }
}

/// A shape as Python prints a list: `[4, 8]`, `[]`.
fn shape_text(shape: &[usize]) -> String {
    runtime::pyfmt::list(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_read_like_python_lists() {
        assert_eq!(shape_text(&[4, 8]), "[4, 8]");
        assert_eq!(shape_text(&[3]), "[3]");
        assert_eq!(shape_text(&[]), "[]");
    }
}
