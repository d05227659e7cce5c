//! `einsum` as a general contraction: any equation torch accepts (explicit
//! or implicit output, `...` broadcasting, repeated labels as diagonals),
//! contracted operand by operand from the left as batched matmuls, so that
//! candle's autograd gives the backward and no intermediate holds more than
//! one pair's result.

use std::collections::BTreeMap;

use candle_core::Tensor;

use super::{one, Fact, Op, Rounding, Standard};
use crate::bind::Bound;
use crate::ctx::{operand, result_type, Ctx};
use crate::error::{Error, Result};
use crate::value::Value;

/// A dim's label: a letter, or the i-th of the dims `...` stands for
/// (counted from the right, so that they broadcast as torch's do).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Label {
    Ellipsis(usize),
    Letter(char),
}

/// One side of the equation's terms: letters, with at most one `...`.
fn term(text: &str, rank: Option<usize>) -> Result<Vec<Label>> {
    let bad = || Error::Arg(format!("einsum: invalid subscript {text:?}"));
    let (head, tail, dotted) = match text.split_once("...") {
        Some((h, t)) => (h, t, true),
        None => (text, "", false),
    };
    if tail.contains('.') || head.contains('.') {
        return Err(bad());
    }
    let letters = |s: &str| -> Result<Vec<Label>> { s.chars().map(|c| if c.is_ascii_alphabetic() { Ok(Label::Letter(c)) } else { Err(bad()) }).collect() };
    let (h, t) = (letters(head)?, letters(tail)?);
    let ellipsis = match (dotted, rank) {
        (false, Some(r)) if r != h.len() => return Err(Error::Arg(format!("einsum: subscript {text:?} has {} labels for an operand of rank {r}", h.len()))),
        (true, Some(r)) => {
            r.checked_sub(h.len() + t.len()).ok_or_else(|| Error::Arg(format!("einsum: subscript {text:?} has more labels than its operand's rank {r}")))?
        }
        _ => 0,
    };
    Ok(h.into_iter().chain((0..ellipsis).rev().map(Label::Ellipsis)).chain(t).collect())
}

/// An operand with one label per dim.
struct Labeled {
    t: Tensor,
    labels: Vec<Label>,
}

impl Labeled {
    /// Repeated labels become their diagonal (the element where the
    /// indices agree), as `x * eye` summed over the second one.
    fn diagonals(mut self) -> Result<Labeled> {
        while let Some((p, q)) = (0..self.labels.len()).find_map(|p| ((p + 1)..self.labels.len()).find(|&q| self.labels[q] == self.labels[p]).map(|q| (p, q))) {
            let n = self.t.dims()[p];
            if self.t.dims()[q] != n {
                return Err(Error::Arg(format!("einsum: label repeated over dims of sizes {n} and {}", self.t.dims()[q])));
            }
            let eye = Tensor::eye(n, self.t.dtype(), self.t.device())?;
            let mut shape = vec![1; self.labels.len()];
            shape[p] = n;
            shape[q] = n;
            self.t = self.t.broadcast_mul(&eye.reshape(shape)?)?.sum(q)?;
            self.labels.remove(q);
        }
        Ok(self)
    }

    /// Sums out the labels not in `keep`.
    fn keep_only(mut self, keep: &[Label]) -> Result<Labeled> {
        for i in (0..self.labels.len()).rev() {
            if !keep.contains(&self.labels[i]) {
                self.t = self.t.sum(i)?;
                self.labels.remove(i);
            }
        }
        Ok(self)
    }

    fn size(&self, l: Label) -> Option<usize> {
        self.labels.iter().position(|&m| m == l).map(|i| self.t.dims()[i])
    }

    /// The tensor permuted to `order` and reshaped to the products of `groups` of it.
    fn grouped(&self, order: &[Label], groups: &[usize], sizes: &BTreeMap<Label, usize>) -> Result<Tensor> {
        let perm: Vec<usize> = order.iter().map(|l| self.labels.iter().position(|m| m == l).expect("a label of the operand")).collect();
        let full: Vec<usize> = order.iter().map(|l| sizes[l]).collect();
        let t = self.t.permute(perm)?.broadcast_as(full.as_slice())?.contiguous()?;
        let mut shape = vec![];
        let mut at = 0;
        for &g in groups {
            shape.push(full[at..at + g].iter().product::<usize>());
            at += g;
        }
        Ok(t.reshape(shape)?)
    }
}

/// `a` and `b` contracted over their shared labels not in `keep`, as a batched matmul.
fn contract(ctx: &Ctx, a: Labeled, b: Labeled, keep: &[Label]) -> Result<Labeled> {
    let mut sizes = BTreeMap::new();
    for (l, n) in a.labels.iter().map(|&l| (l, a.size(l))).chain(b.labels.iter().map(|&l| (l, b.size(l)))) {
        let n = n.unwrap_or(1);
        let e = sizes.entry(l).or_insert(n);
        if *e != n && *e != 1 && n != 1 {
            return Err(Error::Arg(format!("einsum: a label over dims of sizes {e} and {n}")));
        }
        *e = (*e).max(n);
    }
    let shared = |l: &Label| b.labels.contains(l);
    let batch: Vec<Label> = a.labels.iter().copied().filter(|l| shared(l) && keep.contains(l)).collect();
    let summed: Vec<Label> = a.labels.iter().copied().filter(|l| shared(l) && !keep.contains(l)).collect();
    let left: Vec<Label> = a.labels.iter().copied().filter(|l| !shared(l)).collect();
    let right: Vec<Label> = b.labels.iter().copied().filter(|l| !a.labels.contains(l)).collect();
    let out: Vec<usize> = batch.iter().chain(&left).chain(&right).map(|l| sizes[l]).collect();
    ctx.fits(&out)?;
    let x = a.grouped(&[&batch[..], &left, &summed].concat(), &[batch.len(), left.len(), summed.len()], &sizes)?;
    let y = b.grouped(&[&batch[..], &summed, &right].concat(), &[batch.len(), summed.len(), right.len()], &sizes)?;
    let t = x.matmul(&y)?.reshape(out)?;
    Ok(Labeled { t, labels: [batch, left, right].concat() })
}

