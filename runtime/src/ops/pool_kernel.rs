//! 2-D max pooling as one kernel with its backward. The gather of every
//! window (`pool::windows`) materializes `[N, C, OH·OW, KH·KW]`, an argmax
//! and a gather over it, and differentiates through the gather's
//! scatter-add: 9 s a run on a ResNet stem's `[8, 64, 112, 112]`. Here each
//! output is the first maximum of its window in kernel order (padding is
//! never picked), as in torch, and the gradient goes to that element. The
//! forward keeps each window's pick for the backward, as torch keeps its
//! indices: finding them is most of the work.

use std::sync::OnceLock;

use candle_core::{CpuStorage, CustomOp1, DType, Layout, Shape, Tensor, WithDType};
use rayon::prelude::*;

use crate::device::{host_values, with_host_values};

fn msg(m: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("max_pool2d: {m}"))
}

/// Max pooling of a `[N, C, H, W]` input: kernel, stride, padding and
/// dilation per spatial dim.
#[derive(Debug, Clone, Copy)]
pub(super) struct MaxPool {
    /// Kernel size.
    pub k: [usize; 2],
    /// Stride.
    pub s: [usize; 2],
    /// Padding on each side.
    pub p: [usize; 2],
    /// Dilation.
    pub d: [usize; 2],
}

impl MaxPool {
    /// The output's spatial sizes for an `h × w` input (the windows fit: `pool::windows` checked).
    fn out(&self, h: usize, w: usize) -> (usize, usize) {
        let size = |n: usize, i: usize| (n + 2 * self.p[i] - (self.d[i] * (self.k[i] - 1) + 1)) / self.s[i] + 1;
        (size(h, 0), size(w, 1))
    }

    /// The input positions along spatial dim `dim` (of size `n`) of each
    /// output's window, in kernel order, padding left out: `out` runs of
    /// indices into the returned list, as (start, end).
    fn taps(&self, dim: usize, n: usize, out: usize) -> (Vec<usize>, Vec<(usize, usize)>) {
        let (mut at, mut runs) = (Vec::with_capacity(out * self.k[dim]), Vec::with_capacity(out));
        for o in 0..out {
            let start = at.len();
            let first = o * self.s[dim];
            at.extend((0..self.k[dim]).filter_map(|i| (first + i * self.d[dim]).checked_sub(self.p[dim]).filter(|&y| y < n)));
            runs.push((start, at.len()));
        }
        (at, runs)
    }

    /// For each output of one `h × w` plane, the index in the plane of its
    /// window's first maximum (a NaN wins and stays, as torch propagates
    /// it), written into `at`.
    fn argmax<T: WithDType + PartialOrd>(&self, plane: &[T], h: usize, w: usize, at: &mut [u32]) {
        let (oh, ow) = self.out(h, w);
        let ((ys, yruns), (xs, xruns)) = (self.taps(0, h, oh), self.taps(1, w, ow));
        let mut picks = at.iter_mut();
        for &(y0, y1) in &yruns {
            let rows = &ys[y0..y1];
            for &(x0, x1) in &xruns {
                let cols = &xs[x0..x1];
                let Some(pick) = picks.next() else { return };
                let (Some(&y), Some(&x)) = (rows.first(), cols.first()) else {
                    *pick = 0;
                    continue;
                };
                let (mut best_at, mut best) = (y * w + x, plane[y * w + x]);
                for &y in rows {
                    let row = &plane[y * w..(y + 1) * w];
                    for &x in cols {
                        let v = row[x];
                        // Strictly greater, or the first NaN (v != v) over a number: later
                        // ties and later NaNs leave the pick as it is.
                        #[allow(clippy::eq_op)]
                        if v > best || (v != v && best == best) {
                            (best_at, best) = (y * w + x, v);
                        }
                    }
                }
                *pick = best_at as u32;
            }
        }
    }

    /// Every plane's picks ([`MaxPool::argmax`]), planes of `h × w` in order.
    fn picks<T: WithDType + PartialOrd>(&self, x: &[T], h: usize, w: usize) -> Vec<u32> {
        let (oh, ow) = self.out(h, w);
        let mut at = crate::heap::filled(0u32, x.len() / (h * w).max(1) * oh * ow);
        if oh * ow > 0 {
            at.par_chunks_mut(oh * ow).zip(x.par_chunks(h * w)).for_each(|(at, plane)| self.argmax(plane, h, w, at));
        }
        at
    }
}

/// A [`MaxPool`] applied once: its forward keeps the picks its backward
/// sends the gradient to.
struct Applied {
    pool: MaxPool,
    picks: OnceLock<Vec<u32>>,
}

