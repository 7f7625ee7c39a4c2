# Parity of scripts/examples/mnist_forward_forward with pytorch/examples mnist_forward_forward,
# PyTorch's side.
#
#   python3 tests/gpu/examples/mnist_forward_forward.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/mnist_forward_forward.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/mnist_forward_forward.py compare DIR
#
# prepare: the example's Net([784, 500, 500]) (seed 0; its layers' weights, as a ModuleList's
# "0.weight" ...) to DIR/mnist_forward_forward_init.safetensors; 64 random images x, labels y
# and the negative labels y_neg to DIR/mnist_forward_forward_data.safetensors; then the
# example's net.train(overlay_y_on_x(x, y), overlay_y_on_x(x, y_neg)) with 8 epochs per layer
# (lr 0.03, threshold 2), every "Loss:" line printed (log_interval 1) and read back as the
# 16 per-step losses. Writes DIR/mnist_forward_forward_torch_losses.txt and _torch_final.
# float32, TF32 off. compare prints one line: parity mnist_forward_forward: ... PASS|FAIL.
import contextlib
import io
import os
import sys
from types import SimpleNamespace

import torch
import torch.nn as nn
from torch.optim import Adam

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, N, EPOCHS = "mnist_forward_forward", 64, 8
args = SimpleNamespace(lr=0.03, threshold=2.0, epochs=EPOCHS, log_interval=1)
device = torch.device("cpu")


def overlay_y_on_x(x, y, classes=10):  # the example's
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):  # the example's (predict left out)
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1]).to(device)]

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Layer(nn.Linear):  # the example's
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log1p(
                torch.exp(
                    torch.cat([-g_pos + self.threshold, g_neg - self.threshold])
                )
            ).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if i % args.log_interval == 0:
                print("Loss: ", loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), nn.ModuleList(Net([784, 500, 500]).layers).state_dict())
    g = torch.Generator().manual_seed(1)
    y = torch.randint(10, (N,), generator=g)
    y_neg = (y + torch.randint(1, 10, (N,), generator=g)) % 10
    save_st(path(d, "data.safetensors"), {"x": torch.randn(N, 784, generator=g), "y": y, "y_neg": y_neg})


def train(d, dev):
    global device
    device = dev
    net = Net([784, 500, 500])
    layers = nn.ModuleList(net.layers)
    layers.load_state_dict(load_st(path(d, "init.safetensors")))
    data = load_st(path(d, "data.safetensors"))
    x, y, y_neg = data["x"].to(device), data["y"].to(device), data["y_neg"].to(device)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        net.train(overlay_y_on_x(x, y), overlay_y_on_x(x, y_neg))
    losses = [float(line.split()[-1]) for line in out.getvalue().splitlines() if line.startswith("Loss:")]
    return losses, layers


if __name__ == "__main__":
    main(NAME, make_files, train)
