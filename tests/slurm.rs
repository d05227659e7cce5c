//! A whole job's sharded replay on the engines the repo ships scripts for: the
//! Slurm job array of examples/slurm/ submitted to a real single-node Slurm
//! (scripts/slurm/cluster.sh: slurmctld, slurmd and munged started for the
//! test, stopped by pid at its end), and the Kubernetes Indexed Job of
//! examples/kubernetes/, its pods' commands run as Kubernetes would run them.
//! Both over a job root of two steps of two ranks made from the fixtures; both
//! merged reports must equal the unsharded replay of the same root.
//!
//! Needs root, Debian's slurm-wlm and munge, and python3-yaml
//! (scripts/setup-slurm.sh; scripts/test.sh runs it): a Slurm that cannot
//! start fails the test, it never skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::repo;
use runtime::exit;

/// Variables that would shard an "unsharded" run, or change the framework the
/// shipped scripts pass, when the test itself runs inside such a job.
const JOB_VARS: [&str; 6] =
    ["SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "JOB_COMPLETION_INDEX", "JOB_COMPLETIONS", "MSPROBE_FRAMEWORK"];

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// PATH with the msprobe under test first: the shipped scripts take `msprobe` from PATH.
fn path_with_msprobe() -> std::ffi::OsString {
    let bin = Path::new(env!("CARGO_BIN_EXE_msprobe")).parent().unwrap().to_path_buf();
    let rest = std::env::var_os("PATH").unwrap_or_default();
    std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&rest))).unwrap()
}

/// A command without the job variables of [`JOB_VARS`] and with [`path_with_msprobe`].
fn command(program: impl AsRef<std::ffi::OsStr>, cwd: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(cwd).env("PATH", path_with_msprobe());
    for var in JOB_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// A job root at `root`: step0/rank0 and step1/rank1 the PyTorch tensor
/// fixture (identical calls across steps and ranks), step0/rank1 the
/// statistics fixture, step0/rank2 the planted float16 failures (overflows
/// that are errors under the default standard: the job's verdict is 3),
/// step1/rank0 the zoo's MoE tensor dump.
fn job_root(root: &Path) {
    let fixtures = repo().join("tests/fixtures");
    for (folder, dump) in [
        ("step0/rank0", "pytorch/tensor"),
        ("step0/rank1", "pytorch/statistics"),
        ("step0/rank2", "planted/float16_failures"),
        ("step1/rank0", "zoo/pytorch/moe/tensor"),
        ("step1/rank1", "pytorch/tensor"),
    ] {
        common::copy_dir(&fixtures.join(dump), &root.join(folder));
    }
}

/// The unsharded replay of the job root `root` into `out`: its exit code.
fn unsharded(root: &Path, out: &Path) -> i32 {
    let o = command(env!("CARGO_BIN_EXE_msprobe"), out.parent().unwrap())
        .args(["-f", "pytorch", "replay", "--dump"])
        .arg(root)
        .arg("--output-dir")
        .arg(out)
        .args(["--top", "0"])
        .output()
        .unwrap();
    let code = o.status.code().unwrap();
    assert_eq!(code, i32::from(exit::INACCURATE), "the unsharded replay of the job root: {}", text(&o));
    code
}

/// The body of the one `accuracy_checking_{kind}_*.csv` in `dir`.
fn report(dir: &Path, kind: &str) -> String {
    let prefix = format!("accuracy_checking_{kind}_");
    let files: Vec<PathBuf> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&prefix)).collect();
    assert_eq!(files.len(), 1, "{}: one {prefix}*.csv, found {files:?}", dir.display());
    std::fs::read_to_string(&files[0]).unwrap()
}

