//! The command line: raw arguments (clap, msprobe's flag spellings) become
//! validated per-command options. Flag combinations, the config file and
//! its overrides are checked here, before any command runs. Adding a flag
//! touches this file and the code that uses the option, nothing between.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand};

use super::foreign::Forward;
use super::Error;
use crate::config::{ConfigError, DataMode, DumpDevice, DumpInput, OpConfig, Overrides, Propagation};
use crate::config_check;
use crate::model::Framework;
use crate::nan_analyze;
use crate::op_generate::{self, BatchOptions, Mode};
use crate::progress::Progress;
use crate::render::Lang;
use crate::replay::{self, Scope};
use crate::result_change::{self, TrainCommand};
use crate::select::{ApiSelector, Shard};
use crate::single_compare;
use runtime::limits::Limits;
use runtime::report::RankBy;
use runtime::standard::Standard;

/// A flag whose values are one of the library's enums, by its msprobe
/// spelling (`-f pytorch`, `--data-mode real_data`).
fn one_of<T: Copy + Send + Sync + 'static>(all: &'static [T], name: fn(T) -> &'static str) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(|&v| name(v)))
        .map(move |s| all.iter().copied().find(|&v| name(v) == s).expect("clap accepts only the possible values"))
}

#[derive(Parser)]
#[command(name = "msprobe", version = concat!(env!("CARGO_PKG_VERSION"), " (msprobe-rs)"), about = "Repro scripts and native replay for API calls recorded in msprobe dumps")]
#[command(after_help = "Other commands (compare, run_ut, parse, graph, merge_result, ...) go to mindstudio-probe's msprobe when it is installed.")]
#[command(subcommand_value_name = "COMMAND", subcommand_help_heading = "Commands")]
struct Cli {
    /// Framework that produced the dump: pytorch or mindspore (mindspore also for MSAdapter's mindtorch dumps; required by the commands that read a dump).
    #[arg(short = 'f', long = "framework", value_parser = one_of(&Framework::FLAGS, Framework::as_str))]
    framework: Option<Framework>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Extract API calls from a dump and write standalone repro scripts.
    #[command(
        name = "op_generate",
        override_usage = "msprobe -f <FRAMEWORK> op_generate [OPTIONS] --config_input <CONFIG_INPUT> [--api_output_path <API_OUTPUT_PATH>]"
    )]
    OpGenerate(OpGenerateFlags),
    /// Replay API calls natively (no Python) and write the accuracy CSVs.
    #[command(override_usage = "msprobe -f <FRAMEWORK> replay [OPTIONS]")]
    Replay(ReplayFlags),
    /// Compare two SingleSave runs array by array (msprobe's SingleComparator): one <key>.xlsx per key.
    #[command(name = "single_compare")]
    SingleCompare {
        /// The first run: a dump_path given to SingleSave (the folder holding data/).
        dir1: PathBuf,
        /// The second run.
        dir2: PathBuf,
        /// Folder the workbooks are written to (created if missing).
        #[arg(short = 'o', long = "output_path", visible_alias = "output-path", default_value = "./msprobe_compare_output")]
        output_path: PathBuf,
        /// Threads comparing arrays in parallel (msprobe's num_processes), 1 to 128.
        #[arg(short = 'j', long = "num_processes", visible_alias = "num-processes", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=128))]
        num_processes: u16,
    },
    /// Find the first op whose output turned NaN/Inf in a multi-rank step, across communication ops.
    #[command(name = "nan_analyze")]
    NanAnalyze {
        /// The step folder holding the rank folders (rank0, rank1, ...; each with dump.json, construct.json, stack.json).
        #[arg(short = 'i', long = "input_path", visible_alias = "input-path")]
        input_path: PathBuf,
        /// Folder the anomaly_analyze_{timestamp}.json report is written to (created if missing).
        #[arg(short = 'o', long = "output_path", visible_alias = "output-path", default_value = "./output")]
        output_path: PathBuf,
    },
    /// Pack this training environment (-d) or compare two packs (-c), as msprobe's config_check; -c of two Megatron checkpoint folders compares the checkpoints.
    #[command(name = "config_check")]
    ConfigCheck {
        /// Pack: launch scripts (.sh) and configs (.yaml, .yml) to read hyperparameters from (none is allowed).
        #[arg(short = 'd', long = "dump", num_args = 0.., value_name = "FILE", conflicts_with = "compare")]
        dump: Option<Vec<PathBuf>>,
        /// Compare: the bench and the cmp pack (.zip), or two Megatron checkpoint folders.
        #[arg(short = 'c', long = "compare", num_args = 2, value_names = ["BENCH", "CMP"])]
        compare: Option<Vec<PathBuf>>,
        /// The pack (default ./config_check_pack.zip; must end with .zip), the result folder (default ./config_check_result), or the checkpoint JSON (default ./ckpt_similarity.json).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
    },
    /// Why the loss changes with the probe on: runs the training command once per variant (baseline twice, sync, module hooks, API wrappers) and compares what msprobe_rs.ResultChange recorded.
    #[command(name = "result_change", override_usage = "msprobe -f pytorch|mindspore result_change -o <OUTPUT> [--ops] -- <COMMAND>...")]
    ResultChange {
        /// Folder the result_change_{timestamp}.json verdict is written to (created if missing).
        #[arg(short = 'o', long = "output_path", visible_alias = "output-path")]
        output_path: PathBuf,
        /// Also record the hash of every op's output, to name the first op that changed.
        #[arg(long)]
        ops: bool,
        /// The training command and its arguments, after `--` (e.g. -- python train.py).
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<OsString>,
    },
    /// Any other subcommand (compare, run_ut, parse, ...): mindstudio-probe's msprobe, when installed.
    #[command(external_subcommand)]
    Foreign(Vec<OsString>),
}

