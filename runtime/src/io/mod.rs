//! Reading dumped tensors without Python.
//!
//! msprobe writes one file per tensor: PyTorch dumps are `torch.save` archives
//! of a bare tensor (`.pt`), MindSpore dumps are NumPy arrays (`.npy`). Both
//! become a [`HostTensor`]: the stored dtype, the shape and the values in
//! row-major order, floats widened exactly to `f64`. Every reader checks sizes
//! against the file before allocating, so a truncated or hostile file is an
//! [`IoError`], never a panic or a huge allocation.

mod decode;
mod npy;
mod pickle;
mod pt;

use std::path::{Path, PathBuf};

pub use npy::read_npy;

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
    /// The dtype the file stored (never complex).
    pub dtype: TDType,
    /// The logical shape; empty for a 0-d tensor.
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
        IoError::Invalid { path: path.to_path_buf(), reason: reason.into() }
    }
}

/// Product of the dims, `None` on overflow.
fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Runs the `.pt` reader's pickle interpreter alone on the bytes of a
/// `data.pkl`: `Ok` when they describe a bare tensor, else what was expected.
/// For the fuzz target `pickle` and its regression test (fuzz/README.md).
#[doc(hidden)]
pub fn check_tensor_pickle(pkl: &[u8]) -> Result<(), String> {
    pickle::load_tensor(pkl).map(|_| ())
}

/// Reads a dumped tensor, choosing the format by extension: `.pt` (a bare
/// tensor saved by `torch.save`, msprobe's PyTorch dumps) or `.npy`
/// (MindSpore dumps).
pub fn read_tensor(path: impl AsRef<Path>) -> Result<HostTensor, IoError> {
    let path = path.as_ref();
    match path.extension().and_then(|e| e.to_str()) {
        Some("pt") => read_pt(path),
        Some("npy") => read_npy(path),
        _ => Err(IoError::Extension { path: path.to_path_buf() }),
    }
}
