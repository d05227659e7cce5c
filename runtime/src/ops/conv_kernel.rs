//! A 2-D convolution (one group, an input already padded and cut to the
//! kernel's reach) as per-sample im2col and matrix products, forward and
//! backward. candle's own conv2d materializes the whole batch's im2col, and
//! differentiates through its conv_transpose2d, a direct loop of dot
//! products over every output element and kernel tap: on a ResNet-50 step
//! the input gradients took most of the convolutions' time. Here the
//! gradients are matrix products too (`dW = Σ_b dY_b · cols_bᵀ`,
//! `dcols_b = Wᵀ · dY_b` scattered back by col2im), one sample's columns
//! at a time, written in place ([`super::gemm_into`]); a 1×1 kernel at
//! stride 1 multiplies the sample itself.

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor, WithDType};
use rayon::prelude::*;

use super::gemm_into::{gemm_into, Strided};
use crate::device::{host_values, with_host_values};

fn msg(m: &str) -> candle_core::Error {
    candle_core::Error::Msg(format!("conv2d: {m}"))
}

/// Where the kernel goes over a `[B, C, H, W]` input with an `[O, C, KH, KW]` kernel.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    b: usize,
    c: usize,
    h: usize,
    w: usize,
    o: usize,
    kh: usize,
    kw: usize,
    oh: usize,
    ow: usize,
    stride: usize,
    dilation: usize,
}

impl Geometry {
    fn new(x: &[usize], k: &[usize], stride: usize, dilation: usize) -> candle_core::Result<Geometry> {
        let (&[b, c, h, w], &[o, kc, kh, kw]) = (x, k) else { return Err(msg("a 4-d input and kernel")) };
        let span = |k: usize| dilation * (k.max(1) - 1) + 1;
        if kc != c || stride == 0 || h < span(kh) || w < span(kw) || kh == 0 || kw == 0 {
            return Err(msg("a kernel that does not fit the input"));
        }
        Ok(Geometry { b, c, h, w, o, kh, kw, oh: (h - span(kh)) / stride + 1, ow: (w - span(kw)) / stride + 1, stride, dilation })
    }

    /// Rows of one sample's columns (`C·KH·KW`) and its output positions (`OH·OW`).
    fn cols(&self) -> (usize, usize) {
        (self.c * self.kh * self.kw, self.oh * self.ow)
    }

    /// Whether a sample is its own columns (a 1×1 kernel at stride 1: most
    /// of a ResNet's convolutions), with no im2col and no col2im.
    fn direct(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.stride == 1
    }

    /// One sample's `[C·KH·KW, OH·OW]` columns, written over `cols`.
    fn im2col_into<T: WithDType>(&self, x: &[T], cols: &mut [T]) {
        let positions = self.oh * self.ow;
        cols.par_chunks_mut(positions).enumerate().for_each(|(row, out)| {
            let (ch, i, j) = (row / (self.kh * self.kw), row / self.kw % self.kh, row % self.kw);
            let plane = &x[ch * self.h * self.w..(ch + 1) * self.h * self.w];
            for oy in 0..self.oh {
                let line = &plane[(oy * self.stride + i * self.dilation) * self.w..];
                for ox in 0..self.ow {
                    out[oy * self.ow + ox] = line[ox * self.stride + j * self.dilation];
                }
            }
        });
    }

    /// One sample's input gradient `[C, H, W]` from its columns' gradient,
    /// added into `dx` (zeros).
    fn col2im_into<T: WithDType>(&self, dcols: &[T], dx: &mut [T]) {
        let positions = self.oh * self.ow;
        dx.par_chunks_mut(self.h * self.w).enumerate().for_each(|(ch, plane)| {
            for i in 0..self.kh {
                for j in 0..self.kw {
                    let row = &dcols[((ch * self.kh + i) * self.kw + j) * positions..][..positions];
                    for oy in 0..self.oh {
                        let line = &mut plane[(oy * self.stride + i * self.dilation) * self.w..];
                        for ox in 0..self.ow {
                            let at = ox * self.stride + j * self.dilation;
                            line[at] += row[oy * self.ow + ox];
                        }
                    }
                }
            }
        });
    }

    /// One sample's columns: the sample itself when [`Geometry::direct`],
    /// else its im2col written into `buffer`.
    fn columns<'a, T: WithDType>(&self, sample: &'a [T], buffer: &'a mut Vec<T>) -> &'a [T] {
        if self.direct() {
            return sample;
        }
        let (rows, positions) = self.cols();
        buffer.resize(rows * positions, T::zero());
        self.im2col_into(sample, buffer);
        buffer
    }
}

/// The convolution of a padded, cut, contiguous input ([`conv2d`]).
struct Conv {
    stride: usize,
    dilation: usize,
}

/// `y_b = W · cols_b` for every sample, written in place.
fn forward<T: WithDType>(g: &Geometry, x: &[T], k: &[T]) -> candle_core::Result<Vec<T>> {
    let (rows, positions) = g.cols();
    let mut y = crate::heap::filled(T::zero(), g.b * g.o * positions);
    let mut buffer = Vec::new();
    for (sample, out) in x.chunks(g.c * g.h * g.w).zip(y.chunks_mut(g.o * positions)).take(g.b) {
        let cols = g.columns(sample, &mut buffer);
        gemm_into(out, Strided::row_major(g.o, positions), false, k, Strided::row_major(g.o, rows), cols, Strided::row_major(rows, positions))?;
    }
    Ok(y)
}

