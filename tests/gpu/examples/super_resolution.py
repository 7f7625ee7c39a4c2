# Parity of scripts/examples/super_resolution (pytorch/examples super_resolution) with PyTorch,
# PyTorch's side (tests/gpu/examples/super_resolution.lua is nnrepl's):
#
#   python3 tests/gpu/examples/super_resolution.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/super_resolution.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/examples/super_resolution.py compare DIR
#
# prepare: model.py's Net at upscale_factor 3 (seed 0, orthogonal init) ->
# DIR/super_resolution_init.safetensors; 12 batches of 4 inputs [4, 1, 16, 16] and targets
# [4, 1, 48, 48] in [0, 1] (the Y channels ToTensor gives) -> _data.safetensors ("input.i",
# "target.i"); then 12 steps of main.py's train() (Adam lr 1e-3, MSELoss), float32, TF32 off.
# compare: one line, PASS when the largest relative loss difference is <= 1e-4 and
# ||w_nnrepl - w_torch|| / ||w_torch - w_init|| <= 1e-3.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.init as init
import torch.optim as optim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH, FACTOR, SIZE = "super_resolution", 12, 4, 3, 16


class Net(nn.Module):  # as in super_resolution/model.py
    def __init__(self, upscale_factor):
        super(Net, self).__init__()

        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        self._initialize_weights()

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        x = self.pixel_shuffle(self.conv4(x))
        return x

    def _initialize_weights(self):
        init.orthogonal_(self.conv1.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv2.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv3.weight, init.calculate_gain('relu'))
        init.orthogonal_(self.conv4.weight)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), Net(upscale_factor=FACTOR).state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(STEPS):
        data[f"input.{i}"] = torch.rand(BATCH, 1, SIZE, SIZE, generator=g)
        data[f"target.{i}"] = torch.rand(BATCH, 1, SIZE * FACTOR, SIZE * FACTOR, generator=g)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = Net(upscale_factor=FACTOR)
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    criterion = nn.MSELoss()
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    data = load_st(path(d, "data.safetensors"))
    losses = []
    for i in range(STEPS):  # main.py's train(), one batch a step
        input, target = data[f"input.{i}"].to(device), data[f"target.{i}"].to(device)
        optimizer.zero_grad()
        loss = criterion(model(input), target)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
