//! Everything the binary prints: results on stdout, summaries, warnings and
//! errors on stderr, each as msprobe-rs has always printed them.

use runtime::compare::Status;
use runtime::report::ranked_table;

use crate::error::Error;
use crate::op_generate::{BatchReport, Generated};
use crate::replay::ReplayReport;

/// `msprobe: error: <message>`, one line.
pub fn error(e: &Error) {
    eprintln!("msprobe: error: {e}");
}

/// Config keys this tool does not read.
pub fn unknown_keys(config: &std::path::Path, keys: &[String]) {
    for key in keys {
        eprintln!("msprobe: warning: {}: unknown key {key:?} ignored", config.display());
    }
}

/// One-API `op_generate`: the files written, or with `--check` the drifted ones.
pub fn generated(done: &Generated, check: bool) {
    if check {
        for p in &done.drifted {
            println!("drifted: {}", p.display());
        }
        return;
    }
    if let Some(e) = &done.extract {
        println!("extracted {}", e.display());
    }
    for f in &done.files {
        println!("wrote {}", f.display());
    }
}

/// Batch `op_generate`: failures, differences, and a summary line.
pub fn batch(report: &BatchReport, check: bool, quiet: bool) {
    for (script, e) in &report.failed {
        eprintln!("msprobe: error: {script}: {e}");
    }
    for (what, list) in [("drifted", &report.drifted), ("missing", &report.missing), ("extra", &report.extra)] {
        for p in list {
            println!("{what}: {}", p.display());
        }
    }
    if quiet && !check {
        return;
    }
    let secs = report.elapsed.as_secs_f64();
    let per_sec = if secs > 0.0 { report.scripts as f64 / secs } else { 0.0 };
    let mut line = format!("{} APIs, {} scripts in {secs:.2} s ({per_sec:.0}/s)", report.apis, report.scripts);
    if check {
        line.push_str(&format!("; {} drifted, {} missing, {} extra", report.drifted.len(), report.missing.len(), report.extra.len()));
    } else {
        line.push_str(&format!("; {} written, {} unchanged", report.written, report.scripts - report.written));
    }
    if report.without_backward > 0 {
        line.push_str(&format!("; {} without a backward entry", report.without_backward));
    }
    if !report.failed.is_empty() {
        line.push_str(&format!("; {} failed", report.failed.len()));
    }
    eprintln!("{line}");
}

/// `replay`: the ranked table (the `top` worst rows) and where the CSVs went.
pub fn replay(report: &ReplayReport, top: usize) {
    print!("{}", ranked_table(&report.rows.details, top));
    let n = |s| report.count(s);
    eprintln!(
        "{} rows: {} pass, {} warning, {} skip, {} error; wrote {} and {}",
        report.rows.details.len(),
        n(Status::Pass),
        n(Status::Warning),
        n(Status::Skip),
        n(Status::Error),
        report.files.1.display(),
        report.files.0.display()
    );
}
