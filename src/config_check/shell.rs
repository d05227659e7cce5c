//! Hyperparameters from a shell launch script (msprobe's `ShellParser`,
//! rewritten as a small shell reader).
//!
//! The script is split into words and statements as a shell splits it:
//! quotes, backslash escapes, line continuations, comments (a `#` starting
//! a word), `;`, `|`, `&&`, `||`, `&`, redirections (dropped with their
//! targets) and `$(...)`/backquotes (kept as text). Variable assignments
//! (`NAME=value`, `export NAME=value`, `NAME+=value`) are recorded in
//! order; `$NAME`, `${NAME}` and `${NAME:-default}` expand to the value the
//! script gave them before the launch (unquoted expansions split into
//! words, so `$GPT_ARGS` holding several flags yields them all); a variable
//! the script does not set stays as its text (`$LR`). The launch statement
//! is the first one running `torchrun`, `msrun` or `python -m
//! torch.distributed.launch|run`; every `--flag` after the launcher is a
//! hyperparameter: `--key=value`, `--key value`, or `--key` alone (`true`)
//! when the next word is another flag (a negative number such as `-1e-5`
//! is a value) or the training script (the first word ending in `.py`).
//! Values are strings, as msprobe's.

use serde_json::{Map, Value};

/// How deep `${A:-${B:-...}}` defaults are expanded; deeper ones stay text.
const MAX_DEPTH: usize = 16;

/// The hyperparameters of the first launch statement in `script` (empty
/// when there is none).
pub fn parse(script: &str) -> Map<String, Value> {
    let text = script.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut vars: Vec<(String, String)> = Vec::new();
    for words in statements(&text) {
        let mut rest: &[String] = &words;
        if matches!(rest.first().map(String::as_str), Some("export" | "local" | "declare" | "readonly" | "typeset")) {
            rest = &rest[1..];
        }
        while let Some((name, append, value)) = rest.first().and_then(|w| assignment(w)) {
            let mut value = expand_joined(value, &vars);
            if append {
                value = format!("{}{value}", lookup(&vars, name).unwrap_or_default());
            }
            vars.retain(|(n, _)| n != name);
            vars.push((name.to_string(), value));
            rest = &rest[1..];
        }
        let fields: Vec<String> = rest.iter().flat_map(|w| expand_fields(w, &vars)).collect();
        if let Some(start) = launcher(&fields) {
            return flags(&fields[start..]);
        }
    }
    Map::new()
}

/// The index after the launcher word, when `fields` run a distributed launch.
fn launcher(fields: &[String]) -> Option<usize> {
    let base = |f: &str| f.rsplit('/').next().unwrap_or(f).to_string();
    for (i, f) in fields.iter().enumerate() {
        let b = base(f);
        if b == "torchrun" || b == "msrun" {
            return Some(i + 1);
        }
        if (f == "torch.distributed.launch" || f == "torch.distributed.run") && i >= 2 && fields[i - 1] == "-m" {
            let python = fields[..i - 1].iter().any(|p| {
                let b = base(p);
                b.strip_prefix("python").is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
            });
            if python {
                return Some(i + 1);
            }
        }
    }
    None
}

/// The `--flags` of the launch's words.
fn flags(words: &[String]) -> Map<String, Value> {
    let mut out = Map::new();
    let mut script_seen = false;
    let is_script = |w: &str, seen: bool| !seen && w.ends_with(".py") && !w.starts_with('-');
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        let Some(body) = w.strip_prefix("--").filter(|b| !b.is_empty()) else {
            script_seen |= is_script(w, script_seen);
            continue;
        };
        if let Some((key, value)) = body.split_once('=') {
            out.insert(key.to_string(), Value::String(value.to_string()));
            continue;
        }
        let next = words.get(i).map(String::as_str);
        let is_value =
            next.is_some_and(|n| !is_script(n, script_seen) && (!n.starts_with('-') || n[1..].starts_with(|c: char| c.is_ascii_digit() || c == '.')));
        if is_value {
            out.insert(body.to_string(), Value::String(words[i].clone()));
            i += 1;
        } else {
            out.insert(body.to_string(), Value::Bool(true));
        }
    }
    out
}

/// `NAME=value` or `NAME+=value` (raw, unexpanded value).
fn assignment(word: &str) -> Option<(&str, bool, &str)> {
    let eq = word.find('=')?;
    let (name, append) = match word[..eq].strip_suffix('+') {
        Some(n) => (n, true),
        None => (&word[..eq], false),
    };
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    valid.then_some((name, append, &word[eq + 1..]))
}

