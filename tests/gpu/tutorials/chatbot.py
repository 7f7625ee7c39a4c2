# Parity of scripts/tutorials/chatbot_tutorial (the port of pytorch/tutorials
# beginner_source/chatbot_tutorial.py) with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/tutorials/chatbot.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/chatbot.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/chatbot.py compare DIR
#
# prepare: the tutorial's shared nn.Embedding(40, 32), EncoderRNN (2-layer bidirectional GRU) and
# LuongAttnDecoderRNN ('dot' attention, 2 layers), dropout 0 (seed 0) ->
# DIR/chatbot_init.safetensors (keys "encoder.*", "decoder.*"); 12 batches of 8 pairs as
# batch2TrainData makes them (1 to 9 word ids and EOS, sorted by input length, zero-padded to
# (max_length, batch): "input.K", "lengths.K", "target.K"; the mask is target != PAD) ->
# _data.safetensors; then the tutorial's train() on each: teacher forcing (ratio 1.0),
# maskNLLLoss summed over the target's steps, clip_grad_norm_ 50 on each model, Adam lr 1e-4 for
# the encoder and 5e-4 for the decoder (both hold the shared embedding, as in the tutorial); the
# loss is train()'s return value. float64: Adam turns rounding-level gradient differences into
# full steps.
import os
import random
import sys

import torch
import torch.nn as nn
from torch import optim
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity as P  # noqa: E402

NAME = "chatbot"
PAD_token, SOS_token, EOS_token, MAX_LENGTH = 0, 1, 2, 10
N_WORDS, hidden_size, K, batch_size = 40, 32, 12, 8
attn_model, encoder_n_layers, decoder_n_layers, dropout = "dot", 2, 2, 0
clip, teacher_forcing_ratio, learning_rate, decoder_learning_ratio = 50.0, 1.0, 0.0001, 5.0
device = None  # set in train, as the tutorial's global


class EncoderRNN(nn.Module):  # the tutorial's
    def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
        super(EncoderRNN, self).__init__()
        self.n_layers = n_layers
        self.hidden_size = hidden_size
        self.embedding = embedding
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers,
                          dropout=(0 if n_layers == 1 else dropout), bidirectional=True)

    def forward(self, input_seq, input_lengths, hidden=None):
        embedded = self.embedding(input_seq)
        packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
        outputs, hidden = self.gru(packed, hidden)
        outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
        outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
        return outputs, hidden


class Attn(nn.Module):  # the tutorial's
    def __init__(self, method, hidden_size):
        super(Attn, self).__init__()
        self.method = method
        if self.method not in ['dot', 'general', 'concat']:
            raise ValueError(self.method, "is not an appropriate attention method.")
        self.hidden_size = hidden_size
        if self.method == 'general':
            self.attn = nn.Linear(self.hidden_size, hidden_size)
        elif self.method == 'concat':
            self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
            self.v = nn.Parameter(torch.FloatTensor(hidden_size))

    def dot_score(self, hidden, encoder_output):
        return torch.sum(hidden * encoder_output, dim=2)

    def general_score(self, hidden, encoder_output):
        energy = self.attn(encoder_output)
        return torch.sum(hidden * energy, dim=2)

    def concat_score(self, hidden, encoder_output):
        energy = self.attn(torch.cat((hidden.expand(encoder_output.size(0), -1, -1), encoder_output), 2)).tanh()
        return torch.sum(self.v * energy, dim=2)

    def forward(self, hidden, encoder_outputs):
        if self.method == 'general':
            attn_energies = self.general_score(hidden, encoder_outputs)
        elif self.method == 'concat':
            attn_energies = self.concat_score(hidden, encoder_outputs)
        elif self.method == 'dot':
            attn_energies = self.dot_score(hidden, encoder_outputs)
        attn_energies = attn_energies.t()
        return F.softmax(attn_energies, dim=1).unsqueeze(1)


class LuongAttnDecoderRNN(nn.Module):  # the tutorial's
    def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
        super(LuongAttnDecoderRNN, self).__init__()
        self.attn_model = attn_model
        self.hidden_size = hidden_size
        self.output_size = output_size
        self.n_layers = n_layers
        self.dropout = dropout
        self.embedding = embedding
        self.embedding_dropout = nn.Dropout(dropout)
        self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
        self.concat = nn.Linear(hidden_size * 2, hidden_size)
        self.out = nn.Linear(hidden_size, output_size)
        self.attn = Attn(attn_model, hidden_size)

    def forward(self, input_step, last_hidden, encoder_outputs):
        embedded = self.embedding(input_step)
        embedded = self.embedding_dropout(embedded)
        rnn_output, hidden = self.gru(embedded, last_hidden)
        attn_weights = self.attn(rnn_output, encoder_outputs)
        context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
        rnn_output = rnn_output.squeeze(0)
        context = context.squeeze(1)
        concat_input = torch.cat((rnn_output, context), 1)
        concat_output = torch.tanh(self.concat(concat_input))
        output = self.out(concat_output)
        output = F.softmax(output, dim=1)
        return output, hidden


