# Parity of scripts/examples/mnist with pytorch/examples mnist, PyTorch's side.
#
#   python3 tests/gpu/examples/mnist.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/mnist.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/mnist.py compare DIR
#
# prepare: the example's Net (seed 0) to DIR/mnist_init.safetensors; 12 batches of 16 images
# (randn, labels from a fixed random linear teacher) to DIR/mnist_data.safetensors; then the
# example's training step (Adadelta lr 1.0, nll_loss) for the 12 batches as two "epochs" of 6
# with StepLR(step_size=1, gamma=0.7) stepped after each, in train mode with both Dropout
# layers at p=0 (nothing random runs). Writes DIR/mnist_torch_losses.txt and
# DIR/mnist_torch_final.safetensors. float32, TF32 off. compare prints one line:
# parity mnist: ... PASS|FAIL.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _classifier  # noqa: E402


class Net(nn.Module):  # the example's, unchanged
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


if __name__ == "__main__":
    _classifier.run("mnist", Net, 1.0)
