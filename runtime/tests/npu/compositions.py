"""torch_npu's fused kernels as plain torch compositions in float64: the
first oracle of the NPU agreement cases (oracles.py), written from
torch_npu's documented formulas, independently of the runtime's entries
(runtime/src/ops/npu_fused.rs, npu_attention.rs) and of msprobe's CPU
reference functions (the second oracle). Each returns what the runtime's
entry returns (for npu_fusion_attention: attention_out, softmax_max,
softmax_sum); statistics that carry no gradient are detached and stay
float64 (torch_npu gives them as float32: oracles.py records that dtype,
while the bench, like this oracle, keeps float64 values)."""

import math

import torch
import torch.nn.functional as F


def npu_rms_norm(x, gamma, epsilon=1e-6):
    """x·rsqrt(mean(x²) + ε)·γ over gamma's trailing dims, and rstd."""
    dims = tuple(range(x.dim() - gamma.dim(), x.dim()))
    rstd = torch.rsqrt(x.pow(2).mean(dim=dims, keepdim=True) + epsilon)
    return x * rstd * gamma, rstd.detach()


def npu_swiglu(x, dim=-1):
    """silu(a)·b for the halves a, b of x along dim."""
    a, b = x.chunk(2, dim=dim)
    return F.silu(a) * b


def npu_fast_gelu(x):
    """torch_npu's formula as written: x / (1 + exp(-1.702|x|)) · exp(0.851(x - |x|))."""
    return x / (1 + torch.exp(-1.702 * x.abs())) * torch.exp(0.851 * (x - x.abs()))


def npu_mish(x):
    """x·tanh(softplus(x))."""
    return x * torch.tanh(F.softplus(x))


def npu_rotary_mul(x, r1, r2, rotary_mode="half"):
    """x·r1 + rotate(x)·r2, rotate by halves or by interleaved pairs."""
    if rotary_mode == "half":
        x1, x2 = x.chunk(2, dim=-1)
        rotated = torch.cat((-x2, x1), dim=-1)
    else:
        rotated = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    return x * r1 + rotated * r2


def npu_scaled_masked_softmax(x, mask, scale=1.0, fixed_triu_mask=False):
    """softmax(masked_fill(x·scale, mask, -10000)) over the last dim."""
    if fixed_triu_mask:
        mask = torch.ones(x.shape[-2:], dtype=torch.bool).triu(1)
    return torch.softmax((x * scale).masked_fill(mask.bool(), -10000.0), dim=-1)


