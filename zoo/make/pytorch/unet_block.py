"""UNet / diffusion block: sinusoidal timestep embedding (exp, arange, sin, cos, cat), ResNet
block with group_norm + silu + conv2d + time-embedding injection, a strided-conv downsample,
upsampling through interpolate (nearest) + conv and through conv_transpose2d, skip connections
with cat, a bilinear interpolate of a low-resolution feature.

Loss: kl_div (log_softmax vs softmax over channels) + binary_cross_entropy (sigmoid mask head).
Optimizer: AdamW (single-tensor, the CPU default).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

BATCH, IN_CH, SIZE, CH, TEMB, GROUPS = 2, 4, 8, 4, 8, 2


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class ResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.norm1 = nn.GroupNorm(GROUPS, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False)  # the time embedding adds a bias
        self.temb = nn.Linear(TEMB, cout)
        self.norm2 = nn.GroupNorm(GROUPS, cout)
        self.drop = nn.Dropout(0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(temb))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return h + (x if self.skip is None else self.skip(x))


class UNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(IN_CH, CH, 3, padding=1, bias=False)  # followed by a group norm
        self.down = ResBlock(CH, CH)
        self.downsample = nn.Conv2d(CH, CH, 3, stride=2, padding=1, bias=False)  # 8x8 -> 4x4
        self.mid_norm = nn.GroupNorm(GROUPS, CH)
        self.up_conv = nn.Conv2d(CH, CH, 3, padding=1)                   # after nearest 4x4 -> 8x8
        self.up_t = nn.ConvTranspose2d(CH, CH, 4, stride=2, padding=1)   # 4x4 -> 8x8
        self.fuse = nn.Conv2d(3 * CH, CH, 1)                             # skip-connection merge
        self.norm_out = nn.GroupNorm(GROUPS, CH)
        self.conv_out = nn.Conv2d(CH, IN_CH + 1, 3, padding=1)

    def forward(self, x, t):
        temb = timestep_embedding(t, TEMB)
        h0 = self.conv_in(x)
        h1 = self.down(h0, temb)
        m = F.silu(self.mid_norm(self.downsample(h1)))
        up_nearest = self.up_conv(F.interpolate(m, scale_factor=2.0, mode="nearest"))
        up_transposed = self.up_t(m)
        h = self.fuse(torch.cat([up_nearest, up_transposed, h1], dim=1))
        # a low-resolution guidance feature brought back to full size with bilinear interpolation
        h = h + F.interpolate(m.mean(dim=1, keepdim=True), size=h.shape[-2:], mode="bilinear", align_corners=False)
        out = self.conv_out(F.silu(self.norm_out(h)))
        return out[:, :IN_CH], out[:, IN_CH:]


model = UNet()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = zoo_common.generator()
x = torch.randn(BATCH, IN_CH, SIZE, SIZE, generator=g)
t = torch.randint(0, 1000, (BATCH,), generator=g)
target = torch.randn(BATCH, IN_CH, SIZE, SIZE, generator=g)
mask = (torch.rand(BATCH, 1, SIZE, SIZE, generator=g) > 0.5).float()


def compute_loss():
    out, mask_logits = model(x, t)
    kl = F.kl_div(F.log_softmax(out, dim=1), F.softmax(target, dim=1), reduction="batchmean")
    bce = F.binary_cross_entropy(torch.sigmoid(mask_logits), mask)
    return kl + bce


zoo_common.train_step(debugger, model, optimizer, compute_loss)
