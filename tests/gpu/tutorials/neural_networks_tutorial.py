# Parity of scripts/tutorials/blitz/neural_networks_tutorial.lua with pytorch/tutorials
# beginner_source/blitz/neural_networks_tutorial.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/neural_networks_tutorial.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/neural_networks_tutorial.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/neural_networks_tutorial.py compare DIR
#
# prepare: the tutorial's LeNet (seed 0) to DIR/neural_networks_tutorial_init.safetensors; 12
# (input [1, 1, 32, 32], target [1, 10]) pairs, randn with generator seed 1, to _data.safetensors;
# then the tutorial's update sequence (zero_grad, net(input), MSELoss, backward, SGD lr 0.01
# step) once for each pair. Writes _torch_losses.txt and _torch_final.safetensors. float32, TF32 off.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS = "neural_networks_tutorial", 12


class Net(nn.Module):  # the tutorial's
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, input):
        c1 = F.relu(self.conv1(input))
        s2 = F.max_pool2d(c1, (2, 2))
        c3 = F.relu(self.conv2(s2))
        s4 = F.max_pool2d(c3, 2)
        s4 = torch.flatten(s4, 1)
        f5 = F.relu(self.fc1(s4))
        f6 = F.relu(self.fc2(f5))
        output = self.fc3(f6)
        return output


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), Net().state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(STEPS):
        data[f"x.{i}"] = torch.randn(1, 1, 32, 32, generator=g)
        data[f"y.{i}"] = torch.randn(10, generator=g).view(1, -1)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    net = Net()
    net.load_state_dict(load_st(path(d, "init.safetensors")))
    net = net.to(device)
    batches = load_st(path(d, "data.safetensors"))
    criterion = nn.MSELoss()
    optimizer = optim.SGD(net.parameters(), lr=0.01)
    losses = []
    for i in range(STEPS):
        input, target = batches[f"x.{i}"].to(device), batches[f"y.{i}"].to(device)
        optimizer.zero_grad()
        output = net(input)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, net


if __name__ == "__main__":
    main(NAME, make_files, train)
