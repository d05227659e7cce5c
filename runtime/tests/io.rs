//! The tensor readers against fixtures written by torch 2.15 and numpy 1.26
//! (tests/data/make_fixtures.py; exact values in tests/data/expected.json),
//! real msprobe dump files, and damaged or hostile files.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use runtime::dtype::TDType;
use runtime::io::{read_npy, read_pt, read_tensor, HostData, IoError};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

fn dtype_of(name: &str) -> TDType {
    match name {
        "f16" => TDType::F16,
        "bf16" => TDType::BF16,
        "f32" => TDType::F32,
        "f64" => TDType::F64,
        "i8" => TDType::I8,
        "i16" => TDType::I16,
        "i32" => TDType::I32,
        "i64" => TDType::I64,
        "u8" => TDType::U8,
        "u16" => TDType::U16,
        "u32" => TDType::U32,
        "u64" => TDType::U64,
        "bool" => TDType::Bool,
        other => panic!("unknown dtype {other} in expected.json"),
    }
}

#[test]
fn fixtures_match_expected_values_exactly() {
    let expected: serde_json::Value = serde_json::from_str(&fs::read_to_string(data("expected.json")).unwrap()).unwrap();
    let entries = expected.as_object().unwrap();
    assert!(entries.len() >= 30, "expected.json lists {} files", entries.len());
    for (name, e) in entries {
        let t = read_tensor(data(name)).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(t.dtype, dtype_of(e["dtype"].as_str().unwrap()), "{name}");
        let shape: Vec<usize> = e["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
        assert_eq!(t.shape, shape, "{name}");
        let values: Vec<&str> = e["values"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(t.data.len(), values.len(), "{name}");
        match &t.data {
            HostData::F64(got) => {
                for (i, (g, v)) in got.iter().zip(&values).enumerate() {
                    let want: f64 = v.parse().unwrap();
                    assert!(g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()), "{name}[{i}]: {g:?} != {v}");
                }
            }
            HostData::I64(got) => assert_eq!(got, &values.iter().map(|v| v.parse::<i64>().unwrap()).collect::<Vec<_>>(), "{name}"),
            HostData::U64(got) => assert_eq!(got, &values.iter().map(|v| v.parse::<u64>().unwrap()).collect::<Vec<_>>(), "{name}"),
            HostData::Bool(got) => assert_eq!(got, &values.iter().map(|v| *v == "true").collect::<Vec<_>>(), "{name}"),
        }
    }
}

#[test]
fn real_pytorch_dump() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/pytorch/tensor/dump_tensor_data/Torch.matmul.0.forward.input.0.pt");
    let t = read_pt(&p).unwrap();
    assert_eq!((t.dtype, t.shape.as_slice()), (TDType::F32, &[2, 4, 16, 16][..]));
    let HostData::F64(v) = &t.data else { panic!("f32 must widen to F64") };
    // Values printed once by torch.load in Python.
    assert_eq!(v[..4], [0.3533291816711426, -0.8266950249671936, 0.1653217226266861, 0.7539466619491577]);
    assert_eq!(v[1000], 0.7593104839324951);
    assert_eq!(v[2047], -0.32071158289909363);
    assert!((v.iter().sum::<f64>() - -49.2561324769631).abs() < 1e-9);
}

#[test]
fn real_mindspore_dump() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mindspore/tensor/dump_tensor_data/Mint.matmul.0.forward.input.0.npy");
    let t = read_tensor(&p).unwrap();
    assert_eq!((t.dtype, t.shape.as_slice()), (TDType::F32, &[2, 4, 16, 16][..]));
    let HostData::F64(v) = &t.data else { panic!("f32 must widen to F64") };
    assert_eq!(v[..3], [-0.04256090894341469, -0.07017974555492401, -0.1384350061416626]);
}

fn message(r: Result<runtime::io::HostTensor, IoError>) -> String {
    r.expect_err("expected an error").to_string()
}

#[test]
fn unsupported_npy_files_are_rejected_with_clear_messages() {
    let p = data("bad_big_endian.npy");
    assert_eq!(message(read_npy(&p)), format!("{}: expected a little-endian dtype, got '>f4'", p.display()));
    assert!(message(read_npy(data("bad_fortran.npy"))).ends_with("expected a C-ordered array, got fortran_order: True"));
    assert!(message(read_npy(data("bad_complex.npy"))).contains("got '<c8'"));
    assert!(message(read_tensor(data("expected.json"))).ends_with("expected.json: expected a .pt or .npy file"));
    assert!(matches!(read_tensor(data("missing.pt")), Err(IoError::Read { .. })));
    assert!(message(read_pt(data("f4.npy"))).contains("expected a zip archive"));
    assert!(message(read_npy(data("f32.pt"))).contains("magic"));
}

/// Writes a new file (rewriting one in place makes ext4 flush it on close,
/// which made these tests take tens of seconds).
fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["f32.pt", "transposed.pt", "u16.pt", "f4.npy", "v2.npy", "scalar.npy"] {
        let bytes = fs::read(data(name)).unwrap();
        for n in 0..bytes.len() {
            let p = write(dir.path(), &format!("{n}-{name}"), &bytes[..n]);
            assert!(read_tensor(&p).is_err(), "{name} truncated to {n} bytes");
        }
    }
}

#[test]
fn flipped_bytes_never_panic() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["transposed.pt", "offset.pt", "f8.npy"] {
        let bytes = fs::read(data(name)).unwrap();
        for i in 0..bytes.len() {
            for flip in [0x01, 0xff] {
                let mut b = bytes.clone();
                b[i] ^= flip;
                let p = write(dir.path(), &format!("{i}-{flip}-{name}"), &b);
                let _ = read_tensor(&p);
            }
        }
    }
}

