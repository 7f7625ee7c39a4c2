# Parity of scripts/examples/mnist_rnn with pytorch/examples mnist_rnn, PyTorch's side.
#
#   python3 tests/gpu/examples/mnist_rnn.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/mnist_rnn.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/mnist_rnn.py compare DIR
#
# prepare: the example's Net (seed 0) to DIR/mnist_rnn_init.safetensors; 12 batches of 16
# images (randn, labels from a fixed random linear teacher) to DIR/mnist_rnn_data.safetensors;
# then the example's training step (Adadelta lr 0.1, nll_loss) for the 12 batches as two
# "epochs" of 6 with StepLR(step_size=1, gamma=0.7) stepped after each, in train mode with
# both Dropout2d layers at p=0 (nothing random runs; BatchNorm uses batch statistics).
# Writes DIR/mnist_rnn_torch_losses.txt and DIR/mnist_rnn_torch_final.safetensors.
# float32, TF32 off. compare prints one line: parity mnist_rnn: ... PASS|FAIL.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH, PER_EPOCH = "mnist_rnn", 12, 16, 6


class Net(nn.Module):  # the example's, unchanged
    def __init__(self):
        super(Net, self).__init__()
        self.rnn = nn.LSTM(input_size=28, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, input):
        input = input.reshape(-1, 28, 28)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        output = F.log_softmax(output, dim=1)
        return output


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
    optimizer = optim.Adadelta(model.parameters(), lr=0.1)
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


if __name__ == "__main__":
    main(NAME, make_files, train)
