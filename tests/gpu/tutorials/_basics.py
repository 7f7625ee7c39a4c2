# The parity steps the two "Learn the Basics" tutorials that train share (quickstart.py and
# optimization.py): their NeuralNetwork (below) (seed 0) to DIR/<name>_init.safetensors; 15 batches of 64
# images (uniform in [0, 1] as ToTensor gives, labels from a fixed random linear teacher) to
# DIR/<name>_data.safetensors; then the tutorials' training step for those batches (model.train(),
# CrossEntropyLoss, SGD lr 1e-3: pred, loss, backward, step, zero_grad). The model has no dropout:
# nothing random runs. float32, TF32 off. The Lua side is _basics.lua.
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

STEPS, BATCH = 15, 64


class NeuralNetwork(nn.Module):  # the tutorials', unchanged (quickstart and optimization define the same)
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28*28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def run(NAME):
    def path(d, what):
        return os.path.join(d, f"{NAME}_{what}")

    def make_files(d):
        torch.manual_seed(0)
        save_st(path(d, "init.safetensors"), NeuralNetwork().state_dict())
        g = torch.Generator().manual_seed(1)
        teacher = torch.randn(28 * 28, 10, generator=g)
        data = {}
        for i in range(STEPS):
            X = torch.rand(BATCH, 1, 28, 28, generator=g)
            data[f"X.{i}"] = X
            data[f"y.{i}"] = (X.flatten(1) @ teacher).argmax(1)
        save_st(path(d, "data.safetensors"), data)

    def train(d, device):
        model = NeuralNetwork()
        model.load_state_dict(load_st(path(d, "init.safetensors")))
        model = model.to(device)
        batches = load_st(path(d, "data.safetensors"))
        loss_fn = nn.CrossEntropyLoss()
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        model.train()
        losses = []
        for batch in range(STEPS):
            X, y = batches[f"X.{batch}"].to(device), batches[f"y.{batch}"].to(device)
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.item())
        return losses, model

    main(NAME, make_files, train)
