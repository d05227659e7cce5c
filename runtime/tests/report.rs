//! The report writer against bytes produced by the generated scripts' own
//! `write_csv` (Python's csv module, utf-8-sig), plus file naming, stamp
//! collisions, permissions and clean-up.

// Tests here are tables of cases (hostile cells and the bytes Python's csv
// module writes for them): their length is the table's, not logic's.
#![allow(clippy::too_many_lines)]

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
        tested_on: None,
        ..DetailRow::uncompared(String::new(), Status::Pass, String::new())
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

/// The scripts' CSV machinery (python/msprobe_rs/repro/compare.py from the
/// number pattern through `cell()` and `write_csv`, Python's csv module
/// underneath), then `main`, run with `args`; its stdout.
fn run_python_writer(main: &str, args: &[&str]) -> Vec<u8> {
    let template = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../python/msprobe_rs/repro/compare.py")).unwrap();
    let start = template.find("# A number as the reports print them").expect("NUMBER in compare.py");
    let end = start + template[start..].find("\n\n\ndef write_report").expect("cell() and write_csv before write_report");
    let code = format!("import csv, json, os, re, sys, tempfile\n{}\n{main}", &template[start..end]);
    let python = std::env::var_os("MSPROBE_PYTHON").expect("MSPROBE_PYTHON (scripts/test.sh sets it)");
    let out = std::process::Command::new(python).arg("-c").arg(code).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Cells a spreadsheet would run as formulas get a leading `'`, numbers keep
/// their sign, and the scripts' `cell()` (python/msprobe_rs/repro/compare.py)
/// decides every case the same way as this writer.
#[test]
fn formula_cells_are_text_in_both_writers() {
    let cases =
        ["=1+1", "+cmd|' /C calc'!A0", "-x", "@SUM(A1)", "\tx", "-", "--1", "-1e", "-0.5", "+1", "-1e-08", "-inf", "-nan", "-.5", "-5.", "x=1", "plain"];
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<DetailRow> = cases.iter().map(|c| DetailRow::uncompared(c.to_string(), Status::Pass, String::new())).collect();
    let (d, _) = write_report(dir.path(), &rows, &[], Standard::Msprobe).unwrap();
    let rust: Vec<String> = csv::Reader::from_path(d).unwrap().records().map(|r| r.unwrap()[0].to_string()).collect();
    assert_eq!(rust[..4], ["'=1+1", "'+cmd|' /C calc'!A0", "'-x", "'@SUM(A1)"]);
    assert_eq!(rust[8..], ["-0.5", "+1", "-1e-08", "-inf", "-nan", "-.5", "-5.", "x=1", "plain"]);
    let main = "print(json.dumps([cell(c) for c in json.loads(sys.argv[1])]))";
    let python: Vec<String> = serde_json::from_slice(&run_python_writer(main, &[&serde_json::to_string(&cases).unwrap()])).unwrap();
    assert_eq!(python, rust);
}

/// Both CSVs of rows full of hostile cells (quotes, commas, CR, LF, CRLF,
/// formula starts, spaces, `#`, non-ASCII, empty cells, every kind of float)
/// are byte for byte what the scripts' `write_csv` (Python's csv module,
/// utf-8-sig, QUOTE_MINIMAL) writes for the same values.
#[test]
fn hostile_cells_match_pythons_csv_module() {
    let hostile = [
        "say \"hi\"",
        "a,b",
        "x\ry",
        "line\nbreak",
        "crlf\r\nend",
        "=1+1",
        "+cmd|' /C calc'!A0",
        "-x",
        "@SUM(A1)",
        "\tx",
        "\rx",
        "\"",
        ",",
        "\"\"",
        " lead and trail ",
        "\u{fc}n\u{ef}code",
        "#hash",
        "-0.5",
        "",
    ];
    let floats = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 1e-08, 0.9999999403953552, 1.5e16, 1.0, 2.5e-05];
    let float = |i: usize| (i % 4 != 3).then(|| floats[i % floats.len()]);
    let statuses = [Status::Pass, Status::Warning, Status::Skip, Status::Error];
    let details: Vec<DetailRow> = hostile
        .iter()
        .enumerate()
        .map(|(i, h)| DetailRow {
            bench_dtype: Some(h.to_string()),
            tested_dtype: (i % 2 == 0).then(|| "torch.bfloat16".to_string()),
            shape: [None, Some(vec![]), Some(vec![6]), Some(vec![2, 3])][i % 4].clone(),
            cosine: float(i),
            max_abs: float(i + 1),
            max_rel: float(i + 2),
            ..DetailRow::uncompared(h.to_string(), statuses[i % 4], hostile[(i + 1) % hostile.len()].to_string())
        })
        .collect();
    let results: Vec<ResultRow> = hostile
        .iter()
        .enumerate()
        .map(|(i, h)| ResultRow {
            api_name: h.to_string(),
            forward: (i % 3 != 0).then_some(statuses[i % 4]),
            backward: (i % 2 == 0).then_some(statuses[(i + 1) % 4]),
            message: format!("{h}; {h}"),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let (d, r) = write_report(dir.path(), &details, &results, Standard::Msprobe).unwrap();

    // The same values as Python sees them: None, str, float or tuple.
    let json_float = |x: Option<f64>| x.map_or(serde_json::Value::Null, |x| serde_json::json!({ "float": runtime::pyfmt::repr(x) }));
    let detail_values: Vec<serde_json::Value> = details
        .iter()
        .map(|d| {
            serde_json::json!([
                d.api_name,
                d.bench_dtype,
                d.tested_dtype,
                d.shape.as_ref().map(|s| serde_json::json!({ "tuple": s })),
                json_float(d.cosine),
                json_float(d.max_abs),
                json_float(d.max_rel),
                d.status.as_str(),
                d.message
            ])
        })
        .collect();
    let result_values: Vec<serde_json::Value> =
        results.iter().map(|r| serde_json::json!([r.api_name, r.forward.map(Status::as_str), r.backward.map(Status::as_str), r.message])).collect();
    let main = r#"def value(v):
    if isinstance(v, dict):
        return float(v["float"]) if "float" in v else tuple(v["tuple"])
    return v


for name, header, rows in json.loads(sys.argv[1]):
    write_csv(os.path.join(sys.argv[2], name), header, [[value(v) for v in row] for row in rows])"#;
    let spec = serde_json::json!([
        ["details.csv", ["API Name", "Bench Dtype", "Tested Dtype", "Shape", "Cosine", "MaxAbsErr", "MaxRelativeErr", "Status", "Message"], detail_values],
        ["result.csv", ["API Name", "Forward Test Success", "Backward Test Success", "Message"], result_values],
    ]);
    let python_dir = tempfile::tempdir().unwrap();
    run_python_writer(main, &[&spec.to_string(), python_dir.path().to_str().unwrap()]);
    assert_eq!(String::from_utf8(fs::read(&d).unwrap()).unwrap(), String::from_utf8(fs::read(python_dir.path().join("details.csv")).unwrap()).unwrap());
    assert_eq!(String::from_utf8(fs::read(&r).unwrap()).unwrap(), String::from_utf8(fs::read(python_dir.path().join("result.csv")).unwrap()).unwrap());
}
