# PyTorch's side of bench/mlp_cpu.lua: document 001's MLP (784 -> 32 -> ReLU -> 10), SGD lr 0.1,
# on CPU with the data in memory:
#  1. one training step at batch 128 (forward, cross_entropy, zero_grad, backward, SGD step),
#     median over repeats after a warm-up, and the same step cut into its pieces;
#  2. an epoch of 60,000 samples (469 batches of 128, shuffled): slicing a shuffled copy of the
#     data tensors, and a DataLoader over a TensorDataset.
# Fashion-MNIST's training images when a folder with its IDX files is given (or found in
# .data/fashion-mnist or /usr/share/datasets/fashion-mnist), random data otherwise.
# Each part runs with PyTorch's default intra-op threads and with one thread.
# Usage: python3 bench/mlp_cpu.py [steps per repeat] [repeats] [epochs] [fashion-mnist dir]
import gzip, os, statistics, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 9
epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 3
B, N = 128, 60000


def read_idx(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def load():
    dirs = ([sys.argv[4]] if len(sys.argv) > 4 else []) + [".data/fashion-mnist", "/usr/share/datasets/fashion-mnist"]
    for d in dirs:
        for ext in (".gz", ""):
            xi, yi = f"{d}/train-images-idx3-ubyte{ext}", f"{d}/train-labels-idx1-ubyte{ext}"
            if os.path.exists(xi) and os.path.exists(yi):
                return read_idx(xi).reshape(N, 784).float().div(255), read_idx(yi).long(), "Fashion-MNIST"
    return torch.rand(N, 784), torch.randint(0, 10, (N,)), "random data"


torch.manual_seed(0)
X, Y, source = load()


def run(threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    xb, yb = X[:B].contiguous(), Y[:B].contiguous()
    for _ in range(50):
        step(xb, yb)
    times, cpu = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(steps):
            step(xb, yb)
        times.append((time.perf_counter() - t0) / steps * 1e3)
        cpu.append((time.process_time() - c0) / steps * 1e3)
    times.sort()
    print(f"pytorch step (batch {B}, {source}, {threads} threads): median {statistics.median(times):.3f} ms "
          f"(min {times[0]:.3f}, max {times[-1]:.3f}; {reps} x {steps} steps); CPU time {statistics.median(cpu):.3f} ms")

    pieces = {k: [] for k in ("forward", "cross_entropy", "zero_grad", "backward", "step")}
    for _ in range(steps * reps):
        t0 = time.perf_counter()
        out = model(xb)
        t1 = time.perf_counter()
        loss = F.cross_entropy(out, yb)
        t2 = time.perf_counter()
        opt.zero_grad()
        t3 = time.perf_counter()
        loss.backward()
        t4 = time.perf_counter()
        opt.step()
        t5 = time.perf_counter()
        for k, v in zip(pieces, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            pieces[k].append(v * 1e6)
    meds = {k: statistics.median(v) for k, v in pieces.items()}
    print(f"pytorch step pieces (median us, {threads} threads): " + ", ".join(f"{k} {v:.1f}" for k, v in meds.items())
          + f"; sum {sum(meds.values()):.1f} us")

    def report(name, ts):
        ts.sort()
        print(f"pytorch epoch, {name} ({threads} threads): median {statistics.median(ts):.3f} s "
              f"(min {ts[0]:.3f}, max {ts[-1]:.3f}; {len(ts)} epochs of {N} samples)")

    ts = []
    for e in range(epochs + 1):
        t0 = time.perf_counter()
        perm = torch.randperm(N)
        Xs, Ys = X.index_select(0, perm), Y.index_select(0, perm)
        for i in range(0, N, B):
            step(Xs[i:i + B], Ys[i:i + B])
        if e > 0:
            ts.append(time.perf_counter() - t0)
    report("shuffled tensors sliced", ts)

    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=B, shuffle=True)
    ts = []
    for e in range(epochs + 1):
        t0 = time.perf_counter()
        for x, y in loader:
            step(x, y)
        if e > 0:
            ts.append(time.perf_counter() - t0)
    report("DataLoader(TensorDataset, shuffle)", ts)


print("torch", torch.__version__)
for threads in dict.fromkeys((torch.get_num_threads(), 1)):
    run(threads)
