//! `msprobe single_compare` on crafted SingleSave runs: every workbook is
//! read back with openpyxl and checked against msprobe 8.3.2's own
//! `SingleComparator` on the same two runs (its workbooks cell by cell, its
//! 16 significant digits), and each compared row's figures exactly against
//! numpy running msprobe's formulas on the same files
//! (`tests/single_compare/reference.py`, which runs both). Where we differ
//! on purpose (docs/single-compare.md: dict entries, shapes, NaN, one-sided
//! and empty arrays, float16, bool and bf16) the test asserts 8.3.2's rows
//! and ours. The last test saves two runs with the `msprobe_rs` Python
//! package and real torch tensors.

// Tests here are tables of cases (the arrays of both runs and the rows
// expected of them): their length is the table's, not logic's.
#![allow(clippy::too_many_lines)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{npy_bytes, npy_f32, python, repo};
use serde_json::{json, Value};

fn msprobe(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(cwd).output().unwrap()
}

/// Writes `bytes` as `run/data/<rel>`, creating its folders.
fn put(run: &Path, rel: &str, bytes: &[u8]) {
    let path = run.join("data").join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// A deterministic float32 sequence (an LCG), `n` values in about [-2, 2).
fn values(seed: u32, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 8) as f32 / (1u32 << 24) as f32 * 4.0 - 2.0
        })
        .collect()
}

fn le<T: Copy, const N: usize>(v: &[T], bytes: fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| bytes(x)).collect()
}

/// The workbooks of `out` as `reference.py` reads them (per file, the rows,
/// header first, and numpy's figures for each compared row), and the
/// workbooks msprobe 8.3.2's own `SingleComparator` writes for the same two
/// runs (into `out` + `_832`).
struct Books {
    ours: serde_json::Map<String, Value>,
    msprobe_832: serde_json::Map<String, Value>,
}

fn workbooks(out: &Path, run1: &Path, run2: &Path) -> Books {
    let script = repo().join("tests/single_compare/reference.py");
    let out_832 = out.with_file_name(format!("{}_832", out.file_name().unwrap().to_str().unwrap()));
    let o = Command::new(python())
        .arg(script)
        .args([out, run1, run2, &out_832])
        .env("PYTHONPATH", common::msprobe_832())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "reference.py: {}", String::from_utf8_lossy(&o.stderr));
    let mut v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut take = |k: &str| match v[k].take() {
        Value::Object(m) => m,
        other => panic!("{k}: {other}"),
    };
    Books { ours: take("ours"), msprobe_832: take("msprobe_832") }
}

impl Books {
    /// msprobe 8.3.2's rows of workbook `name`, after its header (its twelve columns).
    fn theirs(&self, name: &str) -> Vec<Vec<Value>> {
        let rows = self.msprobe_832[name]["rows"].as_array().unwrap();
        assert_eq!(rows[0], json!(HEADER[..12]), "msprobe 8.3.2's header ({name})");
        rows[1..].iter().map(|r| cells(r.as_array().unwrap())).collect()
    }

    /// Our rows of workbook `name` as msprobe 8.3.2 writes them: its twelve
    /// columns, floats kept to 16 significant digits (its pandas/openpyxl
    /// writer's; ours writes them exactly: docs/single-compare.md).
    fn ours_as_832(&self, name: &str) -> Vec<Vec<Value>> {
        let rows = self.ours[name]["rows"].as_array().unwrap();
        rows[1..]
            .iter()
            .map(|r| {
                r.as_array().unwrap()[..12]
                    .iter()
                    .map(|c| c.as_f64().map_or_else(|| c.clone(), |f| json!(format!("{f:.15e}").parse::<f64>().unwrap())))
                    .collect()
            })
            .collect()
    }

    /// Workbook `name` is msprobe 8.3.2's cell by cell (its twelve columns,
    /// its 16 digits), every row; returns how many rows.
    fn same_as_832(&self, name: &str) -> usize {
        let theirs = self.theirs(name);
        assert_eq!(self.ours_as_832(name), theirs, "{name}: ours (left) and msprobe 8.3.2's (right)");
        assert_eq!(self.msprobe_832[name]["sheets"], json!(["Sheet1"]));
        theirs.len()
    }

