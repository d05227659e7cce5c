"""torch references of torch_npu's fused ops for the bench of `NPU.` calls:
torch_npu's kernels have no CPU implementation, so a PyTorch script of an
`NPU.<op>` call runs `torch_npu.<op>` on the NPU (tested) and `ref_<op>`
from here on the CPU at raised precision (bench). Each takes torch_npu's
documented signature and defaults and returns its outputs; the semantics
are the op table's (runtime/src/ops/, the `NPU.` entries), written once
here for every script (rendered into _tables.NPU_REFERENCES, the op table's
`NPU.` names). The backward of each is torch's autograd through the
composition.
"""

import math

import torch

from ._tables import RULEBOOK

# --- msprobe-rs: the scripts inline this file from here ---


def _number(v):
    """A scalar argument given as a number or a one-element tensor."""
    return v.item() if isinstance(v, torch.Tensor) else v


def ref_npu_linear(input, weight, bias=None):
    """torch_npu.npu_linear: input @ weight.T + bias (2-D input and weight)."""
    out = torch.mm(input, weight.t())
    return out if bias is None else out + bias


def ref_npu_confusion_transpose(input, perm, shape, transpose_first):
    """torch_npu.npu_confusion_transpose: permute then reshape, or reshape then permute."""
    if transpose_first:
        return input.permute(*perm).reshape(shape)
    return input.reshape(shape).permute(*perm)


def ref_npu_apply_adam(beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad, use_locking, use_nesterov, out=None):
    """torch_npu.npu_apply_adam -> (var, m, v), the powers this step's; `out` is (var, m, v) before the step."""
    var, m, v = out
    b1p, b2p, lr, b1, b2, eps = (_number(x) for x in (beta1_power, beta2_power, lr, beta1, beta2, epsilon))
    m_t = m + (grad - m) * (1 - b1)
    v_t = v + (grad * grad - v) * (1 - b2)
    lr_t = lr * math.sqrt(1 - b2p) / (1 - b1p)
    step = m_t * b1 + grad * (1 - b1) if use_nesterov else m_t
    return var - step * lr_t / (torch.sqrt(v_t) + eps), m_t, v_t


def ref_npu_apply_adam_w(beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon, grad, max_grad_norm,
                         amsgrad, maximize, out=None):
    """torch_npu.npu_apply_adam_w -> (var, m, v), the powers the previous step's; under amsgrad
    max_grad_norm is the running maximum of v."""
    var, m, v = out
    b1p, b2p, lr, wd, b1, b2, eps = (_number(x) for x in (beta1_power, beta2_power, lr, weight_decay, beta1, beta2, epsilon))

    def corrected(p):
        return 1 - (p - eps) if 1 - p == 0 else 1 - p

    c1, c2 = corrected(b1p * b1), corrected(b2p * b2)
    g = -grad if maximize else grad
    m_t = m * b1 + g * (1 - b1)
    v_t = v * b2 + g * g * (1 - b2)
    second = torch.maximum(max_grad_norm, v_t) if amsgrad else v_t
    denom = torch.sqrt(second / c2) + eps
    return var * (1 - lr * wd) - m_t * (lr / c1) / denom, m_t, v_t


