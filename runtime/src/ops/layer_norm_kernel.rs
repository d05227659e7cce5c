//! Layer normalization in float64 as one kernel, forward and backward, with
//! the arithmetic of the composite it replaces (`nn::layer_norm`'s candle
//! ops and candle's autograd of them) in the same order, so the bench's
//! values and gradients do not change by a bit. The composite allocates
//! and differentiates a dozen full-size intermediates, and autograd adds
//! each gradient into a fresh zero tensor: most of a GPT-2 layer_norm
//! call's time went to page faults. Each row (the trailing `n` elements)
//! is one pass of its own, rows in parallel; a row's mean and variance are
//! sums in element order, eight rows' side by side (each sum is a chain of
//! dependent additions: eight chains overlap). The weight's and bias's
//! gradients sum over rows in row order, as candle's reduction does, in
//! column blocks whose columns add side by side. Other dtypes (the
//! emulated device's float32) keep the composite, whose reductions are
//! candle's own.

use candle_core::{CpuStorage, CustomOp3, DType, Layout, Shape, Tensor};
use rayon::prelude::*;

use crate::device::{host_values, with_host_values};

/// Autograd's sum into zeros: `0 + v`, which makes a -0 +0.
fn z(v: f64) -> f64 {
    0.0 + v
}

/// Columns of one block of the weight's and bias's row sums.
const COLUMNS: usize = 64;

/// Layer normalization of a contiguous float64 `[rows, n]` input by rows,
/// with a weight and a bias of `n` elements each when the call has them
/// (otherwise the operands in their places are not read).
struct LayerNorm {
    eps: f64,
    weight: bool,
    bias: bool,
}

/// A row's mean and `sqrt(var + eps)` (biased variance), as the composite
/// computes them: `sum * (1/n) + 0` of sums from zero in element order.
fn statistics(row: &[f64], eps: f64) -> (f64, f64) {
    let mut out = [(0.0, 0.0)];
    rows_statistics::<1>([row], eps, &mut out);
    out[0]
}

/// Rows whose sums run side by side in [`block_statistics`].
const ROWS: usize = 8;

/// Rows a parallel task takes: a block of [`ROWS`] where there are blocks
/// enough for every thread twice, else one (a few long rows keep every
/// thread busy). Either way each row's values are the same.
fn rows_per_task(rows: usize) -> usize {
    if rows >= 2 * ROWS * rayon::current_num_threads() {
        ROWS
    } else {
        1
    }
}

/// [`statistics`] of each row of `x` (whole rows of `n`) into `out`, `ROWS`
/// rows at a time: each row's sums still add its elements in order from
/// zero, and the rows' independent additions overlap (one row's sum is a
/// chain of additions, each waiting on the last).
fn block_statistics(x: &[f64], n: usize, eps: f64, out: &mut [(f64, f64)]) {
    let whole = x.len() / (ROWS * n) * ROWS;
    for (block, out) in x.chunks_exact(ROWS * n).zip(out.chunks_exact_mut(ROWS)) {
        rows_statistics::<ROWS>(std::array::from_fn(|r| &block[r * n..(r + 1) * n]), eps, out);
    }
    for (row, out) in x[whole * n..].chunks_exact(n).zip(&mut out[whole..]) {
        *out = statistics(row, eps);
    }
}

/// [`statistics`] of `R` rows of one length, side by side.
fn rows_statistics<const R: usize>(rows: [&[f64]; R], eps: f64, out: &mut [(f64, f64)]) {
    let n = rows[0].len();
    let inv = 1.0 / n as f64;
    let mut sum = [0.0; R];
    for j in 0..n {
        for (s, row) in sum.iter_mut().zip(&rows) {
            *s += row[j];
        }
    }
    let mean = sum.map(|s| s * inv + 0.0);
    let mut squares = [0.0; R];
    for j in 0..n {
        for ((s, row), &mean) in squares.iter_mut().zip(&rows).zip(&mean) {
            let c = row[j] - mean;
            *s += c * c;
        }
    }
    for r in 0..R {
        let var = squares[r] * inv + 0.0;
        out[r] = (mean[r], (var * 1.0 + eps).sqrt());
    }
}

impl LayerNorm {
    fn forward(&self, x: &[f64], w: &[f64], b: &[f64], n: usize) -> Vec<f64> {
        let mut y = crate::heap::filled(0.0, x.len());
        let rows = rows_per_task(x.len() / n);
        y.par_chunks_mut(rows * n).zip(x.par_chunks(rows * n)).for_each(|(y, x)| {
            let mut stats = [(0.0, 0.0); ROWS];
            block_statistics(x, n, self.eps, &mut stats);
            for ((y, x), &(mean, sd)) in y.chunks_mut(n).zip(x.chunks(n)).zip(&stats) {
                for (j, (y, &v)) in y.iter_mut().zip(x).enumerate() {
                    let mut out = (v - mean) / sd;
                    if self.weight {
                        out *= w[j];
                    }
                    if self.bias {
                        out += b[j];
                    }
                    *y = out;
                }
            }
        });
        y
    }

