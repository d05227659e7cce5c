"""ms_mobilenetv3: a MobileNetV3-style network, one training step (MindSpore 2.10, PyNative, CPU).

Usage: python ms_mobilenetv3.py <msprobe-config.json | none>

Ops: a stride-2 stem conv + batch_norm + hardswish; two inverted-residual blocks: 1x1 expand
conv, depthwise 3x3 conv (ops.conv2d with groups = channels, pad_mode "pad" and "same"),
squeeze-excitation (ops.adaptive_avg_pool2d / Tensor.mean, mint.nn.functional.linear, relu,
hardsigmoid through mindspore.ops and mint.nn.functional, a broadcast Tensor __mul__), 1x1
project conv, identity residual; hardswish through mindspore.ops and mint.nn.functional; a
classifier head with ops.dropout; ops.cross_entropy with label smoothing and Int32 labels;
mindspore.nn.Adam with weight decay.
Avoided (no CPU kernel): mint.nn.functional.{conv2d, batch_norm, dropout, adaptive_avg_pool2d,
cross_entropy}, mint.optim.AdamW ("The kernel AdamW unregistered"); mint.optim.Adam does not
update parameters on CPU (in-place ops are no-ops there).
"""
import mindspore as ms
from mindspore import nn, mint, ops
import mindspore.mint.nn.functional as F

from zoo_common import Init, setup, run_step

debugger = setup()
init = Init(seed=20)

BATCH, CIN, HW, CLASSES = 2, 3, 16, 5


class BN(nn.Cell):
    def __init__(self, c, name):
        super().__init__()
        self.gamma = init.param((c,), name + ".gamma", value=1.0)
        self.beta = init.param((c,), name + ".beta", value=0.0)
        self.mean = init.param((c,), name + ".mean", value=0.0, requires_grad=False)
        self.var = init.param((c,), name + ".var", value=1.0, requires_grad=False)

    def construct(self, x):
        return ops.batch_norm(x, self.mean, self.var, self.gamma, self.beta, training=True)


class SqueezeExcite(nn.Cell):
    def __init__(self, c, r, name, use_ops_pool):
        super().__init__()
        self.w1 = init.param((c // r, c), name + ".fc1.weight")
        self.b1 = init.param((c // r,), name + ".fc1.bias", value=0.0)
        self.w2 = init.param((c, c // r), name + ".fc2.weight")
        self.b2 = init.param((c,), name + ".fc2.bias", value=0.0)
        self.use_ops_pool = use_ops_pool

    def construct(self, x):
        if self.use_ops_pool:
            s = ops.adaptive_avg_pool2d(x, 1).reshape(x.shape[0], -1)
            s = F.relu(F.linear(s, self.w1, self.b1))
            s = F.hardsigmoid(F.linear(s, self.w2, self.b2))
        else:
            s = x.mean(axis=(2, 3))
            s = ops.relu(F.linear(s, self.w1, self.b1))
            s = ops.hardsigmoid(F.linear(s, self.w2, self.b2))
        return x * s.reshape(s.shape[0], s.shape[1], 1, 1)


class InvertedResidual(nn.Cell):
    def __init__(self, c, expand, name, idx):
        super().__init__()
        e = c * expand
        self.expand_w = init.param((e, c, 1, 1), name + ".expand.weight")
        self.bn1 = BN(e, name + ".bn1")
        self.dw_w = init.param((e, 1, 3, 3), name + ".dw.weight")
        self.bn2 = BN(e, name + ".bn2")
        self.se = SqueezeExcite(e, 4, name + ".se", use_ops_pool=(idx == 0))
        self.proj_w = init.param((c, e, 1, 1), name + ".proj.weight")
        self.bn3 = BN(c, name + ".bn3")
        self.e = e
        self.idx = idx

    def construct(self, x):
        h = self.bn1(ops.conv2d(x, self.expand_w))                   # 1x1, pad_mode "valid"
        h = F.hardswish(h) if self.idx == 0 else ops.hardswish(h)
        if self.idx == 0:
            h = ops.conv2d(h, self.dw_w, None, 1, "pad", 1, 1, self.e)   # depthwise, positional
        else:
            h = ops.conv2d(h, self.dw_w, pad_mode="same", groups=self.e)
        h = ops.hardswish(self.bn2(h))
        h = self.se(h)
        h = self.bn3(ops.conv2d(h, self.proj_w))
        return x + h


class MobileNetV3(nn.Cell):
    def __init__(self):
        super().__init__()
        self.stem_w = init.param((8, CIN, 3, 3), "stem.weight")
        self.stem_bn = BN(8, "stem.bn")
        self.blocks = nn.CellList([InvertedResidual(8, 3, "b0", 0), InvertedResidual(8, 2, "b1", 1)])
        self.head_w = init.param((16, 8), "head.weight")
        self.head_b = init.param((16,), "head.bias", value=0.0)
        self.cls_w = init.param((CLASSES, 16), "cls.weight")
        self.cls_b = init.param((CLASSES,), "cls.bias", value=0.0)

    def construct(self, x, labels):
        x = ops.conv2d(x, self.stem_w, None, stride=2, pad_mode="pad", padding=1)   # [2,8,8,8]
        x = F.hardswish(self.stem_bn(x))
        for blk in self.blocks:
            x = blk(x)
        x = ops.adaptive_avg_pool2d(x, (1, 1))
        x = mint.flatten(x, 1)
        x = F.hardswish(F.linear(x, self.head_w, self.head_b))
        x = ops.dropout(x, p=0.2, training=True)
        logits = F.linear(x, self.cls_w, self.cls_b)
        return ops.cross_entropy(logits, labels, label_smoothing=0.1)


net = MobileNetV3()
opt = nn.Adam(net.trainable_params(), learning_rate=1e-3, weight_decay=1e-4)
grad_fn = ms.value_and_grad(net, None, opt.parameters)

images = init.normal((BATCH, CIN, HW, HW))
labels = init.integers((BATCH,), CLASSES, dtype=ms.int32)


def step():
    loss, grads = grad_fn(images, labels)
    opt(grads)
    return loss


run_step(debugger, step, "ms_mobilenetv3")
