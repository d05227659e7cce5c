//! The HTML view of a replay (`--html`): each call's record (its rows, its
//! arguments, [`super::args`]) and its call stack from the source layer
//! become one [`HtmlCall`]; the runtime's [`write_html`] renders the page.

use std::path::{Path, PathBuf};

use runtime::replay::Rows;
use runtime::report::{write_html, HtmlCall, HtmlFrame, HtmlReport, ReportError};

use super::call::Record;
use super::Options;
use crate::model::{Direction, Framework};
use crate::source::stack::{StackError, Stacks};

/// The call stacks the page shows, and a note saying why there are none.
pub(super) struct StackView {
    stacks: Stacks,
    note: String,
}

impl StackView {
    /// The stacks the source layer read, or its note on why it read none.
    pub fn new(read: Result<Stacks, StackError>) -> StackView {
        match read {
            Ok(stacks) => StackView { stacks, note: String::new() },
            Err(e) => StackView { stacks: Stacks::default(), note: format!("no call stacks: {e}") },
        }
    }
}

/// Every call's rows joined in call order, and (with a stack view) each
/// call's view for the page: its name, its rows' range, its arguments and
/// its forward call stack.
pub(super) fn join(records: Vec<Record>, stacks: Option<&StackView>) -> (Rows, Vec<HtmlCall>) {
    let mut rows = Rows::default();
    let mut calls = vec![];
    for record in records {
        let start = rows.details.len();
        rows.details.extend(record.rows.details);
        rows.results.extend(record.rows.results);
        if let Some(view) = stacks {
            let frames = view.stacks.frames(&record.group.name.key(Direction::Forward));
            let stack = frames.into_iter().map(|f| HtmlFrame { file: f.file, line: f.line, function: f.function, code: f.code, user: f.user }).collect();
            calls.push(HtmlCall { api: record.group.name.to_string(), rows: start..rows.details.len(), args: record.args, stack });
        }
    }
    (rows, calls)
}

/// Writes the page for the replay of the dump at `file` to `target` (or
/// `replay_report_<stamp>.html` in the output folder); returns its path.
pub(super) fn write(opts: &Options, (file, framework): (&Path, Framework), target: &Option<PathBuf>, rows: &Rows, calls: Vec<HtmlCall>, stacks: &StackView) -> Result<PathBuf, ReportError> {
    let path = target.clone().unwrap_or_else(|| runtime::report::default_html_path(&opts.output_dir));
    let report = HtmlReport {
        title: file.display().to_string(),
        framework: framework.as_str().to_string(),
        standard: opts.config.standard.as_str().to_string(),
        tested: if opts.emulate { "emulated device (--emulate)".into() } else { "the dump's recorded outputs where present, else the emulated device (see each Message)".into() },
        command: std::env::args().map(|a| if a.contains(' ') { format!("'{a}'") } else { a }).collect::<Vec<_>>().join(" "),
        generated: runtime::report::stamp_now(),
        stack_note: stacks.note.clone(),
        repro: repro_command(framework, file),
        details: &rows.details,
        calls,
    };
    write_html(&path, &report)?;
    Ok(path)
}

/// The command that writes a call's repro script from this dump of
/// `framework` (with its `-f`), with `{API_RE}` where the page puts the
/// call's name as a regex (`^Torch\.matmul\.0$`).
fn repro_command(framework: Framework, dump: &Path) -> String {
    format!(
        "msprobe -f {} op_generate -i config_op.json -o ./op_repro --filter '{{API_RE}}'   # config_op.json: {{\"dump_json_path\": \"{}\"}}",
        framework.flag().as_str(),
        dump.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_repro_command_takes_the_flag() {
        let head = |fw| repro_command(fw, Path::new("d.json")).split("   #").next().unwrap().to_string();
        assert_eq!(head(Framework::MindSpore), "msprobe -f mindspore op_generate -i config_op.json -o ./op_repro --filter '{API_RE}'");
        assert_eq!(head(Framework::MindTorch), "msprobe -f mindspore op_generate -i config_op.json -o ./op_repro --filter '{API_RE}'");
    }
}
