# Parity of scripts/tutorials/blitz/cifar10_tutorial.lua with pytorch/tutorials
# beginner_source/blitz/cifar10_tutorial.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/cifar10_tutorial.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/cifar10_tutorial.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/cifar10_tutorial.py compare DIR
#
# prepare: the tutorial's Net (seed 0) to DIR/cifar10_tutorial_init.safetensors; 12 batches of 4
# images (randn [4, 3, 32, 32], labels randint 0..9, generator seed 1) to _data.safetensors; then
# the tutorial's training step (CrossEntropyLoss, SGD lr 0.001 momentum 0.9) over them. Writes
# _torch_losses.txt and _torch_final.safetensors. float32, TF32 off.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _steps  # noqa: E402


class Net(nn.Module):  # the tutorial's
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


if __name__ == "__main__":
    _steps.run("cifar10_tutorial", Net, 12, lambda g: (torch.randn(4, 3, 32, 32, generator=g), torch.randint(0, 10, (4,), generator=g)),
               nn.CrossEntropyLoss(), lambda params: optim.SGD(params, lr=0.001, momentum=0.9))
