# Parity of scripts/tutorials/nlp/word_embeddings_tutorial.lua (the N-gram language model) with
# pytorch/tutorials beginner_source/nlp/word_embeddings_tutorial.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/word_embeddings.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/word_embeddings.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/word_embeddings.py compare DIR
#
# prepare: seed 0, the tutorial's NGramLanguageModeler(97 words, 10, 2) -> _init.safetensors;
# 20 (context, target) index pairs drawn at random -> _data.safetensors (the tutorial numbers
# its vocabulary through a set, whose order varies, so the indices are the data); 20 steps of
# its loop (zero_grad, NLLLoss, backward, SGD lr 0.001).
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, VOCAB, EMBEDDING_DIM, CONTEXT_SIZE = "word_embeddings", 20, 97, 10, 2


class NGramLanguageModeler(nn.Module):  # the tutorial's
    def __init__(self, vocab_size, embedding_dim, context_size):
        super(NGramLanguageModeler, self).__init__()
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.linear1 = nn.Linear(context_size * embedding_dim, 128)
        self.linear2 = nn.Linear(128, vocab_size)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).view((1, -1))
        out = F.relu(self.linear1(embeds))
        out = self.linear2(out)
        log_probs = F.log_softmax(out, dim=1)
        return log_probs


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), NGramLanguageModeler(VOCAB, EMBEDDING_DIM, CONTEXT_SIZE).state_dict())
    data = {}
    for i in range(STEPS):
        data[f"context.{i}"] = torch.randint(0, VOCAB, (CONTEXT_SIZE,))
        data[f"target.{i}"] = torch.randint(0, VOCAB, (1,))
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = NGramLanguageModeler(VOCAB, EMBEDDING_DIM, CONTEXT_SIZE)
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    data = load_st(path(d, "data.safetensors"))
    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.001)
    losses = []
    for i in range(STEPS):
        context_idxs = data[f"context.{i}"].to(device)
        model.zero_grad()
        log_probs = model(context_idxs)
        loss = loss_function(log_probs, data[f"target.{i}"].to(device))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
