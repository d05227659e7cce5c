//! Reading dumped tensors without Python.
//!
//! msprobe writes one file per tensor: PyTorch dumps are `torch.save` archives
//! of a bare tensor (`.pt`), MindSpore dumps are NumPy arrays (`.npy`). Both
//! become a [`HostTensor`]: the stored dtype, the shape and the values in
//! row-major order, floats widened exactly to `f64`. Every reader checks sizes
//! against the file (and, given one, the expected shape) before allocating,
//! so a truncated or hostile file is an [`IoError`], never a panic or a huge
//! allocation.
//!
//! Whole checkpoints (`torch.save(dict)`, Megatron's `model_optim_rng.pt`)
//! are read by [`read_pt_index`] with the same zip and pickle code: every
//! tensor by key path, read one at a time ([`PtTensor::read_f32`]).
//!
//! **The path rule**: every tensor file is opened by [`open_inside`], which
//! opens it only when it resolves (symlinks followed) inside the folder its
//! path names, so a file of a dump's tensor folder that is a symlink to
//! somewhere else is refused ([`IoError::Outside`]).

mod checkpoint;
mod decode;
mod npy;
mod npy_write;
mod pickle;
mod pt;

use std::fs::File;
use std::path::{Component, Path, PathBuf};

pub use checkpoint::{read_pt_index, PtIndex, PtTensor};
pub use npy::read_npy;
pub use npy_write::write_npy;
pub use pickle::Scalar;

use crate::dtype::TDType;
pub use pt::read_pt;

/// The values of a tensor in row-major order, in the widest type of their
/// kind, so that every stored value is represented exactly.
#[derive(Debug, Clone, PartialEq)]
pub enum HostData {
    /// Every floating-point dtype, widened exactly.
    F64(Vec<f64>),
    /// Every signed integer dtype, and the unsigned ones up to 32 bits.
    I64(Vec<i64>),
    /// `u64`, whose upper half does not fit in `i64`.
    U64(Vec<u64>),
    /// Booleans.
    Bool(Vec<bool>),
}

impl HostData {
    /// Number of elements, whatever the variant.
    pub fn len(&self) -> usize {
        match self {
            HostData::F64(v) => v.len(),
            HostData::I64(v) => v.len(),
            HostData::U64(v) => v.len(),
            HostData::Bool(v) => v.len(),
        }
    }

    /// True when the tensor has no elements (a zero in its shape).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A tensor read from a dump file, independent of any framework or device.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    /// The dtype the file stored.
    pub dtype: TDType,
    /// The logical shape; empty for a 0-d tensor. A complex tensor is read
    /// as its (real, imaginary) float pairs: its shape with a trailing 2.
    pub shape: Vec<usize>,
    /// `shape.iter().product()` values in row-major order.
    pub data: HostData,
}

/// Why a tensor file could not be read. Every message starts with the file
/// and says what was expected.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The OS refused to open or read the file.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The extension names no format this crate reads.
    #[error("{}: expected a .pt or .npy file", path.display())]
    Extension {
        /// The file.
        path: PathBuf,
    },
    /// The file resolves outside the folder its path names (a symlink out).
    #[error("{}: refused: it resolves to {}, outside the tensor folder {}", path.display(), resolved.display(), dir.display())]
    Outside {
        /// The file.
        path: PathBuf,
        /// Where it resolves to.
        resolved: PathBuf,
        /// The folder it must stay in, resolved.
        dir: PathBuf,
    },
    /// The content is not a tensor in the expected format.
    #[error("{}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What was expected and what was found.
        reason: String,
    },
}

impl IoError {
    fn read(path: &Path, source: std::io::Error) -> Self {
        IoError::Read { path: path.to_path_buf(), source }
    }

    fn invalid(path: &Path, reason: impl Into<String>) -> Self {
        IoError::Invalid { path: path.to_path_buf(), reason: printable(reason.into()) }
    }
}