impl Applied {
    /// The forward's picks, or found again from `x` (a backward with no forward before it).
    fn picks_of<T: WithDType + PartialOrd>(&self, x: &[T], h: usize, w: usize) -> &[u32] {
        self.picks.get_or_init(|| self.pool.picks(x, h, w))
    }
}

fn forward<T: WithDType>(x: &[T], picks: &[u32], h: usize, w: usize) -> Vec<T> {
    let per_plane = picks.len() / (x.len() / (h * w).max(1)).max(1);
    let mut y = crate::heap::filled(T::zero(), picks.len());
    if per_plane > 0 {
        y.par_chunks_mut(per_plane).zip(picks.par_chunks(per_plane)).zip(x.par_chunks(h * w)).for_each(|((y, at), plane)| {
            for (y, &at) in y.iter_mut().zip(at) {
                *y = plane[at as usize];
            }
        });
    }
    y
}

fn backward<T: WithDType>(x_len: usize, picks: &[u32], dy: &[T], h: usize, w: usize) -> Vec<T> {
    let per_plane = picks.len() / (x_len / (h * w).max(1)).max(1);
    let mut dx = crate::heap::filled(T::zero(), x_len);
    if per_plane > 0 {
        dx.par_chunks_mut(h * w).zip(picks.par_chunks(per_plane)).zip(dy.par_chunks(per_plane)).for_each(|((dx, at), dy)| {
            for (&g, &at) in dy.iter().zip(at) {
                dx[at as usize] += g;
            }
        });
    }
    dx
}

impl CustomOp1 for Applied {
    fn name(&self) -> &'static str {
        "max_pool2d"
    }

    fn cpu_fwd(&self, storage: &CpuStorage, layout: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (n, c, h, w) = layout.shape().dims4()?;
        let (oh, ow) = self.pool.out(h, w);
        let y = match storage {
            CpuStorage::F64(_) => {
                let x = host_values::<f64>("max_pool2d", storage, layout)?;
                CpuStorage::F64(forward(x, self.picks_of(x, h, w), h, w))
            }
            CpuStorage::F32(_) => {
                let x = host_values::<f32>("max_pool2d", storage, layout)?;
                CpuStorage::F32(forward(x, self.picks_of(x, h, w), h, w))
            }
            _ => return Err(msg("a float32 or float64 input expected")),
        };
        Ok((y, Shape::from((n, c, oh, ow))))
    }

    fn bwd(&self, x: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<Option<Tensor>> {
        let (x, dy) = (x.detach().contiguous()?, dy.detach().contiguous()?);
        let (_, _, h, w) = x.dims4()?;
        let n = x.elem_count();
        let dx = match x.dtype() {
            DType::F64 => Tensor::from_vec(
                with_host_values("max_pool2d", [&x, &dy], |[xv, g]| Ok(backward::<f64>(n, self.picks_of(xv, h, w), g, h, w)))?,
                x.shape(),
                x.device(),
            )?,
            DType::F32 => Tensor::from_vec(
                with_host_values("max_pool2d", [&x, &dy], |[xv, g]| Ok(backward::<f32>(n, self.picks_of(xv, h, w), g, h, w)))?,
                x.shape(),
                x.device(),
            )?,
            _ => return Err(msg("a float32 or float64 input expected")),
        };
        Ok(Some(dx))
    }
}

/// Max pooling of a batched `[N, C, H, W]` input whose windows fit: the
/// kernel for float32 or float64 on the host, `None` elsewhere (and for an
/// empty plane or one of 2³² elements or more).
pub(super) fn max_pool2d(x: &Tensor, pool: MaxPool) -> candle_core::Result<Option<Tensor>> {
    if !matches!(x.dtype(), DType::F64 | DType::F32) || !crate::device::is_host(x) || x.rank() != 4 {
        return Ok(None);
    }
    // A pick is an index into its plane, which holds at least one element
    // (an empty plane's padded windows are left to the gather).
    let (_, _, h, w) = x.dims4()?;
    if h * w == 0 || u32::try_from(h * w).is_err() {
        return Ok(None);
    }
    x.contiguous()?.apply_op1(Applied { pool, picks: OnceLock::new() }).map(Some)
}

#[cfg(test)]
mod tests {
    use candle_core::{Tensor, Var};

    use super::*;

