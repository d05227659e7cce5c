//! `.pt` reader for msprobe's PyTorch dumps: a zip archive (torch.save's
//! format since torch 1.6, entries stored uncompressed) holding
//! `<archive>/data.pkl`, which describes one bare tensor, and its storage at
//! `<archive>/data/<key>`. The tensor may be any strided view of the storage;
//! its elements come back in logical row-major order.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::Path;

use zip::ZipArchive;

use super::decode::Decoder;
use super::pickle::{self, TensorRecord};
use super::{check_shape, open_inside, HostTensor, IoError};
use crate::limits::element_count;

/// The bytes a mapped storage is checksummed and decoded by at a time (a
/// multiple of every item size).
const CHUNK: usize = 1 << 16;

/// A bare tensor's pickle is about 150 bytes; a larger one is something else.
const MAX_PICKLE: u64 = 1 << 20;

/// Reads a `.pt` file holding one tensor saved by `torch.save(tensor)`,
/// under the path rule ([`open_inside`]).
pub fn read_pt(path: impl AsRef<Path>) -> Result<HostTensor, IoError> {
    let path = path.as_ref();
    read(open_inside(path)?, path, None)
}

/// Reads the opened `.pt` `file` (named `path` in errors); with `expect`,
/// a tensor of another shape is refused before its storage is read. Only
/// the part of the storage the view addresses is read.
pub(super) fn read(file: File, path: &Path, expect: Option<&[usize]>) -> Result<HostTensor, IoError> {
    // The same open file, mapped for the storage ([`storage_bytes`]).
    let mapped = file.try_clone().map_err(|e| IoError::read(path, e))?;
    let mut archive = Archive::open(file, path, MAX_PICKLE)?;
    let record = pickle::load_tensor(&archive.pkl).map_err(|r| IoError::invalid(path, format!("{}: {r}", archive.pkl_name())))?;
    let storage_name = archive.storage_name(&record.key);
    let view = View::new(&record).map_err(|r| IoError::invalid(path, r))?;
    // A complex tensor is read as its float pairs: a trailing dimension of 2.
    let shape = match record.dtype.is_computable() {
        true => view.size.clone(),
        false => view.size.iter().copied().chain([2]).collect(),
    };
    check_shape(path, &shape, expect)?;
    let itemsize = record.dtype.itemsize();
    let needed = record.storage_len.saturating_mul(itemsize as u64);
    // The view lies inside the storage (`View::new`), so its span fits in u64.
    let span = (view.span as u64).saturating_mul(itemsize as u64);
    let (storage, crc) = storage_bytes(&mut archive.zip, &mapped, &storage_name, (record.storage_len, needed), span, archive.file_len, path)?;

    let mut decoder = Decoder::new(record.dtype, view.count);
    let mut hasher = crc.map(|_| crc32fast::Hasher::new());
    match &mut hasher {
        // The whole storage in order (most tensors): the checksum and the decoding share one
        // pass over the mapped pages, a chunk at a time while it is in cache.
        Some(h) if view.is_contiguous() && view.offset == 0 && view.count.checked_mul(itemsize) == Some(storage.len()) => {
            for chunk in storage.chunks(CHUNK) {
                h.update(chunk);
                decoder.extend(chunk);
            }
        }
        _ => {
            if let Some(h) = &mut hasher {
                h.update(&storage);
            }
            view.gather(&storage, itemsize, &mut |b| decoder.extend(b))
                .ok_or_else(|| IoError::invalid(path, format!("expected the view to stay inside {storage_name}")))?;
        }
    }
    if let (Some(h), Some(crc)) = (hasher, crc) {
        if h.finalize() != crc {
            return Err(IoError::invalid(path, format!("expected a readable entry {storage_name}: Invalid checksum")));
        }
    }
    Ok(HostTensor { dtype: record.dtype, shape, data: decoder.finish() })
}