/// The merged report in `merged` has the rows and verdicts of the unsharded
/// one in `whole` (both CSVs byte for byte; only the files' stamps differ),
/// with the job's Step and Rank columns, every step and rank, and errors.
fn same_report(whole: &Path, merged: &Path) {
    for kind in ["result", "details"] {
        let (w, m) = (report(whole, kind), report(merged, kind));
        assert!(w == m, "{kind} CSV of the merge differs from the unsharded run's\nunsharded:\n{w}\nmerged:\n{m}");
    }
    let mut records = common::csv_records(&report(whole, "details")).into_iter();
    let header = records.next().unwrap();
    assert_eq!(header[header.len() - 2..], ["Step", "Rank"], "{header:?}");
    let mut places: Vec<(String, String)> = records.map(|c| (c[c.len() - 2].clone(), c[c.len() - 1].clone())).collect();
    places.dedup();
    assert_eq!(places, [("0", "0"), ("0", "1"), ("0", "2"), ("1", "0"), ("1", "1")].map(|(s, r)| (s.to_string(), r.to_string())));
    let rows = common::detail_rows(whole);
    assert!(rows.iter().any(|(_, status, _)| status == "error") && rows.iter().any(|(_, status, _)| status == "pass"), "{rows:?}");
}

/// The error rows a shard's output `log` counts on its summary line
/// (`N rows: ... E error; wrote OUT/replay_parts/<set>/part_I_of_N.json (shard I/N)`),
/// which must name `part`.
fn shard_errors(log: &str, part: &str) -> usize {
    let line = log.lines().find(|l| l.contains(" rows: ")).unwrap_or_else(|| panic!("no summary line in\n{log}"));
    assert!(line.contains(part), "{line}: expected {part}");
    let before = line.split(" error;").next().unwrap();
    before.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The parts of `n` complete shards in `out`'s one option set, and no journal.
fn parts_complete(out: &Path, n: usize) {
    let sets: Vec<std::path::PathBuf> = std::fs::read_dir(out.join("replay_parts")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(sets.len(), 1, "{sets:?}");
    let mut names: Vec<String> = std::fs::read_dir(&sets[0]).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let expected: Vec<String> = (0..n).map(|i| format!("part_{i}_of_{n}.json")).collect();
    assert_eq!(names, expected);
}

/// A single-node Slurm started by scripts/slurm/cluster.sh in a folder of its
/// own; stopped (by the pids the script recorded) when dropped, also when
/// the test fails.
struct Cluster {
    dir: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let cluster = Cluster { dir };
        let o = Command::new(repo().join("scripts/slurm/cluster.sh")).arg("start").arg(cluster.dir.path()).output().unwrap();
        assert!(o.status.success(), "Slurm did not start (scripts/slurm/cluster.sh start; run scripts/setup-slurm.sh first):\n{}", text(&o));
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), format!("export SLURM_CONF={}", cluster.conf().display()));
        cluster
    }

    fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm client command of this cluster, run in `cwd`.
    fn client(&self, program: &str, cwd: &Path) -> Command {
        let mut cmd = command(program, cwd);
        cmd.env("SLURM_CONF", self.conf());
        cmd
    }

    /// Submits `sbatch args` from `cwd`: the job's id.
    fn sbatch(&self, cwd: &Path, args: &[&str]) -> String {
        let o = self.client("sbatch", cwd).arg("--parsable").args(args).output().unwrap();
        assert!(o.status.success(), "sbatch {args:?}: {}\n{}", text(&o), self.logs(cwd));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// (task, JobState, ExitCode) of every task of job `id` (one for a job
    /// that is no array; one for an array whose tasks have not started).
    fn tasks(&self, id: &str, cwd: &Path) -> Vec<(String, String, String)> {
        let o = self.client("scontrol", cwd).args(["-o", "show", "job", id]).output().unwrap();
        assert!(o.status.success(), "scontrol show job {id}: {}", text(&o));
        let field = |line: &str, key: &str| line.split(' ').find_map(|f| f.strip_prefix(key)).unwrap_or("").to_string();
        String::from_utf8_lossy(&o.stdout).lines().map(|l| (field(l, "ArrayTaskId="), field(l, "JobState="), field(l, "ExitCode="))).collect()
    }

    /// Waits until job `id` has `n` tasks, all ended; their (task, state, exit code), sorted.
    fn wait(&self, id: &str, n: usize, cwd: &Path) -> Vec<(String, String, String)> {
        const ENDED: [&str; 9] = ["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED"];
        let start = Instant::now();
        loop {
            let mut tasks = self.tasks(id, cwd);
            if tasks.len() == n && tasks.iter().all(|(_, state, _)| ENDED.contains(&state.as_str())) {
                tasks.sort();
                return tasks;
            }
            assert!(start.elapsed() < Duration::from_secs(180), "job {id} has not ended after 180 s: {tasks:?}\n{}", self.logs(cwd));
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The daemons' logs and the jobs' output files in `cwd`/logs, for a failure's message.
    fn logs(&self, cwd: &Path) -> String {
        let mut files: Vec<PathBuf> =
            [self.dir.path().join("log"), cwd.join("logs")].iter().filter_map(|d| std::fs::read_dir(d).ok()).flatten().map(|e| e.unwrap().path()).collect();
        files.sort();
        files.insert(0, self.dir.path().join("munge/munged.log"));
        files.iter().map(|f| format!("---- {}\n{}", f.display(), std::fs::read_to_string(f).unwrap_or_default())).collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        match Command::new(repo().join("scripts/slurm/cluster.sh")).arg("stop").arg(self.dir.path()).output() {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!("scripts/slurm/cluster.sh stop: {}", text(&o)),
            Err(e) => eprintln!("scripts/slurm/cluster.sh stop: {e}"),
        }
    }
}

/// `sbatch --array=0-2 examples/slurm/replay.sbatch ROOT OUT`, then
/// examples/slurm/merge.sbatch as the job that depends on it: each task
/// replays the shard of its array index and completes (error rows are a
/// verdict, not a crash), the merge's exit code is the job's verdict, and its
/// CSVs are the unsharded run's. A one-task array is the unsharded run: its
/// verdict 3 still completes the task, and its CSVs are the unsharded run's.
/// A task whose replay fails (a dump root that does not exist) fails with
/// msprobe's exit code.
#[test]
fn slurm_job_array_replays_a_job_root_in_shards_and_the_merge_equals_the_unsharded_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, out, whole, single) = (tmp.path().join("job"), tmp.path().join("replay"), tmp.path().join("whole"), tmp.path().join("single"));
    job_root(&root);
    let verdict = unsharded(&root, &whole);

    // Slurm fails a task whose --output folder is missing.
    std::fs::create_dir(tmp.path().join("logs")).unwrap();
    let cluster = Cluster::start();
    let (replay, merge) = (repo().join("examples/slurm/replay.sbatch"), repo().join("examples/slurm/merge.sbatch"));
    let (replay, merge, root_arg) = (replay.to_str().unwrap(), merge.to_str().unwrap(), root.to_str().unwrap());
    let array = cluster.sbatch(tmp.path(), &["--array=0-2", "--output=logs/replay-%A_%a.out", replay, root_arg, out.to_str().unwrap(), "--top", "0"]);
    let merged =
        cluster.sbatch(tmp.path(), &[&format!("--dependency=afterany:{array}"), "--output=logs/merge-%j.out", merge, out.to_str().unwrap(), "--top", "0"]);
    let one = cluster.sbatch(tmp.path(), &["--array=0-0", "--output=logs/single-%A_%a.out", replay, root_arg, single.to_str().unwrap()]);
    let nowhere = tmp.path().join("nowhere");
    let broken = cluster
        .sbatch(tmp.path(), &["--array=0-1", "--output=logs/broken-%A_%a.out", replay, nowhere.to_str().unwrap(), tmp.path().join("broken").to_str().unwrap()]);
    let merge_task = cluster.wait(&merged, 1, tmp.path());
    let tasks = cluster.wait(&array, 3, tmp.path());
    let one_task = cluster.wait(&one, 1, tmp.path());
    let broken_tasks = cluster.wait(&broken, 2, tmp.path());
    let logs = cluster.logs(tmp.path());

    // (task, state, exit code) of each of `ids`.
    let ended = |ids: &[&str], state: &str, code: &str| ids.iter().map(|i| (i.to_string(), state.to_string(), code.to_string())).collect::<Vec<_>>();
    assert_eq!(tasks, ended(&["0", "1", "2"], "COMPLETED", "0:0"), "{logs}");
    let mut errors = 0;
    for i in 0..3 {
        let log = std::fs::read_to_string(tmp.path().join(format!("logs/replay-{array}_{i}.out"))).unwrap();
        errors += shard_errors(&log, &format!("part_{i}_of_3.json (shard {i}/3)"));
    }
    assert!(errors > 0, "the shards judged the planted float16 rank's error rows and still completed\n{logs}");
    assert_eq!(merge_task, ended(&[""], "FAILED", &format!("{verdict}:0")), "{logs}");
    parts_complete(&out, 3);
    same_report(&whole, &out);

    assert_eq!(one_task, ended(&["0"], "COMPLETED", "0:0"), "{logs}");
    let log = std::fs::read_to_string(tmp.path().join(format!("logs/single-{one}_0.out"))).unwrap();
    assert!(log.contains("msprobe-replay: task 0 judged its shard: verdict exit 3 (inaccurate)"), "{log}");
    same_report(&whole, &single);

    // A tool error (here a dump root that does not exist: exit 4) fails the task with its code.
    assert_eq!(broken_tasks, ended(&["0", "1"], "FAILED", &format!("{}:0", exit::INPUT)), "{logs}");
    let log = std::fs::read_to_string(tmp.path().join(format!("logs/broken-{broken}_0.out"))).unwrap();
    assert!(log.starts_with(&format!("msprobe: error: {}", nowhere.display())), "{log}");
}