    /// The input's, weight's and bias's gradients under the output
    /// gradient `dy`, as candle's autograd of the composite gives them.
    fn backward(&self, x: &[f64], w: &[f64], dy: &[f64], n: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let inv = 1.0 / n as f64;
        // The output's gradient and the normalized input's (through the weight's product).
        let g_out = |i: usize| z(dy[i]);
        let g_xh = |i: usize, j: usize| if self.weight { z(g_out(i) * w[j]) } else { g_out(i) };
        let mut stats = vec![(0.0, 0.0); x.len() / n];
        let rows = rows_per_task(stats.len());
        stats.par_chunks_mut(rows).zip(x.par_chunks(rows * n)).for_each(|(out, x)| block_statistics(x, n, self.eps, out));
        let mut dx = crate::heap::filled(0.0, x.len());
        dx.par_chunks_mut(n).zip(x.par_chunks(n)).enumerate().for_each(|(r, (dx, x))| {
            let ((mean, sd), at) = (stats[r], r * n);
            // xh = c / sd: the divisor's gradient, summed over the row from zero.
            let mut g_sd = 0.0;
            for (j, &v) in x.iter().enumerate() {
                let c = v - mean;
                g_sd += 0.0 - (g_xh(at + j, j) * c) / (sd * sd);
            }
            let g_ve = z(z(g_sd) / sd * 0.5 + 0.0);
            let g_var = z(g_ve * 1.0 + 0.0);
            let g_sq = z(z(g_var * inv + 0.0));
            // c's gradient from the quotient and from the square; the mean's from the difference.
            let mut g_mean = 0.0;
            for (j, (d, &v)) in dx.iter_mut().zip(x).enumerate() {
                let c = v - mean;
                let g_c = g_xh(at + j, j) / sd + ((c * g_sq) * 2.0 + 0.0);
                *d = g_c;
                g_mean += 0.0 - g_c;
            }
            let g_s1 = z(z(g_mean) * inv + 0.0);
            dx.iter_mut().for_each(|d| *d = z(z(*d) + g_s1));
        });
        // Per column, over rows in order from zero: Σ g_out·xh and Σ g_out,
        // each in an array of its own (a block's columns add side by side).
        let (mut dw, mut db) = (vec![0.0; n], vec![0.0; n]);
        dw.par_chunks_mut(COLUMNS).zip(db.par_chunks_mut(COLUMNS)).enumerate().for_each(|(block, (dw, db))| {
            let first = block * COLUMNS;
            for (r, &(mean, sd)) in stats.iter().enumerate() {
                let at = r * n + first;
                let (row, dy) = (&x[at..at + dw.len()], &dy[at..at + dw.len()]);
                for (((w, b), &v), &g) in dw.iter_mut().zip(db.iter_mut()).zip(row).zip(dy) {
                    let g = z(g);
                    *w += g * ((v - mean) / sd);
                    *b += g;
                }
            }
        });
        dw.iter_mut().chain(db.iter_mut()).for_each(|s| *s = z(*s));
        (dx, dw, db)
    }
}

impl CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "layer_norm"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout, s3: &CpuStorage, l3: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let n = l1.dims().last().copied().unwrap_or(1);
        let x = host_values::<f64>("layer_norm", s1, l1)?;
        let (w, b) = (host_values::<f64>("layer_norm", s2, l2)?, host_values::<f64>("layer_norm", s3, l3)?);
        Ok((CpuStorage::F64(self.forward(x, w, b, n)), l1.shape().clone()))
    }

    fn bwd(&self, x: &Tensor, w: &Tensor, _b: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (x, w, dy) = (x.detach().contiguous()?, w.detach().contiguous()?, dy.detach().contiguous()?);
        let (dx, dw, db) = gradients_of(self, &x, &w, &dy)?;
        Ok((Some(dx), self.weight.then_some(dw), self.bias.then_some(db)))
    }
}

/// [`LayerNorm::backward`] as tensors (`x` `[rows, n]`, `w` and the gradients of `w` and `b` `[n]`).
fn gradients_of(op: &LayerNorm, x: &Tensor, w: &Tensor, dy: &Tensor) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
    let n = x.dims().last().copied().unwrap_or(1);
    let (dx, dw, db) = with_host_values("layer_norm", [x, w, dy], |[xv, wv, gv]| Ok(op.backward(xv, wv, gv, n)))?;
    let device = x.device();
    Ok((Tensor::from_vec(dx, x.shape(), device)?, Tensor::from_vec(dw, n, device)?, Tensor::from_vec(db, n, device)?))
}