fn lookup(vars: &[(String, String)], name: &str) -> Option<String> {
    vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

/// The script's statements, each a list of raw words (quotes kept).
fn statements(text: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = text.chars().collect();
    let mut split = Split::default();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' | '`' => {
                let end = closing(&chars, i + 1, c);
                split.extend(&chars[i..end]);
                i = end;
                continue;
            }
            '\\' => {
                split.extend(&chars[i..(i + 2).min(chars.len())]);
                i += 2;
                continue;
            }
            '$' if matches!(chars.get(i + 1), Some('(') | Some('{')) => {
                let end = balanced(&chars, i + 1);
                split.extend(&chars[i..end]);
                i = end;
                continue;
            }
            ' ' | '\t' | '\r' => split.end_word(),
            '\n' | ';' | '|' | '&' | '(' | ')' => split.end_statement(),
            '#' if !split.in_word => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '>' | '<' => i = split.redirect(&chars, i),
            _ => {
                split.word.push(c);
                split.in_word = true;
            }
        }
        i += 1;
    }
    split.end_statement();
    split.out
}

/// What [`statements`] carries from one character to the next: the
/// statements split so far, the words of the current one, and the word
/// being read.
#[derive(Default)]
struct Split {
    out: Vec<Vec<String>>,
    words: Vec<String>,
    word: String,
    in_word: bool,
    /// The next word to end is a redirection's target, dropped.
    skip_target: bool,
}

impl Split {
    /// Adds a piece read whole (a quoted string, an escape, a `$(...)`) to
    /// the word being read.
    fn extend(&mut self, piece: &[char]) {
        self.word.extend(piece);
        self.in_word = true;
    }

    /// Ends the word being read at a blank: kept, or dropped when it is a
    /// redirection's target.
    fn end_word(&mut self) {
        if self.in_word {
            if self.skip_target {
                self.skip_target = false;
            } else {
                self.words.push(std::mem::take(&mut self.word));
            }
        }
        self.word.clear();
        self.in_word = false;
    }

    /// Ends the statement being read at a newline, `;`, `|`, `&` or a
    /// parenthesis (and at the end of the script).
    fn end_statement(&mut self) {
        self.end_word();
        self.skip_target = false;
        if !self.words.is_empty() {
            self.out.push(std::mem::take(&mut self.words));
        }
    }

    /// A redirection whose first `>` or `<` is at `i`: drops the fd number
    /// before it, and its target (a word, to be dropped when read) unless
    /// it duplicates an fd (`>&2`). The index of its last character.
    fn redirect(&mut self, chars: &[char], mut i: usize) -> usize {
        if self.word.chars().all(|d| d.is_ascii_digit()) {
            self.word.clear();
            self.in_word = false;
        }
        self.end_word();
        while matches!(chars.get(i + 1), Some('>') | Some('<')) {
            i += 1;
        }
        if chars.get(i + 1) == Some(&'&') {
            i += 1;
            while chars.get(i + 1).is_some_and(|d| d.is_ascii_digit() || *d == '-') {
                i += 1;
            }
        } else {
            self.skip_target = true;
        }
        i
    }
}

/// The index after the quote closing one opened before `from`.
fn closing(chars: &[char], from: usize, quote: char) -> usize {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '\\' && quote != '\'' {
            i += 2;
            continue;
        }
        if chars[i] == quote {
            return i + 1;
        }
        i += 1;
    }
    chars.len()
}

/// The index after the bracket matching the one at `open` (`(` or `{`).
fn balanced(chars: &[char], open: usize) -> usize {
    let (o, c) = if chars[open] == '(' { ('(', ')') } else { ('{', '}') };
    let mut depth = 0;
    let mut i = open;
    while i < chars.len() {
        match chars[i] {
            '\'' | '"' | '`' => {
                i = closing(chars, i + 1, chars[i]);
                continue;
            }
            '\\' => i += 1,
            x if x == o => depth += 1,
            x if x == c => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// The pieces of a word after expansion: text, and whether it came from an
/// unquoted expansion (and so splits into words).
fn pieces(raw: &str, vars: &[(String, String)], depth: usize) -> Vec<(String, bool)> {
    let chars: Vec<char> = raw.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\'' => {
                let end = closing(&chars, i + 1, '\'');
                out.push((chars[i + 1..end.saturating_sub(1).max(i + 1)].iter().collect(), false));
                i = end;
            }
            '"' => {
                let end = closing(&chars, i + 1, '"');
                let inner = &chars[i + 1..end.saturating_sub(1).max(i + 1)];
                let mut text = String::new();
                let mut j = 0;
                while j < inner.len() {
                    match inner[j] {
                        '\\' if matches!(inner.get(j + 1), Some('$' | '`' | '"' | '\\')) => {
                            text.push(inner[j + 1]);
                            j += 2;
                        }
                        '$' => {
                            let (value, next) = variable(inner, j, vars, depth);
                            text.push_str(&value);
                            j = next;
                        }
                        c => {
                            text.push(c);
                            j += 1;
                        }
                    }
                }
                out.push((text, false));
                i = end;
            }
            '\\' => {
                out.push((chars.get(i + 1).map(char::to_string).unwrap_or_default(), false));
                i += 2;
            }
            '$' => {
                let (value, next) = variable(&chars, i, vars, depth);
                let known = next > i + 1 && !value.starts_with('$');
                out.push((value, known));
                i = next;
            }
            c => {
                out.push((c.to_string(), false));
                i += 1;
            }
        }
    }
    out
}

/// The expansion of the `$` at `at` and the index after it: a set
/// variable's value, else the text as written.
fn variable(chars: &[char], at: usize, vars: &[(String, String)], depth: usize) -> (String, usize) {
    let ident = |c: &char| c.is_ascii_alphanumeric() || *c == '_';
    match chars.get(at + 1) {
        Some('{') => {
            let end = balanced(chars, at + 1);
            let inner: String = chars[at + 2..end.saturating_sub(1).max(at + 2)].iter().collect();
            let (name, default) = match inner.split_once(":-").or_else(|| inner.split_once('-')) {
                Some((n, d)) => (n, Some(d)),
                None => (inner.as_str(), None),
            };
            let simple = !name.is_empty() && name.chars().all(|c| ident(&c)) && !name.starts_with(|c: char| c.is_ascii_digit());
            let text: String = chars[at..end].iter().collect();
            match (simple, lookup(vars, name), default) {
                (true, Some(v), _) if !v.is_empty() || default.is_none() => (v, end),
                (true, _, Some(d)) if depth < MAX_DEPTH => (pieces(d, vars, depth + 1).into_iter().map(|(t, _)| t).collect(), end),
                _ => (text, end),
            }
        }
        Some('(') => {
            let end = balanced(chars, at + 1);
            (chars[at..end].iter().collect(), end)
        }
        Some(c) if c.is_ascii_alphabetic() || *c == '_' => {
            let mut end = at + 1;
            while chars.get(end).is_some_and(ident) {
                end += 1;
            }
            let name: String = chars[at + 1..end].iter().collect();
            (lookup(vars, &name).unwrap_or_else(|| format!("${name}")), end)
        }
        _ => ("$".into(), at + 1),
    }
}

/// A word expanded without splitting (an assignment's value).
fn expand_joined(raw: &str, vars: &[(String, String)]) -> String {
    pieces(raw, vars, 0).into_iter().map(|(t, _)| t).collect()
}

/// A word expanded and split into fields, as an unquoted word on a command line.
fn expand_fields(raw: &str, vars: &[(String, String)]) -> Vec<String> {
    let (mut fields, mut cur, mut has) = (Vec::new(), String::new(), false);
    for (text, splits) in pieces(raw, vars, 0) {
        if !splits {
            cur.push_str(&text);
            has = true;
            continue;
        }
        for c in text.chars() {
            if c.is_whitespace() {
                if has {
                    fields.push(std::mem::take(&mut cur));
                    has = false;
                }
            } else {
                cur.push(c);
                has = true;
            }
        }
    }
    if has {
        fields.push(cur);
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(script: &str) -> Value {
        Value::Object(parse(script))
    }

    #[test]
    fn a_flag_without_value_does_not_swallow_the_next() {
        assert_eq!(parsed("torchrun train.py --no-shuffle --seed 42 --fp16"), json!({"no-shuffle": true, "seed": "42", "fp16": true}));
    }

    #[test]
    fn variables_blocks_and_continuations_expand() {
        let script = r#"#!/bin/bash
# torchrun in a comment is not the launch
export LR=1e-4
GPT_ARGS="
    --num-layers 24 \
    --lr ${LR} --min-lr -1e-5
"
OUT=/tmp/ckpt # where
echo "start" | tee log.txt
torchrun --nproc_per_node 8 --standalone pretrain_gpt.py \
    $GPT_ARGS \
    --save=$OUT --tag "a b" --data ${DATA:-/data/x} --unset $NOPE --bf16 2>&1 | tee train.log
"#;
        assert_eq!(
            parsed(script),
            json!({"nproc_per_node": "8", "standalone": true, "num-layers": "24", "lr": "1e-4", "min-lr": "-1e-5", "save": "/tmp/ckpt", "tag": "a b", "data": "/data/x", "unset": "$NOPE", "bf16": true})
        );
    }

    #[test]
    fn python_m_launch_and_no_launch() {
        assert_eq!(parsed("python3 -m torch.distributed.launch --nproc_per_node=2 train.py --epochs 3"), json!({"nproc_per_node": "2", "epochs": "3"}));
        assert_eq!(parsed("python train.py --lr 1"), json!({}));
        assert_eq!(parsed("msrun --worker_num=8 train.py --mode 'graph' ; echo --after 1"), json!({"worker_num": "8", "mode": "graph"}));
    }
}