/// The flags of `op_generate` ([`Command::OpGenerate`]), checked by [`op_generate_options`].
#[derive(Args)]
struct OpGenerateFlags {
    /// Path of config_op.json.
    #[arg(short = 'i', long = "config_input", visible_alias = "config-input")]
    config_input: PathBuf,
    /// Folder the scripts are written to (created if missing; --check compares against it).
    #[arg(short = 'o', long = "api_output_path", visible_alias = "api-output-path", default_value = ".")]
    api_output_path: PathBuf,
    /// Batch: every API of the dump (api_name may be omitted).
    #[arg(long)]
    all: bool,
    /// Batch: the APIs whose Prefix.op.N matches this regex, e.g. '^(Torch|Functional)\.(matmul|linear)\.'.
    #[arg(long, value_name = "REGEX")]
    filter: Option<String>,
    /// Overrides the config's propagation; `both` (batch only) writes forward and backward scripts.
    #[arg(long, value_enum)]
    propagation: Option<Propagation>,
    /// Generate in memory and compare with the files on disk; exit 1 on any difference.
    #[arg(long)]
    check: bool,
    /// Batch: take shard I of N (0-based, stable by API name), e.g. 0/4.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// No progress output.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Python scripts, or Rust cargo projects on the runtime crate.
    #[arg(long, value_enum, default_value = "python")]
    lang: Lang,
    /// Overrides the config's precision standard baked into the scripts: default (msprobe on a device's values, bound on an emulated device's), msprobe (cosine and max abs), api (per API and dtype) or bound (within the rounding error bound).
    #[arg(long, value_parser = one_of(&Standard::ALL, Standard::as_str))]
    standard: Option<Standard>,
    /// Python: write the scripts' machinery once, as a module of this version beside them that they import, instead of into every script.
    #[arg(long)]
    shared_module: bool,
}