/// `dW = Σ_b dY_b · cols_bᵀ` (accumulated in place) and
/// `dx_b = col2im(Wᵀ · dY_b)` (written straight into `dx_b` when the
/// sample is its own columns).
fn backward<T: WithDType>(g: &Geometry, x: &[T], k: &[T], dy: &[T]) -> candle_core::Result<(Vec<T>, Vec<T>)> {
    let (rows, positions) = g.cols();
    let (w, dy_view, cols_view) = (Strided::row_major(g.o, rows), Strided::row_major(g.o, positions), Strided::row_major(rows, positions));
    let mut dw = vec![T::zero(); k.len()];
    let mut dx = crate::heap::filled(T::zero(), x.len());
    let (mut buffer, mut dcols) = (Vec::new(), Vec::new());
    let plane = g.c * g.h * g.w;
    for (b, ((sample, dy), dx)) in x.chunks(plane).zip(dy.chunks(g.o * positions)).zip(dx.chunks_mut(plane)).take(g.b).enumerate() {
        let cols = g.columns(sample, &mut buffer);
        gemm_into(&mut dw, w, b > 0, dy, dy_view, cols, cols_view.t())?;
        if g.direct() {
            gemm_into(dx, cols_view, false, k, w.t(), dy, dy_view)?;
        } else {
            dcols.resize(rows * positions, T::zero());
            gemm_into(&mut dcols, cols_view, false, k, w.t(), dy, dy_view)?;
            g.col2im_into(&dcols, dx);
        }
    }
    Ok((dx, dw))
}

impl CustomOp2 for Conv {
    fn name(&self) -> &'static str {
        "conv2d-by-samples"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let g = Geometry::new(l1.dims(), l2.dims(), self.stride, self.dilation)?;
        let y = match (s1, s2) {
            (CpuStorage::F64(_), CpuStorage::F64(_)) => CpuStorage::F64(forward(&g, host_values("conv2d", s1, l1)?, host_values("conv2d", s2, l2)?)?),
            (CpuStorage::F32(_), CpuStorage::F32(_)) => CpuStorage::F32(forward(&g, host_values("conv2d", s1, l1)?, host_values("conv2d", s2, l2)?)?),
            _ => return Err(msg("float32 or float64 operands of one dtype expected")),
        };
        Ok((y, Shape::from((g.b, g.o, g.oh, g.ow))))
    }

    fn bwd(&self, x: &Tensor, k: &Tensor, _res: &Tensor, dy: &Tensor) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let (x, k, dy) = (x.detach().contiguous()?, k.detach().contiguous()?, dy.detach().contiguous()?);
        let g = Geometry::new(x.dims(), k.dims(), self.stride, self.dilation)?;
        let dev = x.device();
        let (dx, dw) = match x.dtype() {
            DType::F64 => {
                let (dx, dw) = with_host_values("conv2d", [&x, &k, &dy], |[x, k, dy]| backward::<f64>(&g, x, k, dy))?;
                (Tensor::from_vec(dx, x.shape(), dev)?, Tensor::from_vec(dw, k.shape(), dev)?)
            }
            DType::F32 => {
                let (dx, dw) = with_host_values("conv2d", [&x, &k, &dy], |[x, k, dy]| backward::<f32>(&g, x, k, dy))?;
                (Tensor::from_vec(dx, x.shape(), dev)?, Tensor::from_vec(dw, k.shape(), dev)?)
            }
            _ => return Err(msg("float32 or float64 operands expected")),
        };
        Ok((Some(dx), Some(dw)))
    }
}

/// The convolution (one group) of a `[B, C, H, W]` input, padded and cut
/// so that the kernel's last position ends at its edge, with an
/// `[O, C, KH, KW]` kernel: by samples on the host in float32 or float64,
/// `None` elsewhere (candle's conv2d then).
pub(super) fn conv2d(x: &Tensor, k: &Tensor, stride: usize, dilation: usize) -> candle_core::Result<Option<Tensor>> {
    let dtype = x.dtype();
    if !matches!(dtype, DType::F64 | DType::F32) || k.dtype() != dtype || !crate::device::is_host(x) || x.rank() != 4 || k.rank() != 4 {
        return Ok(None);
    }
    x.contiguous()?.apply_op2(&k.contiguous()?, Conv { stride, dilation }).map(Some)
}

#[cfg(test)]
mod tests {
    use super::super::kernel_check::assert_agrees;
    use super::*;

    /// Forward and both gradients as candle's conv2d gives them, for
    /// strides, dilations, one and several channels and samples.
    #[test]
    fn agrees_with_candles_conv2d_forward_and_backward() {
        for (x, k, stride, dilation) in [
            ([2, 3, 9, 8], [4, 3, 3, 3], 1, 1),
            ([1, 2, 11, 11], [3, 2, 3, 2], 2, 1),
            ([3, 1, 10, 9], [2, 1, 2, 3], 1, 2),
            ([2, 4, 7, 7], [5, 4, 1, 1], 2, 1),
            ([3, 4, 6, 5], [5, 4, 1, 1], 1, 1),
        ] {
            let span = |n: usize, k: usize| (n - (dilation * (k - 1) + 1)) / stride * stride + dilation * (k - 1) + 1;
            let x = [x[0], x[1], span(x[2], k[2]), span(x[3], k[3])];
            assert_agrees(
                &format!("{x:?} {k:?} s{stride} d{dilation}"),
                &x,
                &k,
                |x, k| conv2d(x, k, stride, dilation).unwrap().unwrap(),
                |x, k| x.conv2d(k, 0, stride, dilation, 1).unwrap(),
            );
        }
    }
}
