//! The accuracy CSVs of our generated MindSpore scripts against those of the
//! scripts msprobe 8.3.2's own MindSpore op_generate writes for the same
//! dump and config (`tests/op_generate_832/msprobe_832.py`, one Python
//! process for all of 8.3.2's work), both run with real MindSpore and torch
//! on the CPU: the MindSpore tensor fixture in real_data mode (its
//! `dump_data_dir` pointed at the fixture's tensors, as both tools then
//! read the same files), one data-movement op and one matmul, forward and
//! backward.
//!
//! The same result CSV, byte for byte; the same details header, rows, API
//! names, tested dtypes, shapes and statuses; for the op whose outputs are
//! exact in any precision, the same errors. The README's documented
//! differences are asserted: the bench runs at raised precision (`Bench
//! Dtype` Float64; 8.3.2 the dumped dtype), every row's message says what
//! was compared (8.3.2: empty on a pass), cosine without 8.3.2's 1e-8 terms
//! (the same to 1e-12 here), and a backward script compares the forward
//! outputs too (8.3.2: the gradients only).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{csv_body_records, python, repo};
use msprobe::dump::nonfinite::{to_msprobe_json, NonFiniteReader};
use serde_json::{json, Value};

/// (API, propagation, whether its outputs are exact in any precision).
const APIS: [(&str, &str, bool); 3] = [("Mint.split.0", "forward", true), ("Mint.matmul.0", "forward", false), ("Mint.matmul.0", "backward", false)];

/// What our message says on a MindSpore row whose bench is raised.
const MESSAGE: &str = "tested: mindspore on cpu in the dumped dtype; bench: torch on cpu at raised precision";

/// Writes the fixture's dump.json into `dir` with `dump_data_dir` naming the
/// fixture's tensor folder, and a config per API and tool (`ours`, `832`).
fn setup(dir: &Path) {
    let fixture = repo().join("tests/fixtures/mindspore/tensor");
    let text = std::fs::read(fixture.join("dump.json")).unwrap();
    let mut dump: Value = serde_json::from_reader(NonFiniteReader::new(text.as_slice())).unwrap();
    dump["dump_data_dir"] = json!(fixture.join("dump_tensor_data"));
    std::fs::write(dir.join("dump.json"), to_msprobe_json(&dump)).unwrap();
    for (api, propagation, _) in APIS {
        for tool in ["ours", "832"] {
            let config = json!({
                "dump_json_path": dir.join("dump.json"), "api_name": api, "extract_api_path": dir.join(format!("extract_{tool}_{api}.{propagation}.json")),
                "propagation": propagation, "data_mode": "real_data", "random_seed": 42, "iter_times": 1,
            });
            std::fs::write(dir.join(format!("config_{tool}_{api}.{propagation}.json")), config.to_string()).unwrap();
        }
    }
}

/// The text (BOM dropped) of the one CSV in `dir` whose name starts with `prefix`.
fn csv(dir: &Path, prefix: &str) -> String {
    let files: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix)).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0]).unwrap().trim_start_matches('\u{feff}').to_string()
}

/// Generates our script for `api` and runs it in its folder: (details, result).
fn ours(dir: &Path, api: &str, propagation: &str) -> (String, String) {
    let out = dir.join(format!("ours_{api}.{propagation}"));
    let config = dir.join(format!("config_ours_{api}.{propagation}.json"));
    let o = Command::new(env!("CARGO_BIN_EXE_msprobe")).args(["-f", "mindspore", "op_generate", "-i"]).arg(&config).arg("-o").arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", String::from_utf8_lossy(&o.stderr));
    let script = format!("{api}.{propagation}.py");
    let o =
        Command::new(python()).arg(&script).current_dir(&out).env("PYTHONPATH", repo().join("python")).env("PYTHONDONTWRITEBYTECODE", "1").output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{script}: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let results = out.join("op_result_output");
    (csv(&results, "accuracy_checking_details_"), csv(&results, "accuracy_checking_result_"))
}

#[test]
fn mindspore_scripts_write_msprobe_832s_csvs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    setup(d);
    let work = d.join("msprobe_832");
    std::fs::create_dir(&work).unwrap();
    let configs: Vec<PathBuf> = APIS.iter().map(|(api, propagation, _)| d.join(format!("config_832_{api}.{propagation}.json"))).collect();
    let mut args = vec![work.as_os_str()];
    args.extend(configs.iter().map(|c| c.as_os_str()));
    let answers: Vec<Value> = serde_json::from_str(&common::run_832("tests/op_generate_832/msprobe_832.py", &args)).unwrap();
    assert_eq!(answers.len(), APIS.len());
    for ((api, propagation, exact), theirs) in APIS.iter().zip(&answers) {
        assert_eq!(theirs["script"], json!(format!("{api}.{propagation}.py")), "the same script name");
        let (details, result) = ours(d, api, propagation);
        let header = "API Name,Forward Test Success,Backward Test Success,Message\r\n";
        if *propagation == "forward" {
            assert_eq!(result, theirs["result"].as_str().unwrap(), "{api} {propagation}: the result CSV");
            assert_eq!(result, format!("{header}{api},pass,,\r\n"));
        } else {
            // Documented: a backward script replays the forward pass and
            // compares its outputs too (8.3.2 leaves the forward status empty).
            assert_eq!(
                (result.as_str(), theirs["result"].as_str().unwrap()),
                (format!("{header}{api},pass,pass,\r\n").as_str(), format!("{header}{api},,pass,\r\n").as_str())
            );
        }
        let (mut ours, theirs) = (csv_body_records(&details), csv_body_records(theirs["details"].as_str().unwrap()));
        let forward_rows = ours.iter().filter(|r| r[0].starts_with(&format!("{api}.forward."))).count();
        ours.retain(|r| r[0] == "API Name" || r[0].starts_with(&format!("{api}.{propagation}.")));
        assert!(forward_rows > 0 && ours.len() > 1, "{api} {propagation}: {details}");
        assert_eq!(ours[0], theirs[0], "{api}: the details header");
        assert_eq!(ours.len(), theirs.len(), "{api}: one row per output");
        assert!(ours.len() > 1);
        for (o, t) in ours[1..].iter().zip(&theirs[1..]) {
            // API Name, Tested Dtype, Shape, Status.
            for i in [0, 2, 3, 7] {
                assert_eq!(o[i], t[i], "{api}: column {i} of {o:?} and msprobe 8.3.2's {t:?}");
            }
            assert_eq!((o[1].as_str(), t[1].as_str(), o[2].as_str(), o[7].as_str()), ("Float64", "Float32", "Float32", "pass"), "{o:?} {t:?}");
            assert_eq!((o[8].as_str(), t[8].as_str()), (MESSAGE, ""), "{api}: the message");
            let cos = |r: &[String]| r[4].parse::<f64>().unwrap();
            assert!((cos(o) - cos(t)).abs() <= 1e-12, "{api}: cosine {} and msprobe 8.3.2's {}", o[4], t[4]);
            if *exact {
                assert_eq!((&o[5], &o[6]), (&t[5], &t[6]), "{api}: errors of exact outputs");
                assert_eq!((o[5].as_str(), o[6].as_str()), ("0.0", "0.0"));
            } else {
                for r in [o, t] {
                    assert!(r[5].parse::<f64>().unwrap() < 1e-4, "{api}: {r:?}");
                }
            }
        }
    }
}