def _bnsd(t, layout, heads):
    """A layout's tensor as [B, N, S, D]."""
    if layout == "BSH":
        b, s, h = t.shape
        return t.view(b, s, heads, h // heads).permute(0, 2, 1, 3)
    if layout == "SBH":
        s, b, h = t.shape
        return t.view(s, b, heads, h // heads).permute(1, 2, 0, 3)
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    return t


def _from_bnsd(t, layout):
    b, n, s, d = t.shape
    if layout == "BSH":
        return t.permute(0, 2, 1, 3).reshape(b, s, n * d)
    if layout == "SBH":
        return t.permute(2, 0, 1, 3).reshape(s, b, n * d)
    if layout == "BSND":
        return t.permute(0, 2, 1, 3)
    return t


def _sparse_mask(mode, given, s1, s2, pre, nxt):
    """What is not attended ([s1, s2] or the given mask's shape), by sparse_mode."""
    i = torch.arange(s1).view(-1, 1)
    j = torch.arange(s2).view(1, -1)
    band = (j - i > nxt) | (i - j > pre)
    if mode == 0:  # without a mask, torch_npu's documentation ignores the tokens
        return torch.zeros(s1, s2, dtype=torch.bool) if given is None else given.bool() | band
    if mode == 1:
        return torch.zeros(s1, s2, dtype=torch.bool) if given is None else given.bool()
    if mode == 2:
        return j > i
    if mode == 3:
        return j - i > s2 - s1
    return band


def _attend(q, k, v, pse, mask, scale):
    n1, n2 = q.shape[1], k.shape[1]
    k = k.repeat_interleave(n1 // n2, dim=1)
    v = v.repeat_interleave(n1 // n2, dim=1)
    logits = q @ k.transpose(-1, -2)
    if pse is not None:
        logits = logits + pse
    logits = (logits * scale).masked_fill(mask, float("-inf"))
    mx = logits.max(dim=-1, keepdim=True).values.detach()
    sm = (logits.detach() - mx).exp().sum(dim=-1, keepdim=True)
    return torch.softmax(logits, dim=-1) @ v, mx, sm


def npu_fusion_attention(query, key, value, head_num, input_layout, *, pse=None, atten_mask=None, scale=1.0,
                         pre_tockens=2147483647, next_tockens=2147483647, sparse_mode=0,
                         actual_seq_qlen=None, actual_seq_kvlen=None, **_):
    """softmax(mask(scale·(QKᵀ + pse)))·V per layout, with the row max and
    sum of the masked, scaled logits repeated 8 times."""
    if input_layout == "TND":
        outs, maxs, sums = [], [], []
        qs = ks = 0
        for qe, ke in zip(actual_seq_qlen, actual_seq_kvlen):
            q, k, v = (t.unsqueeze(0).permute(0, 2, 1, 3) for t in (query[qs:qe], key[ks:ke], value[ks:ke]))
            mask = _sparse_mask(sparse_mode, None, qe - qs, ke - ks, pre_tockens, next_tockens)
            o, mx, sm = _attend(q, k, v, None, mask, scale)
            outs.append(o.permute(0, 2, 1, 3)[0])
            maxs.append(mx.permute(0, 2, 1, 3)[0])
            sums.append(sm.permute(0, 2, 1, 3)[0])
            qs, ks = qe, ke
        out, mx, sm = torch.cat(outs), torch.cat(maxs), torch.cat(sums)
    else:
        q = _bnsd(query, input_layout, head_num)
        d = q.shape[-1]
        n2 = key.shape[-1] // d if input_layout in ("BSH", "SBH") else key.shape[2 if input_layout == "BSND" else 1]
        k, v = _bnsd(key, input_layout, n2), _bnsd(value, input_layout, n2)
        mask = _sparse_mask(sparse_mode, atten_mask, q.shape[2], k.shape[2], pre_tockens, next_tockens)
        o, mx, sm = _attend(q, k, v, pse, mask, scale)
        out = _from_bnsd(o, input_layout)
    eight = lambda t: t.expand(*t.shape[:-1], 8)  # noqa: E731
    return out, eight(mx), eight(sm)


# MindSpore's fused ops (`MS.Functional.` names): the same Ascend operators under
# MindSpore's signatures.


def ms_rotary_position_embedding(x, cos, sin, mode=0):
    """x·cos + rotate(x)·sin: mode 0 rotates the halves, mode 1 interleaved pairs."""
    return npu_rotary_mul(x, cos, sin, "half" if mode == 0 else "interleave")


def ms_flash_attention_score(query, key, value, head_num, real_shift=None, attn_mask=None, scalar_value=1.0,
                             pre_tokens=2147483647, next_tokens=2147483647, input_layout="BSH", sparse_mode=0,
                             actual_seq_qlen=None, actual_seq_kvlen=None, **_):
    """flash_attention_score: npu_fusion_attention's attention_out under MindSpore's names."""
    return npu_fusion_attention(query, key, value, head_num, input_layout, pse=real_shift, atten_mask=attn_mask,
                                scale=scalar_value, pre_tockens=pre_tokens, next_tockens=next_tokens,
                                sparse_mode=sparse_mode, actual_seq_qlen=actual_seq_qlen,
                                actual_seq_kvlen=actual_seq_kvlen)[0]


# ---------------------------------------------------------------- torch_npu's spellings and MoE kernels
# (runtime/src/ops/npu_torch.rs, npu_moe.rs), from torch_npu's documentation
# and the CPU goldens of Ascend/op-plugin's tests.


def npu_conv2d(input, weight, bias, stride, padding, dilation, groups):
    return F.conv2d(input, weight, bias, stride, padding, dilation, groups)


def npu_conv3d(input, weight, bias, stride, padding, dilation, groups):
    return F.conv3d(input, weight, bias, stride, padding, dilation, groups)


def npu_convolution(input, weight, bias, stride, padding, dilation, groups):
    conv = {4: F.conv2d, 5: F.conv3d}[weight.dim()]
    return conv(input, weight, bias, stride, padding, dilation, groups)


def npu_conv_transpose2d(input, weight, bias, padding, output_padding, stride, dilation, groups):
    """torch_npu's order: padding, output_padding, stride, dilation, groups."""
    conv = {4: F.conv_transpose2d, 5: F.conv_transpose3d}[weight.dim()]
    return conv(input, weight, bias, stride, padding, output_padding, groups, dilation)


def npu_silu(x):
    return x * torch.sigmoid(x)


def npu_gelu(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + torch.tanh((2 / torch.pi) ** 0.5 * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + torch.erf(x / 2**0.5))


def npu_broadcast(x, size):
    return x.expand(size).contiguous()


def npu_dtype_cast(x, dtype):
    """A cast: the bench keeps float64 values under the new dtype (oracles.py's OUTPUT_DTYPES)."""
    return x.clone()


def npu_transpose(x, perm, require_contiguous=True):
    return x.permute(perm).contiguous()


def npu_reshape(x, shape, can_refresh=False):
    return x.reshape(shape)


def npu_bmmV2(x, mat2, output_sizes=None):
    return torch.matmul(x, mat2)


def npu_format_cast(x, acl_format):
    return x.clone()


def one_(x):
    return torch.ones_like(x)


def empty_with_format(size, dtype=None, acl_format=2):
    return torch.zeros(size, dtype=dtype or torch.float32)


def npu_slice(x, offsets, size):
    return x[tuple(slice(o, o + s) for o, s in zip(offsets, size))]


def npu_indexing(x, begin, end, strides, begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0):
    """TF's strided slice: Python slices, a masked begin or end left open."""
    index = tuple(slice(None if begin_mask >> i & 1 else b, None if end_mask >> i & 1 else e, s) for i, (b, e, s) in enumerate(zip(begin, end, strides)))
    return x[index]


def npu_scatter_nd_update(x, indices, updates):
    out = x.clone()
    k = indices.shape[-1]
    for p, u in zip(indices.reshape(-1, k).tolist(), updates.reshape(-1, *x.shape[k:])):
        out[tuple(p)] = u
    return out


def npu_add_rms_norm(x1, x2, gamma, epsilon=1e-6):
    x = x1 + x2
    y, rstd = npu_rms_norm(x, gamma, epsilon)
    return y, rstd, x


def npu_max(x, dim, keepdim=False):
    v, i = torch.max(x, dim, keepdim)
    return v, i.int()


def npu_min(x, dim, keepdim=False):
    v, i = torch.min(x, dim, keepdim)
    return v, i.int()


def npu_one_hot(x, num_classes=-1, depth=1, on_value=1, off_value=0):
    hot = torch.arange(depth) == x.long().unsqueeze(-1)
    return torch.where(hot, torch.tensor(float(on_value)), torch.tensor(float(off_value)))


def npu_softmax_cross_entropy_with_logits(features, labels):
    return -(labels * torch.log_softmax(features, dim=-1)).sum(-1)


def npu_pad(x, paddings):
    """Pairs from dim 0 on (F.pad's run from the last dim)."""
    pairs = [paddings[i : i + 2] for i in range(0, len(paddings), 2)]
    return F.pad(x, [p for pair in reversed(pairs) for p in pair])


def npu_geglu(x, dim=-1, approximate=1, activate_left=False):
    a, b = x.chunk(2, dim=dim)
    active, other = (a, b) if activate_left else (b, a)
    g = npu_gelu(active, "tanh" if approximate == 1 else "none")
    return other * g, g


def npu_anti_quant(x, scale, offset=None, dst_dtype=None, src_dtype=None):
    x = x.double()
    return (x if offset is None else x + offset) * scale


def scatter_update(data, indices, updates, axis):
    """The KV-cache write: batch i's updates along `axis` from offset indices[i]."""
    out = data.clone()
    axis = axis % data.dim()
    n = updates.shape[axis]
    for i, start in enumerate(indices.tolist()):
        batch, start = (i, start) if indices.dim() == 1 else start
        out[batch].narrow(axis - 1, start, n).copy_(updates[i].narrow(axis - 1, 0, n))
    return out


def _legacy_boxes(b):
    """Centre and size with the edge pixel counted (mmdet's legacy convention)."""
    return (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0] + 1, b[:, 3] - b[:, 1] + 1


def npu_bounding_box_encode(anchors, gts, m0, m1, m2, m3, s0, s1, s2, s3):
    px, py, pw, ph = _legacy_boxes(anchors)
    gx, gy, gw, gh = _legacy_boxes(gts)
    d = torch.stack([(gx - px) / pw, (gy - py) / ph, torch.log(gw / pw), torch.log(gh / ph)], dim=-1)
    return (d - torch.tensor([m0, m1, m2, m3])) / torch.tensor([s0, s1, s2, s3])


def npu_bounding_box_decode(rois, deltas, m0, m1, m2, m3, s0, s1, s2, s3, max_shape, wh_ratio_clip):
    d = deltas * torch.tensor([s0, s1, s2, s3]) + torch.tensor([m0, m1, m2, m3])
    clip = abs(torch.log(torch.tensor(wh_ratio_clip)).item())
    px, py, pw, ph = _legacy_boxes(rois)
    gw, gh = pw * d[:, 2].clamp(-clip, clip).exp(), ph * d[:, 3].clamp(-clip, clip).exp()
    gx, gy = px + pw * d[:, 0], py + ph * d[:, 1]
    h, w = max_shape
    x0, x1 = (gx - gw / 2 + 0.5).clamp(0, w - 1), (gx + gw / 2 - 0.5).clamp(0, w - 1)
    y0, y1 = (gy - gh / 2 + 0.5).clamp(0, h - 1), (gy + gh / 2 - 0.5).clamp(0, h - 1)
    return torch.stack([x0, y0, x1, y1], dim=-1)


def npu_moe_init_routing(x, row_idx, expert_idx, active_num):
    """op-plugin's golden: a stable sort of the experts; rows gathered by it."""
    n, k = expert_idx.shape
    order = torch.argsort(expert_idx.reshape(-1), stable=True)
    dst_to_src = row_idx.reshape(-1)[order]
    expanded_row_idx = torch.empty(n * k, dtype=torch.int32)
    expanded_row_idx[dst_to_src.long()] = torch.arange(n * k, dtype=torch.int32)
    active = min(active_num, n) * k
    return x[dst_to_src[:active].long() % n], expanded_row_idx, expert_idx.reshape(-1)[order].int()


def npu_moe_init_routing_v2(x, expert_idx, *, scale=None, active_num=-1, expert_num=-1, expert_tokens_num_type=0,
                            expert_tokens_num_flag=False, active_expert_range=None, row_idx_type=0, **_):
    """op-plugin's golden (test_npu_moe_init_routing_v2.py), dropless: ids below the range sort last."""
    n, k = expert_idx.shape
    start, end = active_expert_range or (0, expert_num)
    flat = expert_idx.reshape(-1).long()
    keys = torch.where(flat < start, torch.iinfo(torch.int32).max, flat)
    perm = torch.argsort(keys, stable=True)
    active = int(((flat >= start) & (flat < end)).sum())
    rows = active if active_num <= 0 else min(active_num, active)
    allocated = n * k if active_num <= 0 else min(active_num, n * k)
    if row_idx_type == 0:
        row_idx = torch.full((n * k,), -1, dtype=torch.int32)
        row_idx[perm[:active]] = torch.arange(active, dtype=torch.int32)
    else:
        row_idx = perm.int() if active == n * k else None
    counts = None
    if expert_tokens_num_flag:
        hist = torch.bincount(flat[perm[:active]] - start, minlength=end - start)
        counts = hist.cumsum(0) if expert_tokens_num_type == 0 else hist
    if rows < allocated:  # rows past the active ones are unspecified
        return None, row_idx, counts, None
    scales = None if scale is None else scale[perm[:rows] // k].float()
    return x[perm[:rows] // k], row_idx, counts, scales


def npu_moe_compute_expert_tokens(sorted_experts, num_expert):
    return torch.searchsorted(sorted_experts.contiguous(), torch.arange(num_expert, dtype=sorted_experts.dtype), right=True).to(sorted_experts.dtype)


def npu_moe_finalize_routing(rows, skip1, skip2, bias, scales, src_to_dst, experts, drop_pad_mode=0):
    n, k = scales.shape
    out = skip1 + (0 if skip2 is None else skip2)
    by_row = src_to_dst.reshape(n, k).T.reshape(-1) if drop_pad_mode >= 2 else src_to_dst
    for slot in range(k):
        picked = rows[by_row[slot * n:(slot + 1) * n].long()]
        out = out + scales[:, slot:slot + 1] * (picked + bias[experts[:, slot].long()])
    return out


def npu_grouped_matmul(x, weight, *, bias=None, group_list=None, split_item=0, group_type=None, group_list_type=0):
    if split_item in (1, 3):
        ends = group_list.tolist() if isinstance(group_list, torch.Tensor) else list(group_list)
        if group_list_type == 1:
            ends = torch.tensor(ends).cumsum(0).tolist()
        x = list(x[0].tensor_split(ends[:-1]))
    weights = list(weight[0]) if len(weight) == 1 and weight[0].dim() == 3 else weight
    outs = [xi @ wi + (0 if bias is None else bias[i]) for i, (xi, wi) in enumerate(zip(x, weights))]
    return [torch.cat(outs)] if split_item in (2, 3) else outs


def npu_add_rms_norm_v2(x1, x2, gamma, epsilon=1e-6):
    """Its return value: rstd (the normalized output and the sum overwrite x1 and x2)."""
    return npu_add_rms_norm(x1, x2, gamma, epsilon)[1]


def npu_apply_rotary_pos_emb(query, key, cos, sin, layout="BSND", rotary_mode="half"):
    return npu_rotary_mul(query, cos, sin, rotary_mode), npu_rotary_mul(key, cos, sin, rotary_mode)


def npu_transpose_batchmatmul(input, weight, bias=None, scale=None, perm_x1=(0, 1, 2), perm_x2=(0, 1, 2), perm_y=(1, 0, 2), batch_split_factor=1):
    y = torch.bmm(input.permute(perm_x1), weight.permute(perm_x2)).permute(perm_y)
    if batch_split_factor > 1:
        m, b, n = y.shape
        y = y.reshape(m, batch_split_factor, b * n // batch_split_factor).transpose(0, 1)
    return y


def npu_fused_matmul(x1, x2, bias=None, x3=None, fused_op_type=""):
    y = x1 @ x2 + (0 if bias is None else bias)
    return {"": lambda: y, "add": lambda: y + x3, "mul": lambda: y * x3, "gelu_erf": lambda: F.gelu(y),
            "gelu_tanh": lambda: F.gelu(y, approximate="tanh"), "relu": lambda: F.relu(y)}[fused_op_type]()


def npu_attention_update(lse, local_out, update_type):
    total = torch.logsumexp(torch.stack(lse), dim=0)
    out = sum(o * torch.exp(l - total).unsqueeze(-1) for l, o in zip(lse, local_out))
    return (out, total) if update_type == 1 else out


def npu_grouped_matmul_add_(y, x, weight, group_list, transpose_x=True, transpose_weight=False, group_type=2, group_list_type=0):
    ends = group_list.cumsum(0) if group_list_type == 1 else group_list
    starts = [0] + ends[:-1].tolist()
    blocks = [x[s:e].T @ weight[s:e] for s, e in zip(starts, ends.tolist())]
    return y + torch.stack(blocks).reshape(y.shape)


def npu_sign_bits_pack(x, size):
    bits = (x >= 0) | x.isnan()
    bits = torch.cat([bits, torch.zeros((-len(bits)) % 8, dtype=torch.bool)])
    packed = (bits.reshape(-1, 8).long() << torch.arange(8)).sum(-1).to(torch.uint8)
    return packed.reshape(size, -1)


def npu_sign_bits_unpack(x, size, dtype):
    bits = (x.long().unsqueeze(-1) >> torch.arange(8)) & 1
    return (bits.reshape(-1) * 2 - 1).reshape(size, -1).to(torch.float64)


def npu_masked_fill_range(x, start, end, value, axis=-1):
    out = x.clone()
    for i in range(value.numel()):
        for j in range(x.shape[0]):
            out[j, ..., int(start[i, j]):int(end[i, j])] = value[i]
    return out


def npu_moe_gating_top_k(x, k, bias=None, k_group=1, group_count=1, group_select_mode=0, norm_type=0, routed_scaling_factor=1.0, eps=1e-20):
    p = torch.sigmoid(x) if norm_type == 1 else torch.softmax(x, -1)
    s = p + (0 if bias is None else bias)
    r, e = s.shape
    grouped = s.reshape(r, group_count, e // group_count)
    score = grouped.topk(2, -1).values.sum(-1) if group_select_mode == 1 else grouped.max(-1).values
    keep = torch.zeros_like(score, dtype=torch.bool).scatter(1, score.topk(k_group, -1).indices, True)
    masked = torch.where(keep.repeat_interleave(e // group_count, 1), s, torch.tensor(float("-inf")))
    idx = masked.topk(k, -1).indices
    y = p.gather(1, idx)
    if norm_type == 1:
        y = y / (y.sum(-1, keepdim=True) + eps)
    return (y * routed_scaling_factor).detach(), idx.int(), p.detach()


def npu_prompt_flash_attention(query, key, value, *, atten_mask=None, num_heads=1, scale_value=1.0, pre_tokens=2147473647, next_tokens=0,
                               input_layout="BSH", sparse_mode=0, **_):
    return npu_fusion_attention(query, key, value, num_heads, input_layout, atten_mask=atten_mask, scale=scale_value,
                                pre_tockens=pre_tokens, next_tockens=next_tokens, sparse_mode=sparse_mode)[0]


def npu_incre_flash_attention(query, key, value, *, atten_mask=None, num_heads=1, scale_value=1.0, input_layout="BSH", **_):
    return npu_fusion_attention(query, key, value, num_heads, input_layout, atten_mask=atten_mask, scale=scale_value)[0]


def npu_fused_infer_attention_score(query, key, value, *, atten_mask=None, num_heads=1, scale=1.0, pre_tokens=2147483647, next_tokens=2147483647,
                                    input_layout="BSH", sparse_mode=0, softmax_lse_flag=False, **_):
    """npu_fusion_attention's attention_out and, when asked for, lse = max + ln(sum) as [B, N, S1, 1];
    one query token ignores the sparse mode and tokens, its [B, KV_S] mask per batch."""
    if query.shape[2 if input_layout == "BNSD" else 1] == 1:
        sparse_mode, pre_tokens, next_tokens = 0, 2147483647, 2147483647
        if atten_mask is not None and atten_mask.dim() == 2:
            atten_mask = atten_mask[:, None, None, :]
    out, mx, sm = npu_fusion_attention(query, key, value, num_heads, input_layout, atten_mask=atten_mask, scale=scale,
                                       pre_tockens=pre_tokens, next_tockens=next_tokens, sparse_mode=sparse_mode)
    lse = mx[..., :1] + torch.log(sm[..., :1]) if softmax_lse_flag else torch.zeros(1)
    return out, lse


def npu_fused_infer_attention_score_v2(query, key, value, *, num_query_heads=1, softmax_scale=1.0, return_softmax_lse=False, **kwargs):
    return npu_fused_infer_attention_score(query, key, value, num_heads=num_query_heads, scale=softmax_scale, softmax_lse_flag=return_softmax_lse,
                                           **kwargs)


def npu_fusion_attention_v3(query, key, value, head_num, input_layout, actual_seq_qlen=None, actual_seq_kvlen=None, **kwargs):
    as_list = lambda t: None if t is None else t.tolist()  # noqa: E731
    return npu_fusion_attention(query, key, value, head_num, input_layout, actual_seq_qlen=as_list(actual_seq_qlen),
                                actual_seq_kvlen=as_list(actual_seq_kvlen), **kwargs)


# Token routing (ops/npu_route.rs): op-plugin's goldens, and CANN's kernel loop where the golden is a placeholder.
def npu_moe_token_permute(tokens, indices, num_out_tokens=None, padded_mode=False):
    topk = 1 if indices.dim() == 1 else indices.size(1)
    numel = indices.numel()
    n = 0 if num_out_tokens is None else int(num_out_tokens)
    n_out = min(n, numel) if n > 0 else n + numel
    first = torch.argsort(indices.reshape(-1), stable=True)
    return tokens.index_select(0, first[:n_out] // topk), torch.argsort(first, stable=True).int()


def npu_moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, padded_mode=False, restore_shape=None):
    n_out, h = permuted_tokens.shape
    topk = 1 if probs is None else probs.size(1)
    t = sorted_indices.size(0) // topk
    si = sorted_indices.long()[:t * topk]
    w = torch.ones(t * topk, dtype=torch.float64) if probs is None else probs.reshape(-1)[:t * topk]
    keep = si < n_out
    rows = permuted_tokens.index_select(0, torch.where(keep, si, torch.zeros_like(si)))
    rows = torch.where(keep.unsqueeze(-1), rows * w.unsqueeze(-1), torch.zeros_like(rows))
    return rows.reshape(t, topk, h).sum(1)


def npu_moe_token_permute_with_routing_map(tokens, routing_map, *, probs=None, num_out_tokens=None, drop_and_pad=False):
    t = tokens.shape[0]
    rm_t = routing_map.bool().T.contiguous()
    tok_ids = torch.arange(t).unsqueeze(0).expand(rm_t.shape[0], -1).masked_select(rm_t)
    pp = None if probs is None else probs.T.contiguous().masked_select(rm_t)
    return tokens.index_select(0, tok_ids), pp, torch.argsort(tok_ids, stable=True).int()


def npu_moe_re_routing(tokens, expert_token_num_per_rank, *, per_token_scales=None, expert_token_num_type=1, idx_type=0, tokens_dtype=None):
    cnt = expert_token_num_per_rank.long()
    n, e = cnt.shape
    start = (torch.cumsum(cnt.reshape(-1), 0) - cnt.reshape(-1)).reshape(n, e)
    idx = torch.cat([torch.arange(int(start[r, x]), int(start[r, x] + cnt[r, x])) for x in range(e) for r in range(n)])
    scales = None if per_token_scales is None else per_token_scales[idx]
    return tokens[idx], scales, idx.int(), cnt.sum(0).to(expert_token_num_per_rank.dtype)


def npu_gather_sparse_index(input, index):
    return input.index_select(0, index.reshape(-1).long()).reshape(*index.shape, *input.shape[1:])


# Logits and expert scores (ops/npu_logits.rs).
def npu_top_k_top_p(logits, p=None, k=None):
    """op-plugin's golden: an ascending stable sort; top-k keeps ties; top-p drops the cumulative
    softmax at most 1 - p, the largest kept."""
    v = logits.shape[-1]
    sv, si = logits.sort(dim=-1, stable=True)
    if k is not None:
        kk = k.long()
        kth = sv.gather(1, (v - kk.clamp(1, v)).unsqueeze(1))
        sv = sv.masked_fill((sv < kth) & ((kk > 0) & (kk < v)).unsqueeze(1), float("-inf"))
    if p is not None:
        mask = sv.softmax(-1).cumsum(-1) <= (1 - p).unsqueeze(1)
        mask[:, -1] = False
        sv = sv.masked_fill(mask, float("-inf"))
    return torch.empty_like(sv).scatter_(-1, si, sv)


def npu_cross_entropy_loss(input, target, weight=None, reduction="mean", ignore_index=-100, label_smoothing=0.0,
                           lse_square_scale_for_zloss=0.0, return_zloss=False):
    loss = F.cross_entropy(input, target, weight=weight, reduction=reduction, ignore_index=ignore_index, label_smoothing=label_smoothing)
    empty = torch.empty(0, dtype=input.dtype)
    # torch_npu differentiates the loss alone.
    return (loss if reduction == "none" else loss.reshape(1)), F.log_softmax(input, -1).detach(), None if return_zloss else empty, \
        empty if lse_square_scale_for_zloss == 0 else None


def npu_fused_add_topk_div(x, add_num, *, group_num=1, group_topk=1, n=1, k=1, is_norm=True, scale=1.0, **_):
    """op-plugin's golden (test_fused_add_topk_div.py) in float64."""
    s = torch.sigmoid(x)
    t = (s + add_num).reshape(x.shape[0], group_num, -1).clone()
    order = torch.argsort(-t.topk(n).values.sum(-1), dim=-1, stable=True)
    for r in range(x.shape[0]):
        t[r, order[r, group_topk:]] = 0
    picked = torch.sort(t.reshape(x.shape), descending=True, stable=True).indices[:, :k]
    y = s.gather(-1, picked)
    return (y / y.sum(-1, keepdim=True) * scale if is_norm else y), picked.int()


# Rotary, activation, normalization and layout kernels (ops/npu_act.rs): op-plugin's and CANN's goldens.
def npu_interleave_rope(x, cos, sin):
    b, n, s, d = x.shape
    q = x.reshape(b, n, s, d // 2, 2).transpose(-1, -2).reshape(b, n, s, d)
    return q * cos + torch.cat((-q[..., d // 2:], q[..., :d // 2]), dim=-1) * sin


def npu_mrope(positions, query, key, cos_sin_cache, head_size, *, mrope_section=None, rotary_mode="half", cache_mode="default"):
    """op-plugin's golden_mrope (test_npu_mrope.py)."""
    sec = list(mrope_section) if mrope_section is not None else [0, 0, 0]
    rd = cos_sin_cache.shape[-1]
    t = positions.shape[-1]
    cos, sin = cos_sin_cache[positions.long()].chunk(2, dim=-1)
    if positions.dim() == 2:
        if cache_mode == "default":
            cos = torch.cat([c[i] for i, c in enumerate(cos.split(sec, dim=-1))], dim=-1)
            sin = torch.cat([s[i] for i, s in enumerate(sin.split(sec, dim=-1))], dim=-1)
        else:
            c0, s0 = cos[0].clone(), sin[0].clone()
            for d in (1, 2):
                idx = slice(d, sec[1] * 3, 3)
                c0[..., idx] = cos[d][..., idx]
                s0[..., idx] = sin[d][..., idx]
            cos, sin = c0, s0
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)

    def apply(x):
        x3 = x.view(t, -1, head_size)
        rot, rest = x3[..., :rd], x3[..., rd:]
        x1, x2 = rot.chunk(2, dim=-1) if rotary_mode == "half" else (rot[..., ::2], rot[..., 1::2])
        o1, o2 = x1 * cos - x2 * sin, x2 * cos + x1 * sin
        rot = torch.cat((o1, o2), -1) if rotary_mode == "half" else torch.stack((o1, o2), -1).flatten(-2)
        return torch.cat((rot, rest), -1).reshape(x.shape)
    return apply(query), apply(key)


def npu_gelu_mul(input, *, approximate="none"):
    d = input.shape[-1] // 2
    return F.gelu(input[..., :d], approximate=approximate) * input[..., d:]


def npu_clipped_swiglu(x, *, group_index=None, dim=-1, alpha=1.702, limit=7.0, bias=1.0, interleaved=True):
    shp = list(x.shape)
    d = dim % x.dim()
    x2 = x.reshape(math.prod(shp[:d]), -1)
    a, b = (x2[:, 0::2], x2[:, 1::2]) if interleaved else x2.chunk(2, dim=-1)
    a = a.clamp(max=limit)
    shp[d] //= 2
    return (a * torch.sigmoid(alpha * a) * (b.clamp(-limit, limit) + bias)).reshape(shp)


def npu_group_norm_swish(input, num_groups, weight, bias, eps=1e-5, swish_scale=1.0):
    n = input.shape[0]
    xg = input.reshape(n, num_groups, -1)
    mean = xg.mean(-1)
    rstd = (((xg - mean[..., None]) ** 2).mean(-1) + eps).rsqrt()
    shape = (1, input.shape[1]) + (1,) * (input.dim() - 2)
    y = ((xg - mean[..., None]) * rstd[..., None]).reshape(input.shape) * weight.reshape(shape) + bias.reshape(shape)
    return y * torch.sigmoid(swish_scale * y), mean, rstd


def npu_normalize_batch(x, seq_len, normalize_type=0):
    """op-plugin's golden (test_normalize_batch.py): unbiased std, eps on the std."""
    out = torch.empty_like(x)
    for b, n in enumerate(seq_len.tolist()):
        seen = x[b, :, :n]
        dims = (-1,) if normalize_type == 0 else (0, 1)
        mean, std = seen.mean(dim=dims, keepdim=True), seen.std(dim=dims, keepdim=True)
        out[b] = (x[b] - mean) / (std + 1e-5)
    return out


def npu_stride_add(x1, x2, offset1, offset2, c1_len):
    def pad(x):
        return F.pad(x, [0, 0] * (x.dim() - 2) + [0, (-x.shape[1]) % 16 + 16 * 64])
    c = 16 * c1_len
    return pad(x1)[:, 16 * offset1:16 * offset1 + c] + pad(x2)[:, 16 * offset2:16 * offset2 + c]


def npu_ffn(x, weight1, weight2, activation, *, expert_tokens=None, expert_tokens_index=None, bias1=None, bias2=None, **_):
    act = {"relu": torch.relu, "silu": F.silu, "gelu": lambda h: F.gelu(h, approximate="tanh"), "fastgelu": lambda h: h * torch.sigmoid(1.702 * h)}
    x2 = x.reshape(-1, x.shape[-1])

    def one(xe, w1, w2, b1, b2):
        h = act[activation](xe @ w1 + (0 if b1 is None else b1))
        return h @ w2 + (0 if b2 is None else b2)
    if expert_tokens_index is not None:
        expert_tokens = [e - s for s, e in zip([0] + list(expert_tokens_index), expert_tokens_index)]
    if expert_tokens is None:
        y = one(x2, weight1, weight2, bias1, bias2)
    else:
        y = torch.cat([one(xe, weight1[e], weight2[e], None if bias1 is None else bias1[e], None if bias2 is None else bias2[e])
                       for e, xe in enumerate(x2.split(list(expert_tokens)))])
    return y.reshape(*x.shape[:-1], weight2.shape[-1])


def npu_scatter(x, indices, updates, dim):
    d = dim % x.dim()
    return x.clone().scatter_(d, indices.long().unsqueeze(d), updates.unsqueeze(d))


def npu_convert_weight_to_int4pack(weight, inner_k_tiles=0):
    """op-plugin's pack_int4 golden: value 8i + j in nibble j."""
    nib = (weight.to(torch.int64) & 0xF).reshape(*weight.shape[:-1], -1, 8)
    packed = (nib << torch.arange(0, 32, 4, dtype=torch.int64)).sum(-1)
    return torch.where(packed >= 2 ** 31, packed - 2 ** 32, packed).to(torch.int32)


# Detection kernels (ops/npu_boxes.rs): op-plugin's CPU references and CANN's TIK kernels.
def _corners(b, trans):
    return (b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2) if trans else (b[0], b[1], b[2], b[3])


def _box_pairs(boxes, gtboxes, trans, is_cross):
    p, q = _corners(boxes, trans), _corners(gtboxes, trans)
    if is_cross:
        p, q = [t[None, :] for t in p], [t[:, None] for t in q]
    return p, q


def npu_giou(boxes, gtboxes, trans=False, is_cross=False, mode=0):
    (x11, y11, x12, y12), (x21, y21, x22, y22) = _box_pairs(boxes, gtboxes, trans, is_cross)
    inter = (torch.minimum(x12, x22) - torch.maximum(x11, x21)).clamp(min=0) * (torch.minimum(y12, y22) - torch.maximum(y11, y21)).clamp(min=0)
    outer = (torch.maximum(x12, x22) - torch.minimum(x11, x21)).abs() * (torch.maximum(y12, y22) - torch.minimum(y11, y21)).abs()
    union = (x12 - x11) * (y12 - y11) + (x22 - x21) * (y22 - y21) - inter + 1e-16
    return (inter / union - (outer - union) / outer).reshape(1, -1).t()


def _diou_terms(boxes, gtboxes, trans, is_cross, eps=1e-9):
    (x11, y11, x12, y12), (x21, y21, x22, y22) = _box_pairs(boxes, gtboxes, trans, is_cross)
    inter = (torch.minimum(x12, x22) - torch.maximum(x11, x21)).clamp(min=0) * (torch.minimum(y12, y22) - torch.maximum(y11, y21)).clamp(min=0)
    w1, h1, w2, h2 = x12 - x11, y12 - y11 + eps, x22 - x21, y22 - y21 + eps
    iou = inter / (w1 * h1 + w2 * h2 - inter + eps)
    c2 = (torch.maximum(x12, x22) - torch.minimum(x11, x21)) ** 2 + (torch.maximum(y12, y22) - torch.minimum(y11, y21)) ** 2 + eps
    rho2 = ((x21 + x22 - x11 - x12) ** 2 + (y21 + y22 - y11 - y12) ** 2) / 4
    return iou, rho2 / c2, w1, h1, w2, h2


def npu_diou(boxes, gtboxes, trans=False, is_cross=False, mode=0):
    iou, distance, *_ = _diou_terms(boxes, gtboxes, trans, is_cross)
    d = iou - distance
    return d if is_cross else d.reshape(1, -1)


def npu_ciou(boxes, gtboxes, trans=False, is_cross=True, mode=0, atan_sub_flag=False):
    iou, distance, w1, h1, w2, h2 = _diou_terms(boxes, gtboxes, trans, is_cross)
    v = 4 / math.pi ** 2 * (torch.atan(w2 / h2) - torch.atan(w1 / h1)) ** 2
    c = iou - distance - v / ((1 + 1e-9) - iou + v) * v
    return c if is_cross else c.reshape(1, -1)


def npu_yolo_boxes_encode(anchors, gt_bboxes, stride, performance_mode=False, eps=1e-6):
    """mmdetection's YOLOBBoxCoder.encode (op-plugin's golden matches it)."""
    b, g, s = anchors, gt_bboxes, stride.double()
    w_t = torch.log(((g[:, 2] - g[:, 0]) / (b[:, 2] - b[:, 0])).clamp(min=eps))
    h_t = torch.log(((g[:, 3] - g[:, 1]) / (b[:, 3] - b[:, 1])).clamp(min=eps))
    x_t = (((g[:, 0] + g[:, 2]) - (b[:, 0] + b[:, 2])) * 0.5 / s + 0.5).clamp(eps, 1 - eps)
    y_t = (((g[:, 1] + g[:, 3]) - (b[:, 1] + b[:, 3])) * 0.5 / s + 0.5).clamp(eps, 1 - eps)
    return torch.stack([x_t, y_t, w_t, h_t], dim=-1)


def _rotated_centres(b):
    w, h = (b[:, 2] - b[:, 0]).clamp(min=1.0), (b[:, 3] - b[:, 1]).clamp(min=1.0)
    return b[:, 0] + 0.5 * w, b[:, 1] + 0.5 * h, w, h, b[:, 4]


def npu_rotated_box_encode(anchors, gt_bboxes, weight):
    ax, ay, aw, ah, aa = _rotated_centres(anchors)
    gx, gy, gw, gh, ga = _rotated_centres(gt_bboxes)
    wt = weight.tolist()
    return torch.stack([(gx - ax) / aw * wt[0], (gy - ay) / ah * wt[1], torch.log(gw / aw) * wt[2], torch.log(gh / ah) * wt[3],
                        (torch.tan(ga * math.pi / 180) - torch.tan(aa * math.pi / 180)) * wt[4]], dim=1)


def npu_rotated_box_decode(anchors, deltas, weight):
    ax, ay, aw, ah, aa = _rotated_centres(anchors)
    dx, dy, dw, dh, da = (deltas[:, i] / float(weight[i]) for i in range(5))
    cx, cy, w, h = dx * aw + ax, dy * ah + ay, torch.exp(dw) * aw, torch.exp(dh) * ah
    return torch.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h, torch.atan(torch.tan(aa * math.pi / 180) + da) * 180 / math.pi], dim=1)


def npu_anchor_response_flags(gt, featmap_size, stride, num_base_anchors):
    """The documentation's golden (mmdetection's responsible_flags), in float32 as the kernel."""
    b = gt.float()
    h, w = featmap_size
    gx = torch.floor((b[:, 0] + b[:, 2]) * 0.5 / stride[0]).long().clamp(0, w - 1)
    gy = torch.floor((b[:, 1] + b[:, 3]) * 0.5 / stride[1]).long().clamp(0, h - 1)
    flags = torch.zeros(h * w, dtype=torch.uint8)
    flags[gy * w + gx] = 1
    return flags[:, None].expand(-1, num_base_anchors).reshape(-1)


def npu_grid_assign_positive(assigned, overlaps, flags, max_overlaps, argmax_overlaps, gt_max_overlaps, gt_argmax_overlaps, num_gts,
                             pos_iou_thr, min_pos_iou, gt_max_assign_all):
    """CANN's TIK kernel (grid_assign_positive.py): mmdetection's GridAssigner positive stage."""
    out = assigned.clone()
    flag = flags != 0
    pos = (max_overlaps > pos_iou_thr) & flag
    out[pos] = argmax_overlaps[pos].to(out.dtype) + 1
    for i in range(min(int(num_gts), overlaps.shape[0])):
        if gt_max_overlaps[i] > min_pos_iou:
            if gt_max_assign_all:
                out[(overlaps[i] == gt_max_overlaps[i]) & flag] = i + 1
            elif flag[int(gt_argmax_overlaps[i])]:
                out[int(gt_argmax_overlaps[i])] = i + 1
    return out


def _bilinear(fm, y, x):
    c, h, w = fm.shape
    if y < -1.0 or y > h or x < -1.0 or x > w:
        return fm.new_zeros(c)
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= h - 1:
        yh = yl = h - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= w - 1:
        xh = xl = w - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    return (1 - ly) * (1 - lx) * fm[:, yl, xl] + (1 - ly) * lx * fm[:, yl, xh] + ly * (1 - lx) * fm[:, yh, xl] + ly * lx * fm[:, yh, xh]


def npu_roi_align(x, rois, spatial_scale, pooled_height, pooled_width, sample_num, roi_end_mode):
    """CANN's ROIAlign golden: torchvision's aligned=False (mode 0), the end + 1 (mode 1), aligned (2, 3)."""
    out = []
    for r in rois.tolist():
        b = int(r[0])
        x0, y0, x1, y1 = [v * spatial_scale for v in r[1:5]]
        if roi_end_mode == 1:
            x1, y1 = x1 + spatial_scale, y1 + spatial_scale
        elif roi_end_mode >= 2:
            x0, y0, x1, y1 = x0 - 0.5, y0 - 0.5, x1 - 0.5, y1 - 0.5
        rw, rh = x1 - x0, y1 - y0
        if roi_end_mode < 2:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bw, bh = rw / pooled_width, rh / pooled_height
        gw = sample_num if sample_num > 0 else math.ceil(bw)
        gh = sample_num if sample_num > 0 else math.ceil(bh)
        bins = [sum(_bilinear(x[b], y0 + ph * bh + (iy + 0.5) * bh / gh, x0 + pw * bw + (ix + 0.5) * bw / gw)
                    for iy in range(gh) for ix in range(gw)) / max(gw * gh, 1)
                for ph in range(pooled_height) for pw in range(pooled_width)]
        out.append(torch.stack(bins, -1).reshape(x.shape[1], pooled_height, pooled_width))
    return torch.stack(out)


def npu_roi_alignbk(dy, rois, xdiff_shape, pooled_width, pooled_height, spatial_scale, sample_num, roi_end_mode=None):
    """The adjoint of npu_roi_align (mode 1 when None), by autograd."""
    with torch.enable_grad():
        x = torch.zeros(xdiff_shape, dtype=torch.float64, requires_grad=True)
        y = npu_roi_align(x, rois, spatial_scale, pooled_height, pooled_width, sample_num, 1 if roi_end_mode is None else roi_end_mode)
        return torch.autograd.grad(y, x, dy.to(y.dtype))[0]