/// The flags of `replay` ([`Command::Replay`]), checked by [`replay_options`].
#[derive(Args)]
struct ReplayFlags {
    /// Path of config_op.json (api_name, data_mode, seed, thresholds).
    #[arg(short = 'i', long = "config_input", visible_alias = "config-input", required_unless_present_any = ["dump", "merge"])]
    config_input: Option<PathBuf>,
    /// Replay many APIs of this dump, rank folder, step folder or job root (step*/rank*/dump.json): all, or those --filter selects; print them ranked, worst first.
    #[arg(long, value_name = "DUMP")]
    dump: Option<PathBuf>,
    /// Merge the parts the shards of one job wrote into DIR (their --output-dir) into the job's CSVs (and --html).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["config_input", "dump"])]
    merge: Option<PathBuf>,
    /// With --dump: the APIs whose Prefix.op.N matches this regex.
    #[arg(long, value_name = "REGEX", requires = "dump")]
    filter: Option<String>,
    /// With --dump: take shard I of N (0-based) of the job's calls, split by estimated work, e.g. 0/4 (default: from SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT or JOB_COMPLETION_INDEX/JOB_COMPLETIONS when set).
    #[arg(long, value_name = "I/N", requires = "dump")]
    shard: Option<Shard>,
    /// forward, backward, or both (default: the config's, or both with --dump).
    #[arg(long, value_enum)]
    propagation: Option<Propagation>,
    /// Compare against an emulated device run even when the dump recorded the outputs.
    #[arg(long)]
    emulate: bool,
    /// Overrides the config's data_mode.
    #[arg(long, value_parser = one_of(&DataMode::ALL, DataMode::as_str))]
    data_mode: Option<DataMode>,
    /// Where the CSVs and the parts (replay_parts/) go (default: ./op_result_output; with --merge, DIR); -o as op_generate's.
    #[arg(short = 'o', long)]
    output_dir: Option<PathBuf>,
    /// Rows of the ranked table to print (0: all).
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// What the ranked table and the HTML report put first: effect (the calls whose own errors move the loss most, where the dump recorded outputs and their gradients; else as error) or error (the worst verdicts and metrics).
    #[arg(long, value_parser = one_of(&RankBy::ALL, RankBy::as_str), default_value = "effect")]
    rank_by: RankBy,
    /// Overrides the config's precision standard: default (msprobe on recorded device values, bound on an emulated device's), msprobe (cosine and max abs), api (per API and dtype) or bound (within the rounding error bound).
    #[arg(long, value_parser = one_of(&Standard::ALL, Standard::as_str))]
    standard: Option<Standard>,
    /// The device the dump was recorded on: cpu, cuda or npu (overrides the config's dump_device; default cpu). A cuda or npu dump's float32 convolutions are held to the rounding of their TF32 / HF32 operands (the rulebook's reduced_operands).
    #[arg(long, value_parser = one_of(&DumpDevice::ALL, DumpDevice::as_str))]
    dump_device: Option<DumpDevice>,
    /// Exit 0 when no row is an error even if some are `skip` (calls the tool cannot replay).
    #[arg(long)]
    allow_skip: bool,
    /// The largest tensor replayed, counted as float64 (elements × 8 bytes), e.g. 2G; a call with a larger one is not replayed (default: 1/8 of the available memory).
    #[arg(long, value_name = "NUM+SUFFIX?", value_parser = byte_size)]
    tensor_size_limit: Option<u64>,
    /// The memory the calls replayed at once may use, by estimate (tensor bytes as float64 × 4 copies, with an op's own intermediates such as attention's scores), e.g. 16G; a call estimated over it alone is not replayed (default: 1/2 of the available memory).
    #[arg(long, value_name = "NUM+SUFFIX?", value_parser = byte_size)]
    memory_budget: Option<u64>,
    /// With --dump: replay at most N calls at once, never more than rayon has threads (default: one per rayon thread, RAYON_NUM_THREADS or one per core; each call's own work uses every thread either way). -j 1 holds one call's memory at a time, and times each call alone (the seconds in the parts of a fresh --output-dir).
    #[arg(short = 'j', long, value_name = "N", requires = "dump", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
    /// Also write a self-contained HTML report (summary, the step as a chart, a sortable table, per-call details) to FILE (default: replay_report_<stamp>.html in the output folder).
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    html: Option<Option<PathBuf>>,
    /// msprobe compare's result (compare_result_*.xlsx, or the table as CSV) of the --dump dump against a bench dump: the calls of its rows whose metrics differ are replayed on their recorded inputs and each classified as own error (its output is wrong for its inputs) or inherited (naming the nearest own-error call upstream); the culprits go to replay_culprits_<stamp>.csv, exit 3 when there are any.
    #[arg(long, value_name = "FILE", requires = "dump", conflicts_with_all = ["merge", "filter", "shard"])]
    from_compare: Option<PathBuf>,
    /// Shrink every call judged error (real data) to the least data that still fails: its tensors cut along the dimensions its op treats independently, the recorded outputs and gradients cut the same way; each minimized call is written as a repro (dump.json, .npy tensors, config_op.json, script) under OUTPUT/minimized/ and listed in minimize_<stamp>.csv.
    #[arg(long, conflicts_with_all = ["merge", "from_compare", "shard"])]
    minimize: bool,
    /// With --minimize: at most N replays per call (the first verdict included).
    #[arg(long, value_name = "N", requires = "minimize", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    minimize_budget: u32,
    /// No progress output (otherwise, with --dump, a bar on a terminal and in a log a line at most every 10 s: calls done, GB read, time taken and left).
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// A size in bytes as ripgrep spells one: a number with an optional suffix
/// K, M, G or T (powers of 1024), e.g. `512M`, `2G`; at least 1.
fn byte_size(text: &str) -> Result<u64, String> {
    let (digits, shift) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => match c.to_ascii_uppercase() {
            'K' => (&text[..i], 10),
            'M' => (&text[..i], 20),
            'G' => (&text[..i], 30),
            'T' => (&text[..i], 40),
            _ => return Err(format!("expected a number of bytes with an optional suffix K, M, G or T, got {text:?}")),
        },
        _ => (text, 0),
    };
    let n: u64 = digits.parse().map_err(|_| format!("expected a number of bytes with an optional suffix K, M, G or T, got {text:?}"))?;
    let bytes = n.checked_mul(1 << shift).ok_or_else(|| format!("{text:?} is more bytes than 64 bits can count"))?;
    if bytes == 0 {
        return Err("expected a size of at least 1 byte".into());
    }
    Ok(bytes)
}

