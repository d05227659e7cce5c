//! The `random` check (informative; it never decides the exit code): the
//! calls of random functions the dynamic collection recorded per rank
//! (`random/rank<R>.json`: `{op: [{"count": n, "stack": [frames]}]}`),
//! matched by call stack as msprobe matches them: equal depth, and per
//! frame the same file name, the same function, and code lines whose
//! `difflib` ratio keeps the frame's mean score at 0.8 or more. Ops are in
//! file order (msprobe's follow Python's set order).

use std::collections::BTreeMap;

use serde_json::Value;

use super::difflib;
use super::error::ConfigCheckError;
use super::pack::Pack;
use crate::xlsx::{Cell, Level, Table};

/// The sheet's columns (msprobe's).
pub const HEADER: &[&str] = &["op", "rank", "bench_stack", "cmp_stack", "bench_count", "cmp_count", "check_result"];

/// One recorded call site: how often, and its stack (outermost first).
#[derive(Debug, Clone)]
struct Site {
    count: i64,
    stack: Vec<String>,
}

type Ops = Vec<(String, Vec<Site>)>;

/// rank → ops of a pack's `random/rank<R>.json` files.
fn ranks(pack: &Pack) -> Result<BTreeMap<i64, Ops>, ConfigCheckError> {
    let mut out = BTreeMap::new();
    for (name, rel, bytes) in pack.under("random") {
        let Some(id) = rel.strip_prefix("rank").and_then(|r| r.strip_suffix(".json")).filter(|r| !r.contains('/')) else { continue };
        let rank = id.parse::<i64>().ok().filter(|_| id.bytes().all(|b| b.is_ascii_digit())).ok_or_else(|| pack.error(name, "expected random/rank<N>.json"))?;
        let bad = || pack.error(name, "expected {op: [{\"count\": n, \"stack\": [frames]}]}");
        let Value::Object(m) = pack.json(name, bytes)? else { return Err(bad()) };
        let mut ops = Vec::new();
        for (op, sites) in m {
            let sites = sites.as_array().ok_or_else(bad)?;
            let sites: Option<Vec<Site>> = sites
                .iter()
                .map(|s| {
                    Some(Site {
                        count: s.get("count")?.as_i64()?,
                        stack: s.get("stack")?.as_array()?.iter().map(|f| f.as_str().map(str::to_string)).collect::<Option<_>>()?,
                    })
                })
                .collect();
            ops.push((op, sites.ok_or_else(bad)?));
        }
        if out.insert(rank, ops).is_some() {
            return Err(pack.error(name, format!("a second file for rank {rank}")));
        }
    }
    Ok(out)
}

/// `File {path}, line {n}, in {func}, {code}` → (path, func, code), split on
/// single spaces as msprobe splits it (empty when there are 6 words or fewer).
fn frame(f: &str) -> (&str, &str, String) {
    let words: Vec<&str> = f.split(' ').collect();
    if words.len() <= 6 {
        return ("", "", String::new());
    }
    let drop_last = |w: &str| -> usize { w.char_indices().last().map_or(0, |(i, _)| i) };
    (&words[1][..drop_last(words[1])], &words[5][..drop_last(words[5])], words[6..].join(" "))
}

/// msprobe's `stack_match(s1, s2, 0.8)`.
fn stacks_match(s1: &[String], s2: &[String]) -> bool {
    s1.len() == s2.len()
        && s1.iter().zip(s2).all(|(a, b)| {
            let ((p1, f1, c1), (p2, f2, c2)) = (frame(a), frame(b));
            let base = |p: &str| p.rsplit('/').next().unwrap_or("").to_string();
            let path = if p1.is_empty() || p2.is_empty() || base(p1) != base(p2) { 0.0 } else { 1.0 };
            let func = if f1 == f2 { 1.0 } else { 0.0 };
            (path + func + difflib::ratio(&c1, &c2)) / 3.0 >= 0.8
        })
}

/// The random check over two packs.
pub fn compare(bench: &Pack, cmp: &Pack) -> Result<(Level, Table), ConfigCheckError> {
    let (b, c) = (ranks(bench)?, ranks(cmp)?);
    let mut all: Vec<i64> = b.keys().chain(c.keys()).copied().collect();
    all.sort_unstable();
    all.dedup();
    let empty = Vec::new();
    let mut rows = Vec::new();
    let stack = |s: &[String]| Cell::Text(s.join("\n"));
    for rank in all {
        let (bo, co) = (b.get(&rank).unwrap_or(&empty), c.get(&rank).unwrap_or(&empty));
        let mut ops: Vec<&String> = bo.iter().map(|(op, _)| op).collect();
        ops.extend(co.iter().map(|(op, _)| op).filter(|op| !bo.iter().any(|(b, _)| b == *op)));
        for op in ops {
            let sites = |o: &Ops| o.iter().find(|(n, _)| n == op).map(|(_, s)| s.clone()).unwrap_or_default();
            let (bs, cs) = (sites(bo), sites(co));
            for site in &bs {
                match cs.iter().find(|c| stacks_match(&c.stack, &site.stack)) {
                    Some(m) => rows.push(vec![
                        Cell::text(op),
                        Cell::Int(rank),
                        stack(&site.stack),
                        stack(&m.stack),
                        Cell::Int(site.count),
                        Cell::Int(m.count),
                        Cell::Bool(site.count == m.count),
                    ]),
                    None => rows.push(vec![
                        Cell::text(op),
                        Cell::Int(rank),
                        stack(&site.stack),
                        Cell::text("no match stack"),
                        Cell::Int(site.count),
                        Cell::Int(0),
                        Cell::Bool(false),
                    ]),
                }
            }
            for site in cs.iter().filter(|c| !bs.iter().any(|b| stacks_match(&b.stack, &c.stack))) {
                rows.push(vec![
                    Cell::text(op),
                    Cell::Int(rank),
                    Cell::text("no match stack"),
                    stack(&site.stack),
                    Cell::Int(0),
                    Cell::Int(site.count),
                    Cell::Bool(false),
                ]);
            }
        }
    }
    let level = if rows.iter().all(|r| r[6] == Cell::Bool(true)) { Level::Pass } else { Level::Error };
    Ok((level, Table::new(HEADER, rows)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_match_by_file_function_and_similar_code() {
        let s = |f: &str| vec![f.to_string()];
        let a = s("File /a/train.py, line 10, in main, x = torch.rand(3)");
        assert!(stacks_match(&a, &s("File /b/train.py, line 12, in main, x = torch.rand(4)")));
        assert!(!stacks_match(&a, &s("File /a/model.py, line 10, in main, x = torch.rand(3)")));
        assert!(!stacks_match(&a, &[a[0].clone(), a[0].clone()]));
        assert_eq!(frame("File /a/t.py, line 1, in f, y = 1"), ("/a/t.py", "f", "y = 1".to_string()));
    }
}
