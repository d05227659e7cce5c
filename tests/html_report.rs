//! `msprobe replay --html`: the report of a fixture dump loaded in a real
//! browser (headless Chromium, Debian's `chromium`; `scripts/test.sh`
//! installs it through `scripts/setup-browser.sh`). The page's own
//! `#selftest` mode sorts, filters and opens a call as a user would and
//! writes what the DOM then shows into `<pre id="selftest">`; Chromium's
//! `--dump-dom` hands the DOM back, and this test checks it against the
//! CSVs and `stack.json`. Every host name resolves to nothing and the page
//! counts its resource loads: no request may leave it.
//!
//! Set `MSPROBE_CHROMIUM` to use another binary; without any Chromium the
//! browser test fails (scripts/test.sh installs it).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn msprobe(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_msprobe")).args(args).current_dir(dir).output().unwrap()
}

fn chromium() -> Option<PathBuf> {
    let p = std::env::var_os("MSPROBE_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    p.is_file().then_some(p)
}

/// The details CSV's rows as (output name, status).
fn csv_statuses(dir: &Path) -> Vec<(String, String)> {
    let path = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.file_name().unwrap().to_string_lossy().starts_with("accuracy_checking_details_")).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    text.trim_start_matches('\u{feff}').lines().skip(1).map(common::csv_cells).map(|c| (c[0].clone(), c[7].clone())).collect()
}

/// The page's self-test result: Chromium loads `page#selftest=<api>` with
/// every host unresolvable and dumps the DOM.
fn selftest(page: &Path, api: &str) -> Value {
    let browser = chromium().expect("chromium");
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}#selftest={api}", page.canonicalize().unwrap().display());
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--window-size=1400,1000",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--dump-dom", &url])
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"selftest\">").unwrap_or_else(|| panic!("no self-test result in the DOM; stderr: {}", String::from_utf8_lossy(&out.stderr))) + "<pre id=\"selftest\">".len();
    let text = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let text = text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("self-test result is not JSON ({e}): {text}"))
}

/// The statistics fixture (it has `stack.json`) copied to a temp folder.
fn fixture_copy(dir: &Path) -> PathBuf {
    let src = common::repo().join("tests/fixtures/pytorch/statistics");
    let dst = dir.join("dump");
    std::fs::create_dir_all(&dst).unwrap();
    for f in ["dump.json", "stack.json", "construct.json"] {
        std::fs::copy(src.join(f), dst.join(f)).unwrap();
    }
    dst
}