/// An opened `torch.save` archive: its zip index and its pickle, read
/// (at most `max_pickle` bytes) after the byteorder is checked.
pub(super) struct Archive {
    /// The zip, for the storages.
    pub zip: ZipArchive<BufReader<File>>,
    /// The folder all entries are in, with its `/` (`archive/`).
    pub prefix: String,
    /// The bytes of `<prefix>data.pkl`.
    pub pkl: Vec<u8>,
    /// The file's size: no entry is larger.
    pub file_len: u64,
}

impl Archive {
    /// Opens the archive `file` (named `path` in errors).
    pub fn open(file: File, path: &Path, max_pickle: u64) -> Result<Archive, IoError> {
        let file_len = file.metadata().map_err(|e| IoError::read(path, e))?.len();
        let mut zip = ZipArchive::new(BufReader::new(file))
            .map_err(|e| IoError::invalid(path, format!("expected a zip archive written by torch.save (torch >= 1.6, not the legacy format): {e}")))?;

        let prefixes: Vec<String> = zip
            .file_names()
            .filter_map(|n| n.ok().and_then(|n| n.strip_suffix("data.pkl").map(str::to_string)))
            .filter(|p| p.is_empty() || (p.ends_with('/') && p.matches('/').count() == 1))
            .collect();
        let [prefix] = &prefixes[..] else {
            return Err(IoError::invalid(path, format!("expected one <archive>/data.pkl entry, found {}", prefixes.len())));
        };
        let prefix = prefix.clone();

        // Archives from before torch 1.10 have no byteorder record: little-endian.
        let byteorder = format!("{prefix}byteorder");
        if zip.index_for_name(&byteorder).is_some() {
            let order = read_entry(&mut zip, &byteorder, 16, path)?;
            if order != b"little" {
                return Err(IoError::invalid(path, format!("expected little-endian data, got byteorder '{}'", String::from_utf8_lossy(&order))));
            }
        }

        let pkl = read_entry(&mut zip, &format!("{prefix}data.pkl"), max_pickle, path)?;
        Ok(Archive { zip, prefix, pkl, file_len })
    }

    /// The pickle's entry name, for messages.
    pub fn pkl_name(&self) -> String {
        format!("{}data.pkl", self.prefix)
    }

    /// The entry name of the storage `key`.
    pub fn storage_name(&self, key: &str) -> String {
        format!("{}data/{key}", self.prefix)
    }
}

/// The first `take` bytes of the storage entry `name` (see [`read_prefix`]
/// for the checks): mapped from `file` where the entry is stored
/// uncompressed, as torch.save stores it, so the kernel maps the page
/// cache's pages instead of copying them into a buffer (that copy was a
/// fifth of a ResNet-50 step's optimizer calls); read otherwise. A mapped
/// whole entry comes with the CRC-32 its bytes must have (the zip reader
/// checks a read one itself).
fn storage_bytes(
    zip: &mut ZipArchive<BufReader<File>>,
    file: &File,
    name: &str,
    needed: (u64, u64),
    take: u64,
    limit: u64,
    path: &Path,
) -> Result<(Storage, Option<u32>), IoError> {
    let entry = zip.by_name(name).map_err(|e| IoError::invalid(path, format!("expected an entry {name}: {e}")))?;
    let (size, crc, start) = (entry.size(), entry.crc32(), entry.data_start());
    let stored = entry.compression() == zip::CompressionMethod::Stored && entry.compressed_size() == size;
    drop(entry);
    let within = |start: u64| start.checked_add(size).is_some_and(|end| end <= limit);
    let (Some(start), true, true) = (start.filter(|&s| within(s)), stored, size >= needed.1 && size <= limit && take.min(size) > 0) else {
        return Ok((Storage::Read(read_prefix(zip, name, needed, take, limit, path)?), None));
    };
    let len = usize::try_from(take.min(size)).map_err(|_| IoError::invalid(path, format!("expected {name} to fit in memory")))?;
    // SAFETY: the mapping is read-only and private; the entry lies inside the
    // file as its size was read above. A file truncated by another process
    // while it is mapped would fault, as with any mapped reader.
    let map = unsafe { memmap2::MmapOptions::new().offset(start).len(len).populate().map(file) }.map_err(|e| IoError::read(path, e))?;
    Ok((Storage::Mapped(map), (take >= size).then_some(crc)))
}

