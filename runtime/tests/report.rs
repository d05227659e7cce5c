//! The report writer against bytes produced by the generated scripts' own
//! `write_csv` (Python's csv module, utf-8-sig), plus file naming, stamp
//! collisions, permissions and clean-up.

use std::fs;
use std::path::Path;

use runtime::compare::Status;
use runtime::report::{write_report, DetailRow, ResultRow};
use runtime::standard::Standard;

fn details() -> Vec<DetailRow> {
    let row = |name: &str, shape: Option<Vec<usize>>, m: [Option<f64>; 3], status, message: &str| DetailRow {
        api_name: name.into(),
        bench_dtype: shape.as_ref().map(|_| "torch.float32".to_string()),
        tested_dtype: shape.as_ref().map(|_| "torch.bfloat16".to_string()),
        shape,
        cosine: m[0],
        max_abs: m[1],
        max_rel: m[2],
        status,
        message: message.into(),
        rule: String::new(),
        metrics: String::new(),
        hist: None,
    };
    vec![
        row("Torch.matmul.0.forward.output.0", Some(vec![2, 3]), [Some(0.9999999403953552), Some(1e-08), Some(2.5e-05)], Status::Pass, ""),
        row(
            "Torch.split.0.forward.output.1",
            Some(vec![6]),
            [Some(f64::NAN), Some(f64::INFINITY), Some(1.5e16)],
            Status::Error,
            "shape mismatch, \"odd\"\nsecond line",
        ),
        row("Torch.add.0.backward", None, [None; 3], Status::Error, "the tested call raised RuntimeError: ünïcode"),
        row("Torch.sum.0.forward.output.0", Some(vec![]), [Some(1.0), Some(0.0), Some(-0.0)], Status::Pass, "NaN/Inf, noted"),
    ]
}

fn results() -> Vec<ResultRow> {
    vec![
        ResultRow { api_name: "Torch.matmul.0".into(), forward: Some(Status::Pass), backward: None, message: String::new() },
        ResultRow {
            api_name: "Torch.split.0".into(),
            forward: Some(Status::Error),
            backward: Some(Status::Pass),
            message: "Torch.split.0.forward.output.1: shape mismatch, \"odd\"\rx".into(),
        },
    ]
}

/// Printed by Python: csv.writer on open(path, "w", encoding="utf-8-sig", newline="").
const DETAILS_BYTES: &[u8] = b"\xef\xbb\xbfAPI Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message\r\n\
Torch.matmul.0.forward.output.0,torch.float32,torch.bfloat16,\"(2, 3)\",0.9999999403953552,1e-08,2.5e-05,pass,\r\n\
Torch.split.0.forward.output.1,torch.float32,torch.bfloat16,\"(6,)\",nan,inf,1.5e+16,error,\"shape mismatch, \"\"odd\"\"\nsecond line\"\r\n\
Torch.add.0.backward,,,,,,,error,the tested call raised RuntimeError: \xc3\xbcn\xc3\xafcode\r\n\
Torch.sum.0.forward.output.0,torch.float32,torch.bfloat16,(),1.0,0.0,-0.0,pass,\"NaN/Inf, noted\"\r\n";
const RESULT_BYTES: &[u8] = b"\xef\xbb\xbfAPI Name,Forward Test Success,Backward Test Success,Message\r\n\
Torch.matmul.0,pass,,\r\n\
Torch.split.0,error,pass,\"Torch.split.0.forward.output.1: shape mismatch, \"\"odd\"\"\rx\"\r\n";

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn bytes_match_the_python_writer() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a/op_result_output");
    let (d, r) = write_report(&out, &details(), &results(), Standard::Msprobe).unwrap();
    assert_eq!(fs::read(&d).unwrap(), DETAILS_BYTES);
    assert_eq!(fs::read(&r).unwrap(), RESULT_BYTES);
    let (dn, rn) = (d.file_name().unwrap().to_str().unwrap(), r.file_name().unwrap().to_str().unwrap());
    let stamp = dn.strip_prefix("accuracy_checking_details_").unwrap().strip_suffix(".csv").unwrap();
    assert!(stamp.len() == 14 && stamp.bytes().all(|b| b.is_ascii_digit()), "{dn}");
    assert_eq!(rn, format!("accuracy_checking_result_{stamp}.csv"));
    assert_eq!(names(&out), vec![dn.to_string(), rn.to_string()], "no temporary files left");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&d).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(fs::metadata(&out).unwrap().permissions().mode() & 0o027, 0);
    }
}

