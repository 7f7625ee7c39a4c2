# Parity of scripts/tutorials/dcgan_faces_tutorial with PyTorch, PyTorch's side
# (dcgan_faces.lua beside this file is nnrepl's):
#
#   python3 tests/gpu/tutorials/dcgan_faces.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/tutorials/dcgan_faces.lua DIR [cuda|cpu]
#   python3 tests/gpu/tutorials/dcgan_faces.py compare DIR
#
# prepare: the tutorial's weights_init, Generator and Discriminator at small sizes (batch 8,
# nz 16, ngf = ndf = 8, 3 channels, 64 x 64); seed 0, netG then netD made and initialised on the
# CPU -> DIR/dcgan_faces_init.safetensors (keys "netG.*", "netD.*"); K = 10 real batches
# (uniform in [-1, 1], as Normalize((0.5,)*3, (0.5,)*3) leaves images) and the noise each step
# draws (seed 1) -> DIR/dcgan_faces_data.safetensors ("real.i", "noise.i"); then K steps of the
# tutorial's D and G updates, in float64 (the images, noise, nets and labels): BatchNorm over
# batches of 8 at 4x4 left float32's two sides 1.02e-4 apart in the loss (measured, session 23). Per step two lines, Loss_D then Loss_G ->
# _torch_losses.txt; the final weights -> _torch_final.safetensors. compare: one line, PASS
# when the largest relative loss difference is <= 1e-4 and ||w_nnrepl - w_torch|| /
# ||w_torch - w_init|| (both networks, BatchNorm's running statistics included) <= 1e-3, with
# BatchNorm's num_batches_tracked equal (else weights "inf").
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
import example_parity  # noqa: E402
from example_parity import save_st, tf32_off  # noqa: E402

K, batch_size, image_size = 10, 8, 64
ngpu, nz, ngf, ndf, nc = 1, 16, 8, 8, 3
lr, beta1 = 0.0002, 0.5


# ---- the tutorial's networks ----

def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, ngpu):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh()
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ngpu):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        return self.main(input)


def path(d, what):
    return os.path.join(d, f"dcgan_faces_{what}")


def both(netG, netD):
    out = {f"netG.{k}": v for k, v in netG.state_dict().items()}
    out.update({f"netD.{k}": v for k, v in netD.state_dict().items()})
    return out


def prepare(d, device):
    torch.manual_seed(0)
    netG = Generator(ngpu)
    netG.apply(weights_init)
    netD = Discriminator(ngpu)
    netD.apply(weights_init)
    save_st(path(d, "init.safetensors"), both(netG, netD))
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(K):
        data[f"real.{i}"] = torch.rand(batch_size, nc, image_size, image_size, generator=g) * 2 - 1
        data[f"noise.{i}"] = torch.randn(batch_size, nz, 1, 1, generator=g)
    save_st(path(d, "data.safetensors"), data)

    if device.type == "cuda":
        tf32_off()
    netG.to(device, torch.float64)
    netD.to(device, torch.float64)
    criterion = nn.BCELoss()
    real_label = 1.
    fake_label = 0.
    optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(beta1, 0.999))
    losses = []
    for i in range(K):
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = data[f"real.{i}"].to(device, torch.float64)
        b_size = real_cpu.size(0)
        label = torch.full((b_size,), real_label, dtype=torch.float64, device=device)
        output = netD(real_cpu).view(-1)
        errD_real = criterion(output, label)
        errD_real.backward()

        noise = data[f"noise.{i}"].to(device, torch.float64)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach()).view(-1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake).view(-1)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        losses += [errD.item(), errG.item()]

    with open(path(d, "torch_losses.txt"), "w") as f:
        f.write("".join(f"{v!r}\n" for v in losses))
    save_st(path(d, "torch_final.safetensors"), both(netG, netD))
    print(f"torch dcgan_faces: {K} steps on {device}, last Loss_D {losses[-2]!r} Loss_G {losses[-1]!r}")


def compare(d):
    return example_parity.compare("dcgan_faces", d, lines_per_step=2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["prepare", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    if a.what == "prepare":
        prepare(a.dir, torch.device(a.device))
    else:
        sys.exit(0 if compare(a.dir) else 1)


if __name__ == "__main__":
    main()