/// A validated command, ready to run.
#[derive(Debug)]
pub enum Options {
    /// `op_generate`, and the config keys it ignored (printed as warnings).
    OpGenerate {
        /// The options.
        opts: op_generate::Options,
        /// The config file, for the warnings.
        config_input: PathBuf,
        /// Unknown keys of config_op.json.
        unknown_keys: Vec<String>,
        /// `--quiet`.
        quiet: bool,
    },
    /// `replay`, and how many rows of the ranked table to print.
    Replay {
        /// The options.
        opts: replay::Options,
        /// `--top`.
        top: usize,
        /// `--rank-by`.
        rank_by: RankBy,
    },
    /// `replay --merge`, how many rows of the ranked table to print, and `--allow-skip`.
    ReplayMerge {
        /// The options.
        opts: replay::MergeOptions,
        /// `--top`.
        top: usize,
        /// `--rank-by`.
        rank_by: RankBy,
        /// `--allow-skip`.
        allow_skip: bool,
    },
    /// `single_compare` (`-f` is accepted and ignored).
    SingleCompare(single_compare::Options),
    /// `nan_analyze` (needs `-f pytorch`).
    NanAnalyze(nan_analyze::Options),
    /// `config_check -c CKPT1 CKPT2`: both paths are Megatron checkpoint folders.
    CheckpointCompare {
        /// The options.
        opts: crate::checkpoint::Options,
    },
    /// `config_check -d` (pack) or `-c` of two packs (compare).
    ConfigCheck(config_check::Options),
    /// `result_change` (needs `-f pytorch`).
    ResultChange(result_change::Options),
    /// A subcommand of mindstudio-probe's msprobe, not ours: forwarded.
    Foreign(Forward),
}

/// Parses the process's arguments; clap prints help, version and its own
/// usage errors and exits (code 2 for errors).
pub fn parse() -> Result<Options, Error> {
    options(Cli::parse())
}