/// A storage's bytes: mapped, or read into memory.
enum Storage {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl std::ops::Deref for Storage {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Storage::Mapped(m) => m,
            Storage::Read(v) => v,
        }
    }
}

/// Reads the first `take` bytes of the storage entry `name`, which must
/// hold `needed` (elements, bytes) and at most `limit` bytes (the file's size).
fn read_prefix<R: Read + Seek>(zip: &mut ZipArchive<R>, name: &str, needed: (u64, u64), take: u64, limit: u64, path: &Path) -> Result<Vec<u8>, IoError> {
    let entry = zip.by_name(name).map_err(|e| IoError::invalid(path, format!("expected an entry {name}: {e}")))?;
    let size = entry.size();
    if size > limit {
        return Err(IoError::invalid(path, format!("expected {name} to be at most {limit} bytes, it claims {size}")));
    }
    if size < needed.1 {
        return Err(IoError::invalid(path, format!("expected {name} to hold {} elements ({} bytes), found {size} bytes", needed.0, needed.1)));
    }
    let mut bytes = Vec::with_capacity(take.min(size) as usize);
    entry.take(take).read_to_end(&mut bytes).map_err(|e| IoError::invalid(path, format!("expected a readable entry {name}: {e}")))?;
    if (bytes.len() as u64) < take {
        return Err(IoError::invalid(path, format!("expected {take} bytes in {name}, found {}: the file is truncated", bytes.len())));
    }
    Ok(bytes)
}