fn einsum(ctx: &Ctx, b: &Bound) -> Result<Vec<Value>> {
    let equation: String = b.str("equation")?.chars().filter(|c| !c.is_whitespace()).collect();
    let values: Vec<&Value> = match b.value("operands") {
        Value::List(items) => items.iter().collect(),
        v => vec![v],
    };
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (equation.as_str(), None),
    };
    let terms: Vec<&str> = lhs.split(',').collect();
    if terms.len() != values.len() {
        return Err(Error::Arg(format!("einsum: {} subscripts for {} operands", terms.len(), values.len())));
    }
    let dtype = result_type(&values)?;
    // torch does not promote einsum's operands.
    if let Some(v) = values.iter().find(|v| v.tensor("operands").is_ok_and(|t| t.dtype != dtype)) {
        return Err(Error::Arg(format!("einsum: operands of different dtypes ({} and {})", v.tensor("operands")?.dtype.name(), dtype.name())));
    }
    let mut operands = vec![];
    for (text, v) in terms.iter().zip(&values) {
        let t = operand(ctx, v, dtype)?;
        operands.push(Labeled { labels: term(text, Some(t.rank()))?, t });
    }
    let ellipsis = operands.iter().flat_map(|o| &o.labels).filter_map(|l| if let Label::Ellipsis(i) = l { Some(i + 1) } else { None }).max().unwrap_or(0);
    let output: Vec<Label> = match rhs {
        Some(r) => {
            let (head, tail) = r.split_once("...").unwrap_or((r, ""));
            let (head, tail) = (term(head, None)?, term(tail, None)?);
            let labels: Vec<Label> =
                if r.contains("...") { head.into_iter().chain((0..ellipsis).rev().map(Label::Ellipsis)).chain(tail).collect() } else { head };
            if labels.iter().enumerate().any(|(i, l)| labels[..i].contains(l)) {
                return Err(Error::Arg(format!("einsum: output subscript {r:?} repeats a label")));
            }
            labels
        }
        None => {
            let mut count: BTreeMap<char, usize> = BTreeMap::new();
            for l in operands.iter().flat_map(|o| &o.labels) {
                if let Label::Letter(c) = l {
                    *count.entry(*c).or_default() += 1;
                }
            }
            (0..ellipsis).rev().map(Label::Ellipsis).chain(count.into_iter().filter(|&(_, n)| n == 1).map(|(c, _)| Label::Letter(c))).collect()
        }
    };
    for l in &output {
        if !operands.iter().any(|o| o.labels.contains(l)) && !matches!(l, Label::Ellipsis(_)) {
            return Err(Error::Arg(format!("einsum: output label {l:?} is in no operand")));
        }
    }
    let mut rest: Vec<Labeled> = operands.into_iter().map(Labeled::diagonals).collect::<Result<_>>()?;
    // Labels needed later: the output's and those of the operands not contracted yet.
    let needed =
        |rest: &[Labeled], skip: usize| -> Vec<Label> { output.iter().copied().chain(rest.iter().skip(skip).flat_map(|o| o.labels.iter().copied())).collect() };
    let first = rest.remove(0);
    let mut acc = first.keep_only(&needed(&rest, 0))?;
    while !rest.is_empty() {
        let next = rest.remove(0);
        let keep = needed(&rest, 0);
        let next = next.keep_only(&[keep.clone(), acc.labels.clone()].concat())?;
        acc = contract(ctx, acc, next, &keep)?.keep_only(&keep)?;
    }
    acc = acc.keep_only(&output)?;
    let present: Vec<Label> = output.iter().copied().filter(|l| acc.labels.contains(l)).collect();
    let perm: Vec<usize> = present.iter().map(|l| acc.labels.iter().position(|m| m == l).expect("an output label")).collect();
    let mut t = acc.t.permute(perm)?;
    // An ellipsis dim no operand has (fewer broadcast dims than others): size 1.
    if present.len() != output.len() {
        let dims: Vec<usize> = output.iter().map(|l| present.iter().position(|m| m == l).map_or(1, |i| t.dims()[i])).collect();
        t = t.reshape(dims)?;
    }
    one(ctx.out(t.contiguous()?, dtype)?)
}

/// The einsum entry.
pub static OPS: &[Op] = &[Op {
    names: &["Torch.einsum", "MS.Functional.einsum"],
    sig: "equation, *operands",
    forward: einsum,
    backward: true,
    standard: Standard::Accuracy,
    random: false,
    facts: &[Fact::Rounding(Rounding::Sums)],
}];
