# Parity of scripts/tutorials/examples/polynomial_optim.lua with pytorch/tutorials
# beginner_source/examples_nn/polynomial_optim.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/polynomial_optim.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/polynomial_optim.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/polynomial_optim.py compare DIR
#
# prepare: the tutorial's model, Sequential(Linear(3, 1), Flatten(0, 1)) (seed 0), to
# DIR/polynomial_optim_init.safetensors; its input xx = (x, x^2, x^3) and y = sin(x), x 2000
# points on [-pi, pi], to _data.safetensors; then 20 of the tutorial's steps (MSELoss sum,
# RMSprop lr 1e-3) on them. Writes _torch_losses.txt and _torch_final.safetensors. float32, TF32 off.
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS = "polynomial_optim", 20


def make_model():  # the tutorial's
    return torch.nn.Sequential(
        torch.nn.Linear(3, 1),
        torch.nn.Flatten(0, 1)
    )


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), make_model().state_dict())
    x = torch.linspace(-math.pi, math.pi, 2000)
    y = torch.sin(x)
    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    save_st(path(d, "data.safetensors"), {"xx": xx, "y": y})


def train(d, device):
    model = make_model()
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    data = load_st(path(d, "data.safetensors"))
    xx, y = data["xx"].to(device), data["y"].to(device)
    loss_fn = torch.nn.MSELoss(reduction='sum')
    learning_rate = 1e-3
    optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)
    losses = []
    for t in range(STEPS):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