/// The kernel's operands: `x` as `[rows, n]`, the weight and bias as `[n]`
/// (ones and zeros in the places of absent ones), where the kernel applies
/// (float64 on the host, parameters of `n` float64 elements, `n > 0`).
fn operands(x: &Tensor, n: usize, weight: Option<&Tensor>, bias: Option<&Tensor>) -> candle_core::Result<Option<(Tensor, Tensor, Tensor)>> {
    let fits = |p: Option<&Tensor>| p.is_none_or(|p| p.dtype() == DType::F64 && p.elem_count() == n);
    if x.dtype() != DType::F64 || !crate::device::is_host(x) || n == 0 || !x.elem_count().is_multiple_of(n) || !fits(weight) || !fits(bias) {
        return Ok(None);
    }
    let param = |p: Option<&Tensor>, ones: bool| match p {
        Some(p) => p.flatten_all()?.contiguous(),
        None if ones => Tensor::ones(n, DType::F64, x.device()),
        None => Tensor::zeros(n, DType::F64, x.device()),
    };
    Ok(Some((x.reshape((x.elem_count() / n, n))?.contiguous()?, param(weight, true)?, param(bias, false)?)))
}

/// Layer normalization of `x` over its trailing `n` elements (the
/// normalized shape's), with the optional per-element weight and bias: the
/// kernel for a float64 host `x`, `None` otherwise.
pub(super) fn fused_layer_norm(x: &Tensor, n: usize, weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> candle_core::Result<Option<Tensor>> {
    let Some((x2, w, b)) = operands(x, n, weight, bias)? else { return Ok(None) };
    let op = LayerNorm { eps, weight: weight.is_some(), bias: bias.is_some() };
    x2.apply_op3(&w, &b, op)?.reshape(x.dims()).map(Some)
}

/// The gradients of [`fused_layer_norm`]'s input, weight and bias (the
/// latter two `None` where the call has none, in their own shapes) under the
/// output gradient `dy` (the input's shape and dtype), without autograd:
/// what autograd gives through the kernel, bit for bit. `None` where the
/// kernel does not apply.
#[allow(clippy::type_complexity)]
pub(super) fn fused_layer_norm_gradients(
    x: &Tensor,
    n: usize,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    dy: &Tensor,
    eps: f64,
) -> candle_core::Result<Option<(Tensor, Option<Tensor>, Option<Tensor>)>> {
    if dy.dtype() != DType::F64 || dy.dims() != x.dims() {
        return Ok(None);
    }
    let Some((x2, w, _)) = operands(x, n, weight, bias)? else { return Ok(None) };
    let op = LayerNorm { eps, weight: weight.is_some(), bias: bias.is_some() };
    let (dx, dw, db) = gradients_of(&op, &x2, &w, &dy.reshape(x2.dims())?.contiguous()?)?;
    let shaped = |p: Option<&Tensor>, g: Tensor| p.map(|p| g.reshape(p.dims())).transpose();
    Ok(Some((dx.reshape(x.dims())?, shaped(weight, dw)?, shaped(bias, db)?)))
}

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var, D};

    use super::*;

    /// The composite the kernel replaces (`nn::layer_norm`'s).
    fn composite(x: &Tensor, k: usize, w: Option<&Tensor>, b: Option<&Tensor>, eps: f64) -> Tensor {
        let dims = x.dims().to_vec();
        let n: usize = dims[dims.len() - k..].iter().product();
        let flat = x.reshape([dims[..dims.len() - k].to_vec(), vec![n]].concat()).unwrap();
        let mean = flat.mean_keepdim(D::Minus1).unwrap();
        let centered = flat.broadcast_sub(&mean).unwrap();
        let var = centered.sqr().unwrap().mean_keepdim(D::Minus1).unwrap();
        let mut y = centered.broadcast_div(&(var + eps).unwrap().sqrt().unwrap()).unwrap().reshape(dims.as_slice()).unwrap();
        if let Some(w) = w {
            y = y.broadcast_mul(w).unwrap();
        }
        if let Some(b) = b {
            y = y.broadcast_add(b).unwrap();
        }
        y
    }

    fn data(len: usize, k: f64) -> Vec<f64> {
        (0..len).map(|i| ((i * 37 % 23) as f64 - 11.0) * k + (i as f64 * 0.1).sin()).collect()
    }

    fn bits(t: &Tensor) -> Vec<u64> {
        t.flatten_all().unwrap().to_vec1::<f64>().unwrap().iter().map(|v| v.to_bits()).collect()
    }

    /// Forward and every gradient bit for bit against candle's autograd of
    /// the composite, through the op and without autograd: rows of
    /// several lengths (more than a column block), row counts below, at
    /// and past a block of rows summed side by side (1, 3, 4; 8; 10, 21),
    /// a normalized shape of two dims, with and without weight and bias, and a zero gradient
    /// with a negative weight (whose products are -0). On one thread, 16
    /// rows or more go in blocks of eight (21: two blocks and a tail); on
    /// four, every case goes a row at a time.
    #[test]
    fn forward_and_gradients_are_the_composites_bit_for_bit() {
        for threads in [1, 4] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                assert_eq!(rows_per_task(21), if threads == 1 { ROWS } else { 1 });
                composite_cases(threads);
            });
        }
    }

    fn composite_cases(threads: usize) {
        let dev = crate::device::host();
        let cases: [(Vec<usize>, usize); 6] =
            [(vec![2, 5, 7], 1), (vec![3, 130], 1), (vec![4, 3, 6], 2), (vec![9], 1), (vec![1, 8, 70], 1), (vec![3, 7, 9], 1)];
        for (dims, k) in cases {
            let (len, pdims) = (dims.iter().product::<usize>(), dims[dims.len() - k..].to_vec());
            let n: usize = pdims.iter().product();
            for (weight, bias, zero_dy) in [(true, true, false), (false, true, false), (true, false, false), (false, false, false), (true, true, true)] {
                let case = format!("{dims:?} k={k} weight={weight} bias={bias} zero dy={zero_dy}, {threads} threads");
                let x = Tensor::from_vec(data(len, 0.7), dims.as_slice(), &dev).unwrap();
                let w = Tensor::from_vec(if zero_dy { vec![-0.5; n] } else { data(n, 0.3) }, pdims.as_slice(), &dev).unwrap();
                let b = Tensor::from_vec(data(n, 0.2), pdims.as_slice(), &dev).unwrap();
                let g = Tensor::from_vec(if zero_dy { vec![0.0; len] } else { data(len, 1.3) }, dims.as_slice(), &dev).unwrap();
                let vars = |t: &Tensor| Var::from_tensor(t).unwrap();
                let (xa, wa, ba) = (vars(&x), vars(&w), vars(&b));
                let (xb, wb, bb) = (vars(&x), vars(&w), vars(&b));
                let (wa_t, ba_t) = (weight.then(|| wa.as_tensor()), bias.then(|| ba.as_tensor()));
                let ya = fused_layer_norm(xa.as_tensor(), n, wa_t, ba_t, 1e-5).unwrap().unwrap();
                let yb = composite(xb.as_tensor(), k, weight.then(|| wb.as_tensor()), bias.then(|| bb.as_tensor()), 1e-5);
                assert_eq!(bits(&ya), bits(&yb), "{case}: output");
                let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
                let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
                let (direct, dw, db) = fused_layer_norm_gradients(&x, n, weight.then_some(&w), bias.then_some(&b), &g, 1e-5).unwrap().unwrap();
                assert_eq!(bits(ga.get(xa.as_tensor()).unwrap()), bits(gb.get(xb.as_tensor()).unwrap()), "{case}: input's gradient");
                assert_eq!(bits(&direct), bits(gb.get(xb.as_tensor()).unwrap()), "{case}: input's gradient without autograd");
                for (what, on, a, bv, own) in [("weight", weight, &wa, &wb, dw), ("bias", bias, &ba, &bb, db)] {
                    assert_eq!(own.is_some(), on, "{case}: {what}");
                    if let Some(own) = own {
                        let expected = bits(gb.get(bv.as_tensor()).unwrap());
                        assert_eq!(bits(ga.get(a.as_tensor()).unwrap()), expected, "{case}: {what}'s gradient");
                        assert_eq!((own.dims(), bits(&own)), (bv.as_tensor().dims(), expected), "{case}: {what}'s gradient without autograd");
                    }
                }
            }
        }
    }

    #[test]
    fn other_dtypes_and_shapes_are_left_to_the_composite() {
        let dev = crate::device::host();
        let x = Tensor::from_vec(data(12, 0.7), (3, 4), &dev).unwrap();
        assert!(fused_layer_norm(&x.to_dtype(DType::F32).unwrap(), 4, None, None, 1e-5).unwrap().is_none());
        let w = Tensor::from_vec(data(4, 0.3), 4, &dev).unwrap();
        assert!(fused_layer_norm(&x, 4, Some(&w.to_dtype(DType::F32).unwrap()), None, 1e-5).unwrap().is_none());
        assert!(fused_layer_norm(&x, 3, Some(&w), None, 1e-5).unwrap().is_none(), "a weight of another size");
        assert!(fused_layer_norm_gradients(&x, 4, None, None, &x.to_dtype(DType::F32).unwrap(), 1e-5).unwrap().is_none());
    }
}
