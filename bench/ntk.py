# PyTorch's side of bench/ntk.lua: the neural-tangent-kernels tutorial's two methods, the same
# model and sizes, wall-clock after a warm-up, synchronised, median of 5.
#   python3 bench/ntk.py [N=20] [M=5]
import statistics, sys, time
import torch
import torch.nn as nn
from torch.func import functional_call, vmap, vjp, jvp, jacrev

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
M = int(sys.argv[2]) if len(sys.argv) > 2 else 5
device = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, (3, 3))
        self.conv2 = nn.Conv2d(32, 32, (3, 3))
        self.conv3 = nn.Conv2d(32, 32, (3, 3))
        self.fc = nn.Linear(21632, 10)

    def forward(self, x):
        x = self.conv2(self.conv1(x).relu()).relu()
        return self.fc(self.conv3(x).flatten(1))


net = CNN().to(device)
x1 = torch.randn(N, 3, 32, 32, device=device)
x2 = torch.randn(M, 3, 32, 32, device=device)
params = {k: v.detach() for k, v in net.named_parameters()}


def fnet_single(p, x):
    return functional_call(net, p, (x.unsqueeze(0),)).squeeze(0)


def by_jacobians():
    j1 = vmap(jacrev(fnet_single), (None, 0))(params, x1)
    j2 = vmap(jacrev(fnet_single), (None, 0))(params, x2)
    parts = [torch.einsum("Naf,Mbf->NMab", j1[k].flatten(2), j2[k].flatten(2)) for k in params]
    return torch.stack(parts).sum(0)


def by_ntk_vps():
    def get_ntk(a, b):
        out, vjp_fn = vjp(lambda p: fnet_single(p, a), params)

        def slice(vec):
            return jvp(lambda p: fnet_single(p, b), (params,), vjp_fn(vec))[1]

        return vmap(slice)(torch.eye(out.numel(), dtype=out.dtype, device=out.device))

    return vmap(vmap(get_ntk, (None, 0)), (0, None))(x1, x2)


def sync():
    if device == "cuda":
        torch.cuda.synchronize()


for name, fn in (("jacobian_contraction", by_jacobians), ("ntk_vps", by_ntk_vps)):
    fn(); sync()
    times = []
    for _ in range(5):
        t0 = time.perf_counter(); fn(); sync(); times.append((time.perf_counter() - t0) * 1e3)
    print(f"ntk {name} {N}x{M} us {statistics.median(times) * 1e3:.1f}")
