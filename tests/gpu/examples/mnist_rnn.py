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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _classifier  # noqa: E402


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


if __name__ == "__main__":
    _classifier.run("mnist_rnn", Net, 0.1)
