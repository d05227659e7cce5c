"""One training step of ResNet-50 (torchvision's resnet50 written out: bottleneck blocks of
3, 4, 6 and 3, 1000 classes), batch BATCH at 224x224, cross-entropy and SGD with momentum, for the
real-size benchmark (scripts/bench-real-size.sh): the issue's CNN step as an msprobe dump.

    python resnet50_step.py <msprobe config.json> <dump_path> [BATCH]

Run with the real msprobe on PYTHONPATH (zoo/make/make_resnet50.sh). Seeded (zoo_common.SEED and
a fixed generator): the same dump on every run. One undumped warm-up step runs first (momentum buffers filled).
"""
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pytorch"))
import zoo_common  # noqa: E402

BATCH = int(sys.argv.pop(3)) if len(sys.argv) > 3 else 8


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        width = planes
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.downsample = None
        if stride != 1 or inplanes != planes * 4:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride=stride, bias=False), nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        return F.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        layers, inplanes = [], 64
        for planes, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(inplanes, planes, stride if i == 0 else 1))
                inplanes = planes * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


debugger = zoo_common.setup()
g = zoo_common.generator()
model = ResNet50()
images = torch.randn(BATCH, 3, 224, 224, generator=g)
labels = torch.randint(0, 1000, (BATCH,), generator=g)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def step():
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss


model.train()
warm = step()
debugger.start(model=model)  # level mix needs the model (its modules' hooks); L1 ignores it
loss = step()
debugger.stop()
debugger.step()
print("warm-up loss", float(warm.detach()), "dumped step loss", float(loss.detach()))
