//! batch_norm's rounding magnitudes in closed form. As a Composite op its
//! magnitudes were measured by rerunning it: forward and backward along
//! three sign patterns of each input (uniform, alternating, Thue-Morse),
//! two of its output gradient, and once in float32: 23 runs of a call whose
//! input is a `[8, 64, 112, 112]` activation on a ResNet step (the norms
//! took 4.7 times torch's time with random data). Here each pattern's
//! first-order change is bounded by its terms over absolute values and
//! counted as often as Composite counts it, in one pass; the factor `k` stays
//! Composite's (the rulebook's `composite`). The scripts compute the same
//! (`batch_norm_parts` in `python/msprobe_rs/repro/magnitude.py`).
//!
//! Per channel, over its `N` positions: `x̂ = (x - μ)/σ`, `σ = √(var + eps)`,
//! `y = w·x̂ + b`. A pattern moves each element by its own size with a
//! sign: an element's own term counts by its absolute value, and a sum over
//! the channel's positions by the root of its terms' squares (`rss`, what a
//! sign pattern leaves of it; Composite's patterns measure the same).
//! `A_i` bounds `|δx̂_i|`: in training (batch statistics)
//! `(|x_i| + rss(x)/N + |x̂_i|·rss(x̂·x)/N)/σ`, else (running statistics,
//! per-channel values) `(|x_i| + |μ|)/σ + |x̂_i|·|var|/(2σ²)`. Counted:
//! `y`: `P·|w|·A_i` (P = 2 sign patterns of x in training, whose uniform
//! scaling leaves `x̂` unchanged, 3 otherwise) `+ 3(|w·x̂_i| + |b|)` (w and b,
//! when given) `+ |y_i|` (the float32 run's rounding). With `D` what one
//! pattern of the input moves `Σ dy·x̂` by (in training
//! `(rss(dy·x) + |Σdy|·rss(x)/N + |Σdy·x̂|·rss(x̂·x)/N)/σ`, else
//! `(rss(dy·x) + |Σdy|·|μ|)/σ + |Σdy·x̂|·|var|/(2σ²)`): the input gradient
//! `dx = (w/σ)(dy - mean(dy) - x̂·mean(dy·x̂))` in training `3|dx_i|` (w)
//! `+ 2T_i` (dy's patterns, `T_i = |w|/σ·(|dy_i| + rss(dy)/N + |x̂_i|·rss(dy·x̂)/N)`)
//! `+ 2X_i + |dx_i|` (x's sign patterns and its uniform scaling, which
//! scales σ; `X_i = (rss(x̂·x)/(Nσ))|dx_i| + |w|/σ·(A_i·|mean(dy·x̂)| + |x̂_i|·D/N)`)
//! `+ |dx_i|`; with running statistics `dx = w·dy/σ`:
//! `(3 + 2 + 3|var|/(2σ²) + 1)|dx_i|` (w, dy, the variance, the float32
//! run); the weight gradient `Σ dy·x̂`: `2·rss(dy·x̂) + P·D + |dw|`; the bias
//! gradient `Σ dy`: `2·rss(dy) + |db|`.

use super::PartMagnitudes;
use crate::bind::Bound;
use crate::error::Result;
use crate::value::T;

/// The root of the sum of squares: what a sign pattern leaves of a sum whose
/// terms' signs it makes random, `|Σ p_i·t_i|` (Composite's measure of a sum).
fn rss(terms: impl Iterator<Item = f64>) -> f64 {
    terms.map(|t| t * t).sum::<f64>().sqrt()
}

/// One channel's statistics and parameters.
struct Channel {
    mean: f64,
    sigma: f64,
    /// `|var|/(2σ²)`: the running variance's own sensitivity (0 in training).
    var_term: f64,
    w: f64,
    b: f64,
    /// `(rss(x)/N, rss(x̂·x)/N)` in training (zeros otherwise).
    stats: (f64, f64),
}

