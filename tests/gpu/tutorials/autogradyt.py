# Parity of scripts/tutorials/introyt/autogradyt_tutorial.lua with pytorch/tutorials
# beginner_source/introyt/autogradyt_tutorial.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/autogradyt.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/autogradyt.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/autogradyt.py compare DIR
#
# prepare: the tutorial's TinyModel (seed 0) to DIR/autogradyt_init.safetensors; 12 batches of
# some_input (randn [16, 1000]) and ideal_output (randn [16, 10]), generator seed 1, to
# _data.safetensors; then the tutorial's training step (zero_grad, model, the squared distance
# (ideal_output - prediction).pow(2).sum(), backward, SGD lr 0.001) over them. Writes
# _torch_losses.txt and _torch_final.safetensors. float32, TF32 off.
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _steps  # noqa: E402


class TinyModel(torch.nn.Module):  # the tutorial's

    def __init__(self):
        super(TinyModel, self).__init__()

        self.layer1 = torch.nn.Linear(1000, 100)
        self.relu = torch.nn.ReLU()
        self.layer2 = torch.nn.Linear(100, 10)

    def forward(self, x):
        x = self.layer1(x)
        x = self.relu(x)
        x = self.layer2(x)
        return x


if __name__ == "__main__":
    _steps.run("autogradyt", TinyModel, 12,
               lambda g: (torch.randn(16, 1000, generator=g), torch.randn(16, 10, generator=g)),
               lambda prediction, ideal_output: (ideal_output - prediction).pow(2).sum(),
               lambda params: torch.optim.SGD(params, lr=0.001))
