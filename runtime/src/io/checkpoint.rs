//! Whole `torch.save(dict)` archives, such as Megatron's
//! `model_optim_rng.pt`, read without Python and without running code: the
//! pickle is run in the checkpoint mode of the one interpreter
//! ([`super::pickle`]: objects outside the tensors inert, tensors only of
//! allowlisted globals), which gives every
//! tensor and scalar by key path ([`read_pt_index`]). A tensor's values are
//! read later, one at a time ([`PtTensor::read_f32`]), straight from its
//! storage's bytes in the file, so memory holds one tensor, never the
//! archive.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::decode::extend_f32;
use super::pickle::{self, Scalar};
use super::pt::{Archive, View};
use super::{open_inside, IoError};
use crate::dtype::TDType;

/// A checkpoint's pickle: Megatron's holds about a hundred bytes per
/// tensor and the `args`; a larger one is refused (and none is larger than its file).
const MAX_TREE_PICKLE: u64 = 1 << 30;

/// Bytes read and decoded at a time from a contiguous storage.
const CHUNK: usize = 1 << 20;

/// What a `torch.save(dict)` archive holds, by key path (keys of nested
/// dicts and of an object's `__dict__` joined with `.`), in pickle order.
#[derive(Debug)]
pub struct PtIndex {
    /// Every tensor (`model.decoder.final_layernorm.weight`).
    pub tensors: Vec<(String, PtTensor)>,
    /// Every scalar (`args.tensor_model_parallel_size`, `iteration`).
    pub scalars: Vec<(String, Scalar)>,
}

/// One tensor of an archive: its dtype, its shape and where its bytes are;
/// nothing is read until [`PtTensor::read_f32`].
#[derive(Debug, Clone)]
pub struct PtTensor {
    /// The stored dtype.
    pub dtype: TDType,
    file: Arc<PathBuf>,
    /// The file offset of the view's first element.
    start: u64,
    /// The view, rebased on its first element.
    view: View,
}

impl PtTensor {
    /// The logical shape.
    pub fn shape(&self) -> &[usize] {
        &self.view.size
    }

    /// The archive the tensor is in.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The values in row-major order as `tensor.float()` gives them: half
    /// types and `f32` exactly, `f64` and integers rounded, bools 0 or 1.
    /// Reads only the bytes the view addresses, from the file again (under
    /// the path rule), in chunks when they are contiguous.
    pub fn read_f32(&self) -> Result<Vec<f32>, IoError> {
        let path = self.file.as_path();
        let itemsize = self.dtype.itemsize();
        let mut file = open_inside(path)?;
        file.seek(SeekFrom::Start(self.start)).map_err(|e| IoError::read(path, e))?;
        let truncated =
            |e: std::io::Error| IoError::invalid(path, format!("expected {} bytes of tensor data at offset {}: {e}", self.view.span * itemsize, self.start));
        let mut out = Vec::with_capacity(self.view.count);
        let mut push = |b: &[u8]| extend_f32(self.dtype, b, &mut out);
        if self.view.is_contiguous() {
            let mut buf = vec![0; CHUNK - CHUNK % itemsize];
            let mut left = self.view.count * itemsize;
            while left > 0 {
                let n = left.min(buf.len());
                file.read_exact(&mut buf[..n]).map_err(truncated)?;
                push(&buf[..n]);
                left -= n;
            }
        } else {
            let mut storage = vec![0; self.view.span * itemsize];
            file.read_exact(&mut storage).map_err(truncated)?;
            self.view.gather(&storage, itemsize, &mut push).ok_or_else(|| IoError::invalid(path, "expected the view to stay inside its storage"))?;
        }
        Ok(out)
    }
}

/// Reads the pickle of the archive `path` (under the path rule) and
/// locates every tensor's bytes; refuses a tensor or storage that needs a
/// global off the allowlist, a compressed or encrypted storage, and a view that does
/// not fit its storage.
pub fn read_pt_index(path: impl AsRef<Path>) -> Result<PtIndex, IoError> {
    let path = path.as_ref();
    let mut archive = Archive::open(open_inside(path)?, path, MAX_TREE_PICKLE)?;
    let tree = pickle::load_tree(&archive.pkl).map_err(|r| IoError::invalid(path, format!("{}: {r}", archive.pkl_name())))?;
    let file = Arc::new(path.to_path_buf());
    let mut starts: Vec<(String, u64, u64)> = vec![];
    let mut tensors = Vec::with_capacity(tree.tensors.len());
    for (name, record) in tree.tensors {
        let entry = archive.storage_name(&record.key);
        let view = View::new(&record).map_err(|r| IoError::invalid(path, format!("{name}: {r}")))?;
        if !record.dtype.is_computable() {
            return Err(IoError::invalid(path, format!("{name}: a {} tensor; checkpoints are compared in real dtypes only", record.dtype.name())));
        }
        let (data_start, size) = match starts.iter().find(|(k, ..)| *k == record.key) {
            Some(&(_, s, n)) => (s, n),
            None => {
                let (s, n) = locate(&mut archive, &entry, path)?;
                starts.push((record.key.clone(), s, n));
                (s, n)
            }
        };
        let itemsize = record.dtype.itemsize() as u64;
        let needed = record.storage_len.saturating_mul(itemsize);
        if size < needed {
            return Err(IoError::invalid(
                path,
                format!("expected {entry} to hold {} elements ({needed} bytes) for {name}, found {size} bytes", record.storage_len),
            ));
        }
        let start = data_start + view.offset as u64 * itemsize;
        tensors.push((name, PtTensor { dtype: record.dtype, file: file.clone(), start, view: view.rebased() }));
    }
    Ok(PtIndex { tensors, scalars: tree.scalars })
}