def ref_npu_layer_norm_eval(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """torch_npu.npu_layer_norm_eval: layer_norm with weight, bias and eps."""
    return torch.nn.functional.layer_norm(input, list(normalized_shape), weight, bias, eps)


def ref_npu_group_norm_silu(input, weight, bias, group, eps=1e-05):
    """torch_npu.npu_group_norm_silu -> (out, mean, rstd): group norm then silu; mean and
    rstd per sample and group, [N, group]."""
    n = input.shape[0]
    flat = input.reshape(n, group, -1)
    mean = flat.mean(-1, keepdim=True)
    rstd = torch.rsqrt(((flat - mean) ** 2).mean(-1, keepdim=True) + eps)
    y = ((flat - mean) * rstd).reshape(input.shape)
    channels = [1, input.shape[1]] + [1] * (input.dim() - 2)
    if weight is not None:
        y = y * weight.reshape(channels)
    if bias is not None:
        y = y + bias.reshape(channels)
    return torch.nn.functional.silu(y), mean.reshape(n, group), rstd.reshape(n, group)


def ref_npu_moe_gating_top_k_softmax(x, finished=None, k=1):
    """torch_npu.npu_moe_gating_top_k_softmax -> (y, expert_idx, row_idx): the k largest of each
    row's softmax over the experts (ties: the lower expert), their experts (int32; num_experts
    where finished), row_idx[i, j] = j * rows + i (int32)."""
    experts = x.shape[-1]
    flat = x.reshape(-1, experts)
    rows = flat.shape[0]
    p = torch.softmax(flat, -1)
    idx = torch.argsort(-p, dim=-1, stable=True)[:, :k]
    y = torch.gather(p, -1, idx)
    if finished is not None:
        idx = torch.where(finished.reshape(rows, 1).bool(), experts, idx)
    row_idx = torch.arange(k).reshape(1, k) * rows + torch.arange(rows).reshape(rows, 1)
    shape = tuple(x.shape[:-1]) + (k,)
    return y.reshape(shape), idx.to(torch.int32).reshape(shape), row_idx.to(torch.int32).reshape(shape)


def ref_npu_sort_v2(input, dim=-1, descending=False, out=None):
    """torch_npu.npu_sort_v2: the sorted values only."""
    return torch.sort(input, dim=dim, descending=descending, stable=True).values


def ref_matmul_backward(grad, self, other, mask):
    """torch_npu's matmul_backward -> (grad_self, grad_other) of torch.matmul(self, other),
    None where mask is False."""
    a, b = self.detach().requires_grad_(True), other.detach().requires_grad_(True)
    with torch.enable_grad():
        ga, gb = torch.autograd.grad(torch.matmul(a, b), [a, b], grad)
    return (ga if mask[0] else None), (gb if mask[1] else None)


def ref_npu_fast_gelu(input):
    """torch_npu.npu_fast_gelu: x * sigmoid(1.702 x)."""
    return input * torch.sigmoid(RULEBOOK["npu_references"]["fast_gelu_alpha"] * input)


ref_fast_gelu = ref_npu_fast_gelu  # torch_npu.fast_gelu is the same kernel


def ref_npu_mish(input):
    """torch_npu.npu_mish: x * tanh(softplus(x))."""
    return input * torch.tanh(torch.nn.functional.softplus(input))


def ref_npu_swiglu(x, dim=-1):
    """torch_npu.npu_swiglu: silu(a) * b of the two halves along dim."""
    a, b = torch.chunk(x, 2, dim=dim)
    return torch.nn.functional.silu(a) * b


def ref_npu_rms_norm(x, gamma, epsilon=1e-06):
    """torch_npu.npu_rms_norm -> (y, rstd): x * rsqrt(mean(x^2) + eps) * gamma over gamma's
    trailing dims; rstd keeps the reduced dims (size 1) and takes no gradient (torch_npu's
    backward is y's)."""
    dims = list(range(x.dim() - gamma.dim(), x.dim()))
    rstd = torch.rsqrt(torch.mean(x * x, dim=dims, keepdim=True) + epsilon)
    return x * rstd * gamma, rstd.detach()


def ref_npu_rotary_mul(input, r1, r2, rotary_mode="half"):
    """torch_npu.npu_rotary_mul: x * r1 + rotate(x) * r2, rotate the halves' (-x2, x1)
    ("half") or each pair's (-x_odd, x_even) ("interleave")."""
    if rotary_mode == "interleave":
        even, odd = input[..., 0::2], input[..., 1::2]
        rotated = torch.stack((-odd, even), dim=-1).reshape(input.shape)
    else:
        x1, x2 = torch.chunk(input, 2, -1)
        rotated = torch.cat((-x2, x1), dim=-1)
    return input * r1 + rotated * r2


def ref_npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """torch_npu.npu_scaled_masked_softmax: softmax over the last dim of x * scale, -10000 where
    mask is True (with fixed_triu_mask, the upper triangle above the diagonal)."""
    if fixed_triu_mask:
        mask = torch.triu(torch.ones(x.shape[-2:], dtype=torch.bool, device=x.device), diagonal=1)
    return torch.softmax((x * scale).masked_fill(mask.bool(), RULEBOOK["npu_references"]["scaled_masked_softmax_fill"]), dim=-1)


def _bnsd(t, layout, heads):
    """A layout's tensor as [B, N, S, D] (heads splits H in BSH and SBH)."""
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    if layout == "BSH":
        b, s, h = t.shape
        return t.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3)
    s, b, h = t.shape
    return t.reshape(s, b, heads, h // heads).permute(1, 2, 0, 3)


def _from_bnsd(t, layout):
    if layout == "BNSD":
        return t
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    b, n, s, d = t.shape
    if layout == "BSH":
        return t.permute(0, 2, 1, 3).reshape(b, s, n * d)
    return t.permute(2, 0, 1, 3).reshape(s, b, n * d)


def _attention_mask(given, sparse_mode, s1, s2, pre_tockens, next_tockens):
    """The [S1, S2] mask (True: not attended) of a sparse_mode, as the op table replays it
    (runtime/src/ops/npu_attention.rs): 0 the given mask and the band between pre_tockens and
    next_tockens (without a mask, nothing: torch_npu's documentation), 1 the given mask,
    2 causal from the top left, 3 from the bottom right, 4 the band of equal lengths; the
    rest refused."""
    i = torch.arange(s1).reshape(s1, 1)
    j = torch.arange(s2).reshape(1, s2)
    if sparse_mode == 0 and given is not None:
        return given.bool() | (j - i > next_tockens) | (i - j > pre_tockens)
    if sparse_mode in (0, 1):
        return None if given is None else given.bool()
    if sparse_mode == 2:
        return j > i
    if sparse_mode == 3:
        return j - i > s2 - s1
    if sparse_mode == 4 and s1 == s2:
        return (j - i > next_tockens) | (i - j > pre_tockens)
    raise NotImplementedError(f"npu_fusion_attention: sparse_mode {sparse_mode} with {s1} queries and {s2} keys")


def _repeat_heads(k, n1):
    """[B, N2, S, D] key/value heads repeated to N1 query heads (groups share a head)."""
    return k.repeat_interleave(n1 // k.shape[1], dim=1)


def _attend(q, k, v, pse, mask, scale):
    """softmax(mask(scale * (q k^T + pse))) v over [B, N1, S, D] (k, v heads repeated to N1):
    (out, row max, row sum of exp), the statistics [B, N1, S1, 1]."""
    k, v = _repeat_heads(k, q.shape[1]), _repeat_heads(v, q.shape[1])
    logits = torch.matmul(q, k.transpose(-1, -2))
    if pse is not None:
        logits = logits + pse
    logits = logits * scale
    if mask is not None:
        if bool(mask.expand(logits.shape).all(-1).any()):
            raise NotImplementedError("npu_fusion_attention: a query row with every key masked")
        logits = logits.masked_fill(mask, float("-inf"))
    row_max = logits.amax(-1, keepdim=True).detach()
    row_sum = torch.exp(logits.detach() - row_max).sum(-1, keepdim=True)
    return torch.matmul(torch.softmax(logits, -1), v), row_max, row_sum


class _AttentionSplit:
    """How one fused-attention call's tensors split into problems [B, N, S, D] (the whole
    batch, or one per TND sequence) and back (runtime/src/ops/npu_attention.rs's Split)."""

    def __init__(self, query, key, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen):
        self.layout, self.heads = input_layout, head_num
        self.kv_heads = None if input_layout == "TND" else (
            key.shape[-1] // _bnsd(query, input_layout, head_num).shape[-1] if input_layout in ("BSH", "SBH") else None)
        self.ends = (list(actual_seq_qlen), list(actual_seq_kvlen)) if input_layout == "TND" else None

    def parts(self, t, key=False):
        """A tensor of query's layout (key's: key) per problem, [B, N, S, D]."""
        if self.ends is None:
            return [_bnsd(t, self.layout, self.kv_heads if key else self.heads)]
        ends = self.ends[1 if key else 0]
        return [t[start:end].unsqueeze(0).transpose(1, 2) for start, end in zip([0] + ends[:-1], ends)]

    def back(self, parts, statistics=False):
        """Per-problem results back in query's layout (statistics: [B, N1, S1, 1], TND [T1, N1, 1])."""
        if self.ends is not None:
            return torch.cat([p.transpose(1, 2).squeeze(0) for p in parts])
        return parts[0] if statistics else _from_bnsd(parts[0], self.layout)

    def back_to_keys(self, parts, kv_heads):
        """Per-problem gradients of repeated key/value heads summed over each group, in key's layout."""
        grouped = [p.reshape(p.shape[0], kv_heads, p.shape[1] // kv_heads, p.shape[2], p.shape[3]).sum(2) for p in parts]
        return self.back(grouped)


def _attention_problems(query, key, value, head_num, input_layout, atten_mask, sparse_mode, pre_tockens,
                        next_tockens, actual_seq_qlen, actual_seq_kvlen, padding_mask, keep_prob):
    """A call's split and its problems [(q, k, v, mask)] (k and v with their own heads); the
    settings no output shows (dropout) or that are reserved refused."""
    if keep_prob < 1:
        raise NotImplementedError("npu_fusion_attention: keep_prob < 1 draws the dropout mask on the device")
    if padding_mask is not None:
        raise NotImplementedError("npu_fusion_attention: padding_mask (reserved) is not replayed")
    if input_layout == "TND" and atten_mask is not None and sparse_mode < 2:
        raise NotImplementedError("npu_fusion_attention: atten_mask in layout TND with sparse_mode 0 or 1")
    split = _AttentionSplit(query, key, head_num, input_layout, actual_seq_qlen, actual_seq_kvlen)
    given = None if input_layout == "TND" else atten_mask
    problems = []
    for q, k, v in zip(split.parts(query), split.parts(key, True), split.parts(value, True)):
        mask = _attention_mask(given, sparse_mode, q.shape[2], k.shape[2], pre_tockens, next_tockens)
        problems.append((q, k, v, mask))
    return split, problems


def ref_npu_fusion_attention(query, key, value, head_num, input_layout, *, pse=None, padding_mask=None, atten_mask=None,
                             scale=1.0, keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647,
                             inner_precise=0, prefix=None, actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0,
                             gen_mask_parallel=True, sync=False, softmax_layout=""):
    """torch_npu.npu_fusion_attention's judged outputs (attention_out, softmax_max,
    softmax_sum), as the op table replays them (runtime/src/ops/npu_attention.rs):
    softmax(mask(scale * (Q K^T + pse))) V per head in input_layout (BSH, SBH, BSND, BNSD;
    TND by the actual_seq_* sequences), key/value heads shared by groups of query heads; the
    row max and the sum of exp(logit - max), repeated 8 times along a last dim. softmax_out,
    seed, offset and numels (the dropout generator's state) are not judged: the tested side's
    are dropped (JUDGED_OUTPUTS). keep_prob < 1, padding_mask and a softmax_layout are refused."""
    if softmax_layout:
        raise NotImplementedError("npu_fusion_attention: a softmax_layout other than the default is not replayed")
    split, problems = _attention_problems(query, key, value, head_num, input_layout, atten_mask, sparse_mode, pre_tockens,
                                          next_tockens, actual_seq_qlen, actual_seq_kvlen, padding_mask, keep_prob)
    results = [_attend(q, k, v, pse, mask, scale) for q, k, v, mask in problems]
    out = split.back([r[0] for r in results])
    row_max, row_sum = split.back([r[1] for r in results], True), split.back([r[2] for r in results], True)
    stat = tuple(row_max.shape[:-1]) + (8,)
    return out, row_max.expand(stat), row_sum.expand(stat)


def _head(t, b, n, s1, s2):
    """Head (b, n) of a mask or pse broadcast from [.., S1, S2] (dims padded to four), [S1, S2]."""
    t = t.reshape((1,) * (4 - t.dim()) + tuple(t.shape))
    return t[0 if t.shape[0] == 1 else b, 0 if t.shape[1] == 1 else n].expand(s1, s2)


def _attention_magnitudes(q, k, v, pse, mask, scale, dy, w):
    """The rounding magnitudes of one problem, head by head (the mirror of Heads::magnitudes
    in runtime/src/ops/attention_heads.rs; w: float32's unit roundoff in units of the output
    dtype's, the logits computed in float32): with Ms = |scale|*(|Q||K|^T + |pse|),
    r = rowsum(P*Ms) and A = P*(1 + w*(Ms + r)): out A|V|; row max |max| + max Ms over the attended keys; row sum
    sum*(1 + r + max Ms); with dO, M_dS = A*(|dO||V|^T + rowsum(|dO|*M_out)), dq |scale| M_dS |K|,
    dk |scale| M_dS^T |Q|, dv A^T |dO| (k and v heads repeated to q's)."""
    k, v = _repeat_heads(k, q.shape[1]), _repeat_heads(v, q.shape[1])
    bs, n, s1, _ = q.shape
    s2, a_scale = k.shape[2], abs(scale)
    out, mx, sm, dq, dk, dv = ([[None] * n for _ in range(bs)] for _ in range(6))
    for b in range(bs):
        for h in range(n):
            qh, kh, vh = q[b, h], k[b, h], v[b, h]
            logits = qh @ kh.transpose(0, 1)
            ms = qh.abs() @ kh.abs().transpose(0, 1)
            if pse is not None:
                p_h = _head(pse.to(logits.dtype), b, h, s1, s2)
                logits, ms = logits + p_h, ms + p_h.abs()
            logits, ms = logits * scale, ms * a_scale
            m_h = None if mask is None else _head(mask, b, h, s1, s2)
            if m_h is not None:
                logits = logits.masked_fill(m_h, float("-inf"))
            row_max = logits.amax(-1, keepdim=True)
            row_sum = torch.exp(logits - row_max).sum(-1, keepdim=True)
            p = torch.softmax(logits, -1)
            pm = p * ms
            r = pm.sum(-1, keepdim=True)
            a = p + w * pm + p * (w * r)
            mo = a @ vh.abs()
            ms_max = (ms if m_h is None else ms.masked_fill(m_h, 0.0)).amax(-1, keepdim=True)
            out[b][h], mx[b][h], sm[b][h] = mo, row_max.abs() + ms_max, row_sum * (1.0 + r + ms_max)
            if dy is not None:
                da = dy[b, h].abs()
                mds = a * (da @ vh.abs().transpose(0, 1) + (da * mo).sum(-1, keepdim=True))
                dq[b][h], dk[b][h], dv[b][h] = (mds @ kh.abs()) * a_scale, (mds.transpose(0, 1) @ qh.abs()) * a_scale, a.transpose(0, 1) @ da

    def whole(parts):
        return torch.stack([torch.stack(row) for row in parts])
    grads = None if dy is None else (whole(dq), whole(dk), whole(dv))
    return whole(out), whole(mx), whole(sm), grads


def fusion_attention_magnitudes(dy, statistics, dtype, query, key, value, head_num, input_layout, pse=None, padding_mask=None,
                                atten_mask=None, scale=1.0, keep_prob=1.0, pre_tockens=2147483647,
                                next_tockens=2147483647, inner_precise=0, prefix=None, actual_seq_qlen=None,
                                actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False, softmax_layout=""):
    """The rounding magnitudes of one fused-attention call in float64 (the mirror of
    attention_parts in runtime/src/ops/npu_attention.rs; dtype: query's dumped dtype, canonical
    name): [attention_out's] (statistics: and
    softmax_max's and softmax_sum's, repeated 8 times), and with the output's gradient dy the
    gradients' [("query", ..), ("key", ..), ("value", ..)], flat numpy arrays."""
    if softmax_layout:
        raise NotImplementedError("npu_fusion_attention: a softmax_layout other than the default is not replayed")
    split, problems = _attention_problems(query, key, value, head_num, input_layout, atten_mask, sparse_mode, pre_tockens,
                                          next_tockens, actual_seq_qlen, actual_seq_kvlen, padding_mask, keep_prob)
    dys = None if dy is None or dy.numel() != query.numel() else split.parts(dy.reshape(query.shape))
    mantissa = {"float16": 10, "bfloat16": 7}.get(dtype)
    w = 1.0 if mantissa is None else 2.0 ** (mantissa + 1 - 24)
    results = [_attention_magnitudes(q, k, v, pse, mask, scale, None if dys is None else dys[i], w)
               for i, (q, k, v, mask) in enumerate(problems)]

    def flat(t):
        return t.reshape(-1).numpy()
    forward = [flat(split.back([r[0] for r in results]))]
    if statistics:
        for i in (1, 2):
            stat = split.back([r[i] for r in results], True)
            forward.append(flat(stat.expand(tuple(stat.shape[:-1]) + (8,))))
    if dys is None:
        return forward, []
    kv_heads = problems[0][1].shape[1]
    return forward, [("query", flat(split.back([r[3][0] for r in results]))),
                     ("key", flat(split.back_to_keys([r[3][1] for r in results], kv_heads))),
                     ("value", flat(split.back_to_keys([r[3][2] for r in results], kv_heads)))]



# --- torch_npu's spellings of torch functions (runtime/src/ops/npu_torch.rs) ---


def ref_npu_conv2d(input, weight, bias, stride, padding, dilation, groups):
    """torch_npu.npu_conv2d: torch's conv2d, the same argument order."""
    return torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)


def ref_npu_conv3d(input, weight, bias, stride, padding, dilation, groups):
    """torch_npu.npu_conv3d: torch's conv3d, the same argument order."""
    return torch.nn.functional.conv3d(input, weight, bias, stride, padding, dilation, groups)


def ref_npu_convolution(input, weight, bias, stride, padding, dilation, groups):
    """torch_npu.npu_convolution: conv1d, conv2d or conv3d by the weight's rank."""
    conv = {3: torch.nn.functional.conv1d, 4: torch.nn.functional.conv2d, 5: torch.nn.functional.conv3d}[weight.dim()]
    return conv(input, weight, bias, stride, padding, dilation, groups)


def ref_npu_convolution_transpose(input, weight, bias, padding, output_padding, stride, dilation, groups):
    """torch_npu.npu_convolution_transpose: torch's transposed convolution; torch_npu's
    order is padding, output_padding, stride, dilation, groups."""
    f = torch.nn.functional
    conv = {3: f.conv_transpose1d, 4: f.conv_transpose2d, 5: f.conv_transpose3d}[weight.dim()]
    return conv(input, weight, bias, stride, padding, output_padding, groups, dilation)


ref_npu_conv_transpose2d = ref_npu_convolution_transpose  # the same order and kernel


def ref_npu_silu(input):
    """torch_npu.npu_silu: x * sigmoid(x)."""
    return torch.nn.functional.silu(input)


def ref_npu_gelu(input, approximate="none"):
    """torch_npu.npu_gelu: torch's gelu."""
    return torch.nn.functional.gelu(input, approximate=approximate)


def ref_npu_broadcast(input, size):
    """torch_npu.npu_broadcast: expanded to `size`."""
    return input.expand(*size).contiguous()


def ref_npu_dtype_cast(input, dtype):
    """torch_npu.npu_dtype_cast: a cast, raised to float64 on the bench like every cast."""
    return input.to(torch.float64 if dtype.is_floating_point else dtype)


def ref_npu_transpose(input, perm, require_contiguous=True):
    """torch_npu.npu_transpose: permuted."""
    return input.permute(*perm).contiguous()


def ref_npu_reshape(input, shape, can_refresh=False):
    """torch_npu.npu_reshape: reshaped."""
    return input.reshape(shape)


def ref_npu_bmmV2(input, mat2, output_sizes=None):
    """torch_npu.npu_bmmV2: the batched product."""
    return torch.matmul(input, mat2)


def ref_npu_format_cast(input, acl_format):
    """torch_npu.npu_format_cast: the values unchanged (only the memory layout changes)."""
    return input.clone()


ref_npu_format_cast_ = ref_npu_format_cast  # in place, the same values


def ref_one_(input):
    """torch_npu's one_: ones."""
    return torch.ones_like(input)


def ref_empty_with_format(size, dtype=None, layout=None, device=None, pin_memory=False, acl_format=2):
    """torch_npu.empty_with_format: uninitialized memory (only its shape and dtype are judged)."""
    return torch.zeros(size, dtype=dtype)


def ref_npu_slice(input, offsets, size):
    """torch_npu.npu_slice: `size` elements from `offsets` per dimension (-1: to the end)."""
    return input[tuple(slice(o, None if s == -1 else o + s) for o, s in zip(offsets, size))]


def ref_npu_indexing(input, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0):
    """torch_npu.npu_indexing: TensorFlow's strided slice (begin and end masks; the others refused)."""
    if ellipsis_mask or new_axis_mask or shrink_axis_mask:
        raise NotImplementedError("npu_indexing with an ellipsis, new-axis or shrink mask is not replayed")
    index = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        n = input.shape[i]
        picked = range(n)[slice(None if begin_mask >> i & 1 else b, None if end_mask >> i & 1 else e, s)]
        index.append(torch.tensor(list(picked), dtype=torch.long))
    out = input
    for d, idx in enumerate(index):
        out = out.index_select(d, idx)
    return out


def ref_npu_scatter_nd_update(input, indices, updates):
    """torch_npu.npu_scatter_nd_update: TensorFlow's ScatterNdUpdate on a copy."""
    out = input.clone()
    k = indices.shape[-1]
    for p, u in zip(indices.reshape(-1, k).tolist(), updates.reshape(-1, *input.shape[k:])):
        out[tuple(p)] = u
    return out


ref_npu_scatter_nd_update_ = ref_npu_scatter_nd_update  # in place, the same result


def ref_npu_add_rms_norm(x1, x2, gamma, epsilon=1e-06):
    """torch_npu.npu_add_rms_norm -> (y, rstd, x): x = x1 + x2, then npu_rms_norm."""
    x = x1 + x2
    y, rstd = ref_npu_rms_norm(x, gamma, epsilon)
    return y, rstd, x


def ref_npu_max(input, dim, keepdim=False):
    """torch_npu.npu_max -> (values, int32 indices)."""
    values, indices = torch.max(input, dim, keepdim)
    return values, indices.int()


def ref_npu_min(input, dim, keepdim=False):
    """torch_npu.npu_min -> (values, int32 indices)."""
    values, indices = torch.min(input, dim, keepdim)
    return values, indices.int()


def ref_npu_one_hot(input, num_classes=-1, depth=1, on_value=1, off_value=0):
    """torch_npu.npu_one_hot: `depth` classes on the last axis (`num_classes` names the axis), float32."""
    if num_classes != -1:
        raise NotImplementedError("npu_one_hot on another axis than the last is not replayed")
    hot = torch.arange(depth) == input.long().unsqueeze(-1)
    return torch.where(hot, torch.tensor(float(on_value)), torch.tensor(float(off_value))).float()


def ref_npu_softmax_cross_entropy_with_logits(input, labels):
    """torch_npu.npu_softmax_cross_entropy_with_logits: -sum(labels * log_softmax) per row."""
    return -(labels * torch.log_softmax(input, dim=-1)).sum(-1)


def ref_npu_pad(input, paddings):
    """torch_npu.npu_pad: zero (before, after) pairs from dim 0 on (F.pad's order reversed)."""
    pairs = [paddings[i:i + 2] for i in range(0, len(paddings), 2)]
    return torch.nn.functional.pad(input, [p for pair in reversed(pairs) for p in pair])


def ref_npu_geglu(input, dim=-1, approximate=1, activate_left=False):
    """torch_npu.npu_geglu -> (y, gelu): halves a, b; y = a * gelu(b) (gelu(a) * b with activate_left)."""
    a, b = input.chunk(2, dim=dim)
    active, other = (a, b) if activate_left else (b, a)
    g = torch.nn.functional.gelu(active, approximate="tanh" if approximate == 1 else "none")
    return other * g, g


def ref_npu_anti_quant(x, scale, *, offset=None, dst_dtype=None, src_dtype=None):
    """torch_npu.npu_anti_quant: (x + offset) * scale along the last axis (int8 x)."""
    x = x.to(scale.dtype)
    return (x if offset is None else x + offset) * scale


def ref_scatter_update(input, indices, updates, axis):
    """torch_npu.scatter_update: batch i's updates along `axis` from offset indices[i]
    (or, for [n, 2] indices, into batch indices[i][0] from indices[i][1])."""
    out = input.clone()
    axis = axis % input.dim()
    n = updates.shape[axis]
    for i, start in enumerate(indices.tolist()):
        batch, start = (i, start) if indices.dim() == 1 else start
        out[batch].narrow(axis - 1, start, n).copy_(updates[i])
    return out


ref_scatter_update_ = ref_scatter_update  # in place, the same result


def _legacy_boxes(b):
    """Centre and size of (x0, y0, x1, y1) boxes, the edge pixel counted."""
    return (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0] + 1, b[:, 3] - b[:, 1] + 1


def ref_npu_bounding_box_encode(anchor_box, ground_truth_box, means0, means1, means2, means3, stds0, stds1, stds2, stds3):
    """torch_npu.npu_bounding_box_encode: each box's (dx, dy, dw, dh) from its anchor, normalized."""
    px, py, pw, ph = _legacy_boxes(anchor_box)
    gx, gy, gw, gh = _legacy_boxes(ground_truth_box)
    d = torch.stack([(gx - px) / pw, (gy - py) / ph, torch.log(gw / pw), torch.log(gh / ph)], dim=-1)
    means, stds = torch.tensor([means0, means1, means2, means3]), torch.tensor([stds0, stds1, stds2, stds3])
    return (d - means.to(d.dtype)) / stds.to(d.dtype)


def ref_npu_bounding_box_decode(rois, deltas, means0, means1, means2, means3, stds0, stds1, stds2, stds3, max_shape, wh_ratio_clip):
    """torch_npu.npu_bounding_box_decode: the boxes the deltas give, corners within the image's last pixel."""
    d = deltas * torch.tensor([stds0, stds1, stds2, stds3]).to(deltas.dtype) + torch.tensor([means0, means1, means2, means3]).to(deltas.dtype)
    clip = abs(math.log(wh_ratio_clip))
    px, py, pw, ph = _legacy_boxes(rois)
    gw, gh = pw * d[:, 2].clamp(-clip, clip).exp(), ph * d[:, 3].clamp(-clip, clip).exp()
    gx, gy = px + pw * d[:, 0], py + ph * d[:, 1]
    h, w = max_shape
    return torch.stack([(gx - (gw - 1) / 2).clamp(0, w - 1), (gy - (gh - 1) / 2).clamp(0, h - 1),
                        (gx + (gw - 1) / 2).clamp(0, w - 1), (gy + (gh - 1) / 2).clamp(0, h - 1)], dim=-1)


# --- torch_npu's MoE kernels (runtime/src/ops/npu_moe.rs) ---


def ref_npu_moe_init_routing(x, row_idx, expert_idx, active_num):
    """torch_npu.npu_moe_init_routing -> (expanded_x, expanded_row_idx, expanded_expert_idx):
    the experts sorted stably, each row_idx value's sorted position, the rows in that order."""
    n, k = expert_idx.shape
    flat = expert_idx.reshape(-1)
    order = torch.argsort(flat, stable=True)
    sources = row_idx.reshape(-1)[order].long()
    position = torch.empty(n * k, dtype=torch.int32)
    position[sources] = torch.arange(n * k, dtype=torch.int32)
    return x[sources[:min(active_num, n) * k] % n], position, flat[order].int()


def ref_npu_moe_init_routing_v2(x, expert_idx, *, scale=None, offset=None, active_num=-1, expert_capacity=-1, expert_num=-1,
                                drop_pad_mode=0, expert_tokens_num_type=0, expert_tokens_num_flag=False, quant_mode=-1,
                                active_expert_range=None, row_idx_type=0, x_dtype=None):
    """torch_npu.npu_moe_init_routing_v2, dropless and unquantized -> (expanded_x, expanded_row_idx,
    expert_token_cumsum_or_count, expanded_scale); an output the kernel leaves unspecified is None."""
    if quant_mode != -1 or drop_pad_mode != 0:
        raise NotImplementedError("npu_moe_init_routing_v2 is replayed dropless and unquantized")
    n, k = expert_idx.shape
    lo, hi = tuple(active_expert_range) if active_expert_range else (0, expert_num if expert_num > 0 else None)
    ids = [int(e) for e in expert_idx.reshape(-1).tolist()]
    inside = [(e >= lo and (hi is None or e < hi)) for e in ids]
    order = sorted(range(n * k), key=lambda f: (2**31 - 1 if ids[f] < lo else ids[f], f))
    active = sum(inside)
    allocated = n * k if active_num <= 0 else min(active_num, n * k)
    rows = active if active_num <= 0 else min(active_num, active)
    sources = torch.tensor([f // k for f in order[:rows]], dtype=torch.long)
    if row_idx_type == 0:
        position = torch.full((n * k,), -1, dtype=torch.int32)
        for j, f in enumerate(order[:active]):
            position[f] = j
    else:
        position = torch.tensor(order, dtype=torch.int32) if active == n * k else None
    counts = None
    if expert_tokens_num_flag and hi is not None:
        hist = torch.zeros(hi - lo, dtype=torch.int64)
        for e in (e for e, kept in zip(ids, inside) if kept):
            hist[e - lo] += 1
        if expert_tokens_num_type == 0:
            counts = hist.cumsum(0)
        elif expert_tokens_num_type == 1:
            counts = hist
        else:
            pairs = [[lo + i, int(c)] for i, c in enumerate(hist.tolist()) if c > 0]
            pairs += [[0, 0]] if len(pairs) < expert_num else []
            counts = torch.tensor(pairs, dtype=torch.int64) if len(pairs) == expert_num else None
    if rows < allocated:
        return None, position, counts, None
    scales = None if scale is None else scale.reshape(-1)[sources].float()
    return x[sources], position, counts, scales


def ref_npu_moe_compute_expert_tokens(sorted_expert_for_source_row, num_expert):
    """torch_npu.npu_moe_compute_expert_tokens: per expert, the entries at most its id."""
    s = sorted_expert_for_source_row
    return torch.tensor([int((s <= e).sum()) for e in range(num_expert)], dtype=s.dtype)


def ref_npu_moe_finalize_routing(expanded_permuted_rows, skip1, skip2, bias, scales, expanded_src_to_dst_row,
                                 export_for_source_row, drop_pad_mode=0, k=1):
    """torch_npu.npu_moe_finalize_routing: skips plus each token's experts' rows (and bias), weighted;
    drop_pad_mode 0/1 list the indices by column (i + k*N), 2/3 by row (i*K + k)."""
    rows = expanded_permuted_rows.reshape(-1, expanded_permuted_rows.shape[-1])
    rows = torch.cat([rows, torch.zeros_like(rows[:1])])
    k = scales.shape[1] if scales is not None else k
    n = expanded_src_to_dst_row.numel() // k
    out = sum(s for s in (skip1, skip2) if s is not None)
    for slot in range(k):
        idx = (expanded_src_to_dst_row[slot * n:(slot + 1) * n] if drop_pad_mode < 2 else expanded_src_to_dst_row[slot::k]).long()
        term = rows[torch.where(idx < 0, rows.shape[0] - 1, idx)]
        if bias is not None and export_for_source_row is not None:
            term = term + bias[export_for_source_row[:, slot].long()]
        out = out + (term if scales is None else scales[:, slot:slot + 1] * term)
    return out


def ref_npu_grouped_matmul(x, weight, *, bias=None, scale=None, offset=None, antiquant_scale=None, antiquant_offset=None,
                           per_token_scale=None, group_list=None, activation_input=None, activation_quant_scale=None,
                           activation_quant_offset=None, split_item=0, group_type=None, group_list_type=0, act_type=0,
                           output_dtype=None, tuning_config=None):
    """torch_npu.npu_grouped_matmul, unquantized: x_i @ weight_i (+ bias_i) per group."""
    if any(v is not None for v in (scale, offset, antiquant_scale, antiquant_offset, per_token_scale, activation_input)) or act_type:
        raise NotImplementedError("a quantized or activated npu_grouped_matmul is not replayed")
    if split_item in (1, 3) and group_list is not None:
        ends = torch.as_tensor(group_list).long()
        ends = ends.cumsum(0) if group_list_type == 1 else ends
        x = list(x[0].tensor_split(ends[:-1].tolist()))
    weights = list(weight[0]) if len(weight) == 1 and weight[0].dim() == 3 else list(weight)
    outs = [xi @ wi + (0 if bias is None else bias[i]) for i, (xi, wi) in enumerate(zip(x, weights))]
    return [torch.cat(outs)] if split_item in (2, 3) else outs


# --- more inference kernels (runtime/src/ops/npu_infer.rs) ---


def ref_npu_add_rms_norm_v2(x1, x2, gamma, epsilon=1e-06):
    """torch_npu.npu_add_rms_norm_v2: its return value, rstd (y and x overwrite x1 and x2)."""
    return ref_npu_add_rms_norm(x1, x2, gamma, epsilon)[1]


def ref_npu_apply_rotary_pos_emb(query, key, cos, sin, layout="BSND", rotary_mode="half"):
    """torch_npu.npu_apply_rotary_pos_emb -> (query, key) rotated: x * cos + rotate(x) * sin."""
    if rotary_mode not in ("half", "interleave"):
        raise NotImplementedError(f"npu_apply_rotary_pos_emb with rotary_mode {rotary_mode!r} is not replayed")
    return ref_npu_rotary_mul(query, cos, sin, rotary_mode), ref_npu_rotary_mul(key, cos, sin, rotary_mode)


def ref_npu_transpose_batchmatmul(input, weight, *, bias=None, scale=None, perm_x1=None, perm_x2=None, perm_y=None, batch_split_factor=1):
    """torch_npu.npu_transpose_batchmatmul: permute(bmm(permuted input, permuted weight), perm_y)."""
    if bias is not None or scale is not None:
        raise NotImplementedError("npu_transpose_batchmatmul with bias or scale is not replayed")
    y = torch.bmm(input.permute(perm_x1 or [0, 1, 2]), weight.permute(perm_x2 or [0, 1, 2])).permute(perm_y or [1, 0, 2])
    if batch_split_factor > 1:
        m, b, n = y.shape
        y = y.reshape(m, batch_split_factor, b * n // batch_split_factor).transpose(0, 1)
    return y


def ref_npu_fused_matmul(x1, x2, *, bias=None, x3=None, fused_op_type=""):
    """torch_npu.npu_fused_matmul: op(x1 @ x2 + bias, x3)."""
    y = x1 @ x2 if bias is None else x1 @ x2 + bias
    ops = {"": lambda: y, "add": lambda: y + x3, "mul": lambda: y * x3, "gelu_erf": lambda: torch.nn.functional.gelu(y),
           "gelu_tanh": lambda: torch.nn.functional.gelu(y, approximate="tanh"), "relu": lambda: torch.relu(y), "16cast32": lambda: y}
    return ops[fused_op_type]()


def ref_npu_attention_update(lse, local_out, update_type):
    """torch_npu.npu_attention_update -> (out, lse or None): outputs weighted by exp(lse_i - logsumexp)."""
    total = torch.logsumexp(torch.stack(list(lse)), dim=0)
    out = sum(o * torch.exp(part - total).unsqueeze(-1) for part, o in zip(lse, local_out))
    return out, (total if update_type == 1 else None)


def ref_npu_grouped_matmul_add_(input, x, weight, group_list, *, transpose_x=True, transpose_weight=False, group_type=2, group_list_type=0):
    """torch_npu.npu_grouped_matmul_add_: input[g] + x[k0:k1].T @ weight[k0:k1] per K group."""
    ends = group_list.cumsum(0) if group_list_type == 1 else group_list
    starts = [0] + ends[:-1].tolist()
    blocks = [x[s:e].T @ weight[s:e] for s, e in zip(starts, ends.tolist())]
    return input + torch.stack(blocks).reshape(input.shape)


def ref_npu_sign_bits_pack(input, size):
    """torch_npu.npu_sign_bits_pack: bit 1 where x >= 0 (NaN too), eight a byte from the lowest bit."""
    bits = (input >= 0) | input.isnan()
    bits = torch.cat([bits, torch.zeros((-len(bits)) % 8, dtype=torch.bool)])
    return (bits.reshape(-1, 8).long() << torch.arange(8)).sum(-1).to(torch.uint8).reshape(size, -1)


def ref_npu_sign_bits_unpack(input, size, dtype):
    """torch_npu.npu_sign_bits_unpack: each byte's bits from the lowest, as +1 and -1."""
    bits = (input.long().unsqueeze(-1) >> torch.arange(8)) & 1
    return (bits.reshape(-1) * 2 - 1).reshape(size, -1).to(torch.float64 if dtype.is_floating_point else dtype)


def ref_npu_masked_fill_range(input, start, end, value, axis=-1):
    """torch_npu.npu_masked_fill_range on the last axis: range i of row j takes value[i]."""
    if axis not in (-1, input.dim() - 1):
        raise NotImplementedError("npu_masked_fill_range is replayed on the last axis")
    out = input.clone()
    for i in range(value.numel()):
        for j in range(input.shape[0]):
            out[j, ..., int(start[i, j]):int(end[i, j])] = value[i]
    return out


def ref_npu_moe_gating_top_k(x, k, *, bias=None, input_ids=None, tid2eid=None, k_group=1, group_count=1, group_select_mode=0, renorm=0,
                             norm_type=0, out_flag=False, routed_scaling_factor=1.0, eps=1e-20):
    """torch_npu.npu_moe_gating_top_k -> (y, int32 expert_idx, p): experts ranked by p + bias within
    the top groups, y their p (renormalized for sigmoid) times the scaling factor."""
    if input_ids is not None or tid2eid is not None or renorm:
        raise NotImplementedError("npu_moe_gating_top_k's hash mode and renorm are not replayed")
    p = torch.sigmoid(x) if norm_type == 1 else torch.softmax(x, -1)
    s = p if bias is None else p + bias
    r, e = s.shape
    grouped = s.reshape(r, group_count, e // group_count)
    score = grouped.topk(2, -1).values.sum(-1) if group_select_mode == 1 else grouped.max(-1).values
    keep = torch.zeros_like(score, dtype=torch.bool).scatter(1, score.topk(k_group, -1).indices, True)
    masked = torch.where(keep.repeat_interleave(e // group_count, 1), s, torch.tensor(float("-inf"), dtype=s.dtype))
    idx = masked.topk(k, -1).indices
    y = p.gather(1, idx)
    if norm_type == 1:
        y = y / (y.sum(-1, keepdim=True) + eps)
    return y * routed_scaling_factor, idx.int(), p


_ATTENTION_EXTRAS = ("pse_shift", "padding_mask", "actual_seq_lengths", "actual_seq_lengths_kv", "deq_scale1", "quant_scale1", "deq_scale2",
                     "dequant_scale1", "dequant_scale2", "quant_scale2", "quant_offset2", "antiquant_scale", "antiquant_offset", "block_table",
                     "kv_padding_size")


def ref_npu_prompt_flash_attention(query, key, value, *, atten_mask=None, num_heads=1, scale_value=1.0, pre_tokens=2147473647, next_tokens=0,
                                   input_layout="BSH", num_key_value_heads=0, sparse_mode=0, **extras):
    """torch_npu.npu_prompt_flash_attention, unquantized: npu_fusion_attention's attention_out."""
    if any(extras.get(p) is not None for p in _ATTENTION_EXTRAS):
        raise NotImplementedError("a quantized, paged or per-sequence npu_prompt_flash_attention is not replayed")
    return ref_npu_fusion_attention(query, key, value, num_heads, input_layout, atten_mask=atten_mask, scale=scale_value,
                                    pre_tockens=pre_tokens, next_tockens=next_tokens, sparse_mode=sparse_mode)[0]


def ref_npu_incre_flash_attention(query, key, value, *, atten_mask=None, num_heads=1, scale_value=1.0, input_layout="BSH", num_key_value_heads=0,
                                  block_size=0, inner_precise=1, **extras):
    """torch_npu.npu_incre_flash_attention, unquantized and unpaged: npu_fusion_attention's attention_out."""
    if any(extras.get(p) is not None for p in _ATTENTION_EXTRAS):
        raise NotImplementedError("a quantized, paged or per-sequence npu_incre_flash_attention is not replayed")
    return ref_npu_fusion_attention(query, key, value, num_heads, input_layout, atten_mask=atten_mask, scale=scale_value)[0]


_FIA_EXTRAS = ("pse_shift", "actual_seq_lengths", "actual_seq_lengths_kv", "dequant_scale1", "quant_scale1", "dequant_scale2", "quant_scale2",
               "quant_offset2", "antiquant_scale", "antiquant_offset", "key_antiquant_scale", "key_antiquant_offset", "value_antiquant_scale",
               "value_antiquant_offset", "block_table", "query_padding_size", "kv_padding_size", "key_shared_prefix", "value_shared_prefix",
               "actual_shared_prefix_len", "query_rope", "key_rope", "key_rope_antiquant_scale", "actual_seq_qlen", "actual_seq_kvlen",
               "dequant_scale_query", "dequant_scale_key", "dequant_offset_key", "dequant_scale_value", "dequant_offset_value",
               "dequant_scale_key_rope", "quant_scale_out", "quant_offset_out", "quant_scale_p", "learnable_sink", "out_dtype")


def ref_npu_fused_infer_attention_score(query, key, value, *, atten_mask=None, num_heads=1, scale=1.0, pre_tokens=2147483647,
                                        next_tokens=2147483647, input_layout="BSH", num_key_value_heads=0, sparse_mode=0,
                                        softmax_lse_flag=False, **extras):
    """torch_npu.npu_fused_infer_attention_score -> (attention_out, softmax_lse), unquantized, unpaged, whole
    sequences in BSH, BSND or BNSD: npu_fusion_attention's attention_out, and lse = max + ln(sum) as
    [B, N, S1, 1] float32 (without softmax_lse_flag, torch_npu's placeholder: one float32 zero)."""
    if any(extras.get(p) is not None for p in _FIA_EXTRAS):
        raise NotImplementedError("a quantized, paged, shifted or per-sequence fused inference attention is not replayed")
    if input_layout not in ("BSH", "BSND", "BNSD"):
        raise NotImplementedError(f"fused inference attention in layout {input_layout} is not replayed")
    if query.shape[2 if input_layout == "BNSD" else 1] == 1:
        # Decoding: the kernel ignores the sparse mode and the tokens; a [B, KV_S] mask is per batch.
        sparse_mode, pre_tokens, next_tokens = 0, 2147483647, 2147483647
        if atten_mask is not None and atten_mask.dim() == 2:
            atten_mask = atten_mask.reshape(atten_mask.shape[0], 1, 1, atten_mask.shape[1])
    out, mx, sm = ref_npu_fusion_attention(query, key, value, num_heads, input_layout, atten_mask=atten_mask, scale=scale,
                                           pre_tockens=pre_tokens, next_tockens=next_tokens, sparse_mode=sparse_mode)
    if not softmax_lse_flag:
        return out, torch.zeros(1, dtype=torch.float32)
    return out, mx[..., :1] + torch.log(sm[..., :1])


def ref_npu_fused_infer_attention_score_v2(query, key, value, *, num_query_heads=1, softmax_scale=1.0, return_softmax_lse=False,
                                           atten_mask=None, pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH",
                                           num_key_value_heads=0, sparse_mode=0, **extras):
    """torch_npu.npu_fused_infer_attention_score_v2: the same kernel under its v2 names."""
    return ref_npu_fused_infer_attention_score(query, key, value, atten_mask=atten_mask, num_heads=num_query_heads, scale=softmax_scale,
                                               pre_tokens=pre_tokens, next_tokens=next_tokens, input_layout=input_layout,
                                               sparse_mode=sparse_mode, softmax_lse_flag=return_softmax_lse, **extras)


def ref_npu_fusion_attention_v3(query, key, value, head_num, input_layout, pse=None, padding_mask=None, atten_mask=None, scale=1.0,
                                keep_prob=1.0, pre_tockens=2147483647, next_tockens=2147483647, inner_precise=0, prefix=None,
                                actual_seq_qlen=None, actual_seq_kvlen=None, sparse_mode=0, gen_mask_parallel=True, sync=False,
                                softmax_layout="", sink=None):
    """torch_npu.npu_fusion_attention_v3 (graph mode): npu_fusion_attention, its sequence lengths as tensors."""
    if sink is not None:
        raise NotImplementedError("npu_fusion_attention_v3 with sink is not replayed")
    as_list = lambda t: None if t is None else [int(v) for v in torch.as_tensor(t).tolist()]  # noqa: E731
    return ref_npu_fusion_attention(query, key, value, head_num, input_layout, pse=pse, padding_mask=padding_mask, atten_mask=atten_mask,
                                    scale=scale, keep_prob=keep_prob, pre_tockens=pre_tockens, next_tockens=next_tockens,
                                    inner_precise=inner_precise, prefix=prefix, actual_seq_qlen=as_list(actual_seq_qlen),
                                    actual_seq_kvlen=as_list(actual_seq_kvlen), sparse_mode=sparse_mode,
                                    gen_mask_parallel=gen_mask_parallel, sync=sync, softmax_layout=softmax_layout)


def ref_npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    """torch_npu.npu_moe_token_permute -> (permuted_tokens, sorted_indices): the (token, slot) pairs
    sorted stably by expert, their tokens' rows (the first num_out_tokens; a negative count drops
    from the end), and the row each pair went to (int32)."""
    if padded_mode:
        raise NotImplementedError("npu_moe_token_permute with padded_mode is not replayed")
    k = 1 if indices.dim() == 1 else indices.shape[1]
    flat = [int(v) for v in indices.reshape(-1).tolist()]
    order = sorted(range(len(flat)), key=lambda f: (flat[f], f))
    n = int(num_out_tokens or 0)
    kept = min(n, len(flat)) if n > 0 else max(len(flat) + n, 0)
    went = [0] * len(order)
    for row, f in enumerate(order):
        went[f] = row
    return tokens[torch.tensor([f // k for f in order[:kept]], dtype=torch.long)], torch.tensor(went, dtype=torch.int32)


def ref_npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    """torch_npu.npu_moe_token_unpermute: out[t] = sum_k probs[t, k] * permuted_tokens[sorted_indices[t*K + k]];
    an index past the rows (a dropped pair) adds nothing; [tokens, hidden] whatever restore_shape says
    (torch_npu passes it to the kernel only)."""
    if padded_mode:
        raise NotImplementedError("npu_moe_token_unpermute with padded_mode is not replayed")
    k = 1 if probs is None else probs.shape[1]
    rows = torch.cat([permuted_tokens, permuted_tokens.new_zeros(1, permuted_tokens.shape[1])])
    at = sorted_indices.long()
    at = torch.where((at >= 0) & (at < permuted_tokens.shape[0]), at, permuted_tokens.shape[0])
    picked = rows[at[:at.numel() // k * k]].reshape(-1, k, permuted_tokens.shape[1])
    out = (picked if probs is None else picked * probs.unsqueeze(-1)).sum(1)
    return out


def ref_npu_moe_token_permute_with_routing_map(tokens, routing_map, *, probs=None, num_out_tokens=None, drop_and_pad=False):
    """torch_npu.npu_moe_token_permute_with_routing_map, dropless -> (permuted_tokens, permuted_probs,
    sorted_indices): each expert's tokens in token order, expert after expert; their probabilities; for
    each routed pair in token order, its row (int32)."""
    if drop_and_pad:
        raise NotImplementedError("npu_moe_token_permute_with_routing_map with drop_and_pad is not replayed")
    routed = routing_map.bool()
    pairs = [(e, t) for e in range(routed.shape[1]) for t in range(routed.shape[0]) if routed[t, e]]
    if (routed.shape[0] if num_out_tokens is None else num_out_tokens) != len(pairs):
        raise NotImplementedError("a dropping npu_moe_token_permute_with_routing_map is not replayed")
    rows = torch.tensor([t for _, t in pairs], dtype=torch.long)
    kept = None if probs is None else torch.stack([probs[t, e] for e, t in pairs])
    went = sorted(range(len(pairs)), key=lambda j: (pairs[j][1], j))
    return tokens[rows], kept, torch.tensor(went, dtype=torch.int32)


def ref_npu_moe_re_routing(tokens, expert_token_num_per_rank, *, per_token_scales=None, expert_token_num_type=1, idx_type=0,
                           tokens_dtype=None):
    """torch_npu.npu_moe_re_routing -> (tokens, scales, gather index (int32), per-expert counts): rows that
    arrive rank-major (each rank's experts in order) regrouped expert-major (each expert's ranks in order)."""
    if expert_token_num_type != 1 or idx_type != 0:
        raise NotImplementedError("npu_moe_re_routing is replayed with expert_token_num_type 1 and idx_type 0")
    counts = expert_token_num_per_rank.long()
    ranks, experts = counts.shape
    starts = counts.reshape(-1).cumsum(0) - counts.reshape(-1)
    idx = [int(starts[r * experts + e]) + j for e in range(experts) for r in range(ranks) for j in range(int(counts[r, e]))]
    total = counts.sum(0).to(expert_token_num_per_rank.dtype)
    if len(idx) != tokens.shape[0]:
        return None, None, None, total
    at = torch.tensor(idx, dtype=torch.long)
    return tokens[at], None if per_token_scales is None else per_token_scales[at], at.int(), total


def ref_npu_gather_sparse_index(input, index):
    """torch_npu.npu_gather_sparse_index: input's rows at index (shape index.shape + input.shape[1:])."""
    return input[index.long()]


def ref_npu_top_k_top_p(logits, p=None, k=None):
    """torch_npu.npu_top_k_top_p: per row, logits below the k-th largest to -inf (ties kept; k <= 0 or
    >= V: no top-k), then, in ascending order, those whose cumulative softmax is at most 1 - p (the
    largest kept); kept values are the logits themselves. A row whose nucleus boundary lies within
    float32's rounding of the cumulative sum (V * 2^-24) is not replayed: the device's choice there
    is not determined by the values."""
    if p is None and k is None:
        raise ValueError("npu_top_k_top_p needs p or k")
    out = logits.clone()
    v = logits.shape[-1]
    for r in range(logits.shape[0]):
        order = sorted(range(v), key=lambda i: (float(logits[r, i]), i))
        vals = [float(logits[r, i]) for i in order]
        kk = None if k is None else int(k[r])
        if kk is not None and 0 < kk < v:
            vals = [x if x >= vals[v - kk] else -math.inf for x in vals]
        if p is not None:
            w = [math.exp(x - vals[-1]) for x in vals]
            total, run = sum(w), 0.0
            for j in range(v - 1):
                run += w[j] / total
                if abs(run - (1 - float(p[r]))) <= v * 2.0 ** -24:
                    raise NotImplementedError(f"npu_top_k_top_p: row {r}'s nucleus boundary is within float32's rounding")
                vals[j] = -math.inf if run <= 1 - float(p[r]) else vals[j]
        for j, i in enumerate(order):
            out[r, i] = vals[j]
    return out


def ref_npu_cross_entropy_loss(input, target, weight=None, reduction="mean", ignore_index=-100, label_smoothing=0.0,
                               lse_square_scale_for_zloss=0.0, return_zloss=False):
    """torch_npu.npu_cross_entropy_loss -> (loss, log_prob, zloss, lse_for_zloss): torch's cross entropy
    ([1] when reduced) and log_softmax; the z-loss outputs empty when not asked for, else not judged (None):
    the kernel does not compute them."""
    log_prob = torch.log_softmax(input, -1)
    loss = torch.nn.functional.nll_loss(log_prob, target, weight=weight, reduction=reduction, ignore_index=ignore_index)
    if label_smoothing:
        w = torch.ones(input.shape[-1], dtype=input.dtype) if weight is None else weight
        keep = (target != ignore_index).to(input.dtype)
        smooth = -(log_prob * w).sum(-1) * keep / input.shape[-1]
        smooth = {"none": smooth, "sum": smooth.sum(), "mean": smooth.sum() / (w[target.clamp(min=0)] * keep).sum()}[reduction]
        loss = (1 - label_smoothing) * loss + label_smoothing * smooth
    empty = input.new_empty(0)
    # torch_npu differentiates the loss alone.
    return (loss if reduction == "none" else loss.reshape(1)), log_prob.detach(), None if return_zloss else empty, \
        empty if lse_square_scale_for_zloss == 0 else None


def ref_npu_fused_add_topk_div(x, add_num, *, mapping_num=None, mapping_table=None, activation_type=None, group_num=1, group_topk=1,
                               n=1, k=1, is_norm=True, scale=1.0, enable_expert_mapping=False):
    """ATB's npu_fused_add_topk_div -> (y, indices): s = sigmoid(x), t = s + add_num; only the group_topk groups
    with the largest sums of their top n values kept (the others 0); the top k of t (stable) as int32
    indices; y their s (normalized to sum scale when is_norm), float32."""
    if enable_expert_mapping:
        raise NotImplementedError("npu_fused_add_topk_div with enable_expert_mapping is not replayed")
    s = torch.sigmoid(x)
    t = s + add_num
    ys, ids = [], []
    for r in range(x.shape[0]):
        groups = t[r].reshape(group_num, -1)
        sums = [float(g.sort(descending=True).values[:n].sum()) for g in groups]
        keep = sorted(range(group_num), key=lambda g: (-sums[g], g))[:group_topk]
        masked = torch.cat([groups[g] if g in keep else torch.zeros_like(groups[g]) for g in range(group_num)])
        top = sorted(range(masked.numel()), key=lambda i: (-float(masked[i]), i))[:k]
        y = s[r, top]
        ys.append(y / y.sum() * scale if is_norm else y)
        ids.append(top)
    return torch.stack(ys), torch.tensor(ids, dtype=torch.int32)


def ref_npu_interleave_rope(x, cos, sin):
    """torch_npu.npu_interleave_rope, x [B, N, S, D]: even lanes then odd lanes, rotated by halves
    (q*cos + cat(-q2, q1)*sin), left de-interleaved."""
    q = torch.cat([x[..., 0::2], x[..., 1::2]], dim=-1)
    h = q.shape[-1] // 2
    return q * cos + torch.cat([-q[..., h:], q[..., :h]], dim=-1) * sin


def ref_npu_mrope(positions, query, key, cos_sin_cache, head_size, *, mrope_section=None, rotary_mode="half", cache_mode="default"):
    """torch_npu.npu_mrope: each head's first rotary_dim lanes rotated (NeoX halves, or GPT-J pairs for
    'interleave') by the cache row [cos | sin] of its token's position; with 2-D positions, section i of the
    lanes from position row i ('default') or lanes 1, 2 mod 3 from rows 1, 2 ('interleave')."""
    if rotary_mode not in ("half", "interleave"):
        raise ValueError(f"npu_mrope: rotary_mode {rotary_mode!r}")
    rd = cos_sin_cache.shape[-1]
    half = rd // 2
    rows = cos_sin_cache[positions.long()]
    if positions.dim() == 2:
        if cache_mode == "default":
            owner = [i for i, n in enumerate(mrope_section) for _ in range(n)]
        else:
            owner = [lane % 3 if lane < 3 * mrope_section[1] else 0 for lane in range(half)]
        rows = torch.stack([torch.cat([rows[owner[lane], :, lane:lane + 1] for lane in range(half)], -1),
                            torch.cat([rows[owner[lane], :, half + lane:half + lane + 1] for lane in range(half)], -1)], 0)
        cos, sin = rows[0], rows[1]
    else:
        cos, sin = rows[:, :half], rows[:, half:]
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)

    def rotate(x):
        heads = x.reshape(x.shape[0], -1, head_size).clone()
        if rotary_mode == "half":
            a, b = heads[..., :half].clone(), heads[..., half:rd].clone()
            heads[..., :half], heads[..., half:rd] = a * cos - b * sin, b * cos + a * sin
        else:
            a, b = heads[..., 0:rd:2].clone(), heads[..., 1:rd:2].clone()
            heads[..., 0:rd:2], heads[..., 1:rd:2] = a * cos - b * sin, b * cos + a * sin
        return heads.reshape(x.shape)
    return rotate(query), rotate(key)


def ref_npu_gelu_mul(input, *, approximate="none"):
    """torch_npu.npu_gelu_mul: gelu of the last dim's first half times its second half."""
    a, b = input.chunk(2, dim=-1)
    return torch.nn.functional.gelu(a, approximate=approximate) * b


def ref_npu_clipped_swiglu(x, *, group_index=None, dim=-1, alpha=1.702, limit=7.0, bias=1.0, interleaved=True):
    """torch_npu.npu_clipped_swiglu: over the dims from dim on, flattened, a = even (or first-half) lanes
    clamped above at limit, c = the others clamped to +-limit; a*sigmoid(alpha*a)*(c + bias). Rows past
    the grouped ones are unspecified (None)."""
    d = dim % x.dim()
    rows = math.prod(x.shape[:d])
    if group_index is not None and int(group_index.sum()) < rows:
        return None
    flat = x.reshape(rows, -1)
    a, c = (flat[:, ::2], flat[:, 1::2]) if interleaved else (flat[:, :flat.shape[1] // 2], flat[:, flat.shape[1] // 2:])
    a = torch.clamp(a, max=limit)
    out = a / (1 + torch.exp(-alpha * a)) * (torch.clamp(c, -limit, limit) + bias)
    return out.reshape(*x.shape[:d], x.shape[d] // 2, *x.shape[d + 1:])


def ref_npu_group_norm_swish(input, num_groups, weight, bias, eps=1e-5, swish_scale=1.0):
    """torch_npu.npu_group_norm_swish -> (y, mean, rstd): group norm, then t*sigmoid(swish_scale*t);
    mean and rstd [N, groups] (rstd = 1/sqrt(biased var + eps)) in weight's dtype."""
    t = torch.nn.functional.group_norm(input, num_groups, weight, bias, eps)
    g = input.reshape(input.shape[0], num_groups, -1)
    mean = g.mean(-1)
    rstd = 1 / torch.sqrt(g.var(-1, unbiased=False) + eps)
    return t * torch.sigmoid(swish_scale * t), mean.to(weight.dtype), rstd.to(weight.dtype)


def ref_npu_normalize_batch(self, seq_len, normalize_type=0):
    """torch_npu.npu_normalize_batch, self [B, C, T]: (x - mean) / (std + 1e-5), mean and unbiased std
    over each sequence's first seq_len steps, per channel (type 0) or over all channels (type 1)."""
    if normalize_type not in (0, 1):
        raise ValueError(f"npu_normalize_batch: normalize_type {normalize_type} (0 or 1)")
    out = []
    for b in range(self.shape[0]):
        seen = self[b, :, :int(seq_len[b])]
        if normalize_type == 0:
            mean, std = seen.mean(1, keepdim=True), seen.std(1, keepdim=True)
        else:
            mean, std = seen.mean(), seen.std()
        out.append((self[b] - mean) / (std + 1e-5))
    return torch.stack(out)


def ref_npu_stride_add(self, other, offset1, offset2, c1_len):
    """torch_npu.npu_stride_add: channels (dim 1) zero-padded to a multiple of 16; out[:, c] =
    self[:, 16*offset1 + c] + other[:, 16*offset2 + c] for c < 16*c1_len."""
    n = 16 * int(c1_len)

    def window(x, offset):
        start = 16 * int(offset)
        wide = x.new_zeros(x.shape[0], max(start + n, x.shape[1]), *x.shape[2:])
        wide[:, :x.shape[1]] = x
        return wide[:, start:start + n]
    return window(self, offset1) + window(other, offset2)


def ref_npu_ffn(x, weight1, weight2, activation, *, expert_tokens=None, expert_tokens_index=None, bias1=None, bias2=None, scale=None,
                offset=None, deq_scale1=None, deq_scale2=None, antiquant_scale1=None, antiquant_scale2=None, antiquant_offset1=None,
                antiquant_offset2=None, inner_precise=None, output_dtype=None):
    """torch_npu.npu_ffn, unquantized: act(x @ W1 + b1) @ W2 + b2, weights [K, N] (per expert [E, K, N] over
    consecutive rows counted by expert_tokens or their cumulative expert_tokens_index); relu, silu, gelu
    (tanh form, as the kernel) and fastgelu (x*sigmoid(1.702x))."""
    if any(v is not None for v in (scale, offset, deq_scale1, deq_scale2, antiquant_scale1, antiquant_scale2, antiquant_offset1,
                                   antiquant_offset2)):
        raise NotImplementedError("a quantized npu_ffn is not replayed")
    acts = {"relu": torch.relu, "silu": torch.nn.functional.silu, "gelu": lambda h: torch.nn.functional.gelu(h, approximate="tanh"),
            "fastgelu": lambda h: h / (1 + torch.exp(-1.702 * h))}
    if activation not in acts:
        raise NotImplementedError(f"npu_ffn with activation {activation!r} is not replayed")
    rows = x.reshape(-1, x.shape[-1])
    if expert_tokens_index is not None:
        expert_tokens = torch.diff(torch.tensor([0, *expert_tokens_index])).tolist()
    groups = [(rows, None)] if expert_tokens is None else list(zip(rows.split(list(expert_tokens)), range(len(expert_tokens))))

    def pick(t, e):
        return t if t is None or e is None else t[e]
    out = []
    for part, e in groups:
        h = part @ pick(weight1, e)
        h = acts[activation](h if bias1 is None else h + pick(bias1, e))
        y = h @ pick(weight2, e)
        out.append(y if bias2 is None else y + pick(bias2, e))
    return torch.cat(out).reshape(*x.shape[:-1], weight2.shape[-1])


def ref_npu_scatter(self, indices, updates, dim):
    """torch_npu.npu_scatter (ArgMaxGrad's scatter): indices and updates have self's shape without dim;
    self with out[..., indices[...], ...] = updates along dim."""
    d = dim % self.dim()
    out = self.clone()
    out.scatter_(d, indices.long().unsqueeze(d), updates.unsqueeze(d))
    return out


def ref_npu_convert_weight_to_int4pack(weight, inner_k_tiles=0):
    """torch_npu.npu_convert_weight_to_int4pack, int32: each 8 values' low nibbles in one int32,
    value 8i + j in nibble j (the fp4 packing of Ascend 950 is not replayed)."""
    if weight.dtype != torch.int32:
        raise NotImplementedError("npu_convert_weight_to_int4pack of float32 (fp4 packing) is not replayed")
    words = []
    for group in weight.reshape(-1, 8).tolist():
        word = sum((v & 0xF) << (4 * j) for j, v in enumerate(group))
        words.append(word - (1 << 32) if word >= 1 << 31 else word)
    return torch.tensor(words, dtype=torch.int32).reshape(*weight.shape[:-1], -1)


def _box_rows(boxes, gtboxes, trans, is_cross):
    """The corner rows (x1, y1, x2, y2) of [4, N] boxes, from (cx, cy, w, h) when trans; for a cross
    product, boxes along columns and gtboxes along rows."""
    def corners(b):
        if trans:
            return [b[0] - b[2] * 0.5, b[1] - b[3] * 0.5, b[0] + b[2] * 0.5, b[1] + b[3] * 0.5]
        return list(b)
    p, q = corners(boxes), corners(gtboxes)
    if is_cross:
        p, q = [t.unsqueeze(0) for t in p], [t.unsqueeze(1) for t in q]
    return p, q


def _overlap(p, q):
    w = (torch.minimum(p[2], q[2]) - torch.maximum(p[0], q[0])).clamp(min=0)
    h = (torch.minimum(p[3], q[3]) - torch.maximum(p[1], q[1])).clamp(min=0)
    return w * h


def ref_npu_giou(self, gtboxes, trans=False, is_cross=False, mode=0):
    """torch_npu.npu_giou (trans=True, pairwise, mode 0 only): inter/union - (outer - union)/outer,
    union = a1 + a2 - inter + 1e-16, as [N, 1]."""
    if not trans or is_cross or mode != 0:
        raise ValueError("npu_giou runs with trans=True, is_cross=False, mode=0 only")
    p, q = _box_rows(self, gtboxes, trans, is_cross)
    inter = _overlap(p, q)
    union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter + 1e-16
    outer = (torch.maximum(p[2], q[2]) - torch.minimum(p[0], q[0])).abs() * (torch.maximum(p[3], q[3]) - torch.minimum(p[1], q[1])).abs()
    return (inter / union - (outer - union) / outer).unsqueeze(1)


def _diou_parts(self, gtboxes, trans, is_cross, mode):
    if mode != 0:
        raise NotImplementedError("iof (mode 1) is not replayed")
    eps = 1e-9
    p, q = _box_rows(self, gtboxes, trans, is_cross)
    w1, h1, w2, h2 = p[2] - p[0], p[3] - p[1] + eps, q[2] - q[0], q[3] - q[1] + eps
    inter = _overlap(p, q)
    iou = inter / (w1 * h1 + w2 * h2 - inter + eps)
    diag = (torch.maximum(p[2], q[2]) - torch.minimum(p[0], q[0])) ** 2 + (torch.maximum(p[3], q[3]) - torch.minimum(p[1], q[1])) ** 2 + eps
    centre = ((q[0] + q[2] - p[0] - p[2]) ** 2 + (q[1] + q[3] - p[1] - p[3]) ** 2) / 4
    return iou, centre / diag, (w1, h1, w2, h2)


def ref_npu_diou(self, gtboxes, trans=False, is_cross=False, mode=0):
    """torch_npu.npu_diou: iou - rho^2/c^2 (eps 1e-9 as op-plugin's golden), [1, N] (cross: [M, N])."""
    iou, distance, _ = _diou_parts(self, gtboxes, trans, is_cross, mode)
    out = iou - distance
    return out if is_cross else out.unsqueeze(0)


def ref_npu_ciou(self, gtboxes, trans=False, is_cross=True, mode=0, atan_sub_flag=False):
    """torch_npu.npu_ciou: iou - rho^2/c^2 - alpha*v, v = 4/pi^2 (atan(w2/h2) - atan(w1/h1))^2,
    alpha = v/((1 + 1e-9) - iou + v); [1, N] (cross: [M, N])."""
    iou, distance, (w1, h1, w2, h2) = _diou_parts(self, gtboxes, trans, is_cross, mode)
    v = 4 / math.pi ** 2 * (torch.atan(w2 / h2) - torch.atan(w1 / h1)) ** 2
    out = iou - distance - v * v / (1 + 1e-9 - iou + v)
    return out if is_cross else out.unsqueeze(0)


def ref_npu_yolo_boxes_encode(self, gt_bboxes, stride, performance_mode=False):
    """torch_npu.npu_yolo_boxes_encode: mmdetection's YOLO coder (eps 1e-6)."""
    if performance_mode:
        raise NotImplementedError("npu_yolo_boxes_encode with performance_mode (a float16 path) is not replayed")
    eps = 1e-6

    def centre(b):
        return (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    (ax, ay, aw, ah), (gx, gy, gw, gh) = centre(self), centre(gt_bboxes)
    s = stride.to(self.dtype)
    return torch.stack([torch.clamp((gx - ax) / s + 0.5, eps, 1 - eps), torch.clamp((gy - ay) / s + 0.5, eps, 1 - eps),
                        torch.log(torch.clamp(gw / aw, min=eps)), torch.log(torch.clamp(gh / ah, min=eps))], dim=1)


def _rotated(b):
    """[B, 5, N] rows (x1, y1, x2, y2, degrees) as centre, size (at least 1) and angle."""
    w = torch.clamp(b[:, 2] - b[:, 0], min=1.0)
    h = torch.clamp(b[:, 3] - b[:, 1], min=1.0)
    return b[:, 0] + w / 2, b[:, 1] + h / 2, w, h, torch.deg2rad(b[:, 4])


def ref_npu_rotated_box_encode(self, gt_bboxes, weight):
    """torch_npu.npu_rotated_box_encode: (dcx/w, dcy/h, log size ratios, tan difference) times weight."""
    ax, ay, aw, ah, aa = _rotated(self)
    gx, gy, gw, gh, ga = _rotated(gt_bboxes)
    w = weight.reshape(5, 1).to(self.dtype)
    return torch.stack([(gx - ax) / aw, (gy - ay) / ah, torch.log(gw / aw), torch.log(gh / ah), torch.tan(ga) - torch.tan(aa)], dim=1) * w


def ref_npu_rotated_box_decode(self, deltas, weight):
    """torch_npu.npu_rotated_box_decode: the inverse of the encoding, as corners and degrees."""
    ax, ay, aw, ah, aa = _rotated(self)
    d = deltas / weight.reshape(5, 1).to(deltas.dtype)
    cx, cy, w, h = d[:, 0] * aw + ax, d[:, 1] * ah + ay, torch.exp(d[:, 2]) * aw, torch.exp(d[:, 3]) * ah
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, torch.rad2deg(torch.atan(torch.tan(aa) + d[:, 4]))], dim=1)


def ref_npu_anchor_response_flags(self, featmap_size, stride, num_base_anchors):
    """torch_npu.npu_anchor_response_flags: 1 (uint8) for the base anchors of each cell holding a box
    centre (x by stride[0], y by stride[1], clamped; float32 as the kernel), else 0."""
    h, w = featmap_size
    b = self.float()
    col = torch.clamp(torch.floor((b[:, 0] + b[:, 2]) * 0.5 / stride[0]).long(), 0, w - 1)
    row = torch.clamp(torch.floor((b[:, 1] + b[:, 3]) * 0.5 / stride[1]).long(), 0, h - 1)
    grid = torch.zeros(h, w, dtype=torch.uint8)
    grid[row, col] = 1
    return grid.reshape(-1).repeat_interleave(num_base_anchors)


def ref_npu_grid_assign_positive(self, overlaps, box_responsible_flags, max_overlaps, argmax_overlaps, gt_max_overlaps,
                                 gt_argmax_overlaps, num_gts, pos_iou_thr, min_pos_iou, gt_max_assign_all):
    """torch_npu.npu_grid_assign_positive: mmdetection's GridAssigner positive stage (strict thresholds,
    later boxes winning)."""
    out = self.clone()
    ok = box_responsible_flags.bool()
    # The kernel compares in float32, its thresholds float32 attributes.
    pos_iou_thr, min_pos_iou = torch.tensor(pos_iou_thr, dtype=torch.float32), torch.tensor(min_pos_iou, dtype=torch.float32)
    overlaps, max_overlaps, gt_max_overlaps = overlaps.float(), max_overlaps.float(), gt_max_overlaps.float()
    hit = ok & (max_overlaps > pos_iou_thr)
    out[hit] = (argmax_overlaps[hit] + 1).to(out.dtype)
    for g in range(min(int(num_gts), overlaps.shape[0])):
        if not gt_max_overlaps[g] > min_pos_iou:
            continue
        if gt_max_assign_all:
            out[ok & (overlaps[g] == gt_max_overlaps[g])] = g + 1
        else:
            j = int(gt_argmax_overlaps[g])
            if ok[j]:
                out[j] = g + 1
    return out


def _roi_samples(roi, size, scale, pooled, sample_num, mode):
    """One RoI's bins as lists of (y, x) bilinear sample points."""
    x0, y0, x1, y1 = (float(v) * scale for v in roi[1:5])
    if mode == 1:
        x1, y1 = x1 + scale, y1 + scale
    elif mode >= 2:
        x0, y0, x1, y1 = x0 - 0.5, y0 - 0.5, x1 - 0.5, y1 - 0.5
    rw, rh = x1 - x0, y1 - y0
    if mode < 2:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    bh, bw = rh / pooled[0], rw / pooled[1]
    gh = sample_num if sample_num > 0 else math.ceil(bh)
    gw = sample_num if sample_num > 0 else math.ceil(bw)
    return [[(y0 + py * bh + (iy + 0.5) * bh / gh, x0 + px * bw + (ix + 0.5) * bw / gw) for iy in range(gh) for ix in range(gw)]
            for py in range(pooled[0]) for px in range(pooled[1])]


def _bilinear_taps(y, x, h, w):
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return []
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = min(int(y), h - 1), min(int(x), w - 1)
    y = float(y0) if y0 == h - 1 else y
    x = float(x0) if x0 == w - 1 else x
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    dy, dx = y - y0, x - x0
    return [(y0, x0, (1 - dy) * (1 - dx)), (y0, x1, (1 - dy) * dx), (y1, x0, dy * (1 - dx)), (y1, x1, dy * dx)]


def ref_npu_roi_align(self, rois, spatial_scale, pooled_height, pooled_width, sample_num, roi_end_mode):
    """torch_npu.npu_roi_align, rois [K, 5] (batch, x1, y1, x2, y2): each bin the mean of its bilinear
    samples; roi_end_mode 0 is torchvision's aligned=False, 1 the end + 1, 2 and 3 aligned."""
    n, c, h, w = self.shape
    out = self.new_zeros(rois.shape[0], c, pooled_height, pooled_width)
    for k, roi in enumerate(rois.tolist()):
        if not 0 <= int(roi[0]) < n:
            continue
        for b, points in enumerate(_roi_samples(roi, (h, w), spatial_scale, (pooled_height, pooled_width), sample_num, roi_end_mode)):
            acc = self.new_zeros(c)
            for y, x in points:
                for yy, xx, wt in _bilinear_taps(y, x, h, w):
                    acc = acc + wt * self[int(roi[0]), :, yy, xx]
            out[k, :, b // pooled_width, b % pooled_width] = acc / max(len(points), 1)
    return out


def ref_npu_roi_alignbk(self, rois, xdiff_shape, pooled_width, pooled_height, spatial_scale, sample_num, roi_end_mode=None):
    """torch_npu.npu_roi_alignbk: the adjoint of npu_roi_align (roi_end_mode 1 when None)."""
    mode = 1 if roi_end_mode is None else roi_end_mode
    with torch.enable_grad():  # the scripts run their forward calls under no_grad
        features = torch.zeros(list(xdiff_shape), dtype=self.dtype, requires_grad=True)
        out = ref_npu_roi_align(features, rois, spatial_scale, pooled_height, pooled_width, sample_num, mode)
        return torch.autograd.grad(out, features, self.to(out.dtype))[0]


# The outputs of an NPU call that are judged, by op, where torch_npu returns more
# (runtime/src/ops/npu_attention.rs: seed, offset and numels are the device generator's).
JUDGED_OUTPUTS = {"npu_fusion_attention": 3, "npu_fusion_attention_v3": 3}
