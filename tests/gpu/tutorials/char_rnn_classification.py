# Parity of scripts/tutorials/char_rnn_classification (the port of pytorch/tutorials
# intermediate_source/char_rnn_classification_tutorial.py) with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/tutorials/char_rnn_classification.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/char_rnn_classification.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/char_rnn_classification.py compare DIR
#
# prepare: the tutorial's CharRNN(58, 128, 18) (seed 0) -> DIR/char_rnn_classification_init.safetensors;
# 12 minibatches of 8 random names (letter indices "idx.K" (8, 12) of which the first "len.K"
# are used, languages "y.K") -> _data.safetensors; then the tutorial's train() step on each: the
# summed NLL loss of the batch's names, backward, clip_grad_norm_(3), SGD lr 0.15, zero_grad,
# recording batch_loss / len(batch). float32, TF32 off. compare prints one line, PASS|FAIL.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity as P  # noqa: E402

NAME = "char_rnn_classification"
n_letters, n_hidden, n_categories, K, B, MAXLEN = 58, 128, 18, 12, 8, 12


class CharRNN(nn.Module):  # the tutorial's
    def __init__(self, input_size, hidden_size, output_size):
        super(CharRNN, self).__init__()

        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        output = self.softmax(output)

        return output


def lineToTensor(idx, n, device):  # the tutorial's one-hot <line_length x 1 x n_letters>
    tensor = torch.zeros(n, 1, n_letters, device=device)
    for li in range(n):
        tensor[li][0][idx[li]] = 1
    return tensor


def make_files(d):
    torch.manual_seed(0)
    P.save_st(P.path(NAME, d, "init.safetensors"), CharRNN(n_letters, n_hidden, n_categories).state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for k in range(K):
        data[f"idx.{k}"] = torch.randint(0, n_letters, (B, MAXLEN), generator=g)
        data[f"len.{k}"] = torch.randint(1, MAXLEN + 1, (B,), generator=g)
        data[f"y.{k}"] = torch.randint(0, n_categories, (B,), generator=g)
    P.save_st(P.path(NAME, d, "data.safetensors"), data)


def train(d, device):
    rnn = CharRNN(n_letters, n_hidden, n_categories)
    rnn.load_state_dict(P.load_st(P.path(NAME, d, "init.safetensors")))
    rnn.to(device)
    data = P.load_st(P.path(NAME, d, "data.safetensors"))
    criterion = nn.NLLLoss()
    rnn.train()
    optimizer = torch.optim.SGD(rnn.parameters(), lr=0.15)
    rnn.zero_grad()
    losses = []
    for k in range(K):
        batch_loss = 0
        for i in range(B):
            text_tensor = lineToTensor(data[f"idx.{k}"][i].tolist(), data[f"len.{k}"][i].item(), device)
            label_tensor = data[f"y.{k}"][i:i + 1].to(device)
            output = rnn.forward(text_tensor)
            loss = criterion(output, label_tensor)
            batch_loss += loss
        batch_loss.backward()
        nn.utils.clip_grad_norm_(rnn.parameters(), 3)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(batch_loss.item() / B)
    return losses, rnn


if __name__ == "__main__":
    P.main(NAME, make_files, train)