/// Where the data of the stored entry `name` starts in the file, and its size.
fn locate(archive: &mut Archive, name: &str, path: &Path) -> Result<(u64, u64), IoError> {
    let missing = |e: zip::result::ZipError| IoError::invalid(path, format!("expected an entry {name}: {e}"));
    let index = archive.zip.index_for_name(name).ok_or_else(|| missing(zip::result::ZipError::FileNotFound))?;
    let entry = archive.zip.by_index_raw(index).map_err(missing)?;
    if entry.compression() != zip::CompressionMethod::Stored || entry.encrypted() {
        return Err(IoError::invalid(path, format!("expected {name} stored uncompressed and unencrypted, as torch.save writes it")));
    }
    let size = entry.size();
    let start = entry.data_start().ok_or_else(|| IoError::invalid(path, format!("expected the local header of {name}")))?;
    if start.checked_add(size).is_none_or(|end| end > archive.file_len) {
        return Err(IoError::invalid(
            path,
            format!("expected {name} ({size} bytes at offset {start}) inside the file of {} bytes: it is truncated", archive.file_len),
        ));
    }
    Ok((start, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored zip holding `archive/data.pkl` and the storage `archive/data/0`.
    fn archive(pkl: &[u8], storage: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut buf = std::io::Cursor::new(Vec::new());
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
        for (name, bytes) in [("archive/byteorder", &b"little"[..]), ("archive/data.pkl", pkl), ("archive/data/0", storage)] {
            z.start_file(name, opts).unwrap();
            z.write_all(bytes).unwrap();
        }
        z.finish().unwrap();
        buf.into_inner()
    }

    /// `{'model': {'w': t, 'v': t[1:, ::2]}, 'args': Namespace(tp=2)}`, t = arange(12.).view(3, 4), a FloatStorage of 12.
    fn pickle() -> Vec<u8> {
        let storage = b"((X\x07\x00\x00\x00storageq\x01ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x0ctQq\x02";
        let mut p = b"\x80\x02}(X\x05\x00\x00\x00model}(X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n".to_vec();
        p.extend(&storage[..]);
        p.extend(b"K\x00K\x03K\x04\x86K\x04K\x01\x86\x89ccollections\nOrderedDict\n)RtR");
        p.extend(b"X\x01\x00\x00\x00vctorch._utils\n_rebuild_tensor_v2\n(h\x02K\x05K\x02K\x02\x86K\x04K\x02\x86\x89ccollections\nOrderedDict\n)RtR");
        p.extend(b"uX\x04\x00\x00\x00argscargparse\nNamespace\n)\x81}X\x02\x00\x00\x00tpK\x02sbu.");
        p
    }

    fn floats(n: usize) -> Vec<u8> {
        (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect()
    }

    #[test]
    fn indexes_and_reads_views_one_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model_optim_rng.pt");
        std::fs::write(&path, archive(&pickle(), &floats(12))).unwrap();
        let index = read_pt_index(&path).unwrap();
        assert_eq!(index.scalars, vec![("args.tp".to_string(), Scalar::Int(2))]);
        let [(w, tw), (v, tv)] = &index.tensors[..] else { panic!("{:?}", index.tensors) };
        assert_eq!((w.as_str(), tw.shape(), tw.dtype), ("model.w", &[3, 4][..], TDType::F32));
        assert_eq!(tw.read_f32().unwrap(), (0..12).map(|i| i as f32).collect::<Vec<_>>());
        assert_eq!((v.as_str(), tv.shape()), ("model.v", &[2, 2][..]));
        assert_eq!(tv.read_f32().unwrap(), vec![5.0, 7.0, 9.0, 11.0]);
    }

    #[test]
    fn a_short_storage_or_a_truncated_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.pt");
        std::fs::write(&path, archive(&pickle(), &floats(11))).unwrap();
        let e = read_pt_index(&path).unwrap_err().to_string();
        assert!(e.ends_with("m.pt: expected archive/data/0 to hold 12 elements (48 bytes) for model.w, found 44 bytes"), "{e}");
        let whole = archive(&pickle(), &floats(12));
        for cut in [whole.len() / 2, whole.len() - 10] {
            std::fs::write(&path, &whole[..cut]).unwrap();
            assert!(read_pt_index(&path).unwrap_err().to_string().contains("m.pt: expected a zip archive"));
        }
    }
}
