# Parity of scripts/tutorials/char_rnn_generation (the port of pytorch/tutorials
# intermediate_source/char_rnn_generation_tutorial.py) with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/tutorials/char_rnn_generation.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/char_rnn_generation.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/char_rnn_generation.py compare DIR
#
# prepare: the tutorial's RNN(59, 128, 59) over 18 categories (seed 0) ->
# DIR/char_rnn_generation_init.safetensors; 16 random names (category "cat.K", letters "idx.K"
# of which the first "len.K" are used, 2 to 12) -> _data.safetensors; then the tutorial's
# train() on each: the NLL losses of every next letter (EOS last) summed, backward, and
# p.data.add_(p.grad.data, alpha=-0.0005) by hand, recording loss / length. Its Dropout(0.1)
# has p set to 0 so nothing random runs. float32, TF32 off. compare prints one line.
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity as P  # noqa: E402

NAME = "char_rnn_generation"
n_categories, n_letters, K, MAXLEN = 18, 59, 16, 12
learning_rate = 0.0005


class RNN(nn.Module):  # the tutorial's, with initHidden on a given device
    def __init__(self, input_size, hidden_size, output_size):
        super(RNN, self).__init__()
        self.hidden_size = hidden_size

        self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
        self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
        self.o2o = nn.Linear(hidden_size + output_size, output_size)
        self.dropout = nn.Dropout(0.1)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, category, input, hidden):
        input_combined = torch.cat((category, input, hidden), 1)
        hidden = self.i2h(input_combined)
        output = self.i2o(input_combined)
        output_combined = torch.cat((hidden, output), 1)
        output = self.o2o(output_combined)
        output = self.dropout(output)
        output = self.softmax(output)
        return output, hidden

    def initHidden(self, device):
        return torch.zeros(1, self.hidden_size, device=device)


def make_files(d):
    torch.manual_seed(0)
    P.save_st(P.path(NAME, d, "init.safetensors"), RNN(n_letters, 128, n_letters).state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for k in range(K):
        data[f"cat.{k}"] = torch.randint(0, n_categories, (1,), generator=g)
        data[f"idx.{k}"] = torch.randint(0, n_letters - 1, (MAXLEN,), generator=g)  # no EOS inside
        data[f"len.{k}"] = torch.randint(2, MAXLEN + 1, (1,), generator=g)
    P.save_st(P.path(NAME, d, "data.safetensors"), data)


def train(d, device):
    rnn = RNN(n_letters, 128, n_letters)
    rnn.load_state_dict(P.load_st(P.path(NAME, d, "init.safetensors")))
    rnn.to(device)
    rnn.dropout.p = 0.0
    data = P.load_st(P.path(NAME, d, "data.safetensors"))
    criterion = nn.NLLLoss()
    losses = []
    for k in range(K):
        n = data[f"len.{k}"].item()
        letters = data[f"idx.{k}"][:n].tolist()
        category_tensor = torch.zeros(1, n_categories, device=device)  # categoryTensor
        category_tensor[0][data[f"cat.{k}"].item()] = 1
        input_line_tensor = torch.zeros(n, 1, n_letters, device=device)  # inputTensor
        for li in range(n):
            input_line_tensor[li][0][letters[li]] = 1
        target_line_tensor = torch.tensor(letters[1:] + [n_letters - 1], dtype=torch.long, device=device)  # targetTensor

        # the tutorial's train()
        target_line_tensor.unsqueeze_(-1)
        hidden = rnn.initHidden(device)
        rnn.zero_grad()
        loss = 0
        for i in range(input_line_tensor.size(0)):
            output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
            l = criterion(output, target_line_tensor[i])
            loss += l
        loss.backward()
        for p in rnn.parameters():
            p.data.add_(p.grad.data, alpha=-learning_rate)
        losses.append(loss.item() / input_line_tensor.size(0))
    return losses, rnn


if __name__ == "__main__":
    P.main(NAME, make_files, train)
