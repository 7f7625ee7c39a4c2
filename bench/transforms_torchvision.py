"""torchvision reference for bench/transforms.lua: CIFAR-10-shaped random uint8
images through Resize(227) + ToTensor, batches of 64 from a DataLoader, in
samples/s (median of reps after a warm-up), as uint8 tensors [3, 32, 32] and as
PIL images (what torchvision's CIFAR10 gives), plus the transforms alone.
Usage: python3 bench/transforms_torchvision.py [reps] [n] [num_workers] [torch threads]"""
import sys
import time

import numpy as np
import torch
import torchvision
from PIL import Image
from torch.utils.data import DataLoader, Dataset
from torchvision import transforms as T

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
workers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
if len(sys.argv) > 4:
    torch.set_num_threads(int(sys.argv[4]))

rng = np.random.default_rng(0)
images = rng.integers(0, 256, size=(n, 3, 32, 32), dtype=np.uint8)
tensors = [torch.from_numpy(images[i].copy()) for i in range(n)]
pils = [Image.fromarray(images[i].transpose(1, 2, 0)) for i in range(n)]


class Images(Dataset):
    def __init__(self, items, transform):
        self.items, self.transform = items, transform

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.transform(self.items[i]), 0


def median_rate(f):
    f()
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        count = f()
        rates.append(count / (time.perf_counter() - t0))
    rates.sort()
    return rates[(reps - 1) // 2], rates[0], rates[-1]


def loader_rate(items, transform):
    loader = DataLoader(Images(items, transform), batch_size=64, num_workers=workers,
                        persistent_workers=workers > 0)

    def epoch():
        count = 0
        for x, _ in loader:
            assert x.shape[1:] == (3, 227, 227)
            count += x.shape[0]
        return count
    return median_rate(epoch)


def transform_rate(items, transform):
    def run():
        for it in items:
            transform(it)
        return len(items)
    return median_rate(run)


def report(name, r):
    print(f"{name:58s} median {r[0]:8.0f} samples/s (min {r[1]:.0f}, max {r[2]:.0f})")


print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, torch threads {torch.get_num_threads()}")
# ToTensor takes PIL images and numpy arrays; a uint8 tensor goes through ConvertImageDtype as torchvision's v1 API has it
pil_pipeline = T.Compose([T.Resize(227), T.ToTensor()])
tensor_pipeline = T.Compose([T.Resize(227), T.ConvertImageDtype(torch.float32)])
report(f"DataLoader batch 64, Resize(227)+ToTensor, tensors, {workers} workers", loader_rate(tensors, tensor_pipeline))
report(f"DataLoader batch 64, Resize(227)+ToTensor, PIL, {workers} workers", loader_rate(pils, pil_pipeline))
report("Resize(227) alone, PIL", transform_rate(pils, T.Resize(227)))
resized = [T.Resize(227)(p) for p in pils]
report("ToTensor alone, 227x227 PIL", transform_rate(resized, T.ToTensor()))
report("Resize(227) alone, uint8 tensors", transform_rate(tensors, T.Resize(227)))
