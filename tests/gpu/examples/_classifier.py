# The parity steps the MNIST classifier examples share (tests/gpu/examples/mnist.py and
# mnist_rnn.py): the example's Net (seed 0) to DIR/<name>_init.safetensors; 12 batches of 16
# images (randn, labels from a fixed random linear teacher) to DIR/<name>_data.safetensors; then
# the examples' training step (Adadelta at the given lr, nll_loss) as two "epochs" of 6 with
# StepLR(step_size=1, gamma=0.7) stepped after each, in train mode with both dropout layers at
# p=0 (nothing random runs). The Lua side is _classifier.lua.
import os
import sys

import torch
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

STEPS, BATCH, PER_EPOCH = 12, 16, 6


def run(NAME, Net, lr):
    def path(d, what):
        return os.path.join(d, f"{NAME}_{what}")

    def make_files(d):
        torch.manual_seed(0)
        save_st(path(d, "init.safetensors"), Net().state_dict())
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
        model.dropout1.p = 0.0  # dropout off: nothing random differs between the two sides
        model.dropout2.p = 0.0
        model = model.to(device)
        batches = load_st(path(d, "data.safetensors"))
        optimizer = optim.Adadelta(model.parameters(), lr=lr)
        scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
        model.train()
        losses = []
        for i in range(STEPS):
            data, target = batches[f"x.{i}"].to(device), batches[f"y.{i}"].to(device)
            optimizer.zero_grad()
            output = model(data)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if (i + 1) % PER_EPOCH == 0:
                scheduler.step()
        return losses, model

    main(NAME, make_files, train)
