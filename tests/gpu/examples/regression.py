# Parity of scripts/examples/regression with pytorch/examples regression, PyTorch's side.
#
#   python3 tests/gpu/examples/regression.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/regression.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/regression.py compare DIR
#
# prepare: seed 0, the example's W_target (4x1) and b_target (1) drawn as it draws them, then
# its fc = Linear(4, 1) to DIR/regression_init.safetensors; 20 batches of 32 random points and
# the targets to DIR/regression_data.safetensors; then the example's loop body for those 20
# batches (zero_grad, smooth_l1_loss, backward, param.data.add_(-0.1 * param.grad)).
# Writes DIR/regression_torch_losses.txt and DIR/regression_torch_final.safetensors. float32,
# TF32 off. compare prints one line: parity regression: ... PASS|FAIL.
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH = "regression", 20, 32
POLY_DEGREE = 4


def make_features(x):  # the example's
    x = x.unsqueeze(1)
    return torch.cat([x ** i for i in range(1, POLY_DEGREE+1)], 1)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    W_target = torch.randn(POLY_DEGREE, 1) * 5
    b_target = torch.randn(1) * 5
    fc = torch.nn.Linear(W_target.size(0), 1)
    save_st(path(d, "init.safetensors"), fc.state_dict())
    data = {"W_target": W_target, "b_target": b_target}
    for i in range(STEPS):
        data[f"random.{i}"] = torch.randn(BATCH)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    fc = torch.nn.Linear(POLY_DEGREE, 1)
    fc.load_state_dict(load_st(path(d, "init.safetensors")))
    fc = fc.to(device)
    data = load_st(path(d, "data.safetensors"))
    W_target, b_target = data["W_target"].to(device), data["b_target"].to(device)
    losses = []
    for i in range(STEPS):
        batch_x = make_features(data[f"random.{i}"].to(device))
        batch_y = batch_x.mm(W_target) + b_target.item()
        fc.zero_grad()
        output = F.smooth_l1_loss(fc(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        losses.append(loss)
    return losses, fc


if __name__ == "__main__":
    main(NAME, make_files, train)
