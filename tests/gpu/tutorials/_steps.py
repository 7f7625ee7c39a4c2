# The parity steps the blitz classifier tutorials share (cifar10_tutorial.py,
# neural_networks_tutorial.py): Net() (seed 0) to DIR/<name>_init.safetensors; STEPS (input,
# target) pairs from batch(g) (generator seed 1) to _data.safetensors; then the tutorials' step
# (zero_grad, net(input), criterion, backward, optimizer.step) once for each pair. The Lua side
# is _steps.lua.
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402


def run(NAME, Net, STEPS, batch, criterion, make_optimizer):
    def path(d, what):
        return os.path.join(d, f"{NAME}_{what}")

    def make_files(d):
        torch.manual_seed(0)
        save_st(path(d, "init.safetensors"), Net().state_dict())
        g = torch.Generator().manual_seed(1)
        data = {}
        for i in range(STEPS):
            data[f"x.{i}"], data[f"y.{i}"] = batch(g)
        save_st(path(d, "data.safetensors"), data)

    def train(d, device):
        net = Net()
        net.load_state_dict(load_st(path(d, "init.safetensors")))
        net = net.to(device)
        batches = load_st(path(d, "data.safetensors"))
        optimizer = make_optimizer(net.parameters())
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

    main(NAME, make_files, train)
