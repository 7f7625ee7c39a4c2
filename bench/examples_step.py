# PyTorch's side of bench/examples_step.lua: one training step of each ported pytorch/examples
# program at the example's default sizes, timed with CUDA events (median and min of reps
# repeats of `steps` steps, after warm-up). The models are the parity tests' copies of the
# examples' own (tests/gpu/examples/*.py).
#   python3 bench/examples_step.py [steps reps warmup] [names]
import os, sys
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "tests", "gpu", "examples"))
from gpu_step_timing import timed  # noqa: E402

steps, reps, warmup = (int(a) for a in (sys.argv[1:4] if len(sys.argv) > 3 else (20, 7, 5)))
names = sys.argv[4].split(",") if len(sys.argv) > 4 else None
dev = "cuda"
torch.manual_seed(0)


def dcgan():  # main.py's iteration: D on real, D on fake, G; nz 100, ngf = ndf = 64, 64x64, batch 64
    import dcgan as ex
    ex.nz, ex.ngf, ex.ndf, ex.nc = 100, 64, 64, 3
    netG, netD = ex.Generator(1).to(dev), ex.Discriminator(1).to(dev)
    netG.apply(ex.weights_init); netD.apply(ex.weights_init)
    criterion = nn.BCELoss()
    optD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
    optG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))
    reals = [torch.rand(64, 3, 64, 64, device=dev) * 2 - 1 for _ in range(4)]

    def step(i):
        real = reals[i % 4]
        netD.zero_grad()
        label = torch.full((64,), 1.0, device=dev)
        errD_real = criterion(netD(real), label)
        errD_real.backward()
        fake = netG(torch.randn(64, 100, 1, 1, device=dev))
        label.fill_(0.0)
        errD_fake = criterion(netD(fake.detach()), label)
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        label.fill_(1.0)
        errG = criterion(netD(fake), label)
        errG.backward()
        optG.step()
    return step


def vae():  # batch 128, Adam lr 1e-3
    import vae as ex
    model = ex.VAE().to(dev)
    opt = optim.Adam(model.parameters(), lr=1e-3)
    xs = [torch.rand(128, 1, 28, 28, device=dev) for _ in range(4)]

    def step(i):
        opt.zero_grad()
        recon, mu, logvar = model(xs[i % 4])
        ex.loss_function(recon, xs[i % 4], mu, logvar).backward()
        opt.step()
    return step


def mnist_rnn():  # batch 64, Adadelta lr 0.1
    import mnist_rnn as ex
    model = ex.Net().to(dev)
    opt = optim.Adadelta(model.parameters(), lr=0.1)
    xs = [torch.randn(64, 1, 28, 28, device=dev) for _ in range(4)]
    ys = [torch.randint(0, 10, (64,), device=dev) for _ in range(4)]

    def step(i):
        opt.zero_grad()
        F.nll_loss(model(xs[i % 4]), ys[i % 4]).backward()
        opt.step()
    return step


def siamese_network():  # batch 64 pairs, Adadelta lr 1.0, BCELoss
    import siamese_network as ex
    model = ex.SiameseNetwork().to(dev)
    opt = optim.Adadelta(model.parameters(), lr=1.0)
    criterion = nn.BCELoss()
    a = [torch.randn(64, 1, 28, 28, device=dev) for _ in range(4)]
    b = [torch.randn(64, 1, 28, 28, device=dev) for _ in range(4)]
    t = [torch.randint(0, 2, (64,), device=dev).float() for _ in range(4)]

    def step(i):
        opt.zero_grad()
        out = model(a[i % 4], b[i % 4]).squeeze()
        criterion(out, t[i % 4]).backward()
        opt.step()
    return step


def wlm(kind):  # main.py's train() step: bptt 35, batch 20, emsize = nhid = 200, 2 layers, lr 20, clip 0.25
    import word_language_model as ex
    ntokens = 33278  # WikiText-2's vocabulary
    if kind == "LSTM":
        model = ex.RNNModel("LSTM", ntokens, 200, 200, 2, 0.2).to(dev)
    else:
        model = ex.TransformerModel(ntokens, 200, 2, 200, 2, 0.2).to(dev)
    criterion = nn.NLLLoss()
    data = [torch.randint(0, ntokens, (36, 20), device=dev) for _ in range(4)]
    state = {"hidden": model.init_hidden(20) if kind == "LSTM" else None}

    def step(i):
        src, targets = data[i % 4][:35], data[i % 4][1:].reshape(-1)
        model.zero_grad()
        if kind == "LSTM":
            hidden = tuple(h.detach() for h in state["hidden"])
            output, state["hidden"] = model(src, hidden)
        else:
            output = model(src).view(-1, ntokens)
        criterion(output, targets).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-20)
    return step


BENCHES = {"dcgan": dcgan, "vae": vae, "mnist_rnn": mnist_rnn, "siamese_network": siamese_network,
           "wlm_lstm": lambda: wlm("LSTM"), "wlm_transformer": lambda: wlm("Transformer")}
torch.backends.cudnn.benchmark = False
for name, make in BENCHES.items():
    if names and name not in names:
        continue
    step = make()
    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()
    med, mn = timed(step, steps, reps)
    print("example %s torch: median %.4f ms (min %.4f)" % (name, med, mn))
