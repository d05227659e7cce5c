//! Attention one head at a time, with its backward recomputing each head's
//! probabilities: the composite of candle ops keeps every head's
//! `[S1, S2]` scores and probabilities alive for autograd, which at a real
//! LLM's sequence length (S = 4096, 12 heads) is tens of GB in float64.
//! Here a head's scores live only while it is computed: the working set is
//! one head's few `[S1, S2]` matrices. The arithmetic is the composite's,
//! head by head: `softmax(mask(scale·Q·Kᵀ))·V` forward; backward
//! `dV = Pᵀ·dO`, `dS = P ⊙ (dP − rowsum(dP ⊙ P))` with `dP = dO·Vᵀ`, `dQ = scale·dS·K`,
//! `dK = scale·dSᵀ·Q`. Calls with a `pse` keep the composite (its gradient).
//! The fused attentions' rounding magnitudes ([`Heads::magnitudes`]) go
//! head by head too, `pse` included.

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
    /// A `pse` added to the logits before the scale, broadcast from
    /// `[PB, PN, S1, S2]` as the mask is ([`Heads::magnitudes`] only: the
    /// forward op leaves calls with a `pse` to the composite).
    pub pse: Option<Tensor>,
}

/// One attention problem's rounding magnitudes ([`Heads::magnitudes`]).
pub(super) struct HeadMagnitudes {
    /// The output's, `[B, N, S1, D]`.
    pub out: Tensor,
    /// The row max's and the row sum's, each `[B, N, S1, 1]`.
    pub max: Tensor,
    pub sum: Tensor,
    /// `(dq, dk, dv)`'s, shaped like query, key and value, with an output gradient.
    pub grads: Option<(Tensor, Tensor, Tensor)>,
}

/// `t` with its dims padded to four on the left (a mask's or pse's `[B, N, S1, S2]`).
pub(super) fn four(t: &Tensor) -> candle_core::Result<Tensor> {
    let mut dims = t.dims().to_vec();
    while dims.len() < 4 {
        dims.insert(0, 1);
    }
    t.reshape(dims.as_slice())
}

fn msg(what: impl Into<String>) -> candle_core::Error {
    candle_core::Error::Msg(format!("attention by heads: {}", what.into()))
}

impl Heads {
    /// The mask of head `(b, n)`, broadcast to its `[S1, S2]` scores (a
    /// `[B, 1, 1, S2]` padding mask masks every query's row alike).
    fn mask_of(&self, b: usize, n: usize, s1: usize, s2: usize) -> candle_core::Result<Option<Tensor>> {
        let Some(m) = &self.mask else { return Ok(None) };
        let (mb, mn, _, _) = m.dims4()?;
        Ok(Some(m.get(if mb == 1 { 0 } else { b })?.get(if mn == 1 { 0 } else { n })?.broadcast_as((s1, s2))?))
    }

    /// The pse of head `(b, n)`, `[S1, S2]` (its dims padded to four on the left).
    fn pse_of(&self, b: usize, n: usize, s1: usize, s2: usize) -> candle_core::Result<Option<Tensor>> {
        let Some(p) = &self.pse else { return Ok(None) };
        let p = four(p)?;
        let dims = p.dims();
        Ok(Some(p.get(if dims[0] == 1 { 0 } else { b })?.get(if dims[1] == 1 { 0 } else { n })?.broadcast_as((s1, s2))?))
    }

    /// Head `(b, n)`'s probabilities `[S1, S2]` and its row max and sum, from its
    /// queries `[S1, D]` and keys `[S2, D]`.
    fn probabilities(&self, q: &Tensor, k: &Tensor, b: usize, n: usize) -> candle_core::Result<(Tensor, Tensor, Tensor)> {
        let mut logits = q.matmul(&k.t()?)?;
        if let Some(pse) = self.pse_of(b, n, logits.dims()[0], logits.dims()[1])? {
            logits = (logits + pse.to_dtype(q.dtype())?)?;
        }
        logits = (logits * self.scale)?;
        if let Some(m) = self.mask_of(b, n, logits.dims()[0], logits.dims()[1])? {
            let fill = Tensor::full(f64::NEG_INFINITY, logits.dims(), logits.device())?.to_dtype(logits.dtype())?;
            logits = m.where_cond(&fill, &logits)?;
        }
        let max = logits.max_keepdim(D::Minus1)?;
        let sum = logits.broadcast_sub(&max)?.exp()?.sum_keepdim(D::Minus1)?;
        let p = softmax_t(&logits, 1)?;
        Ok((p, max, sum))
    }

