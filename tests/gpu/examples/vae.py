# Parity of scripts/examples/vae (pytorch/examples vae/main.py) with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/examples/vae.py prepare DIR [--device cuda] [--steps 12]
#   nnrepl  tests/gpu/examples/vae.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/vae.py compare DIR
#
# prepare: the example's VAE (seed 0) -> DIR/vae_init.safetensors; `steps` batches of 32 images
# in [0, 1] ("x.<i>", [32, 1, 28, 28]) and the reparameterization noise each step draws
# ("eps.<i>", [32, 20]) -> DIR/vae_data.safetensors; then `steps` steps of the example's train()
# (Adam lr 1e-3, loss_function summed over the batch), torch.randn_like answering with the
# stored eps, -> DIR/vae_torch_losses.txt and DIR/vae_torch_final.safetensors.
# float32, TF32 off. compare prints one line:
#   parity vae: max rel loss diff X over K steps, weights Y: PASS|FAIL
# PASS when X <= 1e-4 and Y = ||w_nnrepl - w_torch|| / ||w_torch - w_init|| <= 1e-3.
import argparse
import os
import sys

import torch
from torch import nn, optim
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from parity import save_st, load_st, tf32_off, read_losses, loss_diff, update_diff  # noqa: E402

BATCH = 32


class VAE(nn.Module):  # as in vae/main.py
    def __init__(self):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(784, 400)
        self.fc21 = nn.Linear(400, 20)
        self.fc22 = nn.Linear(400, 20)
        self.fc3 = nn.Linear(20, 400)
        self.fc4 = nn.Linear(400, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5*logvar)
        eps = torch.randn_like(std)
        return mu + eps*std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):  # as in vae/main.py
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction='sum')
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


def path(d, what):
    return os.path.join(d, f"vae_{what}")


def make_files(d, steps):
    torch.manual_seed(0)
    save_st(path(d, "init.safetensors"), VAE().state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(steps):
        data[f"x.{i}"] = torch.rand(BATCH, 1, 28, 28, generator=g)
        data[f"eps.{i}"] = torch.randn(BATCH, 20, generator=g)
    save_st(path(d, "data.safetensors"), data)


def train(d, device):
    model = VAE()
    model.load_state_dict(load_st(path(d, "init.safetensors")))
    model = model.to(device)
    optimizer = optim.Adam(model.parameters(), lr=1e-3)
    data = load_st(path(d, "data.safetensors"))
    steps = sum(1 for k in data if k.startswith("x."))
    draws = iter([data[f"eps.{i}"] for i in range(steps)])

    def stored_randn_like(t):  # the step's eps from the file, in place of the draw
        eps = next(draws)
        assert eps.shape == t.shape, (eps.shape, t.shape)
        return eps.to(device=t.device, dtype=t.dtype)

    randn_like, torch.randn_like = torch.randn_like, stored_randn_like
    losses = []
    try:
        model.train()
        for i in range(steps):  # the example's train() loop, one batch a step
            data_i = data[f"x.{i}"].to(device)
            optimizer.zero_grad()
            recon_batch, mu, logvar = model(data_i)
            loss = loss_function(recon_batch, data_i, mu, logvar)
            loss.backward()
            losses.append(loss.item())
            optimizer.step()
    finally:
        torch.randn_like = randn_like
    with open(path(d, "torch_losses.txt"), "w") as f:
        f.write("".join(f"{v!r}\n" for v in losses))
    save_st(path(d, "torch_final.safetensors"), model.state_dict())
    print(f"torch vae: losses {losses[0]:.4f} -> {losses[-1]:.4f} over {steps} steps", flush=True)


def compare(d):
    ref = read_losses(path(d, "torch_losses.txt"))
    try:
        ours = read_losses(path(d, "nnrepl_losses.txt"))
        w = load_st(path(d, "nnrepl_final.safetensors"))
        rel = loss_diff(ours, ref)
        upd = update_diff(load_st(path(d, "init.safetensors")), w, load_st(path(d, "torch_final.safetensors")))
    except (OSError, KeyError, RuntimeError) as e:
        print(f"parity vae: nnrepl's files are missing or wrong ({e}): FAIL")
        return False
    ok = rel <= 1e-4 and upd <= 1e-3
    print(f"parity vae: max rel loss diff {rel:.3g} over {len(ref)} steps, weights {upd:.3g}: {'PASS' if ok else 'FAIL'}")
    if not ok:
        for i, (a, b) in enumerate(zip(ours, ref)):
            print(f"  step {i}: nnrepl {a!r} pytorch {b!r}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["prepare", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=12)
    a = ap.parse_args()
    if a.what == "compare":
        sys.exit(0 if compare(a.dir) else 1)
    os.makedirs(a.dir, exist_ok=True)
    if a.device.startswith("cuda"):
        tf32_off()
    make_files(a.dir, a.steps)
    train(a.dir, torch.device(a.device))


if __name__ == "__main__":
    main()
