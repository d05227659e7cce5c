//! Helpers shared by the runtime's tests against torch (agreement,
//! emulation): the test Python, running a reference script, reading the
//! tensors it saved.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;

use runtime::io::{read_tensor, HostData};
use serde_json::Value as Json;

/// The Python with torch and numpy that scripts/setup-python-env.sh made.
pub fn python() -> PathBuf {
    match std::env::var_os("MSPROBE_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => panic!(
            "MSPROBE_PYTHON is not set: this test compares the runtime with torch. \
             Run it through scripts/test.sh, which creates the Python environment and sets it."
        ),
    }
}

/// Runs `script` (relative to the runtime crate) into `dir` and returns the
/// case list of the `cases.json` it writes there.
pub fn torch_reference(script: &str, dir: &Path) -> Vec<Json> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let out = Command::new(python()).arg("-B").arg(&script).arg(dir).output().expect("cannot start MSPROBE_PYTHON");
    assert!(out.status.success(), "{} failed:\n{}{}", script.display(), String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let index: Json = serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    index["cases"].as_array().unwrap().clone()
}

/// A saved tensor's shape and values as f64.
pub fn read(dir: &Path, file: &str) -> (Vec<usize>, Vec<f64>) {
    let h = read_tensor(dir.join(file)).unwrap_or_else(|e| panic!("{e}"));
    let values = match h.data {
        HostData::F64(v) => v,
        HostData::I64(v) => v.into_iter().map(|x| x as f64).collect(),
        HostData::U64(v) => v.into_iter().map(|x| x as f64).collect(),
        HostData::Bool(v) => v.into_iter().map(|x| x as u8 as f64).collect(),
    };
    (h.shape, values)
}

/// Below this fraction of a tensor's largest value, an element's bound in
/// [`per_element`] stops shrinking with it.
pub const FLOOR: f64 = 1e-3;

/// Whether `got` agrees with `want` element by element:
/// `|got - want| <= tolerance * max(|want|, FLOOR * max|want|)` over the
/// finite values, with NaN and ±Inf at the same places. Each element is
/// held to its own size; only elements far below the tensor's largest
/// (gradients that cancel, softmax tails) are held to `FLOOR` of it.
/// Returns the largest difference in units of its element's bound, or the
/// first element that breaks it.
pub fn per_element(got: &[f64], want: &[f64], tolerance: f64) -> Result<f64, String> {
    let scale = want.iter().filter(|w| w.is_finite()).fold(0f64, |m, w| m.max(w.abs()));
    let mut worst = 0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if w.is_finite() {
            let (diff, bound) = ((g - w).abs(), tolerance * w.abs().max(FLOOR * scale));
            // A NaN difference fails the comparison too.
            if !(diff <= bound) {
                return Err(format!("element {i}: {g:e}, expected {w:e}: difference {diff:e} over its bound {bound:e}"));
            }
            worst = worst.max(if bound > 0.0 { diff / bound } else { 0.0 });
        } else if !(g == w || (g.is_nan() && w.is_nan())) {
            return Err(format!("element {i}: {g}, expected {w}"));
        }
    }
    Ok(worst)
}