fn missing_api_name(config: &Path, expected: &str) -> Error {
    Error::Config(ConfigError::Key { path: config.to_path_buf(), key: "api_name", expected: expected.into() })
}

fn filter(regex: Option<String>) -> Result<Option<regex::Regex>, Error> {
    regex.map(|r| regex::Regex::new(&r).map_err(|e| Error::Usage(format!("--filter: {e}")))).transpose()
}

/// `-f`, for the commands that cannot run without it.
fn framework(given: Option<Framework>, command: &str) -> Result<Framework, Error> {
    given.ok_or_else(|| Error::Usage(format!("{command} needs -f pytorch or -f mindspore")))
}

fn options(cli: Cli) -> Result<Options, Error> {
    match cli.command {
        Command::OpGenerate(flags) => op_generate_options(cli.framework, flags),
        Command::Replay(flags) => replay_options(cli.framework, flags),
        Command::SingleCompare { dir1, dir2, output_path, num_processes } => {
            Ok(Options::SingleCompare(single_compare::Options { dir1, dir2, output_path, jobs: usize::from(num_processes) }))
        }
        Command::NanAnalyze { input_path, output_path } => match cli.framework {
            Some(Framework::PyTorch) => Ok(Options::NanAnalyze(nan_analyze::Options { input: input_path, output: output_path })),
            _ => Err(Error::Usage("nan_analyze needs -f pytorch (it analyses PyTorch dumps only, as msprobe)".into())),
        },
        Command::ConfigCheck { dump, compare, output } => {
            framework(cli.framework, "config_check")?;
            match (dump, compare) {
                (Some(files), _) => {
                    let output = output.unwrap_or_else(|| PathBuf::from("./config_check_pack.zip"));
                    if !output.to_string_lossy().ends_with(".zip") {
                        return Err(Error::Usage(format!("config_check -o {}: the pack's name must end with .zip", output.display())));
                    }
                    Ok(Options::ConfigCheck(config_check::Options::Collect { files, output, python: super::python::training_python() }))
                }
                (None, Some(paths)) => {
                    let (bench, cmp) = (paths[0].clone(), paths[1].clone());
                    if paths.iter().all(|p| crate::checkpoint::is_checkpoint_dir(p)) {
                        let output = output.unwrap_or_else(|| PathBuf::from("./ckpt_similarity.json"));
                        Ok(Options::CheckpointCompare { opts: crate::checkpoint::Options { bench, cmp, output } })
                    } else {
                        let output = output.unwrap_or_else(|| PathBuf::from("./config_check_result"));
                        Ok(Options::ConfigCheck(config_check::Options::Compare { bench, cmp, output }))
                    }
                }
                (None, None) => Err(Error::Usage("config_check needs -d [FILES...] to pack this environment or -c BENCH CMP to compare two packs".into())),
            }
        }
        Command::ResultChange { output_path, ops, command } => match cli.framework {
            Some(Framework::MindSpore) if ops => {
                Err(Error::Usage("result_change --ops needs -f pytorch (op hashes come from torch's function mode; MindSpore has none)".into()))
            }
            Some(framework @ (Framework::PyTorch | Framework::MindSpore)) => {
                Ok(Options::ResultChange(result_change::Options { framework, command: TrainCommand(command), output: output_path, ops }))
            }
            _ => Err(Error::Usage("result_change needs -f pytorch or -f mindspore (the framework ResultChange records)".into())),
        },
        Command::Foreign(external) => Ok(Options::Foreign(Forward::from_process(&external))),
    }
}