    /// The rounding magnitudes of float64 `[B, N, S1, D]` queries over
    /// `[B, N, S2, D]` keys and values, with the output gradient `dy`, head
    /// by head. The kernels compute the logits, the softmax and their sums
    /// in float32 whatever the inputs' dtype, and round `P` and `dS` into
    /// it for the products with `V` and `K`: `w` is float32's unit roundoff
    /// in units of the output dtype's (1 for float32 and float64 calls).
    /// With `Mₛ = |scale|·(|Q|·|K|ᵀ + |pse|)` the logits' magnitude,
    /// `r = rowsum(P⊙Mₛ)` and `A = P⊙(1 + w·(Mₛ + r))` (the probabilities'
    /// own rounding plus their first-order error through the logits and
    /// their normalisation): the output `A·|V|`; the float32 row max
    /// `|max| + max Mₛ` over the attended keys and row sum
    /// `sum·(1 + r + max Mₛ)`; backward, with `M_dS = A⊙(|dO|·|V|ᵀ +
    /// rowsum(|dO|⊙M_out))` (`dS = P⊙(dO·Vᵀ − rowsum(dO⊙O))` bounded term
    /// by term), dq `|scale|·M_dS·|K|`, dk `|scale|·M_dSᵀ·|Q|`, dv
    /// `Aᵀ·|dO|`. Seven `[S, S]·[S, D]` products a head: about one forward
    /// and backward run, where Composite's variations take two dozen.
    pub(super) fn magnitudes(&self, q: &Tensor, k: &Tensor, v: &Tensor, dy: Option<&Tensor>, w: f64) -> candle_core::Result<HeadMagnitudes> {
        let (b, n, s1, d) = q.dims4()?;
        let s2 = k.dims4()?.2;
        let scale = self.scale.abs();
        let (mut out, mut max, mut sum, mut dq, mut dk, mut dv) = (vec![], vec![], vec![], vec![], vec![], vec![]);
        for i in 0..b {
            for j in 0..n {
                let (qh, kh, vh) = (q.get(i)?.get(j)?, k.get(i)?.get(j)?, v.get(i)?.get(j)?);
                let (p, row_max, row_sum) = self.probabilities(&qh, &kh, i, j)?;
                let (qa, ka, va) = (qh.abs()?, kh.abs()?, vh.abs()?);
                let mut ms = qa.matmul(&ka.t()?)?;
                if let Some(pse) = self.pse_of(i, j, s1, s2)? {
                    ms = (pse.abs()?.to_dtype(ms.dtype())? + ms)?;
                }
                let ms = (ms * scale)?;
                let pm = (&p * &ms)?;
                let r = pm.sum_keepdim(1)?;
                let a = ((&p + (&pm * w)?)? + p.broadcast_mul(&(&r * w)?)?)?;
                let mo = a.matmul(&va)?;
                let attended = match self.mask_of(i, j, s1, s2)? {
                    Some(m) => m.where_cond(&ms.zeros_like()?, &ms)?,
                    None => ms.clone(),
                };
                let ms_max = attended.max_keepdim(1)?;
                max.push((row_max.abs()? + &ms_max)?);
                sum.push((row_sum * ((r + 1.0)? + &ms_max)?)?);
                if let Some(dy) = dy {
                    let da = dy.get(i)?.get(j)?.abs()?;
                    let rows = (&da * &mo)?.sum_keepdim(1)?;
                    let mds = (&a * da.matmul(&va.t()?)?.broadcast_add(&rows)?)?;
                    dq.push((mds.matmul(&ka)? * scale)?);
                    dk.push((mds.t()?.matmul(&qa)? * scale)?);
                    dv.push(a.t()?.matmul(&da)?);
                }
                out.push(mo);
            }
        }
        let whole = |parts: Vec<Tensor>, s: usize, w: usize| -> candle_core::Result<Tensor> { Tensor::stack(&parts, 0)?.reshape((b, n, s, w)) };
        let grads = match dy {
            Some(_) => Some((whole(dq, s1, d)?, whole(dk, s2, d)?, whole(dv, s2, v.dims4()?.3)?)),
            None => None,
        };
        Ok(HeadMagnitudes { out: whole(out, s1, v.dims4()?.3)?, max: whole(max, s1, 1)?, sum: whole(sum, s1, 1)?, grads })
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