/// `--standard api`: msprobe's nine columns, then the rule and its metrics;
/// every status spelled as msprobe spells it.
#[test]
fn api_standard_appends_two_columns() {
    let dir = tempfile::tempdir().unwrap();
    let row = |name: &str, status, message: &str, rule: &str, metrics: &str| DetailRow {
        rule: rule.into(),
        metrics: metrics.into(),
        ..DetailRow::uncompared(name.into(), status, message.into())
    };
    let details = vec![
        row("A.mul.0.forward.output.0", Status::Pass, "", "absolute threshold", "rel_err_ratio=0; abs_err_ratio=0"),
        row("A.gelu.0.forward.output.0", Status::Warning, "w", "benchmark", "rmse_ratio=1.5"),
        row("A.odd.0.forward", Status::Skip, "cannot replay here: x", "", ""),
        row("A.mm.0.forward.output.0", Status::Error, "e", "ulp", "max_ulp=99"),
    ];
    let (d, _) = write_report(dir.path(), &details, &[], Standard::Api).unwrap();
    let expected = "\u{feff}API Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message,Standard,Standard Metrics\r\n\
A.mul.0.forward.output.0,,,,,,,pass,,absolute threshold,rel_err_ratio=0; abs_err_ratio=0\r\n\
A.gelu.0.forward.output.0,,,,,,,warning,w,benchmark,rmse_ratio=1.5\r\n\
A.odd.0.forward,,,,,,,skip,cannot replay here: x,,\r\n\
A.mm.0.forward.output.0,,,,,,,error,e,ulp,max_ulp=99\r\n";
    assert_eq!(fs::read_to_string(d).unwrap(), expected);
}

#[test]
fn empty_report_has_headers_only() {
    let dir = tempfile::tempdir().unwrap();
    let (d, r) = write_report(dir.path(), &[], &[], Standard::Msprobe).unwrap();
    assert_eq!(fs::read(d).unwrap(), DETAILS_BYTES.split(|&b| b == b'\n').next().unwrap().iter().chain(b"\n").copied().collect::<Vec<_>>());
    assert!(fs::read(r).unwrap().ends_with(b"Backward Test Success,Message\r\n"));
}

#[test]
fn consecutive_runs_never_overwrite_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let runs: Vec<_> = (0..3).map(|_| write_report(dir.path(), &details(), &results(), Standard::Msprobe).unwrap()).collect();
    let mut details_names: Vec<_> = runs.iter().map(|(d, _)| d.clone()).collect();
    details_names.dedup();
    assert_eq!(details_names.len(), 3, "every run got its own stamp");
    for (d, r) in &runs {
        assert_eq!(fs::read(d).unwrap(), DETAILS_BYTES);
        assert_eq!(fs::read(r).unwrap(), RESULT_BYTES);
    }
    assert_eq!(names(dir.path()).len(), 6, "no temporary files left: {:?}", names(dir.path()));
}

#[test]
fn unwritable_folder_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not_a_dir");
    fs::write(&file, b"x").unwrap();
    let e = write_report(file.join("sub"), &details(), &results(), Standard::Msprobe).unwrap_err();
    assert!(e.to_string().contains("not_a_dir"), "{e}");
}

/// Cells a spreadsheet would run as formulas get a leading `'`, numbers keep
/// their sign, and the scripts' `cell()` (python/msprobe_rs/repro/compare.py)
/// decides every case the same way as this writer.
#[test]
fn formula_cells_are_text_in_both_writers() {
    let cases = ["=1+1", "+cmd|' /C calc'!A0", "-x", "@SUM(A1)", "\tx", "-", "--1", "-1e", "-0.5", "+1", "-1e-08", "-inf", "-nan", "-.5", "-5.", "x=1", "plain"];
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<DetailRow> = cases.iter().map(|c| DetailRow::uncompared(c.to_string(), Status::Pass, String::new())).collect();
    let (d, _) = write_report(dir.path(), &rows, &[], Standard::Msprobe).unwrap();
    let text = fs::read_to_string(d).unwrap();
    let rust: Vec<&str> = text.split("\r\n").skip(1).filter(|l| !l.is_empty()).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(rust[..4], ["'=1+1", "'+cmd|' /C calc'!A0", "'-x", "'@SUM(A1)"]);
    assert_eq!(rust[8..], ["-0.5", "+1", "-1e-08", "-inf", "-nan", "-.5", "-5.", "x=1", "plain"]);
    // The Python writer's own cell(), taken from the scripts' machinery.
    let template = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/msprobe_rs/repro/compare.py")).unwrap();
    let start = template.find("# A number as the reports print them").expect("NUMBER in compare.py");
    let end = start + template[start..].find("\n\n\ndef write_csv").expect("cell() before write_csv");
    let code = format!("import json, re, sys\n{}\nprint(json.dumps([cell(c) for c in json.loads(sys.argv[1])]))", &template[start..end]);
    let python = std::env::var_os("MSPROBE_PYTHON").expect("MSPROBE_PYTHON (scripts/test.sh sets it)");
    let out = std::process::Command::new(python).arg("-c").arg(code).arg(serde_json::to_string(&cases).unwrap()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let python: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(python, rust);
}