    /// The documented difference for dict entries: 8.3.2 gives every
    /// `<key>.<name>.npy` id 0, so of the entries of one micro-step only the
    /// one its `listdir` gives last (`last`, listdir sorted) is compared.
    fn dict_as_832(&self, name: &str, last: &str) {
        let ours: Vec<Vec<Value>> = self.ours_as_832(name).into_iter().filter(|r| r[3] == json!(last)).map(|mut r| (r[3] = json!(0.0), r).1).collect();
        assert!(!ours.is_empty());
        assert_eq!(ours, self.theirs(name), "{name}: our {last:?} rows with id 0 (left) and msprobe 8.3.2's (right)");
    }
}

/// A cell for comparison: numbers as f64 (openpyxl reads `100` as an int).
fn cell(v: &Value) -> Value {
    v.as_f64().map_or_else(|| v.clone(), |f| json!(f))
}

fn cells(row: &[Value]) -> Vec<Value> {
    row.iter().map(cell).collect()
}

/// Every compared row of every workbook holds exactly numpy's figures;
/// returns how many rows were checked.
fn figures_match_numpy(books: &serde_json::Map<String, Value>) -> usize {
    let mut checked = 0;
    for (name, book) in books {
        let rows = book["rows"].as_array().unwrap();
        for (row, expected) in rows[1..].iter().zip(book["expected"].as_array().unwrap()) {
            if expected.is_null() {
                continue;
            }
            let row = row.as_array().unwrap();
            assert_eq!(cells(&row[6..12]), cells(expected.as_array().unwrap()), "{name}: {row:?}");
            checked += 1;
        }
    }
    checked
}

/// The figures of the summary line: keys, rows, differ, shapes, only in dir1, only in dir2.
fn summary(err: &str) -> [usize; 6] {
    let line = err.lines().last().unwrap();
    let (counts, rest) = line.split_once(" rows in ").unwrap();
    let (_, figures) = rest.split_once(" s: ").unwrap();
    let numbers: Vec<usize> = counts.split(' ').chain(figures.split(' ')).filter_map(|w| w.trim_end_matches(',').parse().ok()).collect();
    numbers.try_into().unwrap()
}

