# Parity of scripts/tutorials/introyt/trainingyt.lua with pytorch/tutorials
# beginner_source/introyt/trainingyt.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/trainingyt.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/trainingyt.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/trainingyt.py compare DIR
#
# prepare: the tutorial's GarmentClassifier (seed 0) to DIR/trainingyt_init.safetensors; 16
# batches of 4 images (randn [4, 1, 28, 28], labels randint 0..9, generator seed 1) to
# _data.safetensors; then train_one_epoch's step (zero_grad, model, CrossEntropyLoss, backward,
# SGD lr 0.001 momentum 0.9) over them. Writes _torch_losses.txt and _torch_final.safetensors.
# float32, TF32 off. tensorboardyt_tutorial.py's Net and intermediate_source/tensorboard_tutorial.py's
# Net are the same network and training step.
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _steps  # noqa: E402


class GarmentClassifier(nn.Module):  # the tutorial's
    def __init__(self):
        super(GarmentClassifier, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 4 * 4)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


if __name__ == "__main__":
    _steps.run("trainingyt", GarmentClassifier, 16,
               lambda g: (torch.randn(4, 1, 28, 28, generator=g), torch.randint(0, 10, (4,), generator=g)),
               torch.nn.CrossEntropyLoss(), lambda params: torch.optim.SGD(params, lr=0.001, momentum=0.9))
