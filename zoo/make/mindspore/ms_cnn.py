"""ms_cnn: a small ResNet/VGG-style CNN, one training step (MindSpore 2.10, PyNative, CPU).

Usage: python ms_cnn.py <msprobe-config.json | none>

Ops: conv2d through mindspore.ops (pad_mode "pad", "same" and "valid", with and without bias,
stride 2); ops.batch_norm in training mode (running
statistics as non-trainable Parameters); relu through ops and mint.nn.functional (mint has no relu);
ops.max_pool2d (windows with ties after ReLU), ops.avg_pool2d, ops.adaptive_avg_pool2d;
ops.dropout; ops.dense and mint.nn.functional.linear; a mint.add residual; input
standardisation through Tensor methods (mean, std, __sub__, __truediv__) and a Tensor
__mul__ scaling the residual branch; ops.cross_entropy
with Int32 labels; mindspore.nn.SGD with momentum and weight decay.
Avoided (no CPU kernel): mint.conv2d and mint.nn.functional.{conv2d, batch_norm, max_pool2d,
avg_pool2d, adaptive_avg_pool2d, dropout, cross_entropy}; mint.optim.SGD does not update
parameters on CPU (in-place ops are no-ops there).
"""
import mindspore as ms
from mindspore import nn, mint, ops
import mindspore.mint.nn.functional as F

from zoo_common import Init, setup, run_step

debugger = setup()
init = Init(seed=10)

BATCH, CIN, HW, CLASSES = 4, 3, 12, 10
C1, C2 = 6, 8


class ConvBN(nn.Cell):
    def __init__(self, cin, cout, k, name, bias=False):
        super().__init__()
        self.weight = init.param((cout, cin, k, k), name + ".weight")
        self.bias = init.param((cout,), name + ".bias", value=0.01) if bias else None
        self.gamma = init.param((cout,), name + ".bn.gamma", value=1.0)
        self.beta = init.param((cout,), name + ".bn.beta", value=0.0)
        self.mean = init.param((cout,), name + ".bn.mean", value=0.0, requires_grad=False)
        self.var = init.param((cout,), name + ".bn.var", value=1.0, requires_grad=False)

    def construct(self, x, pad_mode, padding=0, stride=1):
        y = ops.conv2d(x, self.weight, self.bias, stride=stride, pad_mode=pad_mode, padding=padding)
        return ops.batch_norm(y, self.mean, self.var, self.gamma, self.beta,
                              training=True, momentum=0.1, eps=1e-5)


class CNN(nn.Cell):
    def __init__(self):
        super().__init__()
        self.stem = ConvBN(CIN, C1, 3, "stem", bias=True)
        self.res1 = ConvBN(C1, C1, 3, "res.conv1")
        self.res2 = ConvBN(C1, C1, 3, "res.conv2")
        self.vgg = ConvBN(C1, C2, 3, "vgg.conv")
        self.down = init.param((C2, C2, 3, 3), "down.weight")
        self.fc1_w = init.param((16, C2), "fc1.weight")
        self.fc1_b = init.param((16,), "fc1.bias", value=0.0)
        self.fc2_w = init.param((CLASSES, 16), "fc2.weight")
        self.fc2_b = init.param((CLASSES,), "fc2.bias", value=0.0)

    def construct(self, x, labels):
        # per-batch input standardisation through Tensor methods
        x = (x - x.mean()) / (x.std() + 1e-5)
        x = ops.relu(self.stem(x, "pad", padding=1))                 # [4,6,12,12]
        # ResNet basic block, "same" padding
        h = F.relu(self.res1(x, "same"))
        h = self.res2(h, "same") * 0.5                               # residual branch scaling
        x = ops.relu(mint.add(x, h))
        x = ops.max_pool2d(x, kernel_size=2, stride=2)                # [4,6,6,6]
        # VGG-style conv without padding, then average pooling
        x = F.relu(self.vgg(x, "valid"))                             # [4,8,4,4]
        x = ops.avg_pool2d(x, kernel_size=2, stride=1)                # [4,8,3,3]
        x = ops.relu(ops.conv2d(x, self.down, None, stride=2, pad_mode="pad", padding=1))  # [4,8,2,2]
        x = ops.adaptive_avg_pool2d(x, (1, 1))
        x = mint.flatten(x, 1)
        x = ops.dropout(x, p=0.25, training=True)
        x = F.relu(ops.dense(x, self.fc1_w, self.fc1_b))
        logits = F.linear(x, self.fc2_w, self.fc2_b)
        return ops.cross_entropy(logits, labels)


net = CNN()
opt = nn.SGD(net.trainable_params(), learning_rate=0.05, momentum=0.9, weight_decay=1e-4)
grad_fn = ms.value_and_grad(net, None, opt.parameters)

images = init.normal((BATCH, CIN, HW, HW))
labels = init.integers((BATCH,), CLASSES, dtype=ms.int32)          # Int32, as MindSpore datasets give


def step():
    loss, grads = grad_fn(images, labels)
    opt(grads)
    return loss


run_step(debugger, step, "ms_cnn")