const HEADER: [&str; 13] = [
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

#[test]
fn figures_match_numpy_for_every_dtype_and_layout() {
    let dir = tempfile::tempdir().unwrap();
    let (r1, r2) = (dir.path().join("run1"), dir.path().join("run2"));
    let mut seed = 0;
    for step in [0, 2, 10] {
        for rank in 0..2 {
            for micro in 0..2 {
                seed += 1;
                let at = |tag: &str, file: &str| format!("{tag}/step{step}/rank{rank}/micro_step{micro}/{file}");
                let a = values(seed, 24);
                let mut b = a.clone();
                if seed % 3 == 0 {
                    b[seed as usize % 24] += 0.25;
                    b[5] *= 1.0005; // within 1e-3 relative, not 1e-4
                }
                for (run, data) in [(&r1, &a), (&r2, &b)] {
                    put(run, &at("loss", "loss.npy"), &npy_f32(&[4, 6], data));
                    put(run, &at("loss", "loss.json"), b"{\"data\": {}}");
                    // A list and a dict: ids 0 and 1, "mean" and "var" (msprobe: all id 0).
                    put(run, &at("lst", "lst.0.npy"), &npy_f32(&[24], data));
                    put(run, &at("lst", "lst.1.npy"), &npy_f32(&[2, 3, 4], &data.iter().map(|x| x * 3.0).collect::<Vec<_>>()));
                    put(run, &at("d", "d.mean.npy"), &npy_f32(&[6], &data[..6]));
                    put(run, &at("d", "d.var.npy"), &npy_f32(&[6], &data[6..12]));
                }
            }
        }
    }
    // Other dtypes: float16, bfloat16 (ml_dtypes' <V2), float64, int32, bool.
    let f = values(99, 8);
    let g: Vec<f32> = f.iter().enumerate().map(|(i, x)| if i % 3 == 0 { x + 0.01 } else { *x }).collect();
    for (run, v, bump) in [(&r1, &f, 0), (&r2, &g, 1)] {
        // Normal finite halves straight from bits: sign, a small exponent, a mantissa (bumped in run 2).
        let bits = |exp_bias: u16, mant_bits: u32| -> Vec<u8> {
            v.iter()
                .enumerate()
                .flat_map(|(i, x)| {
                    (u16::from(*x < 0.0) << 15
                        | (exp_bias + i as u16 % 4) << mant_bits
                        | ((x.to_bits() >> 9) as u16 + bump * (i as u16 % 2)) & ((1 << mant_bits) - 1))
                        .to_le_bytes()
                })
                .collect()
        };
        put(run, "h/step0/rank0/micro_step0/h.npy", &npy_bytes("<f2", &[8], &bits(14, 10)));
        put(run, "bf/step0/rank0/micro_step0/bf.npy", &npy_bytes("<V2", &[2, 4], &bits(126, 7)));
        put(run, "f8/step0/rank0/micro_step0/f8.npy", &npy_bytes("<f8", &[8], &le(v, |x| (f64::from(x) / 3.0).to_le_bytes())));
        put(run, "i/step0/rank0/micro_step0/i.npy", &npy_bytes("<i4", &[8], &le(v, |x| ((x * 100.0) as i32).to_le_bytes())));
        put(run, "b/step0/rank0/micro_step0/b.npy", &npy_bytes("|b1", &[8], &v.iter().map(|&x| u8::from(x > 0.0)).collect::<Vec<u8>>()));
    }

    let out = dir.path().join("out");
    let o = msprobe(&["-f", "pytorch", "single_compare", "run1", "run2", "-o", "out", "-j", "3"], dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let all = workbooks(&out, &r1, &r2);
    let books = &all.ours;
    let names: Vec<&str> = books.keys().map(String::as_str).collect();
    assert_eq!(names, ["b.xlsx", "bf.xlsx", "d.xlsx", "f8.xlsx", "h.xlsx", "i.xlsx", "loss.xlsx", "lst.xlsx"]);
    assert_eq!(figures_match_numpy(books), 65);
    // msprobe 8.3.2's own SingleComparator: one workbook per key, as ours.
    assert_eq!(all.msprobe_832.keys().collect::<Vec<_>>(), books.keys().collect::<Vec<_>>());
    assert_eq!(["loss.xlsx", "lst.xlsx", "f8.xlsx", "i.xlsx"].map(|n| all.same_as_832(n)), [12, 24, 1, 1]);
    all.dict_as_832("d.xlsx", "var");
    // The documented differences: 8.3.2 computes float16 in float16 (its
    // maximum relative error rounded to a float16, ours float32's), and a
    // bool subtraction or ml_dtypes' bf16 (`<V2`) raises there, so it drops the row.
    let (h, h_832) = (all.ours_as_832("h.xlsx"), all.theirs("h.xlsx"));
    assert_eq!((h.len(), h[0][..9].to_vec(), h[0][10..].to_vec()), (h_832.len(), h_832[0][..9].to_vec(), h_832[0][10..].to_vec()));
    let (rel, rel_832) = (h[0][9].as_f64().unwrap(), h_832[0][9].as_f64().unwrap());
    assert!(rel != rel_832 && (rel - rel_832).abs() <= rel * 2f64.powi(-11), "{rel} {rel_832}: float16 rounding");
    assert_eq!((all.theirs("b.xlsx"), all.theirs("bf.xlsx")), (vec![], vec![]), "header-only workbooks");
    // 4 perturbed seeds: loss, lst.0, lst.1, d.mean, and d.var for seeds 6 and 9; h, bf, f8, i (b's signs hold).
    assert_eq!(summary(&err), [8, 65, 4 * 4 + 2 + 4, 0, 0, 0], "{err}");
    for book in books.values() {
        assert_eq!(book["sheets"], json!(["Sheet1"]));
        assert_eq!(book["rows"][0], json!(HEADER));
    }
    // Sorted by (step, rank, micro_step, id), numerically; dict ids are names.
    let keys = |name: &str| -> Vec<Value> {
        books[name]["rows"].as_array().unwrap()[1..].iter().map(|r| json!([cell(&r[0]), cell(&r[1]), cell(&r[2]), cell(&r[3])])).collect()
    };
    assert_eq!(
        keys("d.xlsx")[..4],
        [json!([0.0, 0.0, 0.0, "mean"]), json!([0.0, 0.0, 0.0, "var"]), json!([0.0, 0.0, 1.0, "mean"]), json!([0.0, 0.0, 1.0, "var"])]
    );
    assert_eq!(keys("loss.xlsx").iter().map(|k| k[0].as_f64().unwrap()).collect::<Vec<_>>(), [0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 2.0, 2.0, 10.0, 10.0, 10.0, 10.0]);
    assert_eq!(keys("lst.xlsx")[1], json!([0.0, 0.0, 0.0, 1.0]));
    // A perturbed row, by hand: seed 3 is step 0, rank 1, micro 0; element 3 moved by 0.25.
    let row = &books["loss.xlsx"]["rows"][3];
    assert_eq!(
        cells(&row.as_array().unwrap()[..8]),
        cells(&[json!(0), json!(1), json!(0), json!(0), json!("[4, 6]"), json!("[4, 6]"), json!(22.0 / 24.0 * 100.0), json!(3)])
    );
    assert_eq!(row[12], Value::Null);
}

#[test]
fn one_sided_arrays_shapes_and_non_finite_values_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let (r1, r2) = (dir.path().join("a"), dir.path().join("b"));
    let both = |rel: &str, x: &[u8], y: &[u8]| {
        put(&r1, rel, x);
        put(&r2, rel, y);
    };
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    both("k/step0/rank0/micro_step0/k.npy", &npy_f32(&[2, 3], &[1.0; 6]), &npy_f32(&[3, 2], &[1.0; 6]));
    both("k/step0/rank0/micro_step1/k.npy", &npy_f32(&[4], &[nan, inf, 1.0, 2.0]), &npy_f32(&[4], &[nan, inf, 1.0, 2.0]));
    both("k/step0/rank0/micro_step2/k.npy", &npy_f32(&[3], &[1.0, nan, 2.0]), &npy_f32(&[3], &[1.0, 5.0, 2.0]));
    both("k/step0/rank0/micro_step3/k.npy", &npy_f32(&[0], &[]), &npy_f32(&[0], &[]));
    put(&r1, "k/step1/rank0/micro_step0/k.npy", &npy_f32(&[2], &[1.0, 2.0]));
    put(&r2, "k/step1/rank3/micro_step0/k.npy", &npy_f32(&[1], &[1.0]));
    // save_ex without a micro-batch: files in the rank folder, micro_step 0; the .json is no data.
    both("flat/step0/rank0/flat.npy", &npy_f32(&[2], &[1.0, 2.0]), &npy_f32(&[2], &[1.0, 2.5]));
    both("flat/step0/rank0/flat.json", b"{}", b"{}");
    put(&r1, "gone/step0/rank0/micro_step0/gone.npy", &npy_f32(&[1], &[1.0]));
    put(&r2, "new/step0/rank0/micro_step0/new.npy", &npy_f32(&[1], &[1.0]));
    // Not SingleSave's: ignored.
    put(&r1, "k/notes.txt", b"x");
    put(&r1, "k/step0/rank0/micro_step0/k.json", b"{}");

    let o = msprobe(&["single_compare", "a", "b"], dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.starts_with("keys only in dir1: gone\nkeys only in dir2: new\n"), "{err}");
    assert_eq!(summary(&err), [4, 9, 2, 1, 2, 2], "{err}");
    let out = dir.path().join("msprobe_compare_output");
    assert_eq!(String::from_utf8_lossy(&o.stdout), ["flat", "gone", "k", "new"].map(|k| format!("wrote ./msprobe_compare_output/{k}.xlsx\n")).concat());
    let all = workbooks(&out, &r1, &r2);
    let books = &all.ours;
    assert_eq!(all.same_as_832("flat.xlsx"), 1);
    // The documented differences, in msprobe 8.3.2's own workbook: (2, 3)
    // against (3, 2) compares the 2x2 corner as if whole; NaN never equals
    // NaN, inf - inf is NaN (an empty cell) and nan_to_num makes the relative
    // error 0; empty arrays, one-sided arrays and keys are dropped.
    let n = Value::Null;
    let third = 2.0 / 3.0 * 100.0;
    let k_832 = [
        json!([0.0, 0.0, 0.0, 0.0, "[2, 3]", "[3, 2]", 100.0, n, 0.0, 0.0, 100.0, 100.0]),
        json!([0.0, 0.0, 1.0, 0.0, "[4]", "[4]", 75.0, 0.0, n, 0.0, 50.0, 50.0]),
        json!([0.0, 0.0, 2.0, 0.0, "[3]", "[3]", third, 1.0, n, 0.0, third, third]),
    ];
    assert_eq!(all.theirs("k.xlsx").into_iter().map(Value::from).collect::<Vec<_>>(), k_832);
    assert_eq!((all.theirs("gone.xlsx"), all.theirs("new.xlsx")), (vec![], vec![]), "header-only workbooks");
    let flat = books.iter().filter(|(name, _)| *name == "flat.xlsx").map(|(n, b)| (n.clone(), b.clone())).collect();
    assert_eq!(figures_match_numpy(&flat), 1, "k's NaN rows differ from msprobe on purpose");
    let rows = |name: &str| -> Vec<Vec<Value>> { books[name]["rows"].as_array().unwrap()[1..].iter().map(|r| cells(r.as_array().unwrap())).collect() };
    let n = Value::Null;
    let f = |x: f64| json!(x);
    let s = |x: &str| json!(x);
    assert_eq!(
        rows("k.xlsx"),
        vec![
            vec![
                f(0.0),
                f(0.0),
                f(0.0),
                f(0.0),
                s("[2, 3]"),
                s("[3, 2]"),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                s("shapes differ: not compared")
            ],
            vec![f(0.0), f(0.0), f(1.0), f(0.0), s("[4]"), s("[4]"), f(100.0), n.clone(), f(0.0), f(0.0), f(100.0), f(100.0), n.clone()],
            vec![
                f(0.0),
                f(0.0),
                f(2.0),
                f(0.0),
                s("[3]"),
                s("[3]"),
                f(2.0 / 3.0 * 100.0),
                f(1.0),
                s("inf"),
                s("inf"),
                f(2.0 / 3.0 * 100.0),
                f(2.0 / 3.0 * 100.0),
                n.clone()
            ],
            vec![
                f(0.0),
                f(0.0),
                f(3.0),
                f(0.0),
                s("[0]"),
                s("[0]"),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                n.clone(),
                s("empty arrays: nothing to compare")
            ],
            vec![f(1.0), f(0.0), f(0.0), f(0.0), s("[2]"), n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), s("only in dir1")],
            vec![f(1.0), f(3.0), f(0.0), f(0.0), n.clone(), s("[1]"), n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), n.clone(), s("only in dir2")],
        ]
    );
    assert_eq!(rows("flat.xlsx")[0][..8], [f(0.0), f(0.0), f(0.0), f(0.0), s("[2]"), s("[2]"), f(50.0), f(1.0)]);
    assert_eq!(rows("gone.xlsx")[0][12], s("only in dir1"));
    assert_eq!(rows("new.xlsx")[0][12], s("only in dir2"));
}

