//! `msprobe replay --dump ROOT` over a whole job (`step*/rank*|proc*/dump.json`
//! made from the fixture dumps in a temporary folder): shards by work
//! merged into the unsharded run's CSVs, resume from a journal cut by a
//! kill, identical calls replayed once (each call replayed timed, `-j 1`
//! giving the same CSVs), every refusal of `--merge`, the
//! shard taken from Slurm's and Kubernetes' variables, and a single dump's
//! CSVs as before.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::repo;
use serde_json::Value;

/// The variables a job engine sets, which every run here clears unless it sets them.
const ENGINE_VARS: [&str; 5] = ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "JOB_COMPLETION_INDEX", "JOB_COMPLETIONS"];

fn msprobe_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_msprobe"));
    c.args(args).current_dir(dir);
    for v in ENGINE_VARS {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c.output().unwrap()
}

fn msprobe(dir: &Path, args: &[&str]) -> Output {
    msprobe_env(dir, args, &[])
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// stderr without the progress lines (`replay: 3/7 calls, ...`), which a
/// log gets before the summary.
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).lines().filter(|l| !l.starts_with("replay: ")).map(|l| format!("{l}\n")).collect()
}

/// A job root in `dir/name`: each (folder, fixture) copied there.
fn job(dir: &Path, name: &str, layout: &[(&str, &str)]) -> PathBuf {
    let root = dir.join(name);
    for (folder, fixture) in layout {
        common::copy_dir(&repo().join("tests/fixtures").join(fixture), &root.join(folder));
    }
    root
}

/// The PyTorch job: a tensor dump on two ranks (identical copies) of step 0, a statistics dump in step 1.
fn pytorch_job(dir: &Path) -> PathBuf {
    job(dir, "job", &[("step0/rank0", "pytorch/tensor"), ("step0/rank1", "pytorch/tensor"), ("step1/rank0", "pytorch/statistics")])
}

/// The text of the one `accuracy_checking_{kind}_*.csv` in `dir` (BOM and all).
fn csv_text(dir: &Path, kind: &str) -> String {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&format!("accuracy_checking_{kind}_")))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0]).unwrap()
}

/// The folder of the one option set whose parts are in `out`.
fn set(out: &Path) -> PathBuf {
    let sets: Vec<PathBuf> = std::fs::read_dir(out.join("replay_parts")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(sets.len(), 1, "{sets:?}");
    assert!(sets[0].file_name().unwrap().to_string_lossy().starts_with("set_"), "{sets:?}");
    sets[0].clone()
}

/// Part `i` of `n` in `out` as written, each call with the seconds it took.
fn timed_part(out: &Path, i: u32, n: u32) -> Value {
    serde_json::from_str(&std::fs::read_to_string(set(out).join(format!("part_{i}_of_{n}.json"))).unwrap()).unwrap()
}

/// Part `i` of `n` in `out` without the calls' seconds (a rerun times a
/// call again: timing, not a verdict), each call present.
fn part(out: &Path, i: u32, n: u32) -> Value {
    let mut p = timed_part(out, i, n);
    if let Some(calls) = p.get("calls").and_then(Value::as_array) {
        p["calls"] = Value::Array(untimed(calls));
    }
    p
}

/// Call records without their seconds (a rerun times a call again).
fn untimed(calls: &[Value]) -> Vec<Value> {
    calls
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c.as_object_mut().unwrap().remove("seconds");
            c
        })
        .collect()
}

/// The summary line of a `--dump` run.
fn summary(replayed: usize, judged: usize, shared: usize) -> String {
    format!("replayed {replayed} calls ({judged} already judged, {shared} shared with an identical call)\n")
}

