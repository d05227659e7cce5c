//! `.npy` reader (format versions 1.0, 2.0 and 3.0): MindSpore dumps are
//! `np.save` files. Only little-endian, C-ordered arrays of plain numeric or
//! bool dtypes are accepted; the data is decoded while it is read, in
//! chunks, after its size has been checked against the file.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use super::decode::Decoder;
use super::{check_shape, open_inside, HostTensor, IoError};
use crate::dtype::TDType;
use crate::limits::element_count;

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Larger headers are not NumPy's (it pads to 64 bytes and caps them far lower).
const MAX_HEADER: u64 = 1 << 20;
/// Elements decoded per read.
const CHUNK_ELEMENTS: usize = 1 << 16;
/// Nesting deeper than this is no NumPy header.
const MAX_DEPTH: usize = 8;

/// The descriptions accepted, with the dtype each one stores. NumPy has no
/// bfloat16: `np.save` of an `ml_dtypes.bfloat16` array (MindSpore's
/// `asnumpy()` of a bf16 tensor) writes the 2-byte void `<V2`, read here
/// as bf16 since no other 2-byte void dtype holds tensors.
const DESCRS: &[(&str, TDType)] = &[
    ("<f2", TDType::F16),
    ("<V2", TDType::BF16),
    ("|V2", TDType::BF16),
    ("<f4", TDType::F32),
    ("<f8", TDType::F64),
    ("|i1", TDType::I8),
    ("<i1", TDType::I8),
    ("<i2", TDType::I16),
    ("<i4", TDType::I32),
    ("<i8", TDType::I64),
    ("|u1", TDType::U8),
    ("<u1", TDType::U8),
    ("<u2", TDType::U16),
    ("<u4", TDType::U32),
    ("<u8", TDType::U64),
    ("|b1", TDType::Bool),
];

/// Reads a `.npy` file written by `np.save` (MindSpore's tensor dumps),
/// under the path rule ([`open_inside`]).
pub fn read_npy(path: impl AsRef<Path>) -> Result<HostTensor, IoError> {
    let path = path.as_ref();
    read(open_inside(path)?, path, None)
}

/// Reads the opened `.npy` `file` (named `path` in errors); with `expect`,
/// a header of another shape is refused before any data is read.
pub(super) fn read(file: File, path: &Path, expect: Option<&[usize]>) -> Result<HostTensor, IoError> {
    let file_len = file.metadata().map_err(|e| IoError::read(path, e))?.len();
    let mut reader = BufReader::new(file);
    let read_err = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            IoError::invalid(path, "expected more data: the file is truncated")
        } else {
            IoError::read(path, e)
        }
    };

    let mut preamble = [0u8; 8];
    if file_len < 10 {
        return Err(IoError::invalid(path, format!("expected a .npy file, found only {file_len} bytes")));
    }
    reader.read_exact(&mut preamble).map_err(read_err)?;
    if &preamble[..6] != MAGIC {
        return Err(IoError::invalid(path, "expected the .npy magic \\x93NUMPY at the start"));
    }
    let (major, minor) = (preamble[6], preamble[7]);
    let (header_len, prefix_len) = match major {
        1 => {
            let mut b = [0u8; 2];
            reader.read_exact(&mut b).map_err(read_err)?;
            (u64::from(u16::from_le_bytes(b)), 10)
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            reader.read_exact(&mut b).map_err(read_err)?;
            (u64::from(u32::from_le_bytes(b)), 12)
        }
        _ => return Err(IoError::invalid(path, format!("expected .npy format version 1.0, 2.0 or 3.0, got {major}.{minor}"))),
    };
    let data_start = prefix_len + header_len;
    if header_len > MAX_HEADER || data_start > file_len {
        return Err(IoError::invalid(
            path,
            format!("expected a header that fits in the file, got a header length of {header_len} bytes in a {file_len}-byte file"),
        ));
    }
    let mut header = vec![0u8; header_len as usize];
    reader.read_exact(&mut header).map_err(read_err)?;
    let header = parse_header(&header).map_err(|r| IoError::invalid(path, r))?;
    check_shape(path, &header.shape, expect)?;

    let count = element_count(&header.shape)
        .ok_or_else(|| IoError::invalid(path, format!("expected a shape whose element count fits in memory, got {:?}", header.shape)))?;
    let expected_bytes = count.checked_mul(header.dtype.itemsize()).and_then(|n| u64::try_from(n).ok());
    let available = file_len - data_start;
    if expected_bytes != Some(available) {
        let expected = expected_bytes.map_or_else(|| "an impossible number of".to_string(), |n| n.to_string());
        return Err(IoError::invalid(
            path,
            format!("expected {expected} data bytes for shape {:?} and dtype '{}', found {available}", header.shape, header.descr),
        ));
    }

    let itemsize = header.dtype.itemsize();
    let mut decoder = Decoder::new(header.dtype, count);
    let mut buf = vec![0u8; CHUNK_ELEMENTS * itemsize];
    let mut left = count;
    while left > 0 {
        let n = left.min(CHUNK_ELEMENTS);
        let chunk = &mut buf[..n * itemsize];
        reader.read_exact(chunk).map_err(read_err)?;
        decoder.extend(chunk);
        left -= n;
    }
    Ok(HostTensor { dtype: header.dtype, shape: header.shape, data: decoder.finish() })
}

