//! The HTML report of a replay: one self-contained file (every script and
//! style inline, no network: a Content-Security-Policy forbids any fetch),
//! the page template compiled in (`report.html`), the data embedded as JSON
//! in a `<script type="application/json">` block with `</` escaped, so no
//! dump text can end the block. Written through [`crate::atomic`].

use std::collections::HashMap;
use std::hash::Hash;
use std::path::Path;

use super::{DetailRow, ReportError};
use crate::atomic::{write_atomic, WriteOptions};
use crate::compare::{hist_lower_edge, HIST_BINS};
use crate::pyfmt::{self, Escape, JsonWriter};

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
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
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
    /// What the table puts first (`--rank-by`).
    pub rank_by: super::RankBy,
    /// `replay --from-compare`'s differing calls, own errors first (none otherwise).
    pub culprits: Vec<HtmlCulprit>,
}

/// One differing call of `replay --from-compare`, as the page lists it.
#[derive(Debug, Clone, Default)]
pub struct HtmlCulprit {
    /// `Prefix.op.N`.
    pub api: String,
    /// `own error`, `inherited` or `unjudged`.
    pub blame: String,
    /// The own-error call upstream and how it was found, or empty.
    pub upstream: String,
    /// The call's loss effect.
    pub effect: Option<f64>,
}

/// Texts (or frames) stored once, by first appearance: each is written
/// once in the data and referred to by its index.
struct Interned<'a, K: ?Sized> {
    items: Vec<&'a K>,
    ids: HashMap<&'a K, usize>,
}

impl<'a, K: Eq + Hash + ?Sized> Interned<'a, K> {
    fn new() -> Self {
        Interned { items: vec![], ids: HashMap::new() }
    }

    /// The index of `item`, stored on its first appearance.
    fn id(&mut self, item: &'a K) -> usize {
        *self.ids.entry(item).or_insert_with(|| {
            self.items.push(item);
            self.items.len() - 1
        })
    }
}

/// A number of the page, or `null` for none; non-finite values as strings
/// (`JSON.parse` reads no `NaN` token).
fn number(w: &mut JsonWriter, x: Option<f64>) {
    match x {
        Some(v) if v.is_finite() => w.float(v),
        Some(v) => w.str(&pyfmt::repr(v)),
        None => w.plain("null"),
    }
}

/// The report's data as JSON (ASCII, no `<`): Python's
/// `json.dumps(separators=(",", ":"))` with `<`, `>`, `&` escaped.
pub fn data_json(r: &HtmlReport) -> String {
    let mut w = JsonWriter::compact(Escape::Html);
    w.begin('{');
    for (k, v) in [
        ("title", &r.title),
        ("framework", &r.framework),
        ("standard", &r.standard),
        ("tested", &r.tested),
        ("command", &r.command),
        ("generated", &r.generated),
        ("stackNote", &r.stack_note),
        ("repro", &r.repro),
        ("rankBy", &r.rank_by.as_str().to_string()),
    ] {
        w.key(k);
        w.str(v);
    }
    w.key("histEdges");
    w.begin('[');
    (0..HIST_BINS).for_each(|i| w.float(hist_lower_edge(i)));
    w.end(']');
    // Repeated texts are stored once: a row's message indexes "msgs", a call's frames index "frames".
    let mut msgs = Interned::new();
    w.key("rows");
    rows(&mut w, r, &mut msgs);
    let mut frames = Interned::new();
    w.key("calls");
    calls(&mut w, r, &mut frames);
    w.key("culprits");
    w.begin('[');
    for c in &r.culprits {
        w.begin('[');
        w.str(&c.api);
        w.str(&c.blame);
        w.str(&c.upstream);
        number(&mut w, c.effect);
        w.end(']');
    }
    w.end(']');
    w.key("msgs");
    w.begin('[');
    msgs.items.iter().for_each(|m| w.str(m));
    w.end(']');
    w.key("frames");
    w.begin('[');
    for f in frames.items {
        w.begin('[');
        w.str(&f.file);
        w.plain(f.line);
        w.str(&f.function);
        w.str(&f.code);
        w.plain(u8::from(f.user));
        w.end(']');
    }
    w.end(']');
    w.end('}');
    w.finish()
}

/// The rows as arrays: `[api, benchDtype, testedDtype, shape, cosine,
/// maxAbs, maxRel, status, message, call, hist, callEffect]` (callEffect:
/// |the loss effect of the row's call|, or null: [`super::call_effects`]).
fn rows<'a>(w: &mut JsonWriter, r: &HtmlReport<'a>, msgs: &mut Interned<'a, str>) {
    let mut call_of = vec![0usize; r.details.len()];
    for (ci, c) in r.calls.iter().enumerate() {
        for i in c.rows.clone() {
            if let Some(x) = call_of.get_mut(i) {
                *x = ci;
            }
        }
    }
    let effects = super::call_effects(r.details);
    w.begin('[');
    for ((d, call), effect) in r.details.iter().zip(call_of).zip(effects) {
        w.begin('[');
        w.str(&d.api_name);
        w.str(d.bench_dtype.as_deref().unwrap_or(""));
        w.str(d.tested_dtype.as_deref().unwrap_or(""));
        w.str(&d.shape.as_ref().map(pyfmt::list).unwrap_or_default());
        [d.cosine, d.max_abs, d.max_rel].into_iter().for_each(|x| number(w, x));
        w.str(d.status.as_str());
        w.plain(msgs.id(d.message.as_str()));
        w.plain(call);
        match &d.hist {
            Some(h) => {
                w.begin('[');
                h.iter().for_each(|n| w.plain(n));
                w.end(']');
            }
            None => w.plain("null"),
        }
        number(w, effect);
        w.end(']');
    }
    w.end(']');
}

/// The calls as objects: `{api, rows: [start, end], args: [[name, dtype,
/// shape, min, max]], stack: [frame index]}`.
fn calls<'a>(w: &mut JsonWriter, r: &'a HtmlReport, frames: &mut Interned<'a, HtmlFrame>) {
    w.begin('[');
    for c in &r.calls {
        w.begin('{');
        w.key("api");
        w.str(&c.api);
        w.key("rows");
        w.begin('[');
        w.plain(c.rows.start);
        w.plain(c.rows.end);
        w.end(']');
        w.key("args");
        w.begin('[');
        for a in &c.args {
            w.begin('[');
            [&a.name, &a.dtype, &a.shape, &a.min, &a.max].into_iter().for_each(|s| w.str(s));
            w.end(']');
        }
        w.end(']');
        w.key("stack");
        w.begin('[');
        c.stack.iter().for_each(|f| w.plain(frames.id(f)));
        w.end(']');
        w.end('}');
    }
    w.end(']');
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
        let data = data_json(&r);
        assert!(data.is_ascii());
        let parsed: serde_json::Value = serde_json::from_str(&data).unwrap();
        assert_eq!(parsed["msgs"][0], "</script><script>alert(1)</script> \u{2028} é", "the text survives the escaping");
    }
}