/// `op_generate`: the flags checked against each other, the config loaded
/// with their overrides, and one call (its `api_name`) or a batch.
fn op_generate_options(given: Option<Framework>, flags: OpGenerateFlags) -> Result<Options, Error> {
    let OpGenerateFlags { config_input, api_output_path, all, filter: regex, propagation, check, shard, quiet, lang, standard, shared_module } = flags;
    let batch = all || regex.is_some();
    if !batch && shard.is_some() {
        return Err(Error::Usage("--shard needs --all or --filter".into()));
    }
    if !batch && propagation == Some(Propagation::Both) {
        return Err(Error::Usage("--propagation both needs --all or --filter".into()));
    }
    if shared_module && lang != Lang::Python {
        return Err(Error::Usage("--shared-module needs --lang python".into()));
    }
    let framework = framework(given, "op_generate")?;
    let filter = filter(regex)?;
    let (mut config, unknown_keys) = OpConfig::load(&config_input)?;
    config.apply(&Overrides { propagation: propagation.and_then(Propagation::direction), standard, ..Overrides::default() });
    let name = match (&config.api_name, batch) {
        (_, true) => None,
        (Some(name), false) => Some(name.clone()),
        (None, false) => return Err(missing_api_name(&config_input, "an API name such as Tensor.add.0 (or pass --all / --filter)")),
    };
    let progress = Progress::for_stderr(quiet);
    let mode = match name {
        Some(name) => Mode::Single(name),
        None => Mode::Batch(BatchOptions { selector: ApiSelector { filter, shard }, propagation: propagation.unwrap_or(config.propagation.into()), progress }),
    };
    let runtime = std::env::var_os("MSPROBE_RUNTIME_PATH").map(PathBuf::from);
    let opts = op_generate::Options { framework, config, out_dir: api_output_path, lang, check, shared_module, runtime, mode };
    Ok(Options::OpGenerate { opts, config_input, unknown_keys, quiet })
}

/// `replay`: the config (or the dump's defaults) with the flags'
/// overrides, one call or the calls `--dump` selects, and the limits; with
/// `--merge`, [`replay_merge_options`].
fn replay_options(given: Option<Framework>, mut flags: ReplayFlags) -> Result<Options, Error> {
    let framework = framework(given, "replay")?;
    if let Some(dir) = flags.merge.take() {
        return replay_merge_options(framework, dir, flags);
    }
    let ReplayFlags {
        config_input,
        dump,
        merge: _,
        filter: regex,
        shard,
        propagation,
        emulate,
        data_mode,
        output_dir,
        top,
        rank_by,
        standard,
        dump_device,
        allow_skip,
        tensor_size_limit,
        memory_budget,
        jobs,
        html,
        from_compare,
        minimize,
        minimize_budget,
        quiet,
    } = flags;
    let output_dir = output_dir.unwrap_or_else(|| PathBuf::from("./op_result_output"));
    let shard = match (shard, &dump) {
        (None, Some(_)) => crate::select::shard_from_env(|k| std::env::var(k).ok()).map_err(Error::Usage)?,
        (s, _) => s,
    };
    let filter = filter(regex)?;
    let mut config = match (&config_input, &dump) {
        (Some(path), _) => OpConfig::load(path)?.0,
        (None, Some(d)) => OpConfig::defaults(DumpInput::Dump { path: d.clone(), extract_to: None }),
        (None, None) => return Err(Error::Usage("replay needs -i config_op.json or --dump DUMP".into())),
    };
    let direction = match (propagation, &dump) {
        (Some(p), _) => p.direction(),
        (None, Some(_)) => None,
        (None, None) => Some(config.propagation),
    };
    // Blame judges the device's recorded values: real data unless asked otherwise.
    let data_mode = data_mode.or(from_compare.as_ref().map(|_| DataMode::Real));
    config.apply(&Overrides { dump: dump.clone(), propagation: direction, data_mode, standard, dump_device });
    let scope = match (&dump, &config.api_name, &config_input) {
        (Some(_), _, _) => Scope::Many(ApiSelector { filter, shard }),
        (None, Some(name), _) => Scope::One(name.clone()),
        (None, None, path) => {
            return Err(missing_api_name(path.as_deref().unwrap_or(Path::new("--dump")), "an API name such as Tensor.add.0 (or pass --dump)"))
        }
    };
    let available = Limits::from_available_memory();
    let limits = Limits { tensor_bytes: tensor_size_limit.unwrap_or(available.tensor_bytes), memory_budget: memory_budget.unwrap_or(available.memory_budget) };
    let progress = Progress::for_stderr(quiet);
    // Minimizing judges the device's recorded values: real data unless asked otherwise.
    if minimize && data_mode.is_none() {
        config.data_mode = DataMode::Real;
    }
    let minimize = minimize.then_some(minimize_budget);
    let opts = replay::Options {
        framework,
        config,
        scope,
        propagation: direction,
        emulate,
        allow_skip,
        output_dir,
        limits,
        html,
        progress,
        from_compare,
        rank_by,
        minimize,
        jobs: jobs.map(|n| n as usize),
    };
    Ok(Options::Replay { opts, top, rank_by })
}

