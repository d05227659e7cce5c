//! Attention one head at a time, with its backward recomputing each head's
//! probabilities: the composite of candle ops keeps every head's
//! `[S1, S2]` scores and probabilities alive for autograd, which at a real
//! LLM's sequence length (S = 4096, 12 heads) is tens of GB in float64.
//! Here a head's scores live only while it is computed: the working set is
//! one head's few `[S1, S2]` matrices. The arithmetic is the composite's,
//! head by head: `softmax(mask(scale·Q·Kᵀ))·V` forward; backward
//! `dV = Pᵀ·dO`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))` with `dP = dO·Vᵀ`, `dQ = scale·dS·K`,
//! `dK = scale·dSᵀ·Q`. Calls with a `pse` keep the composite (its gradient).

use candle_core::{CpuStorage, CustomOp3, DType, Layout, Shape, Tensor, D};

use super::nn::softmax_t;

/// `[B, N, S1, D]` queries over `[B, N, S2, D]` keys and values, with a mask
/// broadcast from `[MB, MN, S1, S2]` (1 = not attended) and a scale. Its
/// result is `[B, N, S1, D + 2]`: the output, then each row's max and sum
/// of `exp(logit − max)` (not differentiated).
pub(super) struct Heads {
    /// The mask, `[MB, MN, S1, S2]` (MB is 1 or B, MN 1 or N), u8.
    pub mask: Option<Tensor>,
    /// The logits' scale.
    pub scale: f64,
}

fn msg(what: impl Into<String>) -> candle_core::Error {
    candle_core::Error::Msg(format!("attention by heads: {}", what.into()))
}

impl Heads {
    /// The mask of head `(b, n)`, `[S1, S2]`.
    fn mask_of(&self, b: usize, n: usize) -> candle_core::Result<Option<Tensor>> {
        let Some(m) = &self.mask else { return Ok(None) };
        let (mb, mn, _, _) = m.dims4()?;
        let (s1, s2) = (m.dims()[2], m.dims()[3]);
        Ok(Some(m.get(if mb == 1 { 0 } else { b })?.get(if mn == 1 { 0 } else { n })?.broadcast_as((s1, s2))?))
    }

    /// Head `(b, n)`'s probabilities `[S1, S2]` and its row max and sum, from its
    /// queries `[S1, D]` and keys `[S2, D]`.
    fn probabilities(&self, q: &Tensor, k: &Tensor, b: usize, n: usize) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
        let mut logits = (q.matmul(&k.t()?)? * self.scale)?;
        if let Some(m) = self.mask_of(b, n)? {
            let fill = Tensor::full(f64::NEG_INFINITY, logits.dims(), logits.device())?.to_dtype(logits.dtype())?;
            logits = m.where_cond(&fill, &logits)?;
        }
        let max = logits.max_keepdim(D::Minus1)?;
        let sum = logits.broadcast_sub(&max)?.exp()?.sum_keepdim(D::Minus1)?;
        let p = softmax_t(&logits, 1)?;
        Ok((p, max, sum))
    }
}

/// The tensor of a storage's contiguous values, shaped `dims`.
fn tensor(storage: &CpuStorage, layout: &Layout) -> candle_core::Result<Tensor> {
    let (start, end) = layout.contiguous_offsets().ok_or_else(|| msg("a non-contiguous input"))?;
    let shape = layout.shape().clone();
    match storage {
        CpuStorage::F64(v) => Tensor::from_slice(&v[start..end], shape, &candle_core::Device::Cpu),
        CpuStorage::F32(v) => Tensor::from_slice(&v[start..end], shape, &candle_core::Device::Cpu),
        _ => Err(msg("a float32 or float64 storage expected")),
    }
}

impl CustomOp3 for Heads {
    fn name(&self) -> &'static str {
        "attention-by-heads"
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout, s3: &CpuStorage, l3: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (q, k, v) = (tensor(s1, l1)?, tensor(s2, l2)?, tensor(s3, l3)?);
        let (b, n, s, d) = q.dims4()?;
        let mut heads = Vec::with_capacity(b * n);
        for i in 0..b {
            for j in 0..n {
                let (qh, kh, vh) = (q.get(i)?.get(j)?, k.get(i)?.get(j)?, v.get(i)?.get(j)?);
                let (p, max, sum) = self.probabilities(&qh, &kh, i, j)?;
                heads.push(Tensor::cat(&[&p.matmul(&vh)?, &max, &sum], 1)?);
            }
        }
        let out = Tensor::stack(&heads, 0)?.reshape((b, n, s, d + 2))?;
        let storage = match out.dtype() {
            DType::F64 => CpuStorage::F64(out.flatten_all()?.to_vec1()?),
            _ => CpuStorage::F32(out.flatten_all()?.to_vec1()?),
        };
        Ok((storage, Shape::from((b, n, s, d + 2))))
    }

    fn bwd(
        &self,
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        _res: &Tensor,
        grad_res: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let (q, k, v, grad_res) = (q.detach(), k.detach(), v.detach(), grad_res.detach());
        let (b, n, _, d) = q.dims4()?;
        let (mut dq, mut dk, mut dv) = (vec![], vec![], vec![]);
        for i in 0..b {
            for j in 0..n {
                let (qh, kh, vh) = (q.get(i)?.get(j)?, k.get(i)?.get(j)?, v.get(i)?.get(j)?);
                let (p, _, _) = self.probabilities(&qh, &kh, i, j)?;
                let go = grad_res.get(i)?.get(j)?.narrow(1, 0, d)?.contiguous()?;
                // The softmax's backward as autograd takes it: `P ⊙ (dP − Σ dP ⊙ P)`.
                let dp = go.matmul(&vh.t()?)?;
                let rows = (&dp * &p)?.sum_keepdim(1)?;
                let ds = (&p * dp.broadcast_sub(&rows)?)?;
                dv.push(p.t()?.matmul(&go)?);
                dq.push((ds.matmul(&kh)? * self.scale)?);
                dk.push((ds.t()?.matmul(&qh)? * self.scale)?);
            }
        }
        let whole = |parts: Vec<Tensor>, like: &Tensor| -> candle_core::Result<Tensor> { Tensor::stack(&parts, 0)?.reshape(like.dims()) };
        Ok((Some(whole(dq, &q)?), Some(whole(dk, &k)?), Some(whole(dv, &v)?)))
    }
}
