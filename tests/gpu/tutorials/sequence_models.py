# Parity of scripts/tutorials/nlp/sequence_models_tutorial.lua (the LSTM tagger) with
# pytorch/tutorials beginner_source/nlp/sequence_models_tutorial.py, PyTorch's side.
#
#   python3 tests/gpu/tutorials/sequence_models.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/sequence_models.lua DIR [cuda|cpu] [--generate]
#   python3 tests/gpu/tutorials/sequence_models.py compare DIR
#
# prepare: seed 0, the tutorial's LSTMTagger(6, 6, 9 words, 3 tags) -> _init.safetensors; the two
# training sentences and their tags as index tensors -> _data.safetensors; 20 steps of the
# tutorial's loop (10 epochs of the two sentences: zero_grad, NLLLoss, backward, SGD lr 0.1).
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS = "sequence_models", 20
SENTENCES = [[0, 1, 2, 3, 4], [5, 6, 7, 8]]  # "The dog ate the apple", "Everybody read that book"
TAGS = [[0, 1, 2, 0, 1], [1, 2, 0, 1]]       # DET NN V DET NN, NN V DET NN


class LSTMTagger(nn.Module):  # the tutorial's
    def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
        super(LSTMTagger, self).__init__()
        self.hidden_dim = hidden_dim
        self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.lstm = nn.LSTM(embedding_dim, hidden_dim)
        self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

    def forward(self, sentence):
        embeds = self.word_embeddings(sentence)
        lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
        tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
        tag_scores = F.log_softmax(tag_space, dim=1)
        return tag_scores


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), LSTMTagger(6, 6, 9, 3).state_dict())
    data = {}
    for i in range(2):
        data[f"sentence.{i}"] = torch.tensor(SENTENCES[i], dtype=torch.long)
        data[f"tags.{i}"] = torch.tensor(TAGS[i], dtype=torch.long)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = LSTMTagger(6, 6, 9, 3)
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    data = load_st(path(d, "data.safetensors"))
    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for step in range(STEPS):
        sentence_in = data[f"sentence.{step % 2}"].to(device)
        targets = data[f"tags.{step % 2}"].to(device)
        model.zero_grad()
        tag_scores = model(sentence_in)
        loss = loss_function(tag_scores, targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
