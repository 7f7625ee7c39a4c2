"""Recomputes the cases of tests/gpu/tv_v2/kernels_geometry.lua with torchvision.transforms.v2.functional
and compares with nnrepl's outputs: one line per case, PASS or FAIL, then a summary.
Usage: python3 tests/gpu/tv_v2/kernels_geometry.py OUTDIR [DEVICE]
Float outputs pass within 1e-4 (relative above 1), integer and bool outputs must be equal,
dtypes and shapes must match and canvas sizes must be equal. Exit status 1 when a case fails."""
import json
import os
import sys

import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision import tv_tensors

d = sys.argv[1]
dev = sys.argv[2] if len(sys.argv) > 2 else ("cuda" if torch.cuda.is_available() else "cpu")


def kernel(name):
    for mod in (F, getattr(F, "_geometry", None), getattr(F, "_meta", None)):
        if mod is not None and hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(f"torchvision.transforms.v2.functional has no {name}")


def decode(v):
    if isinstance(v, dict):
        if "t" in v:
            dtype = getattr(torch, v["dtype"])
            wide = torch.float64 if dtype.is_floating_point else torch.int64
            return torch.tensor(v["t"], dtype=wide).to(dtype).reshape(v["shape"]).to(dev)
        if "fmt" in v:
            return tv_tensors.BoundingBoxFormat[v["fmt"]]
        if "canvas" in v:
            return tuple(v["canvas"])
        return {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


def compare(ours, ref):
    """(ok, detail) for one output"""
    if isinstance(ref, torch.Tensor):
        if not isinstance(ours, torch.Tensor):
            return False, f"got {type(ours).__name__}, want a tensor"
        ours = ours.to(ref.device)
        if ours.dtype != ref.dtype:
            return False, f"dtype {ours.dtype} vs {ref.dtype}"
        if ours.shape != ref.shape:
            return False, f"shape {list(ours.shape)} vs {list(ref.shape)}"
        if ref.numel() == 0:
            return True, "empty"
        a, b = ours.double(), ref.double()
        diff = (a - b).abs()
        m = float(diff.max())
        if ref.is_floating_point():
            bad = diff > 1e-4 * b.abs().clamp(min=1)
        else:
            bad = diff > 0
        n = int(bad.sum())
        return n == 0, ("exact" if m == 0 else f"max diff {m:.3g}, {n}/{ref.numel()} out of tolerance")
    ref = list(ref) if isinstance(ref, (tuple, list)) else ref
    ours = list(ours) if isinstance(ours, (tuple, list)) else ours
    return ours == ref, f"{ours} vs {ref}"


print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, device {dev}")
failed = passed = 0
with open(os.path.join(d, "cases.jsonl")) as f:
    for line in f:
        case = json.loads(line)
        name = case["name"]
        try:
            ref = kernel(case["kernel"])(*decode(case["args"]), **decode(case["kwargs"]))
        except Exception as e:  # torchvision itself refused the case
            print(f"FAIL {name}: torchvision raised {type(e).__name__}: {e}")
            failed += 1
            continue
        refs = list(ref) if isinstance(ref, tuple) else [ref]
        ours = decode(case["out"])
        if len(ours) != len(refs):
            print(f"FAIL {name}: {len(ours)} results, torchvision gives {len(refs)}")
            failed += 1
            continue
        results = [compare(o, r) for o, r in zip(ours, refs)]
        ok = all(r[0] for r in results)
        passed, failed = passed + ok, failed + (not ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}: {'; '.join(r[1] for r in results)}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
