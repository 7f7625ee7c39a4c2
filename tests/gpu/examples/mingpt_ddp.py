# Parity of scripts/examples/mingpt_ddp with pytorch/examples distributed/minGPT-ddp, PyTorch's side.
#
#   python3 tests/gpu/examples/mingpt_ddp.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/mingpt_ddp.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/mingpt_ddp.py compare DIR
#
# prepare: the example's GPT (mingpt/model.py) at a small size (2 layers, 2 heads, 32 wide,
# vocabulary 24, block 16, every dropout 0), seed 0, to DIR/mingpt_ddp_init.safetensors (the
# attention mask buffers included); 12 batches of 8 token sequences, each x.<i> with y.<i> the
# same sequence one token on (as CharDataset gives), to DIR/mingpt_ddp_data.safetensors; then 12
# steps of trainer.py's _run_batch without AMP (forward with targets, zero_grad(set_to_none),
# backward, clip_grad_norm_ 1.0, step) with create_optimizer's AdamW (lr 3e-4, betas 0.9 / 0.95,
# weight decay 0.1 on the decay group), on one device, no DDP. Writes
# DIR/mingpt_ddp_torch_losses.txt and DIR/mingpt_ddp_torch_final.safetensors.
# float32, TF32 off. compare prints one line: parity mingpt_ddp: ... PASS|FAIL.
import math
import os
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from example_parity import main, save_st, load_st  # noqa: E402

NAME, STEPS, BATCH, VOCAB, BLOCK = "mingpt_ddp", 12, 8, 24, 16


# ---- mingpt/model.py, as the example has it (generate() left out: training does not use it) ----
@dataclass
class GPTConfig:
    model_type: str = 'gpt2'
    n_layer: int = None
    n_head: int = None
    n_embd: int = None
    vocab_size: int = 50257
    block_size: int = 1024
    embd_pdrop: float = 0.1
    resid_pdrop: float = 0.1
    attn_pdrop: float = 0.1


@dataclass
class OptimizerConfig:
    learning_rate: float = 3e-4
    weight_decay: float = 0.1


class MultiheadAttentionLayer(nn.Module):
    def __init__(self, config, device="cpu", dtype=torch.float32):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.resid_drop = nn.Dropout(config.resid_pdrop)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, device=device, dtype=dtype)
        self.register_buffer("mask", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))
        self.attn = torch.nn.MultiheadAttention(
            embed_dim=config.n_embd,
            num_heads=config.n_head,
            dropout=config.attn_pdrop,
            batch_first=True,
            device=device,
            dtype=dtype
        )

    def forward(self, x):
        _, seq_size, _ = x.size()
        y = self.attn(x, x, x, attn_mask=self.mask[0, 0, :seq_size, :seq_size])[0]
        y = self.resid_drop(self.c_proj(y))
        return y


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(config.n_embd)
        self.ln2 = nn.LayerNorm(config.n_embd)
        self.attn = MultiheadAttentionLayer(config)
        self.mlp = nn.Sequential(
            nn.Linear(config.n_embd, 4 * config.n_embd),
            nn.GELU(),
            nn.Linear(4 * config.n_embd, config.n_embd),
            nn.Dropout(config.resid_pdrop),
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


class EmbeddingStem(nn.Module):
    def __init__(self, config: GPTConfig, device="cpu", dtype=torch.float32):
        super().__init__()
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd, device=device, dtype=dtype)
        self.pos_emb = nn.Parameter(torch.zeros(1, config.block_size, config.n_embd, device=device, dtype=dtype))
        self.drop = nn.Dropout(config.embd_pdrop)
        self.block_size = config.block_size

    def forward(self, idx):
        b, t = idx.size()
        assert t <= self.block_size
        token_embeddings = self.tok_emb(idx)
        position_embeddings = self.pos_emb[:, :t, :]
        return self.drop(token_embeddings + position_embeddings)


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.block_size = config.block_size
        self.emb_stem = EmbeddingStem(config)
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                p.data.normal_(mean=0.0, std=0.02/math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, idx, targets=None):
        x = self.emb_stem(idx)
        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss


def create_optimizer(model: torch.nn.Module, opt_config: OptimizerConfig):
    decay = set()
    no_decay = set()
    whitelist_weight_modules = (torch.nn.Linear, )
    blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
    for mn, m in model.named_modules():
        for pn, p in m.named_parameters():
            fpn = '%s.%s' % (mn, pn) if mn else pn
            if pn.endswith('bias'):
                no_decay.add(fpn)
            elif pn.endswith('weight') and isinstance(m, whitelist_weight_modules):
                decay.add(fpn)
            elif pn.endswith('in_proj_weight'):
                decay.add(fpn)
            elif pn.endswith('weight') and isinstance(m, blacklist_weight_modules):
                no_decay.add(fpn)
            elif pn.endswith('pos_emb'):
                no_decay.add(fpn)
    param_dict = {pn: p for pn, p in model.named_parameters()}
    assert len(decay & no_decay) == 0
    assert len(param_dict.keys() - (decay | no_decay)) == 0
    optim_groups = [
        {"params": [param_dict[pn] for pn in sorted(list(decay))], "weight_decay": opt_config.weight_decay},
        {"params": [param_dict[pn] for pn in sorted(list(no_decay))], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(optim_groups, lr=opt_config.learning_rate, betas=(0.9, 0.95))
# ---- end of model.py ----


def config():
    return GPTConfig(n_layer=2, n_head=2, n_embd=32, vocab_size=VOCAB, block_size=BLOCK,
                     embd_pdrop=0.0, resid_pdrop=0.0, attn_pdrop=0.0)


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_files(d):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), GPT(config()).state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(STEPS):
        seq = torch.randint(0, VOCAB, (BATCH, BLOCK + 1), generator=g)
        data[f"x.{i}"] = seq[:, :-1].contiguous()
        data[f"y.{i}"] = seq[:, 1:].contiguous()
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = GPT(config())
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    optimizer = create_optimizer(model, OptimizerConfig())
    batches = load_st(path(d, "data.safetensors"))
    losses = []
    for i in range(STEPS):  # trainer.py's _run_batch(source, targets, train=True), use_amp False
        source, targets = batches[f"x.{i}"].to(device), batches[f"y.{i}"].to(device)
        with torch.set_grad_enabled(True):
            _, loss = model(source, targets)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses, model


if __name__ == "__main__":
    main(NAME, make_files, train)