/// Runs shards 0..n of `root` into `out` and merges them into `out/merged`;
/// returns the merge's output.
fn shards_and_merge(dir: &Path, fw: &str, root: &Path, out: &str, n: u32, extra: &[&str]) -> Output {
    for i in 0..n {
        let shard = format!("{i}/{n}");
        let o = msprobe(dir, &[&["-f", fw, "replay", "--dump", root.to_str().unwrap(), "--shard", &shard, "--output-dir", out], extra].concat());
        if n == 1 {
            continue; // the unsharded run: its CSVs, its exit code
        }
        assert_eq!(o.status.code(), Some(0), "shard {shard}: {}", text(&o));
        let e = stderr(&o);
        assert!(e.ends_with(&format!("when all {n} shards are done: msprobe -f {fw} replay --merge {out}\n")), "{e}");
        assert!(!set(&dir.join(out)).join(format!("part_{i}_of_{n}.jsonl")).exists(), "the journal of a complete part is removed");
    }
    if n > 1 {
        assert!(std::fs::read_dir(dir.join(out)).unwrap().all(|e| e.unwrap().file_name() == "replay_parts"), "a shard of several writes only its part");
    }
    msprobe(dir, &["-f", fw, "replay", "--merge", out, "--output-dir", &format!("{out}/merged"), "--top", "0"])
}