fn npy(header: &str, data: &[u8]) -> Vec<u8> {
    let mut h = header.to_string();
    while !(10 + h.len() + 1).is_multiple_of(64) {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((h.len() as u16).to_le_bytes());
    out.extend(h.as_bytes());
    out.extend(data);
    out
}

#[test]
fn npy_shapes_beyond_the_file_are_errors_not_allocations() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904,), }",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }",
        "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
    ];
    for header in cases {
        let p = write(dir.path(), "x.npy", &npy(header, &[0u8; 16]));
        assert!(message(read_npy(&p)).contains("data bytes") || message(read_npy(&p)).contains("fits in memory"), "{header}");
    }
    // Header length beyond the file.
    let mut b = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", &[0u8; 16]);
    b[8] = 0xff;
    b[9] = 0xff;
    assert!(message(read_npy(write(dir.path(), "x.npy", &b))).contains("header"));
    // Trailing bytes are as wrong as missing ones.
    let p = write(dir.path(), "x.npy", &npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", &[0u8; 17]));
    assert!(message(read_npy(&p)).contains("expected 16 data bytes"));
    // Unknown format version.
    let mut b = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", &[0u8; 16]);
    b[6] = 4;
    assert!(message(read_npy(write(dir.path(), "x.npy", &b))).contains("version"));
}

/// A torch-style archive holding `pkl` as data.pkl and `storage` as data/0.
fn pt(dir: &Path, pkl: &[u8], storage: &[u8]) -> PathBuf {
    let p = dir.join("x.pt");
    let mut z = zip::ZipWriter::new(fs::File::create(&p).unwrap());
    let opts = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in [("x/data.pkl", pkl), ("x/byteorder", b"little".as_slice()), ("x/data/0", storage)] {
        z.start_file(name, opts).unwrap();
        z.write_all(bytes).unwrap();
    }
    z.finish().unwrap();
    p
}

/// The pickle torch writes for a float tensor, with the given size and stride tuples (pickle ops).
fn tensor_pickle(numel: &[u8], size: &[u8], stride: &[u8]) -> Vec<u8> {
    [
        b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\nq\x00((X\x07\x00\x00\x00storageq\x01ctorch\nFloatStorage\nq\x02X\x01\x00\x00\x000q\x03X\x03\x00\x00\x00cpuq\x04".as_slice(),
        numel,
        b"tq\x05QK\x00",
        size,
        stride,
        b"\x89ccollections\nOrderedDict\nq\x08)Rq\ttq\nRq\x0b.",
    ]
    .concat()
}

#[test]
fn hostile_pt_files_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    // A well-formed 2x2 transposed view reads back in logical order.
    let ok = pt(dir.path(), &tensor_pickle(b"K\x04", b"K\x02K\x02\x86", b"K\x01K\x02\x86"), &storage);
    assert_eq!(read_pt(&ok).unwrap().data, HostData::F64(vec![1.0, 3.0, 2.0, 4.0]));
    let huge = b"\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40"; // LONG1 2**62
    let huge_size = [huge.as_slice(), b"\x85"].concat();
    // (storage numel, size tuple, stride tuple, expected message part), as pickle ops.
    type Case<'a> = (&'a [u8], &'a [u8], &'a [u8], &'a str);
    let cases: [Case; 5] = [
        (b"K\x04", &huge_size, b"K\x01\x85", "inside its storage"),
        (huge, b"K\x04\x85", b"K\x01\x85", "to hold"),
        (b"K\x04", b"K\x05\x85", b"K\x01\x85", "inside its storage"),
        (b"K\x04", b"\x8a\x05\x00\x00\x00\x00\x01\x85", b"K\x00\x85", "stride-0"),
        (b"K\x04", b"K\x02\x85", b"K\x01K\x01\x86", "as many strides"),
    ];
    for (numel, size, stride, want) in cases {
        let p = pt(dir.path(), &tensor_pickle(numel, size, stride), &storage);
        let m = message(read_pt(&p));
        assert!(m.contains(want), "{m}");
    }
    let m = message(read_pt(pt(dir.path(), b"\x80\x02cbuiltins\neval\nX\x01\x00\x00\x001\x85R.", &storage)));
    assert!(m.contains("x/data.pkl: expected torch._utils._rebuild_tensor_v2") && m.contains("builtins.eval"), "{m}");
}

#[test]
fn a_storage_changed_after_it_was_written_fails_its_checksum() {
    let dir = tempfile::tempdir().unwrap();
    let storage: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|x| x.to_le_bytes()).collect();
    let p = pt(dir.path(), &tensor_pickle(b"K\x04", b"K\x04\x85", b"K\x01\x85"), &storage);
    assert_eq!(read_pt(&p).unwrap().data, HostData::F64(vec![1.0, 2.0, 3.0, 4.0]));
    // The storage is read whole, so its CRC-32 is checked: one flipped bit is an error, not other values.
    let mut bytes = fs::read(&p).unwrap();
    let at = bytes.windows(storage.len()).position(|w| w == storage.as_slice()).unwrap();
    bytes[at + 5] ^= 0x01;
    let m = message(read_pt(write(dir.path(), "changed.pt", &bytes)));
    assert!(m.ends_with("changed.pt: expected a readable entry x/data/0: Invalid checksum"), "{m}");
}
