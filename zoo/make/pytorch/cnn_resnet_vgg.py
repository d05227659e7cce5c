"""ResNet/VGG-style CNN: conv2d + batch_norm + relu + max/avg/adaptive pooling + dropout + linear.

Loss: cross_entropy with label_smoothing and ignore_index. Optimizer: SGD with momentum and weight decay.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

BATCH, IN_CH, SIZE, CLASSES = 2, 3, 12, 10


class ConvBN(nn.Module):
    def __init__(self, cin, cout, k=3, stride=1):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return self.bn(self.conv(x))


class BasicBlock(nn.Module):
    """ResNet basic block, with a 1x1 projection shortcut when the shape changes."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = ConvBN(cin, cout, 3, stride)
        self.c2 = ConvBN(cout, cout, 3, 1)
        self.short = ConvBN(cin, cout, 1, stride) if (stride != 1 or cin != cout) else None

    def forward(self, x):
        out = F.relu(self.c1(x))
        out = self.c2(out)
        identity = x if self.short is None else self.short(x)
        return F.relu(out + identity)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        # VGG-style stem: conv-bn-relu x2, max pool
        self.stem1 = nn.Conv2d(IN_CH, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.stem2 = ConvBN(8, 8)
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(16, CLASSES)

    def forward(self, x):
        x = F.relu(self.bn1(self.stem1(x)))
        x = F.relu(self.stem2(x), inplace=True)
        x = F.max_pool2d(x, kernel_size=2, stride=2)            # 12x12 -> 6x6
        x = self.block1(x)
        x = self.block2(x)                                      # 6x6 -> 3x3
        x = F.avg_pool2d(x, kernel_size=2, stride=1)            # 3x3 -> 2x2
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = self.drop(x)
        return self.fc(x)


model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
g = zoo_common.generator()
images = torch.randn(BATCH, IN_CH, SIZE, SIZE, generator=g)
labels = torch.randint(0, CLASSES, (BATCH,), generator=g)
labels[1] = -100  # an ignored sample


def compute_loss():
    logits = model(images)
    return F.cross_entropy(logits, labels, label_smoothing=0.1, ignore_index=-100)


zoo_common.train_step(debugger, model, optimizer, compute_loss)
