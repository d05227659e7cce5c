"""MobileNetV3-style CNN: depthwise conv (groups=channels), hardswish, hardsigmoid,
squeeze-excitation (adaptive_avg_pool2d, mul), batch_norm.

Loss: nll_loss(log_softmax). Optimizer: Adam (foreach=False).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import zoo_common

debugger = zoo_common.setup()

BATCH, IN_CH, SIZE, CLASSES = 2, 3, 12, 10


class SqueezeExcite(nn.Module):
    def __init__(self, ch, squeeze):
        super().__init__()
        self.fc1 = nn.Conv2d(ch, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, ch, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        s = F.relu(self.fc1(s))
        s = F.hardsigmoid(self.fc2(s))
        return torch.mul(x, s)


class InvertedResidual(nn.Module):
    def __init__(self, cin, expand, cout, stride):
        super().__init__()
        self.expand = nn.Conv2d(cin, expand, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(expand)
        self.dw = nn.Conv2d(expand, expand, 3, stride=stride, padding=1, groups=expand, bias=False)
        self.bn2 = nn.BatchNorm2d(expand)
        self.se = SqueezeExcite(expand, 4)
        self.project = nn.Conv2d(expand, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.use_res = stride == 1 and cin == cout

    def forward(self, x):
        h = F.hardswish(self.bn1(self.expand(x)))
        h = F.hardswish(self.bn2(self.dw(h)))
        h = self.se(h)
        h = self.bn3(self.project(h))
        return x + h if self.use_res else h


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(IN_CH, 8, 3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.block = InvertedResidual(8, 16, 8, 1)
        self.drop = nn.Dropout(0.2)
        self.classifier = nn.Linear(8, CLASSES)

    def forward(self, x):
        x = F.hardswish(self.bn(self.stem(x)))                 # 12x12 -> 6x6
        x = self.block(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        x = self.drop(x)
        return self.classifier(x)


model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
g = zoo_common.generator()
images = torch.randn(BATCH, IN_CH, SIZE, SIZE, generator=g)
labels = torch.randint(0, CLASSES, (BATCH,), generator=g)


def compute_loss():
    logits = model(images)
    return F.nll_loss(F.log_softmax(logits, dim=1), labels)


zoo_common.train_step(debugger, model, optimizer, compute_loss)
