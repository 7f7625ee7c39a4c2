# Parity of the dcgan port with PyTorch, PyTorch's side (tests/gpu/examples/dcgan.lua is nnrepl's):
#
#   python3 tests/gpu/examples/dcgan.py prepare DIR [--device cuda]
#   nnrepl  tests/gpu/examples/dcgan.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/dcgan.py compare DIR
#
# prepare: pytorch/examples dcgan/main.py's Generator, Discriminator and weights_init as the
# example has them, at imageSize 64, batch 8, nz 16, ngf = ndf = 8, 3 channels; seed 0, init on
# the CPU (netG, then netD) -> DIR/dcgan_init_netG.safetensors, _init_netD.safetensors; K = 10
# real batches (uniform in [-1, 1], as Normalize((0.5,)*3, (0.5,)*3) leaves images) and noise
# vectors (seed 1) -> DIR/dcgan_data.safetensors ("real.i", "noise.i"); then K steps of the
# example's D and G updates, float32 with TF32 off (cudnn.benchmark left off: the same
# convolution algorithms each run). Per step two lines, Loss_D then Loss_G, go to
# DIR/dcgan_torch_losses.txt; the final weights ("netG.*", "netD.*") to _torch_final.safetensors.
# compare: one line, PASS when the largest relative loss difference is <= 1e-4 and the weights'
# ||w_nnrepl - w_torch|| / ||w_torch - w_init|| (netG and netD together, BatchNorm's running
# statistics included) <= 1e-3, BatchNorm's num_batches_tracked equal (else weights "inf").
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.optim as optim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import example_parity  # noqa: E402
from example_parity import load_st, save_st, tf32_off  # noqa: E402

K, batch, image = 10, 8, 64
ngpu, nz, ngf, ndf, nc = 1, 16, 8, 8, 3
lr, beta1 = 0.0002, 0.5


# ---- the example's networks, as dcgan/main.py writes them ----

def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


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
        if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output


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
        if (input.is_cuda or input.is_xpu) and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def path(d, what):
    return os.path.join(d, f"dcgan_{what}")


def prepare(d, device):
    torch.manual_seed(0)
    netG = Generator(ngpu)
    netG.apply(weights_init)
    netD = Discriminator(ngpu)
    netD.apply(weights_init)
    save_st(path(d, "init_netG.safetensors"), netG.state_dict())
    save_st(path(d, "init_netD.safetensors"), netD.state_dict())
    g = torch.Generator().manual_seed(1)
    data = {}
    for i in range(K):
        data[f"real.{i}"] = torch.rand(batch, nc, image, image, generator=g) * 2 - 1
        data[f"noise.{i}"] = torch.randn(batch, nz, 1, 1, generator=g)
    save_st(path(d, "data.safetensors"), data)

    if device.type == "cuda":
        tf32_off()
    netG.to(device)
    netD.to(device)
    criterion = nn.BCELoss()
    real_label, fake_label = 1, 0
    optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(beta1, 0.999))
    losses = []
    for i in range(K):
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = data[f"real.{i}"].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()

        noise = data[f"noise.{i}"].to(device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()
        losses += [errD.item(), errG.item()]

    with open(path(d, "torch_losses.txt"), "w") as f:
        f.write("".join(f"{v!r}\n" for v in losses))
    final = {f"netG.{k}": v for k, v in netG.state_dict().items()}
    final.update({f"netD.{k}": v for k, v in netD.state_dict().items()})
    save_st(path(d, "torch_final.safetensors"), final)
    print(f"torch dcgan: {K} steps on {device}, last Loss_D {losses[-2]!r} Loss_G {losses[-1]!r}")


def compare(d):
    try:
        w0 = {f"netG.{k}": v for k, v in load_st(path(d, "init_netG.safetensors")).items()}
        w0.update({f"netD.{k}": v for k, v in load_st(path(d, "init_netD.safetensors")).items()})
    except OSError:
        w0 = None  # then compare looks for dcgan_init.safetensors, which is not there: FAIL
    return example_parity.compare("dcgan", d, init=w0, lines_per_step=2)


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
