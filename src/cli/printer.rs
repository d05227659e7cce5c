//! Everything the binary prints: results on stdout, summaries, warnings and
//! errors on stderr, each as msprobe-rs has always printed them.

use runtime::compare::Status;
use runtime::report::{ranked_table, tested_split, RankBy};

use super::Error;
use crate::op_generate::{BatchReport, Generated};
use crate::replay::{Blame, BlameReport, Blamed, MinimizeReport, ReplayReport};
use crate::result_change;
use crate::single_compare::Outcome;

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

/// `replay`: the ranked table (the `top` worst rows), what a `--dump`
/// run replayed, and where the CSVs (or a shard's part) went.
pub fn replay(report: &ReplayReport, top: usize, rank_by: RankBy) {
    print!("{}", ranked_table(&report.rows.details, top, rank_by));
    let n = |s| report.count(s);
    let counts = format!(
        "{} rows: {} pass, {} warning, {} skip, {} error; {}",
        report.rows.details.len(),
        n(Status::Pass),
        n(Status::Warning),
        n(Status::Skip),
        n(Status::Error),
        tested_split(&report.rows.details, report.standard)
    );
    if let Some(p) = &report.part {
        eprintln!("replayed {} calls ({} already judged, {} shared with an identical call)", p.replayed, p.judged, p.shared);
        let named: usize = p.named.values().sum();
        let named_text: String = p
            .named
            .iter()
            .map(|(prefix, n)| {
                let why = runtime::prefix::Prefix::parse(prefix).and_then(|x| x.not_replayed()).unwrap_or_default();
                format!(", {n} {prefix} not replayed ({why})")
            })
            .collect();
        let left = p.entries.saturating_sub(p.with_rows + named);
        let left = if left > 0 { format!(", {left} not selected (--filter, -p, or a prefix -f's framework does not write)") } else { String::new() };
        let left = format!("{named_text}{left}");
        let strays = if p.strays > 0 { format!("; {} entries are neither an API call's nor a module's, not read", p.strays) } else { String::new() };
        eprintln!("{} API entries in the dump: {} with their rows{left}{strays}", p.entries, p.with_rows);
    }
    match (&report.files, &report.part, &report.merge_hint) {
        (Some((details, result)), _, _) => eprintln!("{counts}; wrote {} and {}", result.display(), details.display()),
        (None, Some(p), Some(merge)) => {
            eprintln!("{counts}; wrote {} (shard {})", p.path.display(), p.shard);
            eprintln!("when all {} shards are done: {merge}", p.shard.count);
        }
        _ => eprintln!("{counts}"),
    }
    if let Some(html) = &report.html {
        eprintln!("wrote {}", html.display());
    }
    if let Some(b) = &report.blame {
        blame(b);
    }
    if let Some(m) = &report.minimize {
        minimized(m);
    }
}

/// `replay --minimize`: each failing call's elements before and after,
/// replays used and windows (or why it kept its size), and the table.
fn minimized(m: &MinimizeReport) {
    println!("{:<40} {:>9} {:>14} {:>12} {:>8}  slices / why", "call", "direction", "elements", "after", "replays");
    for c in &m.calls {
        let f = &c.found;
        let what = f.kept.clone().unwrap_or_else(|| f.slices.join(" "));
        println!("{:<40} {:>9} {:>14} {:>12} {:>8}  {what}", c.api, c.direction.as_str(), f.before, f.after, f.replays);
    }
    let smaller = m.calls.iter().filter(|c| c.found.kept.is_none()).count();
    eprintln!("{} failing calls: {smaller} minimized, {} kept their size; wrote {}", m.calls.len(), m.calls.len() - smaller, m.file.display());
}

/// `replay --from-compare`: the own-error calls (the culprits), each
/// inherited call with the own error upstream of it, and the file.
fn blame(b: &BlameReport) {
    let effect = |c: &Blamed| c.effect.map(runtime::pyfmt::repr).unwrap_or_else(|| "-".into());
    println!("{:<40} {:>10} {:>24}  from / why", "call", "blame", "loss_effect");
    for c in &b.calls {
        let why = match (&c.upstream, c.blame) {
            (_, Blame::Own) => c.verdict.clone(),
            (Some((u, how)), _) => format!("from {u} ({how})"),
            (None, _) => "no own-error call upstream".into(),
        };
        println!("{:<40} {:>10} {:>24}  {why}", c.api, c.blame.as_str(), effect(c));
    }
    let own = b.culprits().count();
    let inherited = b.calls.iter().filter(|c| c.blame == Blame::Inherited).count();
    let unjudged = b.calls.len() - own - inherited;
    eprintln!(
        "{} differing calls: {own} own error, {inherited} inherited, {unjudged} unjudged{}; wrote {}",
        b.calls.len(),
        if b.missing.is_empty() { String::new() } else { format!("; {} differing rows name no call of the dump", b.missing.len()) },
        b.file.display()
    );
}

