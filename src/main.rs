//! The `msprobe` binary: argument parsing, progress mode and exit codes
//! only; the work is done by the library (`msprobe::op_generate`).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use msprobe::config::{DataMode, OpConfig, Propagation};
use msprobe::model::Framework;
use msprobe::render::Lang;
use msprobe::op_generate::{self, BatchOptions, BatchReport, Progress};
use msprobe::select::{ApiSelector, Shard};

#[derive(Parser)]
#[command(name = "msprobe", version, about = "Repro scripts for API calls recorded in msprobe dumps")]
struct Cli {
    /// Framework that produced the dump.
    #[arg(short = 'f', long = "framework", value_enum, global = true)]
    framework: Option<FrameworkArg>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum FrameworkArg {
    Pytorch,
    Mindspore,
}

#[derive(Clone, Copy, ValueEnum)]
enum LangArg {
    Python,
    Rust,
}

#[derive(Clone, Copy, ValueEnum)]
enum DataModeArg {
    #[value(name = "random_data")]
    RandomData,
    #[value(name = "real_data")]
    RealData,
}

#[derive(Clone, Copy, ValueEnum)]
enum PropagationArg {
    Forward,
    Backward,
    Both,
}

#[derive(Subcommand)]
enum Command {
    /// Extract API calls from a dump and write standalone repro scripts.
    #[command(name = "op_generate")]
    OpGenerate {
        /// Path of config_op.json.
        #[arg(short = 'i', long = "config_input", visible_alias = "config-input")]
        config_input: PathBuf,
        /// Folder the scripts are written to (created if missing).
        #[arg(short = 'o', long = "api_output_path", visible_alias = "api-output-path")]
        api_output_path: PathBuf,
        /// Batch: every API of the dump (api_name may be omitted).
        #[arg(long)]
        all: bool,
        /// Batch: the APIs whose Prefix.op.N matches this regex, e.g. '^(Torch|Functional)\.(matmul|linear)\.'.
        #[arg(long, value_name = "REGEX")]
        filter: Option<String>,
        /// Overrides the config's propagation; `both` (batch only) writes forward and backward scripts.
        #[arg(long, value_enum)]
        propagation: Option<PropagationArg>,
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
        lang: LangArg,
    },
    /// Replay API calls natively (no Python) and write the accuracy CSVs.
    Replay {
        /// Path of config_op.json (api_name, data_mode, seed, thresholds).
        #[arg(short = 'i', long = "config_input", visible_alias = "config-input")]
        config_input: Option<PathBuf>,
        /// Replay many APIs of this dump (all, or those --filter selects) and print them ranked, worst first.
        #[arg(long, value_name = "DUMP")]
        dump: Option<PathBuf>,
        /// With --dump: the APIs whose Prefix.op.N matches this regex.
        #[arg(long, value_name = "REGEX")]
        filter: Option<String>,
        /// With --dump: take shard I of N (0-based), e.g. 0/4.
        #[arg(long, value_name = "I/N")]
        shard: Option<Shard>,
        /// forward, backward, or both (default: the config's, or both with --dump).
        #[arg(long, value_enum)]
        propagation: Option<PropagationArg>,
        /// Compare against an emulated device run even when the dump recorded the outputs.
        #[arg(long)]
        emulate: bool,
        /// Overrides the config's data_mode.
        #[arg(long, value_enum)]
        data_mode: Option<DataModeArg>,
        /// Where the CSVs go.
        #[arg(long, default_value = "./op_result_output")]
        output_dir: PathBuf,
        /// Rows of the ranked table to print (0: all).
        #[arg(long, default_value_t = 20)]
        top: usize,
    },
}

fn fail(message: impl std::fmt::Display, code: u8) -> ExitCode {
    eprintln!("msprobe: error: {message}");
    ExitCode::from(code)
}

fn print_batch(report: &BatchReport, check: bool, quiet: bool) -> ExitCode {
    for f in &report.failed {
        eprintln!("msprobe: error: {f}");
    }
    for (what, list) in [("drifted", &report.drifted), ("missing", &report.missing), ("extra", &report.extra)] {
        for p in list {
            println!("{what}: {}", p.display());
        }
    }
    if !quiet || check {
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
    if !report.failed.is_empty() {
        ExitCode::from(4)
    } else if check && !(report.drifted.is_empty() && report.missing.is_empty() && report.extra.is_empty()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let framework = match cli.framework {
        Some(FrameworkArg::Pytorch) => Framework::PyTorch,
        Some(FrameworkArg::Mindspore) => Framework::MindSpore,
        None => return fail("-f/--framework is required (pytorch or mindspore)", 2),
    };
    match cli.command {
        Command::OpGenerate { config_input, api_output_path, all, filter, propagation, check, shard, quiet, lang } => {
            let lang = match lang {
                LangArg::Python => Lang::Python,
                LangArg::Rust => Lang::Rust,
            };
            op_generate_cmd(framework, config_input, api_output_path, all, filter, propagation, check, shard, quiet, lang)
        }
        Command::Replay { config_input, dump, filter, shard, propagation, emulate, data_mode, output_dir, top } => {
            replay_cmd(framework, config_input, dump, filter, shard, propagation, emulate, data_mode, &output_dir, top)
        }
    }
}

fn parse_filter(filter: Option<&str>) -> Result<Option<regex::Regex>, ExitCode> {
    filter.map(regex::Regex::new).transpose().map_err(|e| fail(format!("--filter: {e}"), 2))
}

#[allow(clippy::too_many_arguments)]
fn replay_cmd(
    framework: Framework,
    config_input: Option<PathBuf>,
    dump: Option<PathBuf>,
    filter: Option<String>,
    shard: Option<Shard>,
    propagation: Option<PropagationArg>,
    emulate: bool,
    data_mode: Option<DataModeArg>,
    output_dir: &std::path::Path,
    top: usize,
) -> ExitCode {
    let filter = match parse_filter(filter.as_deref()) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let many = dump.is_some();
    let mut config = match &config_input {
        Some(path) => match OpConfig::load(path) {
            Ok((c, _)) => c,
            Err(e) => return fail(e, 3),
        },
        None if many => {
            let mut obj = serde_json::Map::new();
            let path = dump.clone().unwrap_or_default().to_string_lossy().into_owned();
            obj.insert("dump_json_path".into(), serde_json::Value::String(path));
            match OpConfig::from_object(&obj, std::path::Path::new("--dump"), std::path::Path::new("")) {
                Ok((c, _)) => c,
                Err(e) => return fail(e, 3),
            }
        }
        None => return fail("replay needs -i config_op.json or --dump DUMP", 2),
    };
    if let Some(d) = dump {
        config.dump_json_path = Some(d);
    }
    match data_mode {
        Some(DataModeArg::RandomData) => config.data_mode = DataMode::RandomData,
        Some(DataModeArg::RealData) => {
            config.data_mode = DataMode::RealData;
            config.iter_times = 1;
        }
        None => {}
    }
    let propagation = match propagation {
        Some(PropagationArg::Forward) => Some(Propagation::Forward),
        Some(PropagationArg::Backward) => Some(Propagation::Backward),
        Some(PropagationArg::Both) => None,
        None if many => None,
        None => Some(config.propagation),
    };
    let opts = msprobe::replay::ReplayOptions { selector: ApiSelector { filter, shard }, propagation, emulate };
    match msprobe::replay::run(framework, &config, many, &opts, output_dir) {
        Ok(report) => {
            let ranked = msprobe::replay::ranked(&report.rows.details);
            let shown = if top == 0 { ranked.len() } else { top.min(ranked.len()) };
            println!("{:<48} {:>20} {:>14} {:>6}  message", "output", "cosine", "max_abs_err", "status");
            for r in &ranked[..shown] {
                let num = |x: Option<f64>| x.map(runtime::pyfmt::repr).unwrap_or_else(|| "-".into());
                println!("{:<48} {:>20} {:>14} {:>6}  {}", r.api_name, num(r.cosine), num(r.max_abs), r.status.as_str(), r.message);
            }
            if shown < ranked.len() {
                println!("... {} more rows in the CSV", ranked.len() - shown);
            }
            let errors = report.rows.details.iter().filter(|r| r.status != runtime::compare::Status::Pass).count();
            eprintln!("{} rows, {} error; wrote {} and {}", report.rows.details.len(), errors, report.files.1.display(), report.files.0.display());
            if errors > 0 {
                ExitCode::from(3)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => fail(&e, e.exit_code() as u8),
    }
}

#[allow(clippy::too_many_arguments)]
fn op_generate_cmd(
    framework: Framework,
    config_input: PathBuf,
    api_output_path: PathBuf,
    all: bool,
    filter: Option<String>,
    propagation: Option<PropagationArg>,
    check: bool,
    shard: Option<Shard>,
    quiet: bool,
    lang: Lang,
) -> ExitCode {
    let batch = all || filter.is_some();
    if !batch && shard.is_some() {
        return fail("--shard needs --all or --filter", 2);
    }
    if !batch && matches!(propagation, Some(PropagationArg::Both)) {
        return fail("--propagation both needs --all or --filter", 2);
    }
    let filter = match parse_filter(filter.as_deref()) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let (mut config, unknown) = match OpConfig::load(&config_input) {
        Ok(c) => c,
        Err(e) => return fail(e, 3),
    };
    for key in unknown {
        eprintln!("msprobe: warning: {}: unknown key {key:?} ignored", config_input.display());
    }
    let propagation = propagation.map(|p| match p {
        PropagationArg::Forward => Some(Propagation::Forward),
        PropagationArg::Backward => Some(Propagation::Backward),
        PropagationArg::Both => None,
    });
    if !batch {
        if let Some(Some(p)) = propagation {
            config.propagation = p;
        }
        return match op_generate::run(framework, &config, &api_output_path, check, lang) {
            Ok(done) if check => {
                for p in &done.drifted {
                    println!("drifted: {}", p.display());
                }
                if done.drifted.is_empty() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            Ok(done) => {
                if let Some(e) = done.extract {
                    println!("extracted {}", e.display());
                }
                for f in &done.files {
                    println!("wrote {}", f.display());
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e, e.exit_code() as u8),
        };
    }
    let progress = if quiet {
        Progress::Quiet
    } else if std::io::stderr().is_terminal() {
        Progress::Bar
    } else {
        Progress::Lines
    };
    let opts = BatchOptions {
        selector: ApiSelector { filter, shard },
        propagation: propagation.unwrap_or(Some(config.propagation)),
        check,
        progress,
        lang,
    };
    match op_generate::run_batch(framework, &config, &api_output_path, &opts) {
        Ok(report) => print_batch(&report, check, quiet),
        Err(e) => fail(&e, e.exit_code() as u8),
    }
}