/// A reason as one printable line: text a file brings into it (a pickle's
/// global names, zip entry names, a `.npy` descr) may hold newlines or
/// terminal escapes, so every control character is written escaped (`\n`,
/// `\u{1b}`). Found by the fuzz targets `pickle` and `pt_archive`.
fn printable(reason: String) -> String {
    if !reason.chars().any(char::is_control) {
        return reason;
    }
    reason.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

/// Runs the `.pt` reader's pickle interpreter alone on the bytes of a
/// `data.pkl`: `Ok` when they describe a bare tensor, else what was expected,
/// as a `.pt` error would say it. For the fuzz target `pickle` and its
/// regression test (fuzz/README.md).
#[doc(hidden)]
pub fn check_tensor_pickle(pkl: &[u8]) -> Result<(), String> {
    pickle::load_tensor(pkl).map(|_| ()).map_err(printable)
}

/// Runs the pickle interpreter alone, in its checkpoint mode (a whole
/// `torch.save(dict)`: objects outside the tensors inert, tensors of allowlisted globals only), on the bytes of a
/// `data.pkl`: the number of tensors and scalars it holds, else what was
/// expected. For the fuzz target `checkpoint` (fuzz/README.md).
#[doc(hidden)]
pub fn check_checkpoint_pickle(pkl: &[u8]) -> Result<(usize, usize), String> {
    pickle::load_tree(pkl).map(|t| (t.tensors.len(), t.scalars.len())).map_err(printable)
}

/// `path` resolved (symlinks followed), when it lies inside the folder its
/// path names (`dir/name`: inside `dir`, resolved too): the one check of the
/// path rule. A file that does not exist is an [`IoError::Read`].
pub fn resolve_inside(path: &Path) -> Result<PathBuf, IoError> {
    if !matches!(path.components().next_back(), Some(Component::Normal(_))) {
        return Err(IoError::invalid(path, "expected the path of a file, ending in its name"));
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let dir = std::fs::canonicalize(dir).map_err(|e| IoError::read(path, e))?;
    let resolved = std::fs::canonicalize(path).map_err(|e| IoError::read(path, e))?;
    if !resolved.starts_with(&dir) {
        return Err(IoError::Outside { path: path.to_path_buf(), resolved, dir });
    }
    Ok(resolved)
}

/// Opens a tensor file under the path rule ([`resolve_inside`]): the
/// resolved file is opened, so what was checked is what is read.
pub fn open_inside(path: &Path) -> Result<File, IoError> {
    File::open(resolve_inside(path)?).map_err(|e| IoError::read(path, e))
}

/// The formats, by extension.
enum Format {
    Pt,
    Npy,
}

fn format(path: &Path) -> Result<Format, IoError> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("pt") => Ok(Format::Pt),
        Some("npy") => Ok(Format::Npy),
        _ => Err(IoError::Extension { path: path.to_path_buf() }),
    }
}

/// Reads a dumped tensor, choosing the format by extension: `.pt` (a bare
/// tensor saved by `torch.save`, msprobe's PyTorch dumps) or `.npy`
/// (MindSpore dumps).
pub fn read_tensor(path: impl AsRef<Path>) -> Result<HostTensor, IoError> {
    read(path.as_ref(), None)
}

/// [`read_tensor`] of a tensor that must have `shape`: a file of another
/// shape is refused from its header, before its data is read, so the
/// allocation is bounded by `shape` (which the caller has checked against
/// its limits).
pub fn read_tensor_shaped(path: impl AsRef<Path>, shape: &[usize]) -> Result<HostTensor, IoError> {
    read(path.as_ref(), Some(shape))
}

fn read(path: &Path, expect: Option<&[usize]>) -> Result<HostTensor, IoError> {
    match format(path)? {
        Format::Pt => pt::read(open_inside(path)?, path, expect),
        Format::Npy => npy::read(open_inside(path)?, path, expect),
    }
}

/// The refusal of a file whose shape is not the expected one.
fn check_shape(path: &Path, found: &[usize], expect: Option<&[usize]>) -> Result<(), IoError> {
    match expect {
        Some(e) if e != found => Err(IoError::invalid(path, format!("shape {found:?} differs from the dumped {e:?}"))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_one_printable_line() {
        // A pickle calling a global whose name holds a terminal escape and a NUL.
        let e = check_tensor_pickle(b"\x80\x02cos\x1b[31m\nsys\x00\n)R.").unwrap_err();
        assert!(e.ends_with("got a call of os\\u{1b}[31m.sys\\0"), "{e}");
        let e = IoError::invalid(Path::new("x.npy"), "got '<f4\n\r'").to_string();
        assert_eq!(e, "x.npy: got '<f4\\n\\r'");
    }
}