/// `single_compare`: each workbook written, the keys found in one run
/// only, and a summary line.
pub fn single_compare(outcome: &Outcome) {
    for f in &outcome.files {
        println!("wrote {}", f.display());
    }
    for (dir, keys) in ["dir1", "dir2"].iter().zip(&outcome.keys_only) {
        if !keys.is_empty() {
            eprintln!("keys only in {dir}: {}", keys.join(", "));
        }
    }
    let [only1, only2] = outcome.one_sided;
    eprintln!(
        "{} keys, {} rows in {:.2} s: {} differ, {} with different shapes, {} only in dir1, {} only in dir2",
        outcome.files.len(),
        outcome.rows,
        outcome.elapsed.as_secs_f64(),
        outcome.differing,
        outcome.shapes_differ,
        only1,
        only2
    );
}

/// `config_check`: what a pack holds, or each check's verdict (the
/// required checks a pack could not supply on stderr) and where the
/// result went.
pub fn config_check(outcome: &crate::config_check::Outcome) {
    use crate::config_check::Outcome;
    match outcome {
        Outcome::Collected { zip, env_vars, packages, hyperparameters, kept } => {
            let kept = if *kept > 0 { format!(", kept {kept} entries of the existing pack") } else { String::new() };
            println!("packed {env_vars} environment variables, {packages} packages, {hyperparameters} hyperparameters{kept}: {}", zip.display());
        }
        Outcome::Compared { result, checks, not_compared } => {
            for (name, level) in checks {
                println!("{name}: {}", level.as_str());
            }
            if !not_compared.is_empty() {
                eprintln!("msprobe: warning: not compared, a pack lacks their part: {}", not_compared.join(", "));
            }
            println!("config checking result saved to {}", result.display());
        }
    }
}

/// Checkpoint compare: msprobe's warnings on stderr (parameters in one
/// checkpoint only, replicated parameters whose TP ranks differ, a zero
/// norm), then a summary and where the result went on stdout.
pub fn checkpoint_compared(outcome: &crate::checkpoint::Outcome) {
    for (i, names) in outcome.only.iter().enumerate() {
        if !names.is_empty() {
            eprintln!("msprobe: warning: Parameters not in ckpt{}: {}", 2 - i, names.join(", "));
        }
    }
    for (i, names) in outcome.inconsistent.iter().enumerate() {
        for name in names {
            eprintln!("msprobe: warning: ckpt{}: Inconsistent values for {name} across TP ranks", i + 1);
        }
    }
    for name in &outcome.zero_norm {
        eprintln!("msprobe: warning: {name}: One tensor norm is zero.");
    }
    println!(
        "{} parameters compared in {:.2} s: {} differ, {} only in ckpt1, {} only in ckpt2",
        outcome.compared,
        outcome.elapsed.as_secs_f64(),
        outcome.differing,
        outcome.only[0].len(),
        outcome.only[1].len()
    );
    println!("Comparison results written to {}", outcome.output.display());
}

/// `nan_analyze`: msprobe's log lines on stderr (each phase that ran, the
/// ranks without data, the communication ops without a peer), then where
/// the report went, or that there is none, on stdout.
pub fn nan_analyze(outcome: &crate::nan_analyze::Outcome) {
    use crate::nan_analyze::search::Phase;
    eprintln!("Start searching anomaly node before communication.");
    for rank in &outcome.without_data {
        eprintln!("msprobe: warning: Rank {rank} has no dump data!");
    }
    if outcome.last_phase != Phase::Before {
        eprintln!("Start searching anomaly node during communication.");
        for id in &outcome.unconnected {
            eprintln!("Cannot find connected communication node for \"{id}\".");
        }
    }
    if outcome.last_phase == Phase::After {
        eprintln!("Start searching anomaly node after communication.");
    }
    match &outcome.report {
        Some(file) => println!("The analyze result is saved in: {}", file.display()),
        None => println!("Cannot find any anomaly node, no need to generate analyze file."),
    }
}

/// `result_change`: one row per comparison (changed or not, how many
/// tensors, the first with its max abs difference, the first op, and with
/// several ranks the ranks that changed), the conclusion, and the
/// verdict's file.
pub fn result_change(outcome: &result_change::Outcome) {
    let v = &outcome.verdict;
    println!("{:<14} {:<8} {:>8}  {:<40} {:>12}  first op", "run", "changed", "tensors", "first changed", "max abs diff");
    let row = |name: &str, d: &result_change::compare::Difference| {
        let first = d.changed.first();
        let mut op = d.first_op.as_ref().map_or_else(|| "-".to_owned(), |o| format!("{} (step {}, #{})", o.other, o.step, o.index));
        if v.ranks > 1 && !d.changed_ranks.is_empty() {
            op.push_str(&format!("  ranks {}", d.changed_ranks.iter().map(usize::to_string).collect::<Vec<_>>().join(",")));
        }
        println!(
            "{:<14} {:<8} {:>8}  {:<40} {:>12}  {op}",
            name,
            if d.changed.is_empty() { "no" } else { "yes" },
            d.changed.len(),
            first.map_or("-", |c| c.name.as_str()),
            first.map_or_else(|| "-".to_owned(), |c| format!("{:.3e}", c.max_abs_diff)),
        );
    };
    row("baseline x2", &v.repeat);
    for (variant, d) in &v.variants {
        row(variant.as_str(), d);
    }
    println!("{}", v.conclusion);
    println!("wrote {}", outcome.file.display());
}
