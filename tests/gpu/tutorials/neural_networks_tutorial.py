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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _steps  # noqa: E402


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


if __name__ == "__main__":
    _steps.run("neural_networks_tutorial", Net, 12, lambda g: (torch.randn(1, 1, 32, 32, generator=g), torch.randn(10, generator=g).view(1, -1)),
               nn.MSELoss(), lambda params: optim.SGD(params, lr=0.01))
