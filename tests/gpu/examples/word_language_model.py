# Parity of scripts/examples/word_language_model with pytorch/examples word_language_model,
# PyTorch's side (nnrepl's: word_language_model.lua beside this file).
#
#   python3 tests/gpu/examples/word_language_model.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/word_language_model.lua DIR cuda
#   python3 tests/gpu/examples/word_language_model.py compare DIR
#
# Two variants, each trained K = 15 steps as main.py's train() does (model.zero_grad(), forward,
# NLLLoss, backward, clip_grad_norm_ to 0.25, p.data.add_(p.grad, alpha=-lr)) on the same
# batches: a token stream of ids in [0, 50) (seed 1, token_stream: mostly the last id + 7) batchified into 4 columns and cut in chunks
# of bptt = 10 as batchify / get_batch do; the x.i / y.i of the data file are those chunks.
#   lstm         RNNModel('LSTM', 50, 32, 32, 2, dropout=0, tie_weights=True), lr 5, the hidden
#                state carried (detached) from step to step
#   transformer  TransformerModel(50, 32, 2, 64, 2, dropout=0), lr 2, in eval mode: its encoder
#                layers keep nn.Transformer's dropout 0.1 (the example passes dropout to the
#                positional encoding only), and eval is what makes them inactive; with grad on,
#                PyTorch's fast path stays off
# The model classes below are the example's model.py as it is. float32, TF32 off.
# Files: DIR/word_language_model_{lstm,transformer}_init.safetensors (state_dict, seed 0),
# DIR/word_language_model_data.safetensors, DIR/word_language_model_{variant}_torch_losses.txt and
# _torch_final.safetensors (named_parameters: the tied weight once, as encoder.weight).
import argparse
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from parity import load_st, loss_diff, read_losses, save_st, tf32_off, update_diff  # noqa: E402

NAME = "word_language_model"
VARIANTS = ("lstm", "transformer")
NTOKENS, BSZ, BPTT, K, CLIP = 50, 4, 10, 15, 0.25
LR = {"lstm": 5.0, "transformer": 2.0}


# ---- model.py of the example ----

class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        decoded = decoded.view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == 'LSTM':
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        else:
            return weight.new_zeros(self.nlayers, bsz, self.nhid)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0).transpose(0, 1)
        self.register_buffer('pe', pe)

    def forward(self, x):
        x = x + self.pe[:x.size(0), :]
        return self.dropout(x)


class TransformerModel(nn.Transformer):
    def __init__(self, ntoken, ninp, nhead, nhid, nlayers, dropout=0.5):
        super(TransformerModel, self).__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
        self.model_type = 'Transformer'
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)
        self.init_weights()

    def _generate_square_subsequent_mask(self, sz):
        return torch.log(torch.tril(torch.ones(sz, sz)))

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.input_emb.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, src, has_mask=True):
        if has_mask:
            device = src.device
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                mask = self._generate_square_subsequent_mask(len(src)).to(device)
                self.src_mask = mask
        else:
            self.src_mask = None
        src = self.input_emb(src) * math.sqrt(self.ninp)
        src = self.pos_encoder(src)
        output = self.encoder(src, mask=self.src_mask)
        output = self.decoder(output)
        return F.log_softmax(output, dim=-1)


def build(variant):
    if variant == "lstm":
        return RNNModel('LSTM', NTOKENS, 32, 32, 2, 0.0, True)
    return TransformerModel(NTOKENS, 32, 2, 64, 2, 0.0)


# ---- main.py's batchify, get_batch, repackage_hidden ----

def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source, i):
    seq_len = min(BPTT, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def token_stream(n):  # 7 steps on from the last id, one id in 5 random instead: learnable
    base = torch.arange(n) * 7 % NTOKENS
    noise = torch.randint(0, NTOKENS, (n,))
    return torch.where(torch.rand(n) < 0.8, base, noise)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def prepare(d, device):
    for v in VARIANTS:
        torch.manual_seed(0)
        save_st(path(d, f"{v}_init.safetensors"), build(v).state_dict())
    torch.manual_seed(1)
    train_data = batchify(token_stream(BSZ * (K * BPTT + 1)), BSZ)
    data = {}
    for step, i in enumerate(range(0, K * BPTT, BPTT)):
        data[f"x.{step}"], data[f"y.{step}"] = get_batch(train_data, i)
    save_st(path(d, "data.safetensors"), data)
    for v in VARIANTS:
        train(d, v, device)


def train(d, variant, device):
    model = build(variant)
    model.load_state_dict(load_st(path(d, f"{variant}_init.safetensors")))
    model.to(device)
    data = load_st(path(d, "data.safetensors"))
    criterion = nn.NLLLoss()
    lr = LR[variant]
    if variant == "transformer":
        model.eval()
    else:
        model.train()
        hidden = model.init_hidden(BSZ)
    losses = []
    for step in range(K):
        x, targets = data[f"x.{step}"].to(device), data[f"y.{step}"].to(device)
        model.zero_grad()
        if variant == "transformer":
            output = model(x)
            output = output.view(-1, NTOKENS)
        else:
            hidden = repackage_hidden(hidden)
            output, hidden = model(x, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    with open(path(d, f"{variant}_torch_losses.txt"), "w") as f:
        f.writelines(f"{x!r}\n" for x in losses)
    save_st(path(d, f"{variant}_torch_final.safetensors"), dict(model.named_parameters()))
    print(f"torch {variant}: losses {losses[0]:.6f} -> {losses[-1]:.6f} over {K} steps")


def compare(d):
    rel, upd, n = 0.0, 0.0, 0
    for v in VARIANTS:
        ref = read_losses(path(d, f"{v}_torch_losses.txt"))
        n = max(n, len(ref))
        try:
            rel = max(rel, loss_diff(read_losses(path(d, f"{v}_nnrepl_losses.txt")), ref))
            wb = load_st(path(d, f"{v}_torch_final.safetensors"))
            w0 = {k: t for k, t in load_st(path(d, f"{v}_init.safetensors")).items() if k in wb}
            upd = max(upd, update_diff(w0, load_st(path(d, f"{v}_nnrepl_final.safetensors")), wb))
        except (OSError, KeyError, RuntimeError):
            rel, upd = math.inf, math.inf
    ok = rel <= 1e-4 and upd <= 1e-3
    print(f"parity {NAME}: max rel loss diff {rel:.3g} over {n} steps, weights {upd:.3g}: {'PASS' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    if a.mode == "prepare":
        if a.device.startswith("cuda"):
            tf32_off()
        prepare(a.dir, torch.device(a.device))
    else:
        sys.exit(0 if compare(a.dir) else 1)


if __name__ == "__main__":
    main()
