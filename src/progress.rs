//! Progress of long parallel runs (batch `op_generate`): an indicatif bar
//! on a terminal, a line every 10 % in logs, or nothing.

use std::sync::atomic::{AtomicUsize, Ordering};

/// How to report progress on long batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// An indicatif bar (stderr is a terminal).
    Bar,
    /// A line every 10 % (logs, CI).
    Lines,
    /// Nothing but errors (`--quiet`).
    Quiet,
}

/// Counts finished items from any thread and shows it.
pub struct Reporter {
    mode: Progress,
    bar: Option<indicatif::ProgressBar>,
    done: AtomicUsize,
    total: usize,
    /// The command and the items counted, for the log lines (`op_generate: 10/100 scripts`).
    what: (&'static str, &'static str),
}

impl Reporter {
    /// A reporter of `total` items; `label` names the work on the bar.
    pub fn new(mode: Progress, total: usize, label: &str, command: &'static str, items: &'static str) -> Reporter {
        let bar = (mode == Progress::Bar).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({per_sec}, {eta})") {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.to_string());
            bar
        });
        Reporter { mode, bar, done: AtomicUsize::new(0), total, what: (command, items) }
    }

    /// One more item done.
    pub fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        } else if self.mode == Progress::Lines && self.total >= 10 && done.is_multiple_of(self.total / 10) {
            eprintln!("{}: {done}/{} {}", self.what.0, self.total, self.what.1);
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