/// One call's input laid out by channel, with what the formulas share.
struct Norm {
    xs: Vec<f64>,
    /// `[N, C, S]` of the input (S: the spatial elements).
    shape: (usize, usize, usize),
    channels: Vec<Channel>,
    training: bool,
    /// Composite's pattern counts of x (P), w and b (0 when not given).
    patterns: (f64, f64, f64),
}

impl Norm {
    /// The call's statistics; `None` where the shapes do not allow them.
    fn of(b: &Bound) -> Result<Option<Norm>> {
        let x = b.tensor("input")?;
        let dims = x.dims();
        if dims.len() < 2 || dims[1] == 0 || x.t.elem_count() == 0 {
            return Ok(None);
        }
        let (batch, c, spatial) = (dims[0], dims[1], dims[2..].iter().product::<usize>());
        let per_channel = |name: &str, fill: f64| -> Result<Option<Vec<f64>>> {
            Ok(match b.opt_tensor(name)? {
                Some(p) if p.t.elem_count() == c => Some(p.to_f64_vec()?),
                Some(_) => None,
                None => Some(vec![fill; c]),
            })
        };
        let (Some(w), Some(bias)) = (per_channel("weight", 1.0)?, per_channel("bias", 0.0)?) else { return Ok(None) };
        let count = |present: bool| if present { 3.0 } else { 0.0 };
        let (w_patterns, b_patterns) = (count(b.opt_tensor("weight")?.is_some()), count(b.opt_tensor("bias")?.is_some()));
        let running = match (b.bool("training")?, b.opt_tensor("running_mean")?, b.opt_tensor("running_var")?) {
            (false, Some(m), Some(v)) if m.t.elem_count() == c && v.t.elem_count() == c => Some((m.to_f64_vec()?, v.to_f64_vec()?)),
            (false, _, _) => return Ok(None),
            _ => None,
        };
        let (eps, xs) = (b.float("eps")?, x.to_f64_vec()?);
        let mut norm = Norm { xs, shape: (batch, c, spatial), channels: vec![], training: running.is_none(), patterns: (0.0, w_patterns, b_patterns) };
        norm.patterns.0 = if norm.training { 2.0 } else { 3.0 };
        let n = (batch * spatial) as f64;
        norm.channels = (0..c)
            .map(|ch| {
                let at = || norm.at(ch);
                let (mean, var, var_term) = match &running {
                    Some((m, v)) => (m[ch], v[ch], v[ch].abs() / (2.0 * (v[ch] + eps))),
                    None => {
                        let mean = at().map(|i| norm.xs[i]).sum::<f64>() / n;
                        (mean, at().map(|i| (norm.xs[i] - mean) * (norm.xs[i] - mean)).sum::<f64>() / n, 0.0)
                    }
                };
                let sigma = (var + eps).sqrt();
                let stats = if norm.training {
                    (rss(at().map(|i| norm.xs[i])) / n, rss(at().map(|i| (norm.xs[i] - mean) / sigma * norm.xs[i])) / n)
                } else {
                    (0.0, 0.0)
                };
                Channel { mean, sigma, var_term, w: w[ch], b: bias[ch], stats }
            })
            .collect();
        Ok(Some(norm))
    }

    /// The flat indices of channel `ch`'s positions.
    fn at(&self, ch: usize) -> impl Iterator<Item = usize> {
        let (batch, c, spatial) = self.shape;
        (0..batch).flat_map(move |n| (n * c + ch) * spatial..(n * c + ch + 1) * spatial)
    }

    fn xhat(&self, k: &Channel, i: usize) -> f64 {
        (self.xs[i] - k.mean) / k.sigma
    }

