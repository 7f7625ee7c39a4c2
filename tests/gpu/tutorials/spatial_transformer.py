# Parity of scripts/tutorials/spatial_transformer_tutorial with PyTorch, PyTorch's side
# (spatial_transformer.lua beside this file is nnrepl's):
#
#   python3 tests/gpu/tutorials/spatial_transformer.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/spatial_transformer.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/spatial_transformer.py compare DIR
#
# prepare: the tutorial's Net (seed 0), its affine bias moved off the identity by 0.01 x randn (seed
# 2) -> DIR/spatial_transformer_init.safetensors. (At the identity every sample lands on a pixel
# centre, where bilinear sampling's gradient jumps: which side a coordinate rounds to decides
# it, so PyTorch's and nnrepl's last-bit differences in affine_grid moved the weights 30% apart,
# measured in session 23.) 12 batches
# of 16 images (randn 1 x 28 x 28, labels from a fixed random linear teacher) ->
# DIR/spatial_transformer_data.safetensors; then 12 steps of the tutorial's train() (SGD lr
# 0.01, nll_loss) with the model in eval mode: both dropouts off (F.dropout follows
# self.training) and nothing else differs, the Net having no BatchNorm. Losses ->
# _torch_losses.txt, weights -> _torch_final.safetensors; float32, TF32 off. compare prints
# one line: parity spatial_transformer: ... PASS|FAIL.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH = "spatial_transformer", 12, 16


class Net(nn.Module):  # the tutorial's
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True)
        )

        self.fc_loc = nn.Sequential(
            nn.Linear(10 * 3 * 3, 32),
            nn.ReLU(True),
            nn.Linear(32, 3 * 2)
        )

        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def stn(self, x):
        xs = self.localization(x)
        xs = xs.view(-1, 10 * 3 * 3)
        theta = self.fc_loc(xs)
        theta = theta.view(-1, 2, 3)

        grid = F.affine_grid(theta, x.size())
        x = F.grid_sample(x, grid)

        return x

    def forward(self, x):
        x = self.stn(x)

        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    net = Net()
    with torch.no_grad():
        net.fc_loc[2].bias.add_(0.01 * torch.randn(6, generator=torch.Generator().manual_seed(2)))
    save_st(path(d, "init.safetensors"), net.state_dict())
    g = torch.Generator().manual_seed(1)
    teacher = torch.randn(28 * 28, 10, generator=g)
    data = {}
    for i in range(STEPS):
        x = torch.randn(BATCH, 1, 28, 28, generator=g)
        data[f"x.{i}"] = x
        data[f"y.{i}"] = (x.flatten(1) @ teacher).argmax(1)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = Net()
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    batches = load_st(path(d, "data.safetensors"))
    optimizer = optim.SGD(model.parameters(), lr=0.01)
    model.eval()  # dropout off (the tutorial's train() calls model.train())
    losses = []
    for i in range(STEPS):
        data, target = batches[f"x.{i}"].to(device), batches[f"y.{i}"].to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
