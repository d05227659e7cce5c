//! The HTML report of a replay: one self-contained file (every script and
//! style inline, no network: a Content-Security-Policy forbids any fetch),
//! the page template compiled in (`report.html`), the data embedded as JSON
//! in a `<script type="application/json">` block with `</` escaped, so no
//! dump text can end the block. Written through [`crate::atomic`].

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use super::{DetailRow, ReportError};
use crate::atomic::{write_atomic, WriteOptions};
use crate::compare::{hist_lower_edge, HIST_BINS};
use crate::pyfmt::{self, Escape};

/// The page; `/*__DATA__*/` is replaced by the JSON.
const TEMPLATE: &str = include_str!("report.html");
const DATA_MARK: &str = "/*__DATA__*/";

/// One argument (or recorded output) of a call as the dump describes it.
#[derive(Debug, Clone, Default)]
pub struct HtmlArg {
    /// `args[0]`, `kwargs.dim`, `output[0]`.
    pub name: String,
    /// dtype or Python type.
    pub dtype: String,
    /// `[2, 3]`, empty for non-tensors.
    pub shape: String,
    /// Recorded Min (or the value of a scalar).
    pub min: String,
    /// Recorded Max.
    pub max: String,
}

/// One Python frame of a call's stack.
#[derive(Debug, Clone, Default)]
pub struct HtmlFrame {
    /// Source file.
    pub file: String,
    /// Line.
    pub line: u64,
    /// Function.
    pub function: String,
    /// Code line.
    pub code: String,
    /// The user's own code.
    pub user: bool,
}

/// One replayed call: which details rows are its own, and what the dump says of it.
#[derive(Debug, Clone, Default)]
pub struct HtmlCall {
    /// `Prefix.op.N`.
    pub api: String,
    /// The range of its rows in the details.
    pub rows: std::ops::Range<usize>,
    /// Its arguments.
    pub args: Vec<HtmlArg>,
    /// Its forward call stack, user frames first.
    pub stack: Vec<HtmlFrame>,
}

/// Everything the page shows.
#[derive(Debug, Clone, Default)]
pub struct HtmlReport<'a> {
    /// The page title (the dump's path).
    pub title: String,
    /// `pytorch` / `mindspore`.
    pub framework: String,
    /// The precision standard.
    pub standard: String,
    /// What the tested side was (recorded outputs or emulated device).
    pub tested: String,
    /// The command line that made it.
    pub command: String,
    /// When (local time stamp).
    pub generated: String,
    /// A note on the stacks (why there are none), empty when read.
    pub stack_note: String,
    /// The command that writes a call's repro script, `{API_RE}` standing
    /// for the call's name as an anchored regex.
    pub repro: String,
    /// Every details row.
    pub details: &'a [DetailRow],
    /// Every call, in execution order.
    pub calls: Vec<HtmlCall>,
}

/// A JSON string literal, ASCII-only, with `<`, `>` and `&` escaped so
/// that nothing in it can end the `<script>` block.
fn jstr(out: &mut String, s: &str) {
    pyfmt::json_str(out, s, Escape::Html);
}

/// A JSON number, or `null` for none; non-finite values as strings.
fn jnum(out: &mut String, x: Option<f64>) {
    match x {
        Some(v) if v.is_finite() => {
            let _ = write!(out, "{}", pyfmt::repr(v));
        }
        Some(v) => jstr(out, &pyfmt::repr(v)),
        None => out.push_str("null"),
    }
}