    /// The gather path's result (`pool::windows`, first maximum): values
    /// with ties (a ReLU's zeros) and a padded window.
    fn reference(x: &Tensor, pool: MaxPool) -> Tensor {
        let (n, c, h, w) = x.dims4().unwrap();
        let pad = |t: &Tensor, dim: usize, p: usize| {
            let mut shape = t.dims().to_vec();
            shape[dim] = p;
            let block = (Tensor::ones(shape.as_slice(), t.dtype(), t.device()).unwrap() * f64::NEG_INFINITY).unwrap();
            Tensor::cat(&[&block, t, &block], dim).unwrap()
        };
        let padded = pad(&pad(x, 2, pool.p[0]), 3, pool.p[1]);
        let (oh, ow) = pool.out(h, w);
        let mut outs = vec![];
        for oy in 0..oh {
            for ox in 0..ow {
                let mut picks = vec![];
                for i in 0..pool.k[0] {
                    for j in 0..pool.k[1] {
                        let (y, xx) = (oy * pool.s[0] + i * pool.d[0], ox * pool.s[1] + j * pool.d[1]);
                        picks.push(padded.narrow(2, y, 1).unwrap().narrow(3, xx, 1).unwrap());
                    }
                }
                let win = Tensor::cat(&picks, 3).unwrap().contiguous().unwrap();
                let first = win.detach().argmax_keepdim(3).unwrap();
                outs.push(win.gather(&first, 3).unwrap());
            }
        }
        Tensor::cat(&outs, 3).unwrap().reshape((n, c, oh, ow)).unwrap()
    }

    #[test]
    fn agrees_with_the_gather_of_windows_forward_and_backward() {
        let dev = crate::device::host();
        for pool in [MaxPool { k: [3, 3], s: [2, 2], p: [1, 1], d: [1, 1] }, MaxPool { k: [2, 3], s: [1, 2], p: [0, 1], d: [2, 1] }] {
            let values: Vec<f64> = (0..2 * 3 * 9 * 8).map(|i| (((i * 37 % 23) as f64) - 11.0).max(0.0)).collect();
            let x = Tensor::from_vec(values, (2, 3, 9, 8), &dev).unwrap();
            let (a, b) = (Var::from_tensor(&x).unwrap(), Var::from_tensor(&x).unwrap());
            let ya = max_pool2d(a.as_tensor(), pool).unwrap().unwrap();
            let yb = reference(b.as_tensor(), pool);
            let flat = |t: &Tensor| -> Vec<f64> { t.flatten_all().unwrap().to_vec1().unwrap() };
            assert_eq!(flat(&ya), flat(&yb), "{pool:?}");
            let g = Tensor::from_vec((0..ya.elem_count()).map(|i| i as f64 + 1.0).collect::<Vec<f64>>(), ya.dims(), &dev).unwrap();
            let ga = (&ya * &g).unwrap().sum_all().unwrap().backward().unwrap();
            let gb = (&yb * &g).unwrap().sum_all().unwrap().backward().unwrap();
            assert_eq!(flat(ga.get(a.as_tensor()).unwrap()), flat(gb.get(b.as_tensor()).unwrap()), "{pool:?}: the gradient goes to the first maximum");
        }
    }

    #[test]
    fn an_empty_plane_is_left_to_the_gather() {
        let x = Tensor::zeros((1, 1, 0, 3), candle_core::DType::F64, &crate::device::host()).unwrap();
        let padded = MaxPool { k: [2, 2], s: [1, 1], p: [1, 1], d: [1, 1] };
        assert!(max_pool2d(&x, padded).unwrap().is_none());
    }

    #[test]
    fn the_first_nan_of_a_window_wins_and_takes_its_gradient() {
        let dev = crate::device::host();
        let x = Var::from_tensor(&Tensor::from_vec(vec![1.0, f64::NAN, 3.0, f64::NAN, 5.0, 0.0], (1, 1, 2, 3), &dev).unwrap()).unwrap();
        let pool = MaxPool { k: [2, 2], s: [1, 1], p: [0, 0], d: [1, 1] };
        let y = max_pool2d(x.as_tensor(), pool).unwrap().unwrap();
        let ys: Vec<f64> = y.flatten_all().unwrap().to_vec1().unwrap();
        assert!(ys.len() == 2 && ys.iter().all(|v| v.is_nan()), "{ys:?}");
        let g = Tensor::from_vec(vec![10.0, 100.0], (1, 1, 1, 2), &dev).unwrap();
        let grads = (&y * &g).unwrap().sum_all().unwrap().backward().unwrap();
        let dx: Vec<f64> = grads.get(x.as_tensor()).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        assert_eq!(dx, vec![0.0, 110.0, 0.0, 0.0, 0.0, 0.0]);
    }
}
