//! The HTML view of a replay (`--html`): each call's record (its rows, its
//! arguments, [`super::args`], and its call stack from the source layer,
//! [`StackView`]) becomes one [`HtmlCall`]; the runtime's [`write_html`]
//! renders the page.

use std::path::{Path, PathBuf};

use runtime::replay::Rows;
use runtime::report::{write_html, HtmlCall, HtmlCulprit, HtmlFrame, HtmlReport, RankBy, ReportError};
use runtime::standard::Standard;

use super::part::CallRecord;
use crate::model::{ApiName, Direction, Framework};
use crate::source::stack::{StackError, Stacks};

/// The call stacks of one dump, and a note saying why there are none.
pub(super) struct StackView {
    stacks: Stacks,
    /// Why there are none, empty when read.
    pub note: String,
}

impl StackView {
    /// The stacks the source layer read, or its note on why it read none.
    pub fn new(read: Result<Stacks, StackError>) -> StackView {
        match read {
            Ok(stacks) => StackView { stacks, note: String::new() },
            Err(e) => StackView { stacks: Stacks::default(), note: format!("no call stacks: {e}") },
        }
    }

    /// The forward call stack of `name`.
    pub fn frames(&self, name: &ApiName) -> Vec<HtmlFrame> {
        let frames = self.stacks.frames(&name.key(Direction::Forward));
        frames.into_iter().map(|f| HtmlFrame { file: f.file, line: f.line, function: f.function, code: f.code, user: f.user }).collect()
    }
}

/// Every call's rows joined in job order, and each call's view for the
/// page: its name, its rows' range, its arguments and its forward call stack.
pub(super) fn join(records: &[CallRecord]) -> (Rows, Vec<HtmlCall>) {
    let mut rows = Rows::default();
    let mut calls = vec![];
    for record in records {
        let start = rows.details.len();
        let own = record.rows();
        rows.details.extend(own.details);
        rows.results.extend(own.results);
        calls.push(HtmlCall { api: record.place.api.clone(), rows: start..rows.details.len(), args: record.args(), stack: record.stack() });
    }
    (rows, calls)
}

/// What the page says of the replay beside its rows.
pub(super) struct Page<'a> {
    /// The dump (or the job's root).
    pub dump: &'a Path,
    /// The framework its calls were read as.
    pub framework: Framework,
    /// The precision standard.
    pub standard: Standard,
    /// `--emulate`.
    pub emulate: bool,
    /// Why some calls show no stack, empty when all were read.
    pub stack_note: String,
    /// The output folder (the page's default place).
    pub output_dir: &'a Path,
    /// What the table puts first.
    pub rank_by: RankBy,
    /// `--from-compare`'s differing calls, own errors first.
    pub culprits: Vec<HtmlCulprit>,
}

/// Writes the page to `target` (or `replay_report_<stamp>.html` in the
/// output folder); returns its path.
pub(super) fn write(page: &Page, target: &Option<PathBuf>, rows: &Rows, calls: Vec<HtmlCall>) -> Result<PathBuf, ReportError> {
    let path = target.clone().unwrap_or_else(|| runtime::report::default_html_path(page.output_dir));
    let report = HtmlReport {
        title: page.dump.display().to_string(),
        framework: page.framework.as_str().to_string(),
        standard: page.standard.as_str().to_string(),
        tested: if page.emulate {
            format!("emulated device (--emulate): {}", runtime::report::tested_split(&rows.details, page.standard))
        } else {
            format!(
                "the dump's recorded outputs where present, else the emulated device (see each Message): {}",
                runtime::report::tested_split(&rows.details, page.standard)
            )
        },
        command: std::env::args().map(|a| if a.contains(' ') { format!("'{a}'") } else { a }).collect::<Vec<_>>().join(" "),
        generated: runtime::report::stamp_now(),
        stack_note: page.stack_note.clone(),
        repro: repro_command(page.framework, page.dump),
        details: &rows.details,
        calls,
        rank_by: page.rank_by,
        culprits: page.culprits.clone(),
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
