//! Progress of long parallel runs (batch `op_generate`, `replay --dump`):
//! an indicatif bar on a terminal; in logs (stderr a file, as under Slurm
//! or Kubernetes) a line at most every [`LINE_INTERVAL`] and one at the
//! end, with the items done, the bytes read, the time taken and an
//! estimate of the time left; or nothing (`--quiet`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The least time between two progress lines in a log.
pub const LINE_INTERVAL: Duration = Duration::from_secs(10);

/// How to report progress on long batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// An indicatif bar (stderr is a terminal).
    Bar,
    /// A line at most every [`LINE_INTERVAL`], and one at the end (logs, CI).
    Lines,
    /// Nothing but errors (`--quiet`).
    Quiet,
}

impl Progress {
    /// `Quiet` with `--quiet`, else a bar on a terminal and lines in a log.
    pub fn for_stderr(quiet: bool) -> Progress {
        use std::io::IsTerminal;
        if quiet {
            Progress::Quiet
        } else if std::io::stderr().is_terminal() {
            Progress::Bar
        } else {
            Progress::Lines
        }
    }
}

/// Counts finished items from any thread and shows it.
pub struct Reporter {
    mode: Progress,
    bar: Option<indicatif::ProgressBar>,
    done: AtomicUsize,
    total: usize,
    /// The estimated work of the items done and of all of them (the
    /// estimate of the time left goes by it; items weigh 1 when unknown).
    work: (AtomicU64, u64),
    bytes: AtomicU64,
    start: Instant,
    /// When the last line was printed.
    last_line: Mutex<Instant>,
    /// The command and the items counted, for the log lines (`replay: 10/100 calls`).
    what: (&'static str, &'static str),
}

impl Reporter {
    /// A reporter of `total` items of `work` estimated work in all (their
    /// weights in [`Reporter::tick`]); `label` names the work on the bar.
    pub fn new(mode: Progress, total: usize, work: u64, label: &str, command: &'static str, items: &'static str) -> Reporter {
        let bar = (mode == Progress::Bar).then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} ({per_sec}, {eta})") {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_message(label.to_string());
            bar
        });
        let start = Instant::now();
        Reporter {
            mode,
            bar,
            done: AtomicUsize::new(0),
            total,
            work: (AtomicU64::new(0), work),
            bytes: AtomicU64::new(0),
            start,
            last_line: Mutex::new(start),
            what: (command, items),
        }
    }

    /// One more item done, of estimated `work`, having read `bytes`.
    pub fn tick(&self, work: u64, bytes: u64) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        self.work.0.fetch_add(work, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        } else if self.mode == Progress::Lines && done < self.total {
            let now = Instant::now();
            let mut last = self.last_line.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if now.duration_since(*last) >= LINE_INTERVAL {
                *last = now;
                eprintln!("{}", self.line(now));
            }
        }
    }

    /// Clears the bar, or prints the last line.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        } else if self.mode == Progress::Lines && self.total > 0 {
            eprintln!("{}", self.line(Instant::now()));
        }
    }

    /// `replay: 12/760 calls, 1.3 GB read, 1m10s elapsed, about 5m02s left`.
    fn line(&self, now: Instant) -> String {
        let done = self.done.load(Ordering::Relaxed);
        let (command, items) = self.what;
        let elapsed = now.duration_since(self.start);
        let bytes = self.bytes.load(Ordering::Relaxed);
        let read = match bytes {
            0 => String::new(),
            1..1_000_000_000 => format!(", {:.1} MB read", bytes as f64 / 1e6),
            _ => format!(", {:.1} GB read", bytes as f64 / 1e9),
        };
        let left = match left(self.work.0.load(Ordering::Relaxed), self.work.1, elapsed) {
            Some(left) if done < self.total => format!(", about {} left", clock(left)),
            _ => String::new(),
        };
        format!("{command}: {done}/{} {items}{read}, {} elapsed{left}", self.total, clock(elapsed))
    }
}

/// The time left when `done` of `total` estimated work took `elapsed`, at
/// the same rate; `None` before any work is done.
fn left(done: u64, total: u64, elapsed: Duration) -> Option<Duration> {
    (done > 0).then(|| elapsed.mul_f64(total.saturating_sub(done) as f64 / done as f64))
}

/// A duration as `1h02m03s`, `2m03s` or `3.4s`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{:.1}s", d.as_secs_f64()),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_goes_by_the_work_done() {
        assert_eq!(left(0, 10, Duration::from_secs(5)), None);
        assert_eq!(left(1, 4, Duration::from_secs(10)), Some(Duration::from_secs(30)));
        assert_eq!(left(4, 4, Duration::from_secs(10)), Some(Duration::ZERO));
    }

    #[test]
    fn durations_read_as_a_clock() {
        assert_eq!(clock(Duration::from_millis(3400)), "3.4s");
        assert_eq!(clock(Duration::from_secs(123)), "2m03s");
        assert_eq!(clock(Duration::from_secs(3723)), "1h02m03s");
    }

    #[test]
    fn a_line_names_the_items_the_bytes_and_the_times() {
        let r = Reporter::new(Progress::Quiet, 4, 4, "x", "replay", "calls");
        r.tick(1, 2_500_000_000);
        let line = r.line(r.start + Duration::from_secs(70));
        assert_eq!(line, "replay: 1/4 calls, 2.5 GB read, 1m10s elapsed, about 3m30s left");
        r.tick(1, 1_000_000);
        assert_eq!(r.line(r.start + Duration::from_secs(80)), "replay: 2/4 calls, 2.5 GB read, 1m20s elapsed, about 1m20s left");
    }
}