/// (a) The merged CSVs of 1, 2 and 3 shards are the unsharded run's, byte for
/// byte but the file stamp: same rows in job order, same verdicts, the
/// Step and Rank columns; the merge exits as the unsharded run does.
#[test]
fn merged_shards_equal_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = pytorch_job(dir.path());
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "job", "--output-dir", "all", "--top", "0"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (details, result) = (csv_text(&dir.path().join("all"), "details"), csv_text(&dir.path().join("all"), "result"));
    let d = common::csv_records(&details);
    assert_eq!(d[0].join(","), "API Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message,Step,Rank");
    assert_eq!(common::csv_records(&result)[0].join(","), "API Name,Forward Test Success,Backward Test Success,Message,Step,Rank");
    // Job order: step 0 rank 0, step 0 rank 1, step 1 rank 0.
    let places: Vec<(String, String)> = d[1..].iter().map(|r| (r[9].clone(), r[10].clone())).collect();
    let mut order = places.clone();
    order.dedup();
    assert_eq!(order, [("0".to_string(), "0".to_string()), ("0".into(), "1".into()), ("1".into(), "0".into())]);
    assert_eq!(d[1][0], "Functional.embedding.0.forward.output.0");
    for n in 1..=3 {
        let out = format!("s{n}");
        let o = shards_and_merge(dir.path(), "pytorch", &root, &out, n, &[]);
        assert_eq!(o.status.code(), Some(0), "{n}: {}", text(&o));
        let merged = dir.path().join(&out).join("merged");
        assert_eq!(csv_text(&merged, "details"), details, "{n} shards: details");
        assert_eq!(csv_text(&merged, "result"), result, "{n} shards: result");
        let calls: usize = (0..n).map(|i| part(&dir.path().join(&out), i, n)["calls"].as_array().unwrap().len()).sum();
        assert_eq!(calls, part(&dir.path().join("all"), 0, 1)["job_calls"].as_u64().unwrap() as usize);
    }
    // --output-dir and --html of the merge; --allow-skip changes nothing here (no skip row).
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--merge", "s2", "--output-dir", "merged", "--html", "merged/r.html", "--allow-skip"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(csv_text(&dir.path().join("merged"), "details"), details);
    let page = std::fs::read_to_string(dir.path().join("merged/r.html")).unwrap();
    assert!(page.contains("Functional.embedding.0") && page.contains("linear"), "the page lists the job's calls");
    // A MindSpore job of proc folders, with real data (tensor dumps only): 2 shards merge into the unsharded run.
    let ms = job(dir.path(), "ms", &[("step0/proc0", "mindspore/tensor"), ("step0/proc1", "mindspore/tensor"), ("step2/proc0", "mindspore/tensor")]);
    let real = ["--data-mode", "real_data"];
    let o = msprobe(dir.path(), &[&["-f", "mindspore", "replay", "--dump", "ms", "--output-dir", "ms_all"], &real[..]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = shards_and_merge(dir.path(), "mindspore", &ms, "ms_s", 2, &real);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let ms_rows = common::csv_records(&csv_text(&dir.path().join("ms_all"), "details"));
    assert_eq!(csv_text(&dir.path().join("ms_s/merged"), "details"), csv_text(&dir.path().join("ms_all"), "details"));
    // Step and Rank last, after msprobe's nine columns and the three loss effect columns (a real-data dump with backward).
    assert_eq!(ms_rows[0][9..12], ["Loss Effect", "Loss Share", "Effect Note"]);
    assert_eq!(ms_rows.last().unwrap()[12..], ["2".to_string(), "0".into()]);
}

/// (b) A shard killed mid-write (its journal cut inside a line, no part)
/// resumes: the calls the journal holds are not replayed again, the part
/// it then writes is the uninterrupted run's; a complete part reruns
/// nothing; a journal or part of other options is refused.
#[test]
fn a_killed_shard_resumes_without_replaying_twice() {
    let dir = tempfile::tempdir().unwrap();
    let root = pytorch_job(dir.path());
    let args = ["-f", "pytorch", "replay", "--dump", root.to_str().unwrap(), "--shard", "0/2", "--output-dir", "out"];
    let o = msprobe(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let parts = set(&dir.path().join("out"));
    let full = timed_part(&dir.path().join("out"), 0, 2);
    let calls = full["calls"].as_array().unwrap().clone();
    let shared_total = calls.iter().filter(|c| !c["shares"].is_null()).count();
    assert!(stderr(&o).starts_with(&summary(calls.len() - shared_total, 0, shared_total)), "{}", stderr(&o));
    // The journal as a kill leaves it: the header, the first k calls, half of the next line.
    let mut header = full.clone();
    header.as_object_mut().unwrap().remove("calls");
    header.as_object_mut().unwrap().remove("stack_notes");
    let k = calls.len() / 2;
    let mut journal = header.to_string() + "\n";
    for c in &calls[..k] {
        journal += &(c.to_string() + "\n");
    }
    let next = calls[k].to_string();
    journal += &next[..next.len() / 2];
    std::fs::remove_file(parts.join("part_0_of_2.json")).unwrap();
    std::fs::write(parts.join("part_0_of_2.jsonl"), journal).unwrap();
    let o = msprobe(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let rest = &calls[k..];
    let shared = rest.iter().filter(|c| !c["shares"].is_null()).count();
    assert!(stderr(&o).starts_with(&summary(rest.len() - shared, k, shared)), "{}", stderr(&o));
    let resumed = timed_part(&dir.path().join("out"), 0, 2)["calls"].as_array().unwrap().clone();
    assert_eq!(untimed(&resumed), untimed(&calls), "the resumed part is the uninterrupted one, but for the seconds the rerun took");
    assert_eq!(resumed[..k], calls[..k], "the journal's calls keep their seconds: they were not replayed again");
    assert!(!parts.join("part_0_of_2.jsonl").exists());
    // A complete part: nothing to replay.
    let o = msprobe(dir.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(stderr(&o).starts_with(&summary(0, calls.len(), 0)), "{}", stderr(&o));
    // An unsharded run resumes too, and still writes its CSVs.
    let one = ["-f", "pytorch", "replay", "--dump", "job", "--output-dir", "one"];
    assert_eq!(msprobe(dir.path(), &one).status.code(), Some(0));
    let o = msprobe(dir.path(), &one);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let total = part(&dir.path().join("one"), 0, 1)["job_calls"].as_u64().unwrap() as usize;
    assert!(stderr(&o).starts_with(&summary(0, total, 0)), "{}", stderr(&o));
    // A journal of another job in the set's folder is refused, naming it.
    let mut other = header.clone();
    other["dumps"][0]["size"] = serde_json::json!(1);
    std::fs::rename(parts.join("part_0_of_2.json"), dir.path().join("kept.json")).unwrap();
    std::fs::write(parts.join("part_0_of_2.jsonl"), other.to_string() + "\n").unwrap();
    let o = msprobe(dir.path(), &args);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let journal = format!("{}", parts.join("part_0_of_2.jsonl").strip_prefix(dir.path()).unwrap().display());
    assert!(stderr(&o).starts_with(&format!("msprobe: error: {journal}: made from another dump")), "{}", stderr(&o));
    std::fs::remove_file(parts.join("part_0_of_2.jsonl")).unwrap();
    std::fs::rename(dir.path().join("kept.json"), parts.join("part_0_of_2.json")).unwrap();
}

/// Reruns with other options into one output folder (another --filter,
/// another standard) each keep their parts in their own option set's
/// folder: every run completes, rerunning either replays nothing twice, and
/// `--merge` of the folder names the sets to choose from.
#[test]
fn other_options_into_one_folder_keep_their_parts_apart() {
    let dir = tempfile::tempdir().unwrap();
    let root = pytorch_job(dir.path());
    let run = |extra: &[&str]| msprobe(dir.path(), &[&["-f", "pytorch", "replay", "--dump", root.to_str().unwrap(), "-o", "out"], extra].concat());
    let (x, y) = (["--filter", "^Torch\\."], ["--filter", "^Functional\\."]);
    let first = run(&x);
    assert!(matches!(first.status.code(), Some(0 | 3)), "{}", text(&first));
    let second = run(&y);
    assert!(matches!(second.status.code(), Some(0 | 3)), "{}", text(&second));
    let sets: Vec<PathBuf> = std::fs::read_dir(dir.path().join("out/replay_parts")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(sets.len(), 2, "{sets:?}");
    for (extra, code) in [(&x, first.status.code()), (&y, second.status.code())] {
        let again = run(extra);
        assert_eq!(again.status.code(), code, "{}", text(&again));
        assert!(stderr(&again).starts_with("replayed 0 calls ("), "{}", stderr(&again));
    }
    let merged = msprobe(dir.path(), &["-f", "pytorch", "replay", "--merge", "out"]);
    assert_eq!(merged.status.code(), Some(4), "{}", text(&merged));
    assert!(stderr(&merged).starts_with("msprobe: error: out/replay_parts: holds the parts of 2 option sets (set_"), "{}", stderr(&merged));
    // One set's folder merges on its own.
    let one = sets[0].strip_prefix(dir.path()).unwrap().to_str().unwrap().to_string();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--merge", &one, "--output-dir", "merged"]);
    assert!(matches!(o.status.code(), Some(0 | 3)), "{}", text(&o));
    assert!(csv_text(&dir.path().join("merged"), "details").contains("API Name"));
}

/// (c) Identical calls (same API but the counter, direction, arguments and
/// input bytes) are replayed once; the others keep their own rows, each
/// Message saying whose verdict it shares. With real data the tensor
/// files' bytes decide: a changed file is a call of its own.
#[test]
fn identical_calls_are_replayed_once() {
    let dir = tempfile::tempdir().unwrap();
    job(dir.path(), "job", &[("step0/rank0", "pytorch/tensor"), ("step0/rank1", "pytorch/tensor")]);
    for mode in ["random_data", "real_data"] {
        let out = format!("out_{mode}");
        let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "job", "--data-mode", mode, "--output-dir", &out]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(stderr(&o).starts_with(&summary(11, 0, 11)), "{mode}: {}", stderr(&o));
        let result = common::csv_records(&csv_text(&dir.path().join(&out), "result"));
        let (rank0, rank1): (Vec<&Vec<String>>, Vec<&Vec<String>>) = result[1..].iter().partition(|r| r[5] == "0");
        assert_eq!((rank0.len(), rank1.len()), (11, 11));
        for (a, b) in rank0.iter().zip(&rank1) {
            assert_eq!((&b[0], &b[1], &b[2]), (&a[0], &a[1], &a[2]), "the same verdicts under its own name");
            let note = format!("shares the verdict of {} in step 0 rank 0 (identical call and inputs)", a[0]);
            let expected = if a[3].is_empty() { note } else { format!("{}; {note}", a[3]) };
            assert_eq!(b[3], expected);
        }
        let details = common::csv_records(&csv_text(&dir.path().join(&out), "details"));
        let rank = details[0].iter().position(|h| h == "Rank").unwrap();
        let first = details.iter().find(|r| r[rank] == "1").unwrap();
        assert!(first[8].ends_with("; shares the verdict of Functional.embedding.0 in step 0 rank 0 (identical call and inputs)"), "{first:?}");
        let p = timed_part(&dir.path().join(&out), 0, 1);
        let shares: Vec<&Value> = p["calls"].as_array().unwrap().iter().map(|c| &c["shares"]).collect();
        assert_eq!(shares.iter().filter(|s| s.is_null()).count(), 11);
        assert_eq!(*shares[11], Value::from(0), "rank 1's first call shares the verdict of the job's call 0");
        // Each call replayed records the seconds it took; a call sharing a verdict took none.
        for c in p["calls"].as_array().unwrap() {
            let seconds = c.get("seconds").map(|s| s.as_f64().unwrap());
            assert_eq!(seconds.is_some(), c["shares"].is_null(), "{c}");
            assert!(seconds.is_none_or(|s| s > 0.0), "{c}");
        }
        // One call at a time (-j 1): the same CSVs.
        let one = format!("{out}_j1");
        let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "job", "--data-mode", mode, "--output-dir", &one, "-j", "1"]);
        assert!(stderr(&o).starts_with(&summary(11, 0, 11)), "{mode}: {}", stderr(&o));
        for kind in ["result", "details"] {
            assert_eq!(csv_text(&dir.path().join(&one), kind), csv_text(&dir.path().join(&out), kind), "{mode} -j 1: {kind}");
        }
    }
    // One changed byte of one tensor file: that call alone is replayed again (real data), not with random data.
    let ms = job(dir.path(), "ms", &[("step0/proc0", "mindspore/tensor"), ("step0/proc1", "mindspore/tensor")]);
    let file = ms.join("step0/proc1/dump_tensor_data/Mint.matmul.0.forward.input.0.npy");
    let mut bytes = std::fs::read(&file).unwrap();
    *bytes.last_mut().unwrap() ^= 0x01;
    std::fs::write(&file, bytes).unwrap();
    let o = msprobe(dir.path(), &["-f", "mindspore", "replay", "--dump", "ms", "--data-mode", "real_data", "--output-dir", "ms_real"]);
    assert!(stderr(&o).starts_with(&summary(10, 0, 8)), "{}", text(&o));
    let result = common::csv_records(&csv_text(&dir.path().join("ms_real"), "result"));
    let matmul = result.iter().find(|r| r[0] == "Mint.matmul.0" && r[5] == "1").unwrap();
    assert!(!matmul[3].contains("shares the verdict"), "{matmul:?}");
    let o = msprobe(dir.path(), &["-f", "mindspore", "replay", "--dump", "ms", "--output-dir", "ms_random"]);
    assert!(stderr(&o).starts_with(&summary(9, 0, 9)), "{}", text(&o));
    // Within one dump: no step and rank in the note.
    let o = msprobe(
        dir.path(),
        &["-f", "pytorch", "replay", "--dump", repo().join("tests/fixtures/pytorch/statistics").to_str().unwrap(), "--output-dir", "single"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let result = common::csv_records(&csv_text(&dir.path().join("single"), "result"));
    let shared: Vec<&Vec<String>> = result.iter().filter(|r| r[3].contains("shares the verdict")).collect();
    assert!(!shared.is_empty());
    assert!(shared.iter().all(|r| r[3].ends_with(" (identical call and inputs)") && !r[3].contains(" in step ")), "{shared:?}");
}

/// (d) Every refusal of `--merge`: one line naming the folder or part and
/// what is wrong, exit 4, no CSV.
#[test]
fn merge_refuses_missing_duplicated_and_mismatched_parts() {
    let dir = tempfile::tempdir().unwrap();
    let root = pytorch_job(dir.path());
    let other = job(dir.path(), "other", &[("step0/rank0", "pytorch/tensor"), ("step0/rank1", "pytorch/tensor"), ("step1/rank0", "pytorch/tensor")]);
    let shard = |root: &Path, s: &str, out: &str, extra: &[&str]| {
        let o = msprobe(dir.path(), &[&["-f", "pytorch", "replay", "--dump", root.to_str().unwrap(), "--shard", s, "--output-dir", out], extra].concat());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    };
    let refused = |args: &[&str], line: &str| {
        let o = msprobe(dir.path(), args);
        assert_eq!((o.status.code(), stderr(&o)), (Some(4), format!("msprobe: error: {line}\n")), "{args:?}");
        assert!(o.stdout.is_empty());
    };
    let merge = |d: &str| vec!["-f", "pytorch", "replay", "--merge", d].into_iter().map(String::from).collect::<Vec<_>>();
    let run = |d: &str, line: &str| {
        let args = merge(d);
        refused(&args.iter().map(String::as_str).collect::<Vec<_>>(), line);
        assert!(
            !std::fs::read_dir(dir.path().join(d)).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().starts_with("accuracy_checking_")),
            "{d}: no CSV"
        );
    };
    // The one option set's folder of `d`, relative to the test folder.
    let set_of = |d: &str| set(&dir.path().join(d)).strip_prefix(dir.path()).unwrap().display().to_string();
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    run("empty", "empty: no replay parts (replay_parts/<set>/part_I_of_N.json, written by replay --dump ROOT --shard I/N --output-dir DIR)");
    // Missing shards.
    shard(&root, "0/4", "missing", &[]);
    shard(&root, "2/4", "missing", &[]);
    run("missing", &format!("{}: missing shards 1, 3 of 4 (no part_1_of_4.json, part_3_of_4.json)", set_of("missing")));
    // A shard that left only its journal.
    shard(&root, "0/2", "killed", &[]);
    let p = part(&dir.path().join("killed"), 0, 2);
    let mut header = p.clone();
    header.as_object_mut().unwrap().insert("shard".into(), Value::from(1));
    header.as_object_mut().unwrap().remove("calls");
    let killed = set_of("killed");
    std::fs::write(dir.path().join(&killed).join("part_1_of_2.jsonl"), header.to_string() + "\n").unwrap();
    run(
        "killed",
        &format!("{killed}/part_1_of_2.jsonl: shard 1/2 left only its journal (killed or still running): rerun it with --shard 1/2 into the same --output-dir to finish it"),
    );
    // A duplicated (renamed) part.
    std::fs::remove_file(dir.path().join(&killed).join("part_1_of_2.jsonl")).unwrap();
    std::fs::copy(dir.path().join(&killed).join("part_0_of_2.json"), dir.path().join(&killed).join("part_1_of_2.json")).unwrap();
    run("killed", &format!("{killed}/part_1_of_2.json: holds shard 0/2, not 1/2 as its name says (a duplicated or renamed part)"));
    // Another dump, other options, another shard count.
    shard(&root, "0/2", "mixed", &[]);
    shard(&other, "1/2", "mixed", &[]);
    run("mixed", &format!("{}/part_1_of_2.json: made from another dump than part_0_of_2.json (step1/rank0/dump.json differs)", set_of("mixed")));
    // Other options keep their parts apart: the merge of the folder names the sets.
    shard(&root, "0/2", "options", &[]);
    shard(&root, "1/2", "options", &["--standard", "api"]);
    let mut sets: Vec<String> =
        std::fs::read_dir(dir.path().join("options/replay_parts")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    sets.sort();
    run(
        "options",
        &format!(
            "options/replay_parts: holds the parts of 2 option sets ({}): merge one with --merge options/replay_parts/<set> --output-dir options",
            sets.join(", ")
        ),
    );
    shard(&root, "0/2", "counts", &[]);
    shard(&root, "1/3", "counts", &[]);
    run("counts", &format!("{}/part_1_of_3.json: a part of 3 shards, but part_0_of_2.json is one of 2 (parts of another run)", set_of("counts")));
    // A part that is not one, and the other framework's flag.
    assert_eq!(msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", "job", "--output-dir", "whole"]).status.code(), Some(0));
    let whole = set_of("whole");
    refused(&["-f", "mindspore", "replay", "--merge", "whole"], &format!("{whole}/part_0_of_1.json: made with -f pytorch, not -f mindspore"));
    std::fs::write(dir.path().join(&whole).join("part_0_of_1.json"), "{\"format\": 1}").unwrap();
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--merge", "whole"]);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    assert!(
        stderr(&o).starts_with(&format!("msprobe: error: {whole}/part_0_of_1.json: not a replay part (")) && stderr(&o).lines().count() == 1,
        "{}",
        stderr(&o)
    );
    // Flags of the shards' replay are not the merge's.
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--merge", "whole", "--standard", "api"]);
    assert_eq!(
        (o.status.code(), stderr(&o)),
        (
            Some(2),
            "msprobe: error: --standard is an option of the shards' replay, not of --merge (which takes --output-dir, --html, --top and --allow-skip)\n".into()
        )
    );
}

/// (e) Without `--shard`, a Slurm array task or a Kubernetes Indexed Job
/// pod takes the shard its variables name, the same part as `--shard`;
/// half a pair, or an index out of range, is a usage error naming them.
#[test]
fn job_engine_variables_pick_the_shard() {
    let dir = tempfile::tempdir().unwrap();
    pytorch_job(dir.path());
    let base = ["-f", "pytorch", "replay", "--dump", "job", "--output-dir"];
    let o = msprobe(dir.path(), &[&base[..], &["flag", "--shard", "1/3"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let expected = part(&dir.path().join("flag"), 1, 3);
    for (out, env) in [
        ("slurm", &[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_COUNT", "3")][..]),
        ("slurm_min", &[("SLURM_ARRAY_TASK_ID", "5"), ("SLURM_ARRAY_TASK_MIN", "4"), ("SLURM_ARRAY_TASK_COUNT", "3")][..]),
        ("k8s", &[("JOB_COMPLETION_INDEX", "1"), ("JOB_COMPLETIONS", "3")][..]),
    ] {
        let o = msprobe_env(dir.path(), &[&base[..], &[out]].concat(), env);
        assert_eq!(o.status.code(), Some(0), "{out}: {}", text(&o));
        assert_eq!(part(&dir.path().join(out), 1, 3), expected, "{out}");
    }
    // --shard wins over the variables.
    let o = msprobe_env(dir.path(), &[&base[..], &["both", "--shard", "1/3"]].concat(), &[("SLURM_ARRAY_TASK_ID", "0"), ("SLURM_ARRAY_TASK_COUNT", "2")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(part(&dir.path().join("both"), 1, 3), expected);
    for (env, line) in [
        (&[("SLURM_ARRAY_TASK_ID", "1")][..], "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not: set both, or pass --shard I/N"),
        (
            &[("JOB_COMPLETION_INDEX", "3"), ("JOB_COMPLETIONS", "3")][..],
            "JOB_COMPLETION_INDEX=3 is not an index below JOB_COMPLETIONS=3: expected 0 <= index < count, or pass --shard I/N",
        ),
    ] {
        let o = msprobe_env(dir.path(), &[&base[..], &["bad"]].concat(), env);
        assert_eq!((o.status.code(), stderr(&o)), (Some(2), format!("msprobe: error: {line}\n")));
        assert!(!dir.path().join("bad").exists());
    }
}

/// (f) A single dump (a file or its rank folder) keeps msprobe's columns
/// exactly; a step folder's rows name their step and rank.
#[test]
fn a_single_dump_keeps_its_columns_and_a_step_folder_gains_step_and_rank() {
    let dir = tempfile::tempdir().unwrap();
    let root = pytorch_job(dir.path());
    for (dump, out) in [(root.join("step1/rank0/dump.json"), "file"), (root.join("step1/rank0"), "folder")] {
        let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", dump.to_str().unwrap(), "--output-dir", out]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let details = common::csv_records(&csv_text(&dir.path().join(out), "details"));
        assert_eq!(details[0].join(","), "API Name,Bench Dtype,Tested Dtype,Shape,Cosine,MaxAbsErr,MaxRelativeErr,Status,Message");
        assert!(details.iter().all(|r| r.len() == 9));
        assert_eq!(common::csv_records(&csv_text(&dir.path().join(out), "result"))[0].join(","), "API Name,Forward Test Success,Backward Test Success,Message");
    }
    assert_eq!(csv_text(&dir.path().join("file"), "details"), csv_text(&dir.path().join("folder"), "details"));
    let o = msprobe(dir.path(), &["-f", "pytorch", "replay", "--dump", root.join("step0").to_str().unwrap(), "--output-dir", "step", "--standard", "api"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let details = common::csv_records(&csv_text(&dir.path().join("step"), "details"));
    assert_eq!(details[0][8..].join(","), "Message,Standard,Standard Metrics,Step,Rank");
    assert_eq!(details.last().unwrap()[11..], ["0".to_string(), "1".into()]);
}
