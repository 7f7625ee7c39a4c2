# Parity of scripts/tutorials/intermediate2/visualizing_gradients/ with pytorch/tutorials
# intermediate_source/visualizing_gradients_tutorial.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/visualizing_gradients.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/visualizing_gradients.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/visualizing_gradients.py compare DIR
#
# prepare: the tutorial's Net(batchnorm=True) and Net(batchnorm=False) (num_layers 3, seed 0)
# to DIR/visualizing_gradients_init.safetensors ("bn.*", "nobn.*"); its dummy batch x (10, 28,
# 28) and y to _data.safetensors; then its 10 training steps (cross_entropy, SGD lr 0.01
# momentum 0.9, both nets on the same batch). Per step loss_bn then loss_nobn ->
# _torch_losses.txt; both nets -> _torch_final.safetensors. float64: BatchNorm over 10 samples.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st, compare  # noqa: E402

NAME, STEPS = "visualizing_gradients", 10


def fc_layer(in_size, out_size, norm_layer):  # the tutorial's
    return nn.Sequential(nn.Linear(in_size, out_size), norm_layer(out_size), nn.Sigmoid())


class Net(nn.Module):  # the tutorial's
    def __init__(self, in_size=28*28, hidden_size=128, out_size=10, num_layers=3, batchnorm=False):
        super().__init__()
        if batchnorm is False:
            norm_layer = nn.Identity
        else:
            norm_layer = nn.BatchNorm1d
        layers = []
        layers.append(fc_layer(in_size, hidden_size, norm_layer))
        for i in range(num_layers-1):
            layers.append(fc_layer(hidden_size, hidden_size, norm_layer))
        layers.append(nn.Linear(hidden_size, out_size))
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.layers(x)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def both(model_bn, model_nobn):
    out = {f"bn.{k}": v for k, v in model_bn.state_dict().items()}
    out.update({f"nobn.{k}": v for k, v in model_nobn.state_dict().items()})
    return out


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), both(Net(batchnorm=True, num_layers=3).double(),
                                              Net(batchnorm=False, num_layers=3).double()))
    save_st(path(d, "data.safetensors"), {"x": torch.randn(10, 28, 28, dtype=torch.float64),
                                          "y": torch.randint(10, (10, ))})


def train(d, device):
    init = load_st(path(d, "init.safetensors"))
    model_bn = Net(batchnorm=True, num_layers=3).double()
    model_nobn = Net(batchnorm=False, num_layers=3).double()
    model_bn.load_state_dict({k[3:]: v for k, v in init.items() if k.startswith("bn.")})
    model_nobn.load_state_dict({k[5:]: v for k, v in init.items() if k.startswith("nobn.")})
    model_bn, model_nobn = model_bn.to(device), model_nobn.to(device)
    data = load_st(path(d, "data.safetensors"))
    x, y = data["x"].to(device), data["y"].to(device)
    model_bn.train()
    model_nobn.train()
    optimizer_bn = optim.SGD(model_bn.parameters(), lr=0.01, momentum=0.9)
    optimizer_nobn = optim.SGD(model_nobn.parameters(), lr=0.01, momentum=0.9)
    losses = []
    for epoch in range(STEPS):
        optimizer_bn.zero_grad()
        optimizer_nobn.zero_grad()
        y_pred_bn = model_bn(x)
        y_pred_nobn = model_nobn(x)
        loss_bn = F.cross_entropy(y_pred_bn, y)
        loss_nobn = F.cross_entropy(y_pred_nobn, y)
        loss_bn.backward()
        loss_nobn.backward()
        optimizer_bn.step()
        optimizer_nobn.step()
        losses += [loss_bn.item(), loss_nobn.item()]

    class Both(nn.Module):  # one state_dict for the harness
        def __init__(self):
            super().__init__()
            self.bn, self.nobn = model_bn, model_nobn
    return losses, Both()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "compare":
        sys.exit(0 if compare(NAME, sys.argv[2], lines_per_step=2) else 1)
    main(NAME, make_files, train)