def maskNLLLoss(inp, target, mask):  # the tutorial's
    nTotal = mask.sum()
    crossEntropy = -torch.log(torch.gather(inp, 1, target.view(-1, 1)).squeeze(1))
    loss = crossEntropy.masked_select(mask).mean()
    loss = loss.to(device)
    return loss, nTotal.item()


def train(input_variable, lengths, target_variable, mask, max_target_len, encoder, decoder, embedding,
          encoder_optimizer, decoder_optimizer, batch_size, clip, max_length=MAX_LENGTH):  # the tutorial's
    encoder_optimizer.zero_grad()
    decoder_optimizer.zero_grad()
    input_variable = input_variable.to(device)
    target_variable = target_variable.to(device)
    mask = mask.to(device)
    lengths = lengths.to("cpu")
    loss = 0
    print_losses = []
    n_totals = 0
    encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
    decoder_input = torch.LongTensor([[SOS_token for _ in range(batch_size)]])
    decoder_input = decoder_input.to(device)
    decoder_hidden = encoder_hidden[:decoder.n_layers]
    use_teacher_forcing = True if random.random() < teacher_forcing_ratio else False
    assert use_teacher_forcing  # ratio 1.0
    for t in range(max_target_len):
        decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
        decoder_input = target_variable[t].view(1, -1)
        mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
        loss += mask_loss
        print_losses.append(mask_loss.item() * nTotal)
        n_totals += nTotal
    loss.backward()
    _ = nn.utils.clip_grad_norm_(encoder.parameters(), clip)
    _ = nn.utils.clip_grad_norm_(decoder.parameters(), clip)
    encoder_optimizer.step()
    decoder_optimizer.step()
    return sum(print_losses) / n_totals


def sentences(g):  # batch_size index lists as indexesFromSentence makes them: 1 to 9 words, EOS
    lens = torch.randint(1, MAX_LENGTH, (batch_size,), generator=g)
    words = torch.randint(3, N_WORDS, (batch_size, MAX_LENGTH), generator=g)
    return [words[b, :lens[b].item()].tolist() + [EOS_token] for b in range(batch_size)]


def padded(l):  # zeroPadding + torch.LongTensor
    lens = [len(s) for s in l]
    out = torch.zeros(max(lens), len(l), dtype=torch.long)
    for b, s in enumerate(l):
        out[:len(s), b] = torch.tensor(s)
    return out


def models():
    embedding = nn.Embedding(N_WORDS, hidden_size)
    encoder = EncoderRNN(hidden_size, embedding, encoder_n_layers, dropout)
    decoder = LuongAttnDecoderRNN(attn_model, embedding, hidden_size, N_WORDS, decoder_n_layers, dropout)
    return embedding, nn.ModuleDict({"encoder": encoder, "decoder": decoder})


def make_files(d):
    torch.manual_seed(0)
    P.save_st(P.path(NAME, d, "init.safetensors"), models()[1].state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for k in range(K):
        inputs, targets = sentences(g), sentences(g)
        order = sorted(range(batch_size), key=lambda b: -len(inputs[b]))  # batch2TrainData's sort
        inputs, targets = [inputs[b] for b in order], [targets[b] for b in order]
        data[f"input.{k}"] = padded(inputs)
        data[f"lengths.{k}"] = torch.tensor([len(s) for s in inputs])
        data[f"target.{k}"] = padded(targets)
    P.save_st(P.path(NAME, d, "data.safetensors"), data)


def train_steps(d, dev):
    global device
    device = dev
    embedding, both = models()
    both.load_state_dict(P.load_st(P.path(NAME, d, "init.safetensors")))
    both.to(device, torch.float64)
    encoder, decoder = both["encoder"], both["decoder"]
    encoder.train()
    decoder.train()
    data = P.load_st(P.path(NAME, d, "data.safetensors"))
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=learning_rate)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=learning_rate * decoder_learning_ratio)
    losses = []
    for k in range(K):  # trainIters' loop body
        input_variable, lengths, target_variable = data[f"input.{k}"], data[f"lengths.{k}"], data[f"target.{k}"]
        mask = target_variable != PAD_token  # binaryMatrix
        max_target_len = target_variable.size(0)
        loss = train(input_variable, lengths, target_variable, mask, max_target_len, encoder,
                     decoder, embedding, encoder_optimizer, decoder_optimizer, batch_size, clip)
        losses.append(loss)
    return losses, both


if __name__ == "__main__":
    P.main(NAME, make_files, train_steps)
