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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH = "cifar10_tutorial", 12, 4


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


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), Net().state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(STEPS):
        data[f"x.{i}"] = torch.randn(BATCH, 3, 32, 32, generator=g)
        data[f"y.{i}"] = torch.randint(0, 10, (BATCH,), generator=g)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    net = Net()
    net.load_state_dict(load_st(path(d, "init.safetensors")))
    net = net.to(device)
    batches = load_st(path(d, "data.safetensors"))
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    losses = []
    for i in range(STEPS):
        inputs, labels = batches[f"x.{i}"].to(device), batches[f"y.{i}"].to(device)
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, net


if __name__ == "__main__":
    main(NAME, make_files, train)
