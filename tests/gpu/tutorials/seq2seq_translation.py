# Parity of scripts/tutorials/seq2seq_translation (the port of pytorch/tutorials
# intermediate_source/seq2seq_translation_tutorial.py) with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/tutorials/seq2seq_translation.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/seq2seq_translation.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/seq2seq_translation.py compare DIR
#
# prepare: the tutorial's EncoderRNN(30, 128) and AttnDecoderRNN(128, 25) (BahdanauAttention,
# seed 0) -> DIR/seq2seq_translation_init.safetensors (keys "encoder.*", "decoder.*"); 12
# batches of 8 sentence pairs as get_dataloader makes them (word ids, EOS, zero padding to
# MAX_LENGTH 10: "input.K", "target.K") -> _data.safetensors; then train_epoch's step on each:
# the decoder with teacher forcing (the target given), NLLLoss over all 10 positions, Adam lr
# 0.001 for each model. Both Dropout(0.1) layers have p set to 0. float64: in float32 the two
# sides' rounding of near-zero gradients, which Adam scales up to full steps, moved the weights
# 2e-3 apart (measured, session 23) while the losses agreed to 1e-5.
import os
import sys

import torch
import torch.nn as nn
from torch import optim
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity as P  # noqa: E402

NAME = "seq2seq_translation"
SOS_token, EOS_token, MAX_LENGTH = 0, 1, 10
IN_WORDS, OUT_WORDS, hidden_size, K, B = 30, 25, 128, 12, 8
device = None  # set in train, as the tutorial's global


class EncoderRNN(nn.Module):  # the tutorial's
    def __init__(self, input_size, hidden_size, dropout_p=0.1):
        super(EncoderRNN, self).__init__()
        self.hidden_size = hidden_size

        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, input):
        embedded = self.dropout(self.embedding(input))
        output, hidden = self.gru(embedded)
        return output, hidden


class BahdanauAttention(nn.Module):  # the tutorial's
    def __init__(self, hidden_size):
        super(BahdanauAttention, self).__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)

        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)

        return context, weights


class AttnDecoderRNN(nn.Module):  # the tutorial's
    def __init__(self, hidden_size, output_size, dropout_p=0.1):
        super(AttnDecoderRNN, self).__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long, device=device).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        attentions = []

        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden, attn_weights = self.forward_step(
                decoder_input, decoder_hidden, encoder_outputs
            )
            decoder_outputs.append(decoder_output)
            attentions.append(attn_weights)

            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)  # Teacher forcing
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()

        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
        attentions = torch.cat(attentions, dim=1)

        return decoder_outputs, decoder_hidden, attentions

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.dropout(self.embedding(input))

        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        input_gru = torch.cat((embedded, context), dim=2)

        output, hidden = self.gru(input_gru, hidden)
        output = self.out(output)

        return output, hidden, attn_weights


def sentences(g, n_words):  # (B, MAX_LENGTH): 1 to 9 word ids, EOS, zeros
    ids = torch.zeros(B, MAX_LENGTH, dtype=torch.long)
    lens = torch.randint(1, MAX_LENGTH, (B,), generator=g)
    words = torch.randint(2, n_words, (B, MAX_LENGTH), generator=g)
    for b in range(B):
        n = lens[b].item()
        ids[b, :n] = words[b, :n]
        ids[b, n] = EOS_token
    return ids


def make_files(d):
    torch.manual_seed(0)
    encoder = EncoderRNN(IN_WORDS, hidden_size)
    decoder = AttnDecoderRNN(hidden_size, OUT_WORDS)
    P.save_st(P.path(NAME, d, "init.safetensors"), nn.ModuleDict({"encoder": encoder, "decoder": decoder}).state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for k in range(K):
        data[f"input.{k}"] = sentences(g, IN_WORDS)
        data[f"target.{k}"] = sentences(g, OUT_WORDS)
    P.save_st(P.path(NAME, d, "data.safetensors"), data)


def train(d, dev):
    global device
    device = dev
    both = nn.ModuleDict({"encoder": EncoderRNN(IN_WORDS, hidden_size), "decoder": AttnDecoderRNN(hidden_size, OUT_WORDS)})
    both.load_state_dict(P.load_st(P.path(NAME, d, "init.safetensors")))
    both.to(device, torch.float64)
    encoder, decoder = both["encoder"], both["decoder"]
    encoder.dropout.p = 0.0
    decoder.dropout.p = 0.0
    data = P.load_st(P.path(NAME, d, "data.safetensors"))
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.001)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.001)
    criterion = nn.NLLLoss()
    losses = []
    for k in range(K):  # train_epoch's loop body
        input_tensor, target_tensor = data[f"input.{k}"].to(device), data[f"target.{k}"].to(device)

        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()

        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)

        loss = criterion(
            decoder_outputs.view(-1, decoder_outputs.size(-1)),
            target_tensor.view(-1)
        )
        loss.backward()

        encoder_optimizer.step()
        decoder_optimizer.step()

        losses.append(loss.item())
    return losses, both


if __name__ == "__main__":
    P.main(NAME, make_files, train)