/// The shipped Kubernetes yaml, read as Kubernetes reads it (YAML documents).
fn kubernetes_jobs() -> Vec<serde_json::Value> {
    let file = repo().join("examples/kubernetes/replay-indexed-job.yaml");
    let o = Command::new("/usr/bin/python3")
        .args(["-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))"])
        .arg(&file)
        .output()
        .expect("/usr/bin/python3 with python3-yaml (scripts/setup-slurm.sh installs it)");
    assert!(o.status.success(), "{}: not YAML, or python3-yaml missing (scripts/setup-slurm.sh installs it): {}", file.display(), text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The one container of a Job, its volume's mount path and its claim.
fn container(job: &serde_json::Value) -> (&serde_json::Value, &str, &str) {
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let mounts = c["volumeMounts"].as_array().unwrap();
    assert_eq!(mounts.len(), 1);
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == mounts[0]["name"]).expect("the mounted volume");
    (c, mounts[0]["mountPath"].as_str().unwrap(), volume["persistentVolumeClaim"]["claimName"].as_str().expect("a PVC"))
}

/// The container's command line (command, then args), the volume's mount
/// path replaced by `data`.
fn command_line(c: &serde_json::Value, mount: &str, data: &Path) -> Vec<String> {
    let words = c["command"].as_array().unwrap().iter().chain(c["args"].as_array().unwrap());
    words.map(|w| w.as_str().unwrap()).map(|w| w.strip_prefix(mount).map_or(w.to_string(), |rest| format!("{}{rest}", data.display()))).collect()
}

/// The value of `flag` in `args`.
fn flag<'a>(args: &'a [String], flag: &str) -> &'a str {
    let i = args.iter().position(|a| a == flag).unwrap_or_else(|| panic!("{flag} in {args:?}"));
    &args[i + 1]
}

