# Parity of scripts/tutorials/basics/optimization.lua with the PyTorch tutorial
# beginner_source/basics/optimization_tutorial.py, PyTorch's side (the steps: _basics.py).
#
#   python3 tests/gpu/tutorials/optimization.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/optimization.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/optimization.py compare DIR
import os
import sys

from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _basics  # noqa: E402


class NeuralNetwork(nn.Module):  # the tutorial's, unchanged
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


if __name__ == "__main__":
    _basics.run("optimization", NeuralNetwork)