/// What the header dict says.
struct Header {
    descr: String,
    dtype: TDType,
    shape: Vec<usize>,
}

/// A value of the Python-literal subset NumPy headers use.
#[derive(Debug)]
enum Literal {
    Str(String),
    Int(i128),
    Bool(bool),
    None,
    Seq(Vec<Literal>),
}

fn parse_header(bytes: &[u8]) -> Result<Header, String> {
    // Latin-1 (versions 1 and 2) maps bytes to chars one to one; version 3's
    // UTF-8 only differs inside structured field names, which are rejected.
    let text: Vec<char> = bytes.iter().map(|&b| char::from(b)).collect();
    let mut p = Parser { s: &text, i: 0 };
    let entries = p.dict()?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (key, value) in entries {
        match (key.as_str(), value) {
            ("descr", Literal::Str(s)) => descr = Some(s),
            ("descr", Literal::Seq(_)) => return Err("expected a simple dtype, got a structured dtype (a list of fields)".into()),
            ("fortran_order", Literal::Bool(b)) => fortran = Some(b),
            ("shape", Literal::Seq(dims)) => shape = Some(dims),
            (k @ ("descr" | "fortran_order" | "shape"), v) => return Err(format!("expected a valid '{k}' in the header, got {v:?}")),
            _ => {}
        }
    }
    let descr = descr.ok_or("expected a 'descr' key in the header")?;
    let fortran = fortran.ok_or("expected a 'fortran_order' key in the header")?;
    let dims = shape.ok_or("expected a 'shape' key in the header")?;
    if fortran {
        return Err("expected a C-ordered array, got fortran_order: True".into());
    }
    if descr.starts_with('>') {
        return Err(format!("expected a little-endian dtype, got '{descr}'"));
    }
    let dtype = DESCRS.iter().find(|(d, _)| *d == descr).map(|(_, t)| *t).ok_or_else(|| {
        let known: Vec<&str> = DESCRS.iter().map(|(d, _)| *d).collect();
        format!("expected one of the dtypes {}, got '{descr}'", known.join(", "))
    })?;
    let shape = dims
        .into_iter()
        .map(|d| match d {
            Literal::Int(n) => usize::try_from(n).map_err(|_| format!("expected non-negative shape dims that fit in memory, got {n}")),
            other => Err(format!("expected integer shape dims, got {other:?}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Header { descr, dtype, shape })
}

/// Recursive-descent parser over the header's chars.
struct Parser<'a> {
    s: &'a [char],
    i: usize,
}

impl Parser<'_> {
    fn peek(&mut self) -> Option<char> {
        while self.s.get(self.i).is_some_and(|c| c.is_whitespace()) {
            self.i += 1;
        }
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.i += 1;
                Ok(())
            }
            other => Err(format!("expected '{c}' at header offset {}, got {}", self.i, describe(other))),
        }
    }

    fn dict(&mut self) -> Result<Vec<(String, Literal)>, String> {
        self.expect('{')?;
        let mut entries = Vec::new();
        loop {
            if self.peek() == Some('}') {
                self.i += 1;
                return Ok(entries);
            }
            let key = match self.value(0)? {
                Literal::Str(k) => k,
                other => return Err(format!("expected a string key in the header, got {other:?}")),
            };
            self.expect(':')?;
            entries.push((key, self.value(0)?));
            match self.peek() {
                Some(',') => self.i += 1,
                Some('}') => {}
                other => return Err(format!("expected ',' or '}}' at header offset {}, got {}", self.i, describe(other))),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Literal, String> {
        match self.peek() {
            Some(q @ ('\'' | '"')) => {
                self.i += 1;
                let start = self.i;
                while self.s.get(self.i).is_some_and(|&c| c != q) {
                    self.i += 1;
                }
                let text: String = self.s.get(start..self.i).unwrap_or_default().iter().collect();
                self.expect(q)?;
                Ok(Literal::Str(text))
            }
            Some(open @ ('(' | '[')) => {
                if depth >= MAX_DEPTH {
                    return Err("expected a flat header, got deeply nested values".into());
                }
                let close = if open == '(' { ')' } else { ']' };
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    if self.peek() == Some(close) {
                        self.i += 1;
                        return Ok(Literal::Seq(items));
                    }
                    items.push(self.value(depth + 1)?);
                    match self.peek() {
                        Some(',') => self.i += 1,
                        Some(c) if c == close => {}
                        other => return Err(format!("expected ',' or '{close}' at header offset {}, got {}", self.i, describe(other))),
                    }
                }
            }
            Some(c) if c == '-' || c.is_ascii_digit() => {
                let negative = c == '-';
                if negative {
                    self.i += 1;
                }
                let mut n: i128 = 0;
                let mut digits = 0;
                while let Some(d) = self.s.get(self.i).and_then(|c| c.to_digit(10)) {
                    n = n.checked_mul(10).and_then(|n| n.checked_add(i128::from(d))).ok_or("expected a shape dim that fits in 64 bits")?;
                    self.i += 1;
                    digits += 1;
                }
                if digits == 0 {
                    return Err(format!("expected digits at header offset {}", self.i));
                }
                if self.s.get(self.i) == Some(&'L') {
                    self.i += 1; // Python 2 long suffix, written by old NumPy
                }
                Ok(Literal::Int(if negative { -n } else { n }))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.i;
                while self.s.get(self.i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                    self.i += 1;
                }
                let word: String = self.s.get(start..self.i).unwrap_or_default().iter().collect();
                match word.as_str() {
                    "True" => Ok(Literal::Bool(true)),
                    "False" => Ok(Literal::Bool(false)),
                    "None" => Ok(Literal::None),
                    _ => Err(format!("expected True, False or None in the header, got '{word}'")),
                }
            }
            other => Err(format!("expected a value at header offset {}, got {}", self.i, describe(other))),
        }
    }
}

fn describe(c: Option<char>) -> String {
    c.map_or_else(|| "the end of the header".to_string(), |c| format!("{c:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_with_python2_longs_and_spacing() {
        let h = parse_header(b"{ 'descr' : '<f8' , 'fortran_order':False,'shape':(2L, 3L,), }\n").unwrap();
        assert_eq!((h.dtype, h.shape), (TDType::F64, vec![2, 3]));
    }

    #[test]
    fn ml_dtypes_bfloat16_is_a_two_byte_void() {
        let h = parse_header(b"{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }").unwrap();
        assert_eq!((h.dtype, h.shape), (TDType::BF16, vec![2]));
        assert!(parse_header(b"{'descr': '<V4', 'fortran_order': False, 'shape': (2,), }").err().unwrap().contains("got '<V4'"));
    }

    #[test]
    fn header_errors_say_what_was_expected() {
        let e = |h: &[u8]| parse_header(h).err().unwrap();
        assert_eq!(e(b"{'descr': '>f4', 'fortran_order': False, 'shape': (3,), }"), "expected a little-endian dtype, got '>f4'");
        assert!(e(b"{'descr': '<f4', 'fortran_order': True, 'shape': (3,), }").contains("C-ordered"));
        assert!(e(b"{'descr': '<f4', 'fortran_order': False, 'shape': (-3,), }").contains("non-negative"));
        assert!(e(b"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }").contains("structured"));
        assert!(e(b"{'descr': '<f4', 'shape': (3,), }").contains("fortran_order"));
        assert!(e(b"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999999999999999999999,), }").contains("64 bits"));
        assert!(e(b"{'descr': '<f4'").contains("end of the header"));
        assert!(e(&[b'('; 10_000]).contains("'{'"));
        let nested = [b"{'shape': ".as_slice(), &[b'('; 10_000]].concat();
        assert!(e(&nested).contains("nested"));
    }
}