#[test]
fn the_report_works_in_a_real_browser() {
    assert!(chromium().is_some(), "no /usr/bin/chromium: run scripts/setup-browser.sh (or set MSPROBE_CHROMIUM)");
    let tmp = tempfile::tempdir().unwrap();
    let dump = fixture_copy(tmp.path());
    let page = tmp.path().join("report.html");
    let out = msprobe(&["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--output-dir", "out", "--html", page.to_str().unwrap()], tmp.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"), "{}", String::from_utf8_lossy(&out.stderr));
    let rows = csv_statuses(&tmp.path().join("out"));
    let count = |s: &str| rows.iter().filter(|r| r.1 == s).count() as u64;
    let r = selftest(&page, "Functional.embedding.0");

    // Summary counts and the table's rows, as the CSV has them.
    for s in ["pass", "warning", "skip", "error"] {
        assert_eq!(r["cards"][s], count(s), "summary count of {s}: {r}");
    }
    assert_eq!(r["cards"]["rows"], rows.len() as u64);
    assert_eq!(r["count"], rows.len() as u64);
    // Virtualised: only the visible rows are in the DOM.
    let rendered = r["rendered"].as_u64().unwrap();
    assert!(rendered > 10 && rendered < 60 && (rendered as usize) < rows.len(), "rendered {rendered}");
    assert_eq!(r["rankedFirst"][0], "error", "ranked worst first");

    // Sorting by MaxAbsErr, both ways, and by name.
    let nums = |k: &str| r[k].as_array().unwrap().iter().map(|v| v.as_str().unwrap().parse::<f64>().unwrap()).collect::<Vec<_>>();
    let desc = nums("sortAbsDesc");
    assert!(desc.len() >= 20 && desc.windows(2).all(|w| w[0] >= w[1]), "{desc:?}");
    let asc = nums("sortAbsAsc");
    assert!(asc.windows(2).all(|w| w[0] <= w[1]) && asc[0] <= desc[desc.len() - 1], "{asc:?}");
    let names: Vec<&str> = r["sortNameAsc"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    let mut all: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    all.sort();
    assert_eq!(names, all[..names.len()]);

    // Filters: text, status, prefix.
    let matmul = rows.iter().filter(|r| r.0.to_lowercase().contains("matmul")).count() as u64;
    assert!(matmul > 0);
    assert_eq!(r["textCount"], matmul);
    assert!(r["textNames"].as_array().unwrap().iter().all(|n| n.as_str().unwrap().contains("matmul")));
    assert_eq!(r["errorCount"], count("error"));
    assert_eq!(r["prefixCount"], rows.iter().filter(|r| r.0.starts_with("Functional.")).count() as u64);

    // The stack of a known call: the user's frames first, from stack.json.
    assert_eq!(r["call"], "Functional.embedding.0");
    let stack: Vec<&str> = r["stack"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(stack[0], "/data/dumps/pytorch/../scripts/pt_tiny_gpt.py:120 in forward — tok = self.tok(idx)", "{stack:?}");
    assert!(stack[1].starts_with("/data/dumps/pytorch/../scripts/pt_tiny_gpt.py:146 in <module>"), "{stack:?}");
    assert!(stack[2].contains("site-packages/msprobe/core/data_dump/api_registry.py:94"), "{stack:?}");
    assert_eq!(r["stackNote"], "");
    assert_eq!(r["repro"].as_str().unwrap().split("   #").next().unwrap(), "msprobe -f pytorch op_generate -i config_op.json -o ./op_repro --filter '^Functional\\.embedding\\.0$'");
    assert!(r["hists"].as_u64().unwrap() >= 1, "histograms of the call's outputs");
    assert!(r["chartPaths"].as_u64().unwrap() >= 1);

    // No request left the page.
    assert_eq!(r["resources"], 0);
}

#[test]
fn the_page_is_self_contained_and_a_bad_stack_json_is_a_note() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = fixture_copy(tmp.path());
    std::fs::write(dump.join("stack.json"), b"{not json").unwrap();
    let out = msprobe(&["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--output-dir", "out", "--html", "--filter", "embedding"], tmp.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"), "{}", String::from_utf8_lossy(&out.stderr));
    // The default name, beside the CSVs.
    let page = std::fs::read_dir(tmp.path().join("out")).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|e| e == "html")).expect("replay_report_<stamp>.html");
    assert!(page.file_name().unwrap().to_string_lossy().starts_with("replay_report_"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("no call stacks:") && html.contains("not valid JSON"));
    assert!(html.contains("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"));
    // Nothing fetched: no external URL in src/href attributes.
    for attr in ["src=\"http", "href=\"http", "src='http", "url(http", "@import"] {
        assert!(!html.contains(attr), "{attr}");
    }
    // A missing stack.json is a note too.
    std::fs::remove_file(dump.join("stack.json")).unwrap();
    let out = msprobe(&["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--output-dir", "out2", "--html", "r2.html", "--filter", "embedding"], tmp.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"));
    assert!(std::fs::read_to_string(tmp.path().join("r2.html")).unwrap().contains("no call stacks:"));
}

#[test]
fn a_single_api_replay_writes_the_report_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = fixture_copy(tmp.path());
    let config = tmp.path().join("config_op.json");
    std::fs::write(&config, format!("{{\"dump_json_path\": {:?}, \"api_name\": \"Functional.embedding.0\"}}", dump.join("dump.json").to_str().unwrap())).unwrap();
    let out = msprobe(&["-f", "pytorch", "replay", "-i", config.to_str().unwrap(), "--output-dir", "out", "--html", "one.html"], tmp.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(tmp.path().join("one.html")).unwrap();
    assert!(html.contains("\"api\":\"Functional.embedding.0\"") && html.contains("pt_tiny_gpt.py"));
    // Non-tensor arguments as Python writes them (None, 2.0, False), not Rust's Debug forms.
    for arg in [r#"["args[2]","value","","None",""]"#, r#"["args[4]","value","","2.0",""]"#, r#"["args[5]","value","","False",""]"#] {
        assert!(html.contains(arg), "{arg}");
    }
}