/// The report's data as JSON (ASCII, no `<`).
pub fn data_json(r: &HtmlReport) -> String {
    let mut o = String::with_capacity(256 + r.details.len() * 256);
    o.push('{');
    for (k, v) in [("title", &r.title), ("framework", &r.framework), ("standard", &r.standard), ("tested", &r.tested), ("command", &r.command), ("generated", &r.generated), ("stackNote", &r.stack_note), ("repro", &r.repro)] {
        jstr(&mut o, k);
        o.push(':');
        jstr(&mut o, v);
        o.push(',');
    }
    o.push_str("\"histEdges\":[");
    for i in 0..HIST_BINS {
        if i > 0 {
            o.push(',');
        }
        let _ = write!(o, "{:e}", hist_lower_edge(i));
    }
    // Rows as arrays: [api, benchDtype, testedDtype, shape, cosine, maxAbs, maxRel, status, message, call, hist],
    // where message indexes "msgs" and frames index "frames": repeated texts are stored once.
    let mut msgs: Vec<&str> = vec![];
    let mut msg_ids: HashMap<&str, usize> = HashMap::new();
    o.push_str("],\"rows\":[");
    let mut call_of = vec![0usize; r.details.len()];
    for (ci, c) in r.calls.iter().enumerate() {
        for i in c.rows.clone() {
            if let Some(x) = call_of.get_mut(i) {
                *x = ci;
            }
        }
    }
    for (i, d) in r.details.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push('[');
        jstr(&mut o, &d.api_name);
        o.push(',');
        jstr(&mut o, d.bench_dtype.as_deref().unwrap_or(""));
        o.push(',');
        jstr(&mut o, d.tested_dtype.as_deref().unwrap_or(""));
        o.push(',');
        jstr(&mut o, &d.shape.as_ref().map(|s| format!("{s:?}")).unwrap_or_default());
        o.push(',');
        jnum(&mut o, d.cosine);
        o.push(',');
        jnum(&mut o, d.max_abs);
        o.push(',');
        jnum(&mut o, d.max_rel);
        o.push(',');
        jstr(&mut o, d.status.as_str());
        o.push(',');
        let id = *msg_ids.entry(d.message.as_str()).or_insert_with(|| {
            msgs.push(d.message.as_str());
            msgs.len() - 1
        });
        let _ = write!(o, "{id},{},", call_of[i]);
        match &d.hist {
            Some(h) => {
                o.push('[');
                for (j, n) in h.iter().enumerate() {
                    let _ = write!(o, "{}{n}", if j > 0 { "," } else { "" });
                }
                o.push(']');
            }
            None => o.push_str("null"),
        }
        o.push(']');
    }
    let mut frame_ids: HashMap<String, usize> = HashMap::new();
    o.push_str("],\"calls\":[");
    for (ci, c) in r.calls.iter().enumerate() {
        if ci > 0 {
            o.push(',');
        }
        o.push_str("{\"api\":");
        jstr(&mut o, &c.api);
        let _ = write!(o, ",\"rows\":[{},{}],\"args\":[", c.rows.start, c.rows.end);
        for (i, a) in c.args.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            o.push('[');
            for (j, s) in [&a.name, &a.dtype, &a.shape, &a.min, &a.max].into_iter().enumerate() {
                if j > 0 {
                    o.push(',');
                }
                jstr(&mut o, s);
            }
            o.push(']');
        }
        o.push_str("],\"stack\":[");
        for (i, f) in c.stack.iter().enumerate() {
            let mut text = String::from("[");
            jstr(&mut text, &f.file);
            let _ = write!(text, ",{},", f.line);
            jstr(&mut text, &f.function);
            text.push(',');
            jstr(&mut text, &f.code);
            let _ = write!(text, ",{}]", u8::from(f.user));
            let next = frame_ids.len();
            let id = *frame_ids.entry(text).or_insert(next);
            let _ = write!(o, "{}{id}", if i > 0 { "," } else { "" });
        }
        o.push_str("]}");
    }
    o.push_str("],\"msgs\":[");
    for (i, m) in msgs.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        jstr(&mut o, m);
    }
    o.push_str("],\"frames\":[");
    let mut frames: Vec<(&String, &usize)> = frame_ids.iter().collect();
    frames.sort_by_key(|(_, &id)| id);
    for (i, (text, _)) in frames.iter().enumerate() {
        if i > 0 {
            o.push(',');
        }
        o.push_str(text);
    }
    o.push_str("]}");
    o
}

/// The whole page.
pub fn render_html(r: &HtmlReport) -> String {
    let data = data_json(r);
    // Belt and braces: the encoder never emits '<', so `</` cannot occur.
    debug_assert!(!data.contains("</"));
    TEMPLATE.replacen(DATA_MARK, &data.replace("</", "<\\/"), 1)
}

/// Writes the page to `path` (its folder created if missing), atomically, mode 0o640.
pub fn write_html(path: &Path, r: &HtmlReport) -> Result<(), ReportError> {
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        super::create_dir(dir)?;
    }
    write_atomic(path, render_html(r).as_bytes(), WriteOptions::REPORT).map_err(|e| ReportError::Write { path: e.path, source: e.source })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::Status;

    #[test]
    fn hostile_text_cannot_end_the_data_block() {
        let rows = vec![DetailRow::uncompared("A.a.0.forward".into(), Status::Skip, "</script><script>alert(1)</script> \u{2028} é".into())];
        let r = HtmlReport { details: &rows, calls: vec![HtmlCall { api: "A.a.0".into(), rows: 0..1, ..Default::default() }], ..Default::default() };
        let page = render_html(&r);
        let start = page.find("<script type=\"application/json\" id=\"data\">").unwrap();
        let end = page[start..].find("</script>").unwrap() + start;
        let block = &page[start..end];
        assert!(!block.contains("alert(1)</") && block.contains("\\u003c/script\\u003e"));
        assert!(page.contains("default-src 'none'"));
        assert!(data_json(&r).is_ascii());
    }
}
