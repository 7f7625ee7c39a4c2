# PyTorch's side of bench/cpu_train_step.lua: the same models, batches, optimizer and timing.
# Usage: python3 bench/cpu_train_step.py [threads] [repeats] [bf16]
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, "..", "tests", "gpu", "tutorials"))
from doc000_net import Net as Net000  # noqa: E402
from cifar10_tutorial import Net as Net003  # noqa: E402  (document 003's is the CIFAR-10 tutorial's)

threads = int(sys.argv[1]) if len(sys.argv) > 1 else None
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
bf16 = len(sys.argv) > 3 and sys.argv[3] == "bf16"
if threads:
    torch.set_num_threads(threads)
torch.manual_seed(0)


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))


def alexnet():
    import torchvision
    return torchvision.models.alexnet(num_classes=10)


cases = [
    ("mlp_doc001", mlp, 128, (1, 28, 28), 10, 0.1, 0),
    ("cnn_doc000", Net000, 32, (3, 32, 32), 101, 0.001, 0.9),
    ("cnn_doc003", Net003, 4, (3, 32, 32), 10, 0.001, 0.9),
    ("cnn_doc003", Net003, 128, (3, 32, 32), 10, 0.01, 0.9),
    ("alexnet_doc004", alexnet, 8, (3, 227, 227), 10, 1e-4, 0.9),
]

for name, make, batch, shape, classes, lr, momentum in cases:
    model = make()
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    xs = [torch.randn(batch, *shape) for _ in range(4)]
    ys = [torch.randint(0, classes, (batch,)) for _ in range(4)]

    def step(i):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = F.cross_entropy(model(xs[i % 4]), ys[i % 4])
        opt.zero_grad()
        loss.backward()
        opt.step()

    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 <= 0.2 or n < 5:
        step(n)
        n += 1
    per = max(5, n)
    times = []
    for _ in range(reps):
        w0 = time.perf_counter()
        for i in range(per):
            step(i)
        times.append((time.perf_counter() - w0) / per * 1e6)
    print(f"torch {name}{'_bf16' if bf16 else ''} {batch} us {statistics.median(times):.1f}")
