//! The `msprobe` binary: argument parsing and exit codes only; the work is
//! done by the library (`msprobe::op_generate`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use msprobe::config::OpConfig;
use msprobe::model::Framework;
use msprobe::op_generate;

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

#[derive(Subcommand)]
enum Command {
    /// Extract one API call from a dump and write a standalone repro script.
    #[command(name = "op_generate")]
    OpGenerate {
        /// Path of config_op.json.
        #[arg(short = 'i', long = "config_input", visible_alias = "config-input")]
        config_input: PathBuf,
        /// Folder the script is written to (created if missing).
        #[arg(short = 'o', long = "api_output_path", visible_alias = "api-output-path")]
        api_output_path: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::OpGenerate { config_input, api_output_path } => {
            let Some(framework) = cli.framework else {
                eprintln!("msprobe: error: -f/--framework is required (pytorch or mindspore)");
                return ExitCode::from(2);
            };
            let framework = match framework {
                FrameworkArg::Pytorch => Framework::PyTorch,
                FrameworkArg::Mindspore => Framework::MindSpore,
            };
            let result = OpConfig::load(&config_input).map_err(op_generate::Error::from).and_then(|(config, unknown)| {
                for key in unknown {
                    eprintln!("msprobe: warning: {}: unknown key {key:?} ignored", config_input.display());
                }
                op_generate::run(framework, &config, &api_output_path)
            });
            match result {
                Ok(done) => {
                    if let Some(e) = done.extract {
                        println!("extracted {}", e.display());
                    }
                    println!("wrote {}", done.script.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("msprobe: error: {e}");
                    ExitCode::from(e.exit_code() as u8)
                }
            }
        }
    }
}
