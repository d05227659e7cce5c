"""One dumped step of the call forms issue 38 names, for tests/fixtures/forms (make_forms.sh):
`Tensor.type_as` casting float32 to bfloat16, `torch.maximum(a, b, out=c)` (Adam's amsgrad),
`nn.LSTM` and `nn.GRU` (msprobe 8.3.2 records the LSTM as `VF.lstm`), a complex64 multiply
through `torch.view_as_complex` / `torch.view_as_real` (rotary embeddings), and the in-place
`Tensor.index_add_` on a tensor inside the graph, differentiated; two `nn.MultiheadAttention`
calls (`Functional.multi_head_attention_forward`: packed weights with batch_first, and kdim/vdim
with bias_k/bias_v, add_zero_attn, a key padding mask and per-head weights). Seeded.

    PYTHONPATH=<msprobe> python forms_step.py <msprobe config.json> <dump_path>
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import zoo_common  # noqa: E402


def main():
    debugger = zoo_common.setup()
    gen = zoo_common.generator()
    x = torch.randn(4, 8, generator=gen).requires_grad_()
    like = torch.randn(4, 8, generator=gen).bfloat16()
    lstm = torch.nn.LSTM(8, 6, batch_first=True)
    gru = torch.nn.GRU(8, 5, batch_first=True)
    a, b, c = torch.randn(5, generator=gen), torch.randn(5, generator=gen), torch.empty(5)
    z = torch.randn(3, 4, generator=gen).requires_grad_()
    src = torch.randn(3, 8, generator=gen).requires_grad_()
    index = torch.tensor([0, 2, 0])
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    mha2 = torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=5, add_bias_kv=True, add_zero_attn=True)
    keys = torch.randn(4, 1, 6, generator=gen)
    values = torch.randn(4, 1, 5, generator=gen)
    pad = torch.tensor([[False, True, False, False]])
    debugger.start()
    y = x.type_as(like)
    torch.maximum(a, b, out=c)
    seq, _ = lstm(x.unsqueeze(0))
    seq2, _ = gru(x.unsqueeze(0))
    zc = torch.view_as_complex(z.reshape(3, 2, 2))
    r = torch.view_as_real(zc * zc)
    acc = (x * 2.0).index_add_(0, index, src, alpha=0.5)
    att, weights = mha(acc.unsqueeze(0), acc.unsqueeze(0), acc.unsqueeze(0))
    att2, weights2 = mha2(acc.unsqueeze(1), keys, values, key_padding_mask=pad, average_attn_weights=False)
    loss = y.float().sum() + seq.sum() + seq2.sum() + r.sum() + (acc * acc).sum() + att.sum() + weights.sum() + att2.sum() + weights2.sum()
    loss.backward()
    debugger.stop()
    debugger.step()


if __name__ == "__main__":
    main()
