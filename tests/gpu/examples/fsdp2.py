# Parity of scripts/examples/fsdp2 (pytorch/examples distributed/FSDP2) with PyTorch, PyTorch's
# side, on one device: the example's Transformer (model.py) unsharded, seed 0 ->
# DIR/fsdp2_init.safetensors; 12 batches of 4 x 16 random tokens below 64 ("x.<i>") ->
# DIR/fsdp2_data.safetensors; 12 steps of example.py's loop (loss = model(x).sum(), backward,
# clip_grad_norm_(max_norm=1.0), Adam lr 1e-2 step, zero_grad) -> DIR/fsdp2_torch_losses.txt and
# DIR/fsdp2_torch_final.safetensors. float32, TF32 off.
#
#   python3 tests/gpu/examples/fsdp2.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/fsdp2.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/fsdp2.py compare DIR
import os
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, path, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH, SEQ, VOCAB = "fsdp2", 12, 4, 16, 64


@dataclass
class ModelArgs:  # as in FSDP2/model.py
    n_layers: int = 2
    vocab_size: int = 8
    max_seq_len: int = 16
    dim: int = 16
    n_heads: int = 4
    dropout_p: float = 0.1


class Attention(nn.Module):
    def __init__(self, args):
        super().__init__()
        assert args.dim % args.n_heads == 0
        self.head_dim = args.dim // args.n_heads
        self.n_heads = args.n_heads
        self.dropout_p = args.dropout_p
        self.resid_dropout = nn.Dropout(args.dropout_p)
        self.wq = nn.Linear(args.dim, args.dim, bias=False)
        self.wk = nn.Linear(args.dim, args.dim, bias=False)
        self.wv = nn.Linear(args.dim, args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)

    def forward(self, x):
        bsz, seq_len, _ = x.size()
        queries, keys, values = self.wq(x), self.wk(x), self.wv(x)
        queries = queries.view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        keys = keys.view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        values = values.view(bsz, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        output = F.scaled_dot_product_attention(queries, keys, values, None, self.dropout_p if self.training else 0)
        output = output.transpose(1, 2).contiguous().view(bsz, seq_len, -1)
        return self.resid_dropout(self.wo(output))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden_dim, dropout_p):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim)
        self.gelu = nn.GELU()
        self.w2 = nn.Linear(hidden_dim, dim)
        self.resid_dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        return self.resid_dropout(self.w2(self.gelu(self.w1(x))))


class TransformerBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attention_norm = nn.LayerNorm(args.dim)
        self.attention = Attention(args)
        self.ffn_norm = nn.LayerNorm(args.dim)
        self.feed_forward = FeedForward(args.dim, hidden_dim=4 * args.dim, dropout_p=args.dropout_p)

    def forward(self, x):
        h = x + self.attention(self.attention_norm(x))
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.model_args = args
        self.max_seq_len = args.max_seq_len
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.pos_embeddings = nn.Embedding(args.max_seq_len, args.dim)
        self.dropout = nn.Dropout(args.dropout_p)
        self.layers = nn.ModuleList()
        for _ in range(args.n_layers):
            self.layers.append(TransformerBlock(args))
        self.norm = nn.LayerNorm(args.dim)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)

    def forward(self, tokens):
        _bsz, seq_len = tokens.size()
        assert seq_len <= self.max_seq_len
        h = self.tok_embeddings(tokens)
        pos = torch.arange(0, seq_len, device=tokens.device)
        h = h + self.pos_embeddings(pos)
        h = self.dropout(h)
        for layer in self.layers:
            h = layer(h)
        h = self.norm(h)
        return self.output(h).float()


ARGS = ModelArgs(n_layers=2, n_heads=4, vocab_size=VOCAB, max_seq_len=SEQ, dropout_p=0)


def make_files(d):
    torch.manual_seed(0)
    save_st(path(NAME, d, "init.safetensors"), Transformer(ARGS).state_dict())
    g = torch.Generator().manual_seed(1)
    save_st(path(NAME, d, "data.safetensors"),
            {f"x.{i}": torch.randint(0, VOCAB, (BATCH, SEQ), generator=g) for i in range(STEPS)})


def train(d, device):
    model = Transformer(ARGS)
    model.load_state_dict(load_st(path(NAME, d, "init.safetensors")))
    model = model.to(device)
    data = load_st(path(NAME, d, "data.safetensors"))
    optim = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for i in range(STEPS):  # example.py's loop
        x = data[f"x.{i}"].to(device)
        loss = model(x).sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optim.step()
        optim.zero_grad()
        losses.append(loss.item())
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
