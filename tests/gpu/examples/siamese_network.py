# Parity of scripts/examples/siamese_network with pytorch/examples siamese_network, PyTorch's side.
#
#   python3 tests/gpu/examples/siamese_network.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/siamese_network.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/siamese_network.py compare DIR
#
# prepare: the example's SiameseNetwork (torchvision's resnet18, seed 0) to
# DIR/siamese_network_init.safetensors; 10 batches of 8 image pairs to
# DIR/siamese_network_data.safetensors ("a.i", "b.i": MNIST-like images, whole numbers 0..255
# as floats, as APP_MATCHER gives them; "t.i": targets 1, 0, 1, ... as APP_MATCHER's even and
# odd indices); then the example's training step (BCELoss on the squeezed outputs, Adadelta
# at lr 0.05, not the example's 1.0: on random pairs, 1.0 saturates the sigmoid by step 2 and
# PyTorch's and nnrepl's float32 roundings then part ways within 10 steps) for the 10 batches as two "epochs" of 5 with StepLR(step_size=1, gamma=0.7) stepped
# after each, in train mode (the model has no dropout; BatchNorm uses batch statistics).
# Writes DIR/siamese_network_torch_losses.txt and DIR/siamese_network_torch_final.safetensors.
# float64 (model and batches), not float32: the backbone is resnet18 at 28x28, where float32
# rounding can flip a pre-ReLU value near 0 whose gradient BatchNorm over few values spreads
# through the network (tests/gpu/examples/imagenet.py measured it). compare prints one line: parity siamese_network: ... PASS|FAIL.
import os
import sys

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision
from torch.optim.lr_scheduler import StepLR

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH, PER_EPOCH = "siamese_network", 10, 8, 5


class SiameseNetwork(nn.Module):  # the example's, unchanged
    def __init__(self):
        super(SiameseNetwork, self).__init__()
        self.resnet = torchvision.models.resnet18(weights=None)
        self.resnet.conv1 = nn.Conv2d(1, 64, kernel_size=(7, 7), stride=(2, 2), padding=(3, 3), bias=False)
        self.fc_in_features = self.resnet.fc.in_features
        self.resnet = torch.nn.Sequential(*(list(self.resnet.children())[:-1]))
        self.fc = nn.Sequential(
            nn.Linear(self.fc_in_features * 2, 256),
            nn.ReLU(inplace=True),
            nn.Linear(256, 1),
        )
        self.sigmoid = nn.Sigmoid()
        self.resnet.apply(self.init_weights)
        self.fc.apply(self.init_weights)

    def init_weights(self, m):
        if isinstance(m, nn.Linear):
            torch.nn.init.xavier_uniform_(m.weight)
            m.bias.data.fill_(0.01)

    def forward_once(self, x):
        output = self.resnet(x)
        output = output.view(output.size()[0], -1)
        return output

    def forward(self, input1, input2):
        output1 = self.forward_once(input1)
        output2 = self.forward_once(input2)
        output = torch.cat((output1, output2), 1)
        output = self.fc(output)
        output = self.sigmoid(output)
        return output


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), SiameseNetwork().state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(STEPS):
        data[f"a.{i}"] = (torch.rand(BATCH, 1, 28, 28, generator=g) * 256).floor()
        data[f"b.{i}"] = (torch.rand(BATCH, 1, 28, 28, generator=g) * 256).floor()
        data[f"t.{i}"] = (torch.arange(BATCH) % 2 == 0).float()
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = SiameseNetwork()
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device, torch.float64)
    batches = {k: v.double() for k, v in load_st(path(d, "data.safetensors")).items()}
    optimizer = optim.Adadelta(model.parameters(), lr=0.05)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    model.train()
    criterion = nn.BCELoss()
    losses = []
    for i in range(STEPS):
        images_1, images_2, targets = (batches[f"{k}.{i}"].to(device) for k in "abt")
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if (i + 1) % PER_EPOCH == 0:
            scheduler.step()
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
