//! `msprobe replay --html`: the report of a fixture dump loaded in a real
//! browser (headless Chromium, Debian's `chromium`; `scripts/test.sh`
//! installs it through `scripts/setup-browser.sh`). The page's own
//! `#selftest` mode sorts, filters and opens a call as a user would and
//! writes what the DOM then shows into `<pre id="selftest">`; Chromium's
//! the DevTools protocol (`tests/html_report/cdp.py`) hands it back with
//! every request the browser saw, and this test checks it against the CSVs
//! and `stack.json`. Every host name resolves to nothing, and no request
//! may leave the page, not even one its CSP blocks (a planted page shows
//! that such requests are counted).
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
    let path = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("accuracy_checking_details_"))
        .unwrap();
    common::csv_file_records(&path).split_off(1).into_iter().map(|c| (c[0].clone(), c[7].clone())).collect()
}

/// What Chromium saw of a page: the self-test result it wrote into
/// `<pre id="selftest">` (null when none) and every request the page made
/// (`tests/html_report/cdp.py`: the DevTools protocol's network events,
/// CSP-blocked and unresolvable ones included), with every host
/// unresolvable.
fn load(page: &Path, fragment: &str) -> (Value, Vec<Value>) {
    let browser = chromium().expect("chromium");
    let profile = tempfile::tempdir().unwrap();
    let url = format!("file://{}{fragment}", page.canonicalize().unwrap().display());
    let out = Command::new(common::python()).arg(common::repo().join("tests/html_report/cdp.py")).arg(&browser).arg(&url).arg(profile.path()).output().unwrap();
    assert!(out.status.success(), "cdp.py failed: {}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("cdp.py printed no JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    let selftest = match seen["selftest"].as_str() {
        Some(text) => serde_json::from_str(text).unwrap_or_else(|e| panic!("self-test result is not JSON ({e}): {text}")),
        None => Value::Null,
    };
    (selftest, seen["requests"].as_array().unwrap().clone())
}

/// The page's self-test result: Chromium loads `page#selftest=<api>`; no
/// request may leave the page.
fn selftest(page: &Path, api: &str) -> Value {
    let (result, requests) = load(page, &format!("#selftest={api}"));
    assert!(requests.is_empty(), "the page made requests: {requests:?}");
    assert!(!result.is_null(), "no self-test result");
    result
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
    // msprobe's thresholds on the emulated device give the page error rows to rank.
    let args = ["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--output-dir", "out", "--html", page.to_str().unwrap(), "--standard", "msprobe"];
    let out = msprobe(&args, tmp.path());
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
    assert_eq!(
        r["repro"].as_str().unwrap().split("   #").next().unwrap(),
        "msprobe -f pytorch op_generate -i config_op.json -o ./op_repro --filter '^Functional\\.embedding\\.0$'"
    );
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
    let page = std::fs::read_dir(tmp.path().join("out"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "html"))
        .expect("replay_report_<stamp>.html");
    assert!(page.file_name().unwrap().to_string_lossy().starts_with("replay_report_"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("no call stacks:") && html.contains("not valid JSON"));
    assert!(html.contains("default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"));
    // Nothing fetched: no external or protocol-relative URL in src/href attributes.
    for attr in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "url(http",
        "@import",
        "src=\"//",
        "href=\"//",
        "src='//",
        "href='//",
        "url(//",
        "url('//",
        "url(\"//",
    ] {
        assert!(!html.contains(attr), "{attr}");
    }
    // A missing stack.json is a note too.
    std::fs::remove_file(dump.join("stack.json")).unwrap();
    let out = msprobe(
        &["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--output-dir", "out2", "--html", "r2.html", "--filter", "embedding"],
        tmp.path(),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"));
    assert!(std::fs::read_to_string(tmp.path().join("r2.html")).unwrap().contains("no call stacks:"));
}

#[test]
fn a_single_api_replay_writes_the_report_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dump = fixture_copy(tmp.path());
    let config = tmp.path().join("config_op.json");
    std::fs::write(&config, format!("{{\"dump_json_path\": {:?}, \"api_name\": \"Functional.embedding.0\"}}", dump.join("dump.json").to_str().unwrap()))
        .unwrap();
    let out = msprobe(&["-f", "pytorch", "replay", "-i", config.to_str().unwrap(), "--output-dir", "out", "--html", "one.html"], tmp.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("wrote"), "{}", String::from_utf8_lossy(&out.stderr));
    let html = std::fs::read_to_string(tmp.path().join("one.html")).unwrap();
    assert!(html.contains("\"api\":\"Functional.embedding.0\"") && html.contains("pt_tiny_gpt.py"));
    // Non-tensor arguments as Python writes them (None, 2.0, False), not Rust's Debug forms.
    for arg in [r#"["args[2]","value","","None",""]"#, r#"["args[4]","value","","2.0",""]"#, r#"["args[5]","value","","False",""]"#] {
        assert!(html.contains(arg), "{arg}");
    }
}

/// The request count can fail: a page that loads an image and a
/// protocol-relative stylesheet, both blocked by its CSP, shows both.
#[test]
fn blocked_requests_are_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let page = tmp.path().join("leak.html");
    std::fs::write(
        &page,
        "<!doctype html><html><head><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'\">\
         <link rel=\"stylesheet\" href=\"//leak.invalid/b.css\"></head><body><img src=\"http://leak.invalid/a.png\">\
         <pre id=\"selftest\" hidden></pre><script>const e = document.getElementById('selftest'); e.textContent = '{}'; e.hidden = false;</script></body></html>",
    )
    .unwrap();
    let (result, requests) = load(&page, "");
    assert_eq!(result, serde_json::json!({}));
    let mut seen: Vec<(String, String)> =
        requests.iter().map(|r| (r["url"].as_str().unwrap().to_string(), r["blocked"].as_str().unwrap_or("").to_string())).collect();
    seen.sort();
    assert_eq!(seen, [("file://leak.invalid/b.css".to_string(), "csp".to_string()), ("http://leak.invalid/a.png".to_string(), "csp".to_string())]);
}
