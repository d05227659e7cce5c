//! The inner nodes whose output gradients msprobe (8.3.2, PyTorch dumps)
//! records as some losses' input gradients: `cross_entropy`'s inner
//! `log_softmax`, `l1_loss`'s inner `abs`. The op-table entries name them
//! ([`super::Fact::InnerGradient`]); the replay judges a recorded gradient
//! that fails against the op's own gradient against these, and says so.

use super::InnerGradient;
use crate::bind::Bound;
use crate::error::Result;
use crate::value::T;

/// cross_entropy's inner `log_softmax`.
pub(super) const CROSS_ENTROPY: InnerGradient = InnerGradient {
    grad: cross_entropy_inner_grad,
    note: "msprobe quirk: the recorded gradient is the one w.r.t. cross_entropy's inner log_softmax output; compared with that gradient",
};

/// l1_loss's inner `abs`.
pub(super) const L1_LOSS: InnerGradient = InnerGradient {
    grad: l1_loss_inner_grad,
    note: "msprobe quirk: the recorded gradient is the one w.r.t. l1_loss's inner abs output; compared with that gradient",
};

/// The gradient w.r.t. cross_entropy's inner `log_softmax` output, as f64
/// values shaped like the input: what `nll_loss`'s backward gives for the
/// dumped output gradient `g`. `None` when the call is outside what is
/// recognised (label smoothing, inputs of rank above 2).
fn cross_entropy_inner_grad(b: &Bound, g: &T) -> Result<Option<Vec<f64>>> {
    let (x, target) = (b.tensor("input")?, b.tensor("target")?);
    if b.float("label_smoothing").unwrap_or(0.0) != 0.0 || x.rank() == 0 || x.rank() > 2 {
        return Ok(None);
    }
    let c = *x.dims().last().unwrap_or(&1);
    let n = x.t.elem_count() / c.max(1);
    let weight = match b.opt_tensor("weight")? {
        Some(w) => w.to_f64_vec()?,
        None => vec![1.0; c],
    };
    let g = g.to_f64_vec()?;
    // Anything off the shapes torch accepts is not this quirk.
    if weight.len() != c || g.is_empty() {
        return Ok(None);
    }
    let reduction = b.str("reduction")?;
    let t = target.to_f64_vec()?;
    let mut inner = vec![0.0; n * c];
    if target.dtype.is_float() {
        // Class probabilities: loss_i = -Σ_c w_c t_ic logp_ic, mean over N.
        if t.len() != n * c {
            return Ok(None);
        }
        for i in 0..n {
            let s = match reduction {
                "none" => g.get(i).copied().unwrap_or(0.0),
                "sum" => g[0],
                _ => g[0] / n as f64,
            };
            for k in 0..c {
                inner[i * c + k] = -weight[k] * t[i * c + k] * s;
            }
        }
        return Ok(Some(inner));
    }
    let ignore = b.int("ignore_index").unwrap_or(-100);
    let valid = |ti: f64| ti as i64 != ignore && ti >= 0.0 && (ti as usize) < c;
    let total: f64 = t.iter().filter(|&&ti| valid(ti)).map(|&ti| weight[ti as usize]).sum();
    for (i, &ti) in t.iter().enumerate().take(n) {
        if !valid(ti) {
            continue;
        }
        let s = match reduction {
            "none" => g.get(i).copied().unwrap_or(0.0),
            "sum" => g[0],
            _ => g[0] / total,
        };
        inner[i * c + ti as usize] = -weight[ti as usize] * s;
    }
    Ok(Some(inner))
}

/// The gradient w.r.t. l1_loss's inner `abs(input - target)` output, as
/// f64 values shaped like the input: the reduction's backward of the dumped
/// output gradient `g`. `None` when the shapes are not the plain case.
fn l1_loss_inner_grad(b: &Bound, g: &T) -> Result<Option<Vec<f64>>> {
    let x = b.tensor("input")?;
    let n = x.t.elem_count();
    let g = g.to_f64_vec()?;
    Ok(match (b.str("reduction")?, g.as_slice()) {
        ("none", g) if g.len() == n => Some(g.to_vec()),
        ("sum", [g]) => Some(vec![*g; n]),
        ("mean", [g]) if n > 0 => Some(vec![*g / n as f64; n]),
        _ => None,
    })
}
