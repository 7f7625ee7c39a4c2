# Parity of scripts/tutorials/intermediate2/mixed_precision_tutorial.lua with pytorch/tutorials
# intermediate_source/mixed_precision_tutorial.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/mixed_precision.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/mixed_precision.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/mixed_precision.py compare DIR
#
# prepare: the tutorial's make_model(64, 64, 3) (Linear/ReLU stack, seed 0) to
# DIR/mixed_precision_init.safetensors; 16 batches of randn(32, 64) inputs and targets to
# _data.safetensors; then the "All together" loop once over them: float16 autocast, MSELoss,
# GradScaler, SGD lr 0.001. Writes _torch_losses.txt and _torch_final.safetensors. TF32 off.
# compare allows 1e-3 on the losses and 5e-3 on the weight updates: the forward runs in float16.
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st, compare  # noqa: E402

NAME, STEPS = "mixed_precision", 16
batch_size, in_size, out_size, num_layers = 32, 64, 64, 3


def make_model(in_size, out_size, num_layers):  # the tutorial's, without .cuda()
    layers = []
    for _ in range(num_layers - 1):
        layers.append(torch.nn.Linear(in_size, in_size))
        layers.append(torch.nn.ReLU())
    layers.append(torch.nn.Linear(in_size, out_size))
    return torch.nn.Sequential(*tuple(layers))


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), make_model(in_size, out_size, num_layers).state_dict())
    files = {}
    for i in range(STEPS):
        files[f"x.{i}"] = torch.randn(batch_size, in_size)
        files[f"y.{i}"] = torch.randn(batch_size, out_size)
    save_st(path(d, "data.safetensors"), files)


def train(d, device):
    net = make_model(in_size, out_size, num_layers)
    net.load_state_dict(load_st(path(d, "init.safetensors")))
    net = net.to(device)
    batches = load_st(path(d, "data.safetensors"))
    data = [batches[f"x.{i}"].to(device) for i in range(STEPS)]
    targets = [batches[f"y.{i}"].to(device) for i in range(STEPS)]
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.SGD(net.parameters(), lr=0.001)
    scaler = torch.amp.GradScaler(device.type)
    losses = []
    for input, target in zip(data, targets):
        with torch.autocast(device_type=device.type, dtype=torch.float16):
            output = net(input)
            loss = loss_fn(output, target)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, net


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "compare":
        sys.exit(0 if compare(NAME, sys.argv[2], tol=1e-3, wtol=5e-3) else 1)
    main(NAME, make_files, train)