#[test]
fn two_files_for_one_array_and_bad_job_counts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for run in ["a", "b"] {
        put(&dir.path().join(run), "k/step0/rank0/micro_step0/k.npy", &npy_f32(&[1], &[1.0]));
    }
    // Both stand for micro_step 0, id 0 (msprobe keeps whichever listdir gives last).
    put(&dir.path().join("b"), "k/step0/rank0/k.npy", &npy_f32(&[1], &[2.0]));
    let o = msprobe(&["single_compare", "a", "b", "-o", "out"], dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert_eq!(err, "msprobe: error: b/data/k/step0/rank0/micro_step0/k.npy: b/data/k/step0/rank0/k.npy already stands for step 0, rank 0, micro_step 0, id 0: expected one file per array\n");
    assert!(!dir.path().join("out").exists(), "nothing written, not even the folder");
    for j in ["0", "129", "x"] {
        let o = msprobe(&["single_compare", "a", "b", "-j", j], dir.path());
        assert_eq!(o.status.code(), Some(2), "-j {j}");
    }
    assert!(!dir.path().join("msprobe_compare_output").exists());
}

/// The Python package's SingleSave with real torch tensors, run 2 perturbed.
const SAVE: &str = r#"
import sys, torch
sys.path.insert(0, sys.argv[1])
from msprobe_rs import SingleSave
dump, perturb = sys.argv[2], sys.argv[3] == "1"
SingleSave(dump, fmk="pytorch")
g = torch.Generator().manual_seed(7)
for step in range(3):
    for micro in range(2):
        x = torch.randn(4, 5, generator=g)
        pair = [torch.randn(3, generator=g), torch.randn(2, 2, generator=g).to(torch.bfloat16)]
        stats = {"mean": torch.randn(6, generator=g), "var": torch.rand(6, generator=g)}
        if perturb and step == 1 and micro == 0:
            x[2, 3] += 0.5
        if perturb and step == 2:
            stats["var"] = stats["var"] * 1.001
        SingleSave.save({"response": x, "log_prob": pair, "stats": stats})
    SingleSave.step()
