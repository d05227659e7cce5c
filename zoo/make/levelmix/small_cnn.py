"""A small CNN for the level-mix fixtures: conv2d -> batch_norm -> relu -> max_pool -> conv2d ->
adaptive avg pool -> flatten -> linear, cross_entropy loss, one SGD (momentum) step; batch 2,
3x16x16 inputs, 4 and 8 channels, 5 classes.

    python small_cnn.py <msprobe config.json> <dump_path>
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from levelmix_common import generator, setup, train_step


class SmallCNN(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(4, 8, kernel_size=3, padding=1)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        x = self.pool(self.relu(self.bn1(self.conv1(x))))
        x = self.avgpool(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def main():
    debugger = setup()
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    g = generator()
    x = torch.randn(2, 3, 16, 16, generator=g)
    target = torch.tensor([1, 3])
    train_step(debugger, model, optimizer, lambda: F.cross_entropy(model(x), target))


if __name__ == "__main__":
    main()