/// Reads a whole entry of at most `limit` bytes.
fn read_entry<R: Read + Seek>(zip: &mut ZipArchive<R>, name: &str, limit: u64, path: &Path) -> Result<Vec<u8>, IoError> {
    let mut entry = zip.by_name(name).map_err(|e| IoError::invalid(path, format!("expected an entry {name}: {e}")))?;
    let size = entry.size();
    if size > limit {
        return Err(IoError::invalid(path, format!("expected {name} to be at most {limit} bytes, it claims {size}")));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    entry.read_to_end(&mut bytes).map_err(|e| IoError::invalid(path, format!("expected a readable entry {name}: {e}")))?;
    Ok(bytes)
}

/// A validated strided view: every element it addresses lies inside the storage.
#[derive(Debug, Clone)]
pub(super) struct View {
    /// The logical shape.
    pub size: Vec<usize>,
    stride: Vec<usize>,
    /// The first element's index in the storage.
    pub offset: usize,
    /// Elements of the view.
    pub count: usize,
    /// Storage elements up to the last one addressed (0 when empty).
    pub span: usize,
}

impl View {
    /// Checks the record's view against its storage.
    pub fn new(r: &TensorRecord) -> Result<Self, String> {
        let too_big = || format!("expected a tensor that fits in memory, got size {:?}", r.size);
        let to_usize = |v: &[u64]| v.iter().map(|&x| usize::try_from(x).map_err(|_| too_big())).collect::<Result<Vec<_>, _>>();
        let size = to_usize(&r.size)?;
        let stride = to_usize(&r.stride)?;
        let offset = usize::try_from(r.offset).map_err(|_| too_big())?;
        let count = element_count(&size).ok_or_else(too_big)?;
        let storage_len = usize::try_from(r.storage_len).map_err(|_| too_big())?;
        let mut span = 0;
        if count > 0 {
            // Highest element addressed: offset + sum((size - 1) * stride).
            let last = size.iter().zip(&stride).try_fold(offset, |acc, (&n, &s)| acc.checked_add((n - 1).checked_mul(s)?));
            match last {
                Some(l) if l < storage_len => span = l + 1,
                _ => {
                    return Err(format!(
                        "expected the view (offset {offset}, size {size:?}, stride {stride:?}) to lie inside its storage of {storage_len} elements"
                    ))
                }
            }
            if count > storage_len {
                return Err(format!(
                    "expected a view with no more elements than its storage ({storage_len}), got size {size:?}: expanded (stride-0) views are not supported"
                ));
            }
        }
        Ok(View { size, stride, offset, count, span })
    }

    /// The same view of a storage that starts at this view's first element.
    pub fn rebased(&self) -> View {
        View { offset: 0, span: self.span.saturating_sub(self.offset), ..self.clone() }
    }

    /// True when the elements are consecutive in row-major order.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = 1usize;
        for (&n, &s) in self.size.iter().zip(&self.stride).rev() {
            if n != 1 && s != expected {
                return false;
            }
            expected = expected.saturating_mul(n);
        }
        true
    }

    /// Hands the elements' bytes to `out` in row-major order (runs of whole
    /// elements); `None` if one falls outside `storage`.
    pub fn gather(&self, storage: &[u8], itemsize: usize, out: &mut dyn FnMut(&[u8])) -> Option<()> {
        if self.count == 0 {
            return Some(());
        }
        if self.is_contiguous() {
            let start = self.offset.checked_mul(itemsize)?;
            out(storage.get(start..start.checked_add(self.count.checked_mul(itemsize)?)?)?);
            return Some(());
        }
        let mut index = vec![0usize; self.size.len()];
        let mut pos = self.offset;
        for _ in 0..self.count {
            let start = pos.checked_mul(itemsize)?;
            out(storage.get(start..start.checked_add(itemsize)?)?);
            // Odometer over the dims, last dim fastest; `pos` may wrap only
            // transiently after the final element, and is checked on use.
            for d in (0..self.size.len()).rev() {
                index[d] += 1;
                pos = pos.wrapping_add(self.stride[d]);
                if index[d] < self.size[d] {
                    break;
                }
                pos = pos.wrapping_sub(self.stride[d].wrapping_mul(self.size[d]));
                index[d] = 0;
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::TDType;

    fn record(size: &[u64], stride: &[u64], offset: u64, storage_len: u64) -> TensorRecord {
        TensorRecord { key: "0".into(), dtype: TDType::U8, storage_len, offset, size: size.into(), stride: stride.into() }
    }

    #[test]
    fn views_outside_the_storage_are_rejected() {
        assert!(View::new(&record(&[3, 4], &[4, 1], 0, 11)).is_err());
        assert!(View::new(&record(&[2], &[1], 11, 12)).is_err());
        assert!(View::new(&record(&[u64::MAX, 2], &[1, u64::MAX], 0, 12)).is_err());
        assert!(View::new(&record(&[1 << 40], &[0], 0, 1)).unwrap_err().contains("stride-0"));
        assert!(View::new(&record(&[0, 5], &[5, 1], 99, 0)).is_ok());
    }

    #[test]
    fn gathers_transposed_and_offset_views() {
        let storage: Vec<u8> = (0..12).collect();
        let collect = |r: TensorRecord| {
            let v = View::new(&r).unwrap();
            let mut d = Decoder::new(TDType::U8, v.count);
            v.gather(&storage, 1, &mut |b| d.extend(b)).unwrap();
            d.finish()
        };
        assert_eq!(collect(record(&[4, 3], &[1, 4], 0, 12)), crate::io::HostData::I64(vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]));
        assert_eq!(collect(record(&[2, 2], &[4, 2], 3, 12)), crate::io::HostData::I64(vec![3, 5, 7, 9]));
        assert_eq!(collect(record(&[], &[], 7, 12)), crate::io::HostData::I64(vec![7]));
    }
}