SingleSave.save_config({"lr": 1e-4})
"#;

#[test]
fn runs_saved_by_the_python_package_with_torch() {
    let dir = tempfile::tempdir().unwrap();
    let package = repo().join("python");
    for (run, perturb) in [("run1", "0"), ("run2", "1")] {
        for rank in ["0", "1"] {
            let o = Command::new(python()).args(["-c", SAVE]).arg(&package).arg(dir.path().join(run)).arg(perturb).env("RANK", rank).output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }
    let o = msprobe(&["single_compare", "run1", "run2", "-o", "out"], dir.path());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(summary(&err), [3, 60, 6, 0, 0, 0], "{err}");
    let (r1, r2): (PathBuf, PathBuf) = (dir.path().join("run1"), dir.path().join("run2"));
    let all = workbooks(&dir.path().join("out"), &r1, &r2);
    let books = &all.ours;
    assert_eq!(all.same_as_832("response.xlsx"), 12);
    assert_eq!(all.same_as_832("log_prob.xlsx"), 24);
    all.dict_as_832("stats.xlsx", "var");
    let names: Vec<&str> = books.keys().map(String::as_str).collect();
    assert_eq!(names, ["log_prob.xlsx", "response.xlsx", "stats.xlsx"]);
    // 3 steps x 2 ranks x 2 micro-steps, times 2 ids for the list and the dict.
    let count = |name: &str| books[name]["rows"].as_array().unwrap().len() - 1;
    assert_eq!((count("response.xlsx"), count("log_prob.xlsx"), count("stats.xlsx")), (12, 24, 24));
    assert_eq!(figures_match_numpy(books), 60);
    // step 1, micro 0 of each rank: one element of 20 moved, at flat index 2*5+3.
    for row in &books["response.xlsx"]["rows"].as_array().unwrap()[1..] {
        let r = cells(row.as_array().unwrap());
        let moved = r[0] == json!(1.0) && r[2] == json!(0.0);
        let expected = if moved { [json!(95.0), json!(13.0)] } else { [json!(100.0), Value::Null] };
        assert_eq!(r[6..8], expected, "{r:?}");
    }
    let ids: Vec<Value> = books["stats.xlsx"]["rows"].as_array().unwrap()[1..3].iter().map(|r| r[3].clone()).collect();
    assert_eq!(ids, [json!("mean"), json!("var")]);
}
