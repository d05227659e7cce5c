//! The recurrent kernels behind `nn.LSTM` and `nn.GRU` (`torch._VF.lstm`,
//! `_VF.gru`, which msprobe records as `VF.lstm` and `VF.gru`): every layer
//! and direction stepped through the sequence with torch's gate order and
//! formulas, so that autograd gives the gradients of the input, the initial
//! state and every weight. Dropout between layers in training is random:
//! refused; so are projections (`proj_size`).

use candle_core::{Tensor, D};

use super::activation::sigmoid_t;
use super::{Op, Standard};
use crate::bind::Bound;
use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::value::Value;

/// Which cell.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    /// Gates i, f, g, o; a hidden and a cell state.
    Lstm,
    /// Gates r, z, n; a hidden state.
    Gru,
}

/// One layer-direction's weights: `w_ih`, `w_hh`, and the biases if any.
struct Weights<'a> {
    w_ih: &'a Tensor,
    w_hh: &'a Tensor,
    b_ih: Option<&'a Tensor>,
    b_hh: Option<&'a Tensor>,
}

/// `x @ wᵀ (+ b)`.
fn affine(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<Tensor> {
    let y = x.matmul(&w.t()?)?;
    Ok(match b {
        Some(b) => y.broadcast_add(b)?,
        None => y,
    })
}

/// One step of `cell` from `x` ([N, I]) and the state; the new state.
fn step(cell: Cell, w: &Weights, x: &Tensor, h: &Tensor, c: Option<&Tensor>) -> Result<(Tensor, Option<Tensor>)> {
    let gi = affine(x, w.w_ih, w.b_ih)?;
    let gh = affine(h, w.w_hh, w.b_hh)?;
    match cell {
        Cell::Lstm => {
            let gates = (gi + gh)?.chunk(4, D::Minus1)?;
            let (i, f, g, o) = (sigmoid_t(&gates[0])?, sigmoid_t(&gates[1])?, gates[2].tanh()?, sigmoid_t(&gates[3])?);
            let c = c.ok_or_else(|| Error::Arg("lstm: no cell state".into()))?;
            let c = ((f * c)? + (i * g)?)?;
            Ok(((o * c.tanh()?)?, Some(c)))
        }
        Cell::Gru => {
            let (xi, hh) = (gi.chunk(3, D::Minus1)?, gh.chunk(3, D::Minus1)?);
            let r = sigmoid_t(&(&xi[0] + &hh[0])?)?;
            let z = sigmoid_t(&(&xi[1] + &hh[1])?)?;
            let n = (&xi[2] + (r * &hh[2])?)?.tanh()?;
            // h' = (1 - z)·n + z·h, as torch writes it: n + z·(h - n).
            Ok(((&n + (z * (h - &n)?)?)?, None))
        }
    }
}

fn recurrent(ctx: &Ctx, b: &Bound, cell: Cell) -> Result<Vec<Value>> {
    let what = if cell == Cell::Lstm { "lstm" } else { "gru" };
    let x = b.tensor("input")?;
    let layers = b.int("num_layers")?.max(1) as usize;
    let dirs = if b.bool("bidirectional")? { 2 } else { 1 };
    if b.bool("train")? && b.float("dropout")? > 0.0 && layers > 1 {
        return Err(Error::Unsupported(format!("{what}: dropout between layers in training draws a random mask, which the dump does not record")));
    }
    let params = b.tensors("params")?;
    let per = if b.bool("has_biases")? { 4 } else { 2 };
    if params.len() != layers * dirs * per {
        return Err(Error::Unsupported(format!(
            "{what}: {} weights for {layers} layers x {dirs} directions (projections, proj_size, are not replayed)",
            params.len()
        )));
    }
    let state = b.tensors("hx").or_else(|_| b.tensor("hx").map(|t| vec![t]))?;
    let (h0, c0) = match (cell, state.as_slice()) {
        (Cell::Lstm, [h, c]) => (h.t.clone(), Some(c.t.clone())),
        (Cell::Gru, [h]) => (h.t.clone(), None),
        _ => return Err(Error::Arg(format!("{what}: {} initial states", state.len()))),
    };
    if x.rank() != 3 {
        return Err(Error::Arg(format!("{what}: expected a 3-D input, got {:?}", x.dims())));
    }
    let batch_first = b.bool("batch_first")?;
    // [L, N, I] throughout.
    let mut seq = if batch_first { x.t.transpose(0, 1)?.contiguous()? } else { x.t.clone() };
    let len = seq.dims()[0];
    let (mut h_n, mut c_n) = (vec![], vec![]);
    for layer in 0..layers {
        let mut outs = vec![];
        for dir in 0..dirs {
            let at = (layer * dirs + dir) * per;
            let w = Weights {
                w_ih: &params[at].t,
                w_hh: &params[at + 1].t,
                b_ih: (per == 4).then(|| &params[at + 2].t),
                b_hh: (per == 4).then(|| &params[at + 3].t),
            };
            let k = layer * dirs + dir;
            let mut h = h0.get(k)?;
            let mut c = c0.as_ref().map(|c| c.get(k)).transpose()?;
            let mut steps = vec![None; len];
            let order: Vec<usize> = if dir == 0 { (0..len).collect() } else { (0..len).rev().collect() };
            for t in order {
                let (h2, c2) = step(cell, &w, &seq.get(t)?, &h, c.as_ref())?;
                steps[t] = Some(h2.clone());
                h = h2;
                c = c2;
            }
            let steps: Vec<Tensor> = steps.into_iter().flatten().collect();
            outs.push(if steps.is_empty() { Tensor::zeros((0, h.dims()[0], h.dims()[1]), h.dtype(), h.device())? } else { Tensor::stack(&steps, 0)? });
            h_n.push(h);
            c_n.extend(c);
        }
        seq = if dirs == 1 { outs.remove(0) } else { Tensor::cat(&outs, 2)? };
    }
    let out = if batch_first { seq.transpose(0, 1)?.contiguous()? } else { seq };
    let mut result = vec![Value::Tensor(ctx.out(out, x.dtype)?), Value::Tensor(ctx.out(Tensor::stack(&h_n, 0)?, x.dtype)?)];
    if cell == Cell::Lstm {
        result.push(Value::Tensor(ctx.out(Tensor::stack(&c_n, 0)?, x.dtype)?));
    }
    Ok(result)
}

/// `torch.lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None)` (hx the
/// hidden and cell states) and `gru_cell` (hx the hidden state): one
/// [`step`] of a `[N, I]` input (torch's functions refuse an unbatched one;
/// `nn.LSTMCell` adds the batch dim before calling them).
fn cell_step(ctx: &Ctx, b: &Bound, cell: Cell) -> Result<Vec<Value>> {
    let what = if cell == Cell::Lstm { "lstm_cell" } else { "gru_cell" };
    let x = b.tensor("input")?;
    if x.rank() != 2 {
        return Err(Error::Arg(format!("{what}: expected a 2-D input (batch x feature), got {:?}", x.dims())));
    }
    let state = b.tensors("hx").or_else(|_| b.tensor("hx").map(|t| vec![t]))?;
    let (h, c) = match (cell, state.as_slice()) {
        (Cell::Lstm, [h, c]) => (&h.t, Some(&c.t)),
        (Cell::Gru, [h]) => (&h.t, None),
        _ => return Err(Error::Arg(format!("{what}: {} states in hx", state.len()))),
    };
    let (b_ih, b_hh) = (b.opt_tensor("b_ih")?, b.opt_tensor("b_hh")?);
    let w = Weights { w_ih: &b.tensor("w_ih")?.t, w_hh: &b.tensor("w_hh")?.t, b_ih: b_ih.map(|t| &t.t), b_hh: b_hh.map(|t| &t.t) };
    let (h, c) = step(cell, &w, &x.t, h, c)?;
    let mut out = vec![Value::Tensor(ctx.out(h, x.dtype)?)];
    if let Some(c) = c {
        out.push(Value::Tensor(ctx.out(c, x.dtype)?));
    }
    Ok(out)
}

/// The recurrent entries: `_VF.lstm` and `_VF.gru`'s input-tensor overloads
/// (`torch.lstm` and `torch.gru` are the same functions), and the cells.
pub static OPS: &[Op] = &[
    Op {
        names: &["VF.lstm", "Torch.lstm"],
        sig: "input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first",
        forward: |c, b| recurrent(c, b, Cell::Lstm),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["VF.gru", "Torch.gru"],
        sig: "input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first",
        forward: |c, b| recurrent(c, b, Cell::Gru),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.lstm_cell"],
        sig: "input, hx, w_ih, w_hh, b_ih=None, b_hh=None",
        forward: |c, b| cell_step(c, b, Cell::Lstm),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
    Op {
        names: &["Torch.gru_cell"],
        sig: "input, hx, w_ih, w_hh, b_ih=None, b_hh=None",
        forward: |c, b| cell_step(c, b, Cell::Gru),
        backward: true,
        standard: Standard::Accuracy,
        random: false,
        facts: &[],
    },
];