/// examples/kubernetes/replay-indexed-job.yaml: an Indexed Job of N
/// completions with JOB_COMPLETIONS=N, and the merge Job, on one claim. Each
/// pod's command line, run here with JOB_COMPLETION_INDEX set as Kubernetes
/// sets it and the volume's mount path mapped to a folder, replays its shard
/// (exit 0: error rows are a verdict, not a crash); the merge Job's exits
/// with the job's verdict and writes the unsharded run's CSVs. With one
/// completion, the pod's verdict 3 is exit 0 too, and its CSVs the same.
#[test]
fn kubernetes_indexed_job_replays_a_job_root_in_shards_and_the_merge_equals_the_unsharded_run() {
    let jobs = kubernetes_jobs();
    assert_eq!(jobs.len(), 2);
    let (replay, merge) = (&jobs[0], &jobs[1]);
    for (job, step) in [(replay, "replay"), (merge, "merge")] {
        assert_eq!((job["apiVersion"].as_str(), job["kind"].as_str()), (Some("batch/v1"), Some("Job")));
        assert_eq!(job["metadata"]["labels"]["msprobe-rs/step"], step);
    }
    let spec = &replay["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert!(n > 1 && (1..=n).contains(&spec["parallelism"].as_u64().unwrap()), "{spec}");
    let (c, mount, claim) = container(replay);
    let env: Vec<(&str, &str)> = c["env"].as_array().unwrap().iter().map(|e| (e["name"].as_str().unwrap(), e["value"].as_str().unwrap())).collect();
    assert_eq!(env, [("JOB_COMPLETIONS", n.to_string().as_str())]);
    // The Job fails at once on the tool's errors, never on a verdict.
    let rules = spec["podFailurePolicy"]["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        (rules[0]["action"].as_str(), rules[0]["onExitCodes"]["containerName"].as_str(), rules[0]["onExitCodes"]["operator"].as_str()),
        (Some("FailJob"), c["name"].as_str(), Some("In"))
    );
    let codes: Vec<u64> = rules[0]["onExitCodes"]["values"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert_eq!(codes, [exit::USAGE, exit::INPUT, exit::WRITE, exit::INTERNAL, exit::CONFIG].map(u64::from));
    let (mc, merge_mount, merge_claim) = container(merge);
    assert_eq!((merge_mount, merge_claim), (mount, claim));
    assert_eq!(merge["spec"]["completions"], 1);

    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let shard_line = command_line(c, mount, &data);
    let merge_line = command_line(mc, mount, &data);
    let (root, out) = (PathBuf::from(flag(&shard_line, "--dump")), PathBuf::from(flag(&shard_line, "--output-dir")));
    assert!(root.starts_with(&data) && out.starts_with(&data), "--dump and --output-dir on the shared volume: {shard_line:?}");
    assert_eq!(flag(&merge_line, "--merge"), out.to_str().unwrap(), "the merge reads the shards' output");
    job_root(&root);
    let whole = tmp.path().join("whole");
    let verdict = unsharded(&root, &whole);

    let pod = |index: u64, completions: &str| {
        command(&shard_line[0], tmp.path())
            .args(&shard_line[1..])
            .envs(env.iter().copied())
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env("JOB_COMPLETIONS", completions)
            .output()
            .unwrap()
    };
    let mut errors = 0;
    for index in 0..n {
        let o = pod(index, &n.to_string());
        assert_eq!(o.status.code(), Some(0), "pod {index}: {}", text(&o));
        errors += shard_errors(&text(&o), &format!("part_{index}_of_{n}.json (shard {index}/{n})"));
    }
    assert!(errors > 0, "the shards judged the planted float16 rank's error rows and still succeeded");
    parts_complete(&out, n as usize);
    let o = command(&merge_line[0], tmp.path()).args(&merge_line[1..]).output().unwrap();
    assert_eq!(o.status.code(), Some(verdict), "the merge: {}", text(&o));
    same_report(&whole, &out);

    // One completion is the unsharded run: its verdict 3 still succeeds the pod.
    std::fs::rename(&out, tmp.path().join("sharded")).unwrap();
    let o = pod(0, "1");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).ends_with("shard 0 judged: verdict exit 3\n"), "{}", text(&o));
    same_report(&whole, &out);
}