/// `replay --merge DIR`: refuses the flags of the shards' replay, which
/// the merge does not take.
fn replay_merge_options(framework: Framework, dir: PathBuf, flags: ReplayFlags) -> Result<Options, Error> {
    let replays = [
        ("--filter", flags.filter.is_some()),
        ("--shard", flags.shard.is_some()),
        ("--propagation", flags.propagation.is_some()),
        ("--emulate", flags.emulate),
        ("--data-mode", flags.data_mode.is_some()),
        ("--standard", flags.standard.is_some()),
        ("--dump-device", flags.dump_device.is_some()),
        ("--tensor-size-limit", flags.tensor_size_limit.is_some()),
        ("--memory-budget", flags.memory_budget.is_some()),
        ("--minimize", flags.minimize),
    ];
    if let Some((flag, _)) = replays.iter().find(|(_, given)| *given) {
        return Err(Error::Usage(format!(
            "{flag} is an option of the shards' replay, not of --merge (which takes --output-dir, --html, --top and --allow-skip)"
        )));
    }
    let output_dir = flags.output_dir.unwrap_or_else(|| dir.clone());
    Ok(Options::ReplayMerge {
        opts: replay::MergeOptions { framework, dir, output_dir, html: flags.html, rank_by: flags.rank_by },
        top: flags.top,
        rank_by: flags.rank_by,
        allow_skip: flags.allow_skip,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Options, String> {
        let cli = Cli::try_parse_from(args.split_whitespace()).map_err(|e| e.to_string())?;
        options(cli).map_err(|e| e.to_string())
    }

    #[test]
    fn flag_combinations_are_usage_errors() {
        assert_eq!(parse("msprobe -f pytorch op_generate -i c.json -o o --shard 0/2").unwrap_err(), "--shard needs --all or --filter");
        assert_eq!(parse("msprobe -f pytorch op_generate -i c.json -o o --propagation both").unwrap_err(), "--propagation both needs --all or --filter");
        assert!(parse("msprobe -f pytorch op_generate -i c.json -o o --all --filter (").unwrap_err().starts_with("--filter: "));
        assert_eq!(parse("msprobe op_generate -i c.json -o o").unwrap_err(), "op_generate needs -f pytorch or -f mindspore");
        assert!(parse("msprobe -f pytorch replay --filter x").unwrap_err().contains("--dump"));
    }

    #[test]
    fn result_change_takes_the_command_after_the_double_dash() {
        let Options::ResultChange(opts) = parse("msprobe -f pytorch result_change -o out --ops -- python train.py --lr 1").unwrap() else { panic!() };
        assert_eq!(opts.command.display(), "python train.py --lr 1");
        assert!(opts.ops && opts.output == Path::new("out"));
        assert_eq!(opts.framework, Framework::PyTorch);
        assert_eq!(
            parse("msprobe result_change -o out -- python t.py").unwrap_err(),
            "result_change needs -f pytorch or -f mindspore (the framework ResultChange records)"
        );
        let Options::ResultChange(opts) = parse("msprobe -f mindspore result_change -o out -- python t.py").unwrap() else { panic!() };
        assert_eq!(opts.framework, Framework::MindSpore);
        assert_eq!(
            parse("msprobe -f mindspore result_change -o out --ops -- python t.py").unwrap_err(),
            "result_change --ops needs -f pytorch (op hashes come from torch's function mode; MindSpore has none)"
        );
        assert!(parse("msprobe -f pytorch result_change -o out").is_err(), "the command is required");
    }

    #[test]
    fn replay_dump_alone_takes_the_defaults_and_both_directions() {
        let Options::Replay { opts, top, .. } = parse("msprobe -f mindspore replay --dump d.json --data-mode real_data").unwrap() else { panic!() };
        assert_eq!((opts.framework, opts.propagation, top), (Framework::MindSpore, None, 20));
        assert_eq!((opts.config.input.path(), opts.config.data_mode), (std::path::Path::new("d.json"), DataMode::Real));
        assert!(matches!(opts.scope, Scope::Many(_)));
    }

    #[test]
    fn jobs_bound_the_calls_at_once_of_a_dump() {
        let Options::Replay { opts, .. } = parse("msprobe -f pytorch replay --dump d.json").unwrap() else { panic!() };
        assert_eq!(opts.jobs, None, "the default: one call per rayon thread");
        let Options::Replay { opts, .. } = parse("msprobe -f pytorch replay --dump d.json -j 1").unwrap() else { panic!() };
        assert_eq!(opts.jobs, Some(1));
        let Options::Replay { opts, .. } = parse("msprobe -f pytorch replay --dump d.json --jobs 3").unwrap() else { panic!() };
        assert_eq!(opts.jobs, Some(3));
        assert!(parse("msprobe -f pytorch replay --dump d.json -j 0").unwrap_err().contains("0 is not in 1.."));
        assert!(parse("msprobe -f pytorch replay -i c.json -j 2").unwrap_err().contains("--dump"));
    }

    #[test]
    fn sizes_take_ripgrep_suffixes() {
        assert_eq!(byte_size("4096"), Ok(4096));
        assert_eq!(byte_size("512K"), Ok(512 << 10));
        assert_eq!(byte_size("3m"), Ok(3 << 20));
        assert_eq!(byte_size("2G"), Ok(2 << 30));
        assert_eq!(byte_size("1T"), Ok(1 << 40));
        assert_eq!(byte_size("2X"), Err("expected a number of bytes with an optional suffix K, M, G or T, got \"2X\"".into()));
        assert_eq!(byte_size("G"), Err("expected a number of bytes with an optional suffix K, M, G or T, got \"G\"".into()));
        assert_eq!(byte_size("-1"), Err("expected a number of bytes with an optional suffix K, M, G or T, got \"-1\"".into()));
        assert_eq!(byte_size("0M"), Err("expected a size of at least 1 byte".into()));
        assert_eq!(byte_size("99999999999T"), Err("\"99999999999T\" is more bytes than 64 bits can count".into()));
        let Options::Replay { opts, .. } = parse("msprobe -f pytorch replay --dump d.json --tensor-size-limit 1G --memory-budget 3G").unwrap() else {
            panic!()
        };
        assert_eq!(opts.limits, Limits { tensor_bytes: 1 << 30, memory_budget: 3 << 30 });
        let Options::Replay { opts, .. } = parse("msprobe -f pytorch replay --dump d.json --memory-budget 3G").unwrap() else { panic!() };
        assert_eq!(opts.limits.memory_budget, 3 << 30);
        assert!(opts.limits.tensor_bytes > 0, "the default: a share of the available memory");
        assert!(parse("msprobe -f pytorch replay --dump d.json --memory-budget 0").unwrap_err().contains("expected a size of at least 1 byte"));
    }

    #[test]
    fn single_mode_needs_api_name_in_the_config() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("c.json");
        std::fs::write(&cfg, r#"{"dump_json_path": "d.json"}"#).unwrap();
        let e = parse(&format!("msprobe -f pytorch op_generate -i {} -o o", cfg.display())).unwrap_err();
        assert_eq!(e, format!("{}: key \"api_name\": expected an API name such as Tensor.add.0 (or pass --all / --filter)", cfg.display()));
        let e = parse(&format!("msprobe -f pytorch replay -i {}", cfg.display())).unwrap_err();
        assert!(e.ends_with("key \"api_name\": expected an API name such as Tensor.add.0 (or pass --dump)"), "{e}");
        assert!(parse(&format!("msprobe -f pytorch op_generate -i {} -o o --all", cfg.display())).is_ok());
    }
}