    /// `A` per element and the output's magnitudes.
    fn forward(&self) -> (Vec<f64>, Vec<f64>) {
        let (mut a, mut forward) = (vec![0.0; self.xs.len()], vec![0.0; self.xs.len()]);
        let (p, pw, pb) = self.patterns;
        for (ch, k) in self.channels.iter().enumerate() {
            for i in self.at(ch) {
                let h = self.xhat(k, i);
                a[i] = if self.training {
                    (self.xs[i].abs() + k.stats.0 + h.abs() * k.stats.1) / k.sigma
                } else {
                    (self.xs[i].abs() + k.mean.abs()) / k.sigma + h.abs() * k.var_term
                };
                forward[i] = p * k.w.abs() * a[i] + pw * (k.w * h).abs() + pb * k.b.abs() + (k.w * h + k.b).abs();
            }
        }
        (a, forward)
    }

    /// The input's, weight's and bias's gradient magnitudes for `g` (dy).
    fn gradients(&self, g: &[f64], a: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let c = self.channels.len();
        let (mut dx, mut dw, mut db) = (vec![0.0; self.xs.len()], vec![0.0; c], vec![0.0; c]);
        let (p, pw, _) = self.patterns;
        let n = (self.shape.0 * self.shape.2) as f64;
        for (ch, k) in self.channels.iter().enumerate() {
            let at = || self.at(ch);
            let (sum_dy, sum_dy_xhat) = (at().map(|i| g[i]).sum::<f64>(), at().map(|i| g[i] * self.xhat(k, i)).sum::<f64>());
            let (rss_dy, rss_dy_xhat, rss_dy_x) = (rss(at().map(|i| g[i])), rss(at().map(|i| g[i] * self.xhat(k, i))), rss(at().map(|i| g[i] * self.xs[i])));
            // D: what one sign pattern of the input moves Σ dy·x̂ by.
            let moved = if self.training {
                (rss_dy_x + sum_dy.abs() * k.stats.0 + sum_dy_xhat.abs() * k.stats.1) / k.sigma
            } else {
                (rss_dy_x + sum_dy.abs() * k.mean.abs()) / k.sigma + sum_dy_xhat.abs() * k.var_term
            };
            let scale = k.w.abs() / k.sigma;
            for i in at() {
                let h = self.xhat(k, i);
                dx[i] = if self.training {
                    let grad = (k.w / k.sigma * (g[i] - sum_dy / n - h * sum_dy_xhat / n)).abs();
                    let t = scale * (g[i].abs() + rss_dy / n + h.abs() * rss_dy_xhat / n);
                    let x_term = k.stats.1 / k.sigma * grad + scale * (a[i] * (sum_dy_xhat / n).abs() + h.abs() * moved / n);
                    (pw + 1.0 + 1.0) * grad + 2.0 * t + 2.0 * x_term
                } else {
                    (pw + 2.0 + 3.0 * k.var_term + 1.0) * (k.w * g[i] / k.sigma).abs()
                };
            }
            dw[ch] = 2.0 * rss_dy_xhat + p * moved + sum_dy_xhat.abs();
            db[ch] = 2.0 * rss_dy + sum_dy.abs();
        }
        (dx, dw, db)
    }
}

/// The magnitudes ([module docs](self)); none where the shapes do not
/// allow them (the rows then have no bound).
pub(super) fn batch_norm_parts(b: &Bound, dy: Option<&T>) -> Result<PartMagnitudes> {
    let Some(norm) = Norm::of(b)? else { return Ok((vec![], vec![])) };
    let (a, forward) = norm.forward();
    let Some(dy) = dy.filter(|dy| dy.t.elem_count() == norm.xs.len()) else { return Ok((vec![forward], vec![])) };
    let (dx, dw, db) = norm.gradients(&dy.to_f64_vec()?, &a);
    let mut grads = vec![("input", dx)];
    if norm.patterns.1 > 0.0 {
        grads.push(("weight", dw));
    }
    if norm.patterns.2 > 0.0 {
        grads.push(("bias", db));
    }
    Ok((vec![forward], grads))
}
