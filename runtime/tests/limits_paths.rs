//! Hostile paths and sizes at the runtime's boundary: tensor files are read
//! only inside the folder their path names (symlinks out are refused), a
//! file of another shape than the dumped one is refused from its header,
//! and no shape makes a replay allocate beyond its limits.

use std::fs;
use std::path::{Path, PathBuf};

use runtime::compare::Status;
use runtime::dtype::TDType;
use runtime::error::Error;
use runtime::io::{read_npy, read_tensor, read_tensor_shaped, IoError};
use runtime::limits::{Limit, Limits};
use runtime::replay::{replay, replay_within};
use runtime::spec::{ApiId, DataMode, Framework, Replay, Spec, TensorSpec};
use runtime::standard::Standard;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name)
}

/// A `.npy` of float64 with the given header shape and `values` as data.
fn npy(path: &Path, shape: &str, values: &[f64]) {
    let mut header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    values.iter().for_each(|v| bytes.extend(v.to_le_bytes()));
    fs::write(path, bytes).unwrap();
}

#[cfg(unix)]
#[test]
fn symlinks_out_of_the_tensor_folder_are_refused() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let root_path = fs::canonicalize(root.path()).unwrap();
    let (dir, outside) = (root_path.join("dump_tensor_data"), root_path.join("outside"));
    fs::create_dir(&dir).unwrap();
    fs::create_dir(&outside).unwrap();
    npy(&outside.join("secret.npy"), "(2,)", &[1.0, 2.0]);
    npy(&dir.join("x.npy"), "(2,)", &[3.0, 4.0]);
    let link = dir.join("Torch.mul.0.forward.input.0.npy");
    symlink(outside.join("secret.npy"), &link).unwrap();
    let expected = format!("{}: refused: it resolves to {}, outside the tensor folder {}", link.display(), outside.join("secret.npy").display(), dir.display());
    for e in [read_tensor(&link).unwrap_err(), read_npy(&link).unwrap_err(), read_tensor_shaped(&link, &[2]).unwrap_err()] {
        assert!(matches!(e, IoError::Outside { .. }), "{e:?}");
        assert_eq!(e.to_string(), expected);
    }
    // `..` in the path resolves before the check: still outside.
    let dotdot = dir.join("../outside/secret.npy");
    assert!(read_tensor(&dotdot).is_ok(), "the folder a path names is its parent, resolved: ../outside here");
    // A symlink that stays in the folder, and a tensor folder that is itself a symlink, are fine.
    symlink(dir.join("x.npy"), dir.join("alias.npy")).unwrap();
    assert_eq!(read_tensor_shaped(dir.join("alias.npy"), &[2]).unwrap().shape, vec![2]);
    symlink(&dir, root_path.join("moved")).unwrap();
    assert_eq!(read_tensor(root_path.join("moved/x.npy")).unwrap().shape, vec![2]);
    let e = read_tensor(root_path.join("moved/Torch.mul.0.forward.input.0.npy")).unwrap_err();
    assert!(matches!(e, IoError::Outside { .. }), "{e:?}");
    // A dangling name is a read error naming the file.
    let e = read_tensor(dir.join("missing.npy")).unwrap_err();
    assert_eq!(e.to_string(), format!("{}: cannot read: No such file or directory (os error 2)", dir.join("missing.npy").display()));
}

#[test]
fn a_file_of_another_shape_is_refused_from_its_header() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("claims.npy");
    // The header claims 10^9 float64 values; the file holds none.
    npy(&p, "(1000000000,)", &[]);
    assert_eq!(
        read_tensor(&p).unwrap_err().to_string(),
        format!("{}: expected 8000000000 data bytes for shape [1000000000] and dtype '<f8', found 0", p.display())
    );
    assert_eq!(read_tensor_shaped(&p, &[4]).unwrap_err().to_string(), format!("{}: shape [1000000000] differs from the dumped [4]", p.display()));
    let pt = dir.path().join("f32.pt");
    fs::copy(data("f32.pt"), &pt).unwrap();
    let shape = read_tensor(&pt).unwrap().shape;
    assert_eq!(read_tensor_shaped(&pt, &shape).unwrap().shape, shape);
    assert_eq!(read_tensor_shaped(&pt, &[7, 7]).unwrap_err().to_string(), format!("{}: shape {shape:?} differs from the dumped [7, 7]", pt.display()));
}

fn tensor(shape: &[usize]) -> Spec {
    Spec::Tensor(TensorSpec { dtype: TDType::F32, shape: shape.to_vec(), low: Some(-1.0), high: Some(1.0), requires_grad: None, data: None })
}

/// `Torch.mul` of two random tensors.
fn mul(a: &[usize], b: &[usize]) -> Replay {
    Replay {
        api: ApiId { prefix: runtime::prefix::Prefix::Torch, op: "mul".into(), call: "0".into() },
        framework: Framework::PyTorch,
        args: vec![tensor(a), tensor(b)],
        kwargs: vec![],
        outputs: vec![],
        grad_outputs: None,
        grad_inputs: vec![],
        data_mode: DataMode::Random,
        seed: 42,
        iterations: 1,
        cosine_threshold: 0.99,
        max_abs_err_threshold: 1e-4,
        standard: Standard::Msprobe,
        use_recorded: false,
        dump_device: runtime::spec::DumpDevice::Cpu,
    }
}

#[test]
fn shapes_that_wrap_or_exceed_the_limit_are_refused_before_allocating() {
    let limits = Limits { tensor_bytes: 1 << 30, memory_budget: 1 << 32 };
    // 2^64 elements: wrapped to 0 (an "empty tensor" pass) before.
    let e = replay_within(&mul(&[4], &[4294967296, 4294967296]), &limits).unwrap_err();
    assert!(e.is_input(), "{e:?}");
    assert_eq!(
        e.to_string(),
        "forward.input_args[1]: shape [4294967296, 4294967296] needs 147573952589676412928 bytes as float64, over the tensor size limit of 1073741824 bytes"
    );
    let Error::TooLarge(t) = &e else { panic!("{e:?}") };
    assert_eq!(t.limit, Limit::Tensor);
    // 10^24 elements, with the default limits (a share of this machine's memory).
    let e = replay(&mul(&[1_000_000_000_000, 1_000_000_000_000], &[4])).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge(_))
            && e.to_string().starts_with("forward.input_args[0]: shape [1000000000000, 1000000000000] needs 8000000000000000000000000 bytes"),
        "{e}"
    );
    // Each tensor fits, the call does not.
    let e = replay_within(&mul(&[1 << 20], &[1 << 20]), &Limits { tensor_bytes: 1 << 30, memory_budget: 1 << 25 }).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the call needs an estimated 67108864 bytes (its tensors' 16777216 bytes as float64 × 4 copies), over the memory budget of 33554432 bytes"
    );
    // Within the limits, the call replays.
    let rows = replay_within(&mul(&[4], &[4]), &limits).unwrap();
    assert_eq!(rows.details.iter().map(|d| d.status).collect::<Vec<_>>(), vec![Status::Pass]);
}
