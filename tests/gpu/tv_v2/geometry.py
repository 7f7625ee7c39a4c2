"""Recomputes the calls of tests/gpu/tv_v2/geometry.lua with torchvision.transforms.v2.functional on
tv_tensors and compares: one line per call, PASS or FAIL, then a summary.
Usage: python3 tests/gpu/tv_v2/geometry.py OUTDIR [DEVICE]
Boxes and keypoints pass within 1e-3 and with the same canvas_size; masks must be equal; uint8
images may differ by 1 (rounding) and in at most 1% of the values by more (interpolation ties).
Exit status 1 when a call fails."""
import json
import os
import sys

import torch
import torchvision
import torchvision.transforms.v2.functional as F
from torchvision.transforms import InterpolationMode
from torchvision import tv_tensors

d = sys.argv[1]
dev = sys.argv[2] if len(sys.argv) > 2 else ("cuda" if torch.cuda.is_available() else "cpu")


def tensor(v):
    dtype = getattr(torch, v["dtype"])
    wide = torch.float64 if dtype.is_floating_point else torch.int64
    return torch.tensor(v["t"], dtype=wide).to(dtype).reshape(v["shape"]).to(dev)


def decode(v):
    if isinstance(v, dict):
        return tensor(v) if "t" in v else {k: decode(x) for k, x in v.items()}
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


def wrap(kind, t, meta):
    if kind == "image":
        return tv_tensors.Image(t)
    if kind == "mask":
        return tv_tensors.Mask(t)
    if kind.startswith("boxes"):
        return tv_tensors.BoundingBoxes(t, format=meta["format"], canvas_size=tuple(meta["canvas"]))
    return tv_tensors.KeyPoints(t, canvas_size=tuple(meta["canvas"]))


def compare(kind, ours, ref):
    if ours.dtype != ref.dtype:
        return False, f"dtype {ours.dtype} vs {ref.dtype}"
    if ours.shape != ref.shape:
        return False, f"shape {list(ours.shape)} vs {list(ref.shape)}"
    if ref.numel() == 0:
        return True, "empty"
    diff = (ours.double() - ref.double()).abs()
    m = float(diff.max())
    if kind == "image":
        bad = int((diff > 1).sum())
        return bad <= 0.01 * ref.numel(), f"max diff {m:.3g}, {bad}/{ref.numel()} differ by more than 1"
    if kind == "mask":
        return m == 0, f"max diff {m:.3g}"
    return m <= 1e-3 * max(1.0, float(ref.double().abs().max())), f"max diff {m:.3g}"


print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, device {dev}")
passed = failed = 0
with open(os.path.join(d, "geometry.jsonl")) as f:
    for line in f:
        c = json.loads(line)
        name = f"{c['name']} [{c['kind']}]"
        inpt = wrap(c["kind"], tensor(c["inpt"]), c["meta"])
        try:
            kwargs = decode(c["kwargs"]) or {}  # Lua's {} reads as []
            args = decode(c["args"])
            if isinstance(kwargs.get("interpolation"), str):  # nnrepl takes the mode's name
                kwargs["interpolation"] = InterpolationMode(kwargs["interpolation"])
            args = [InterpolationMode(a) if isinstance(a, str) and a in ("nearest", "bilinear", "bicubic") else a for a in args]
            ref = getattr(F, c["fn"])(inpt, *args, **kwargs)
        except Exception as e:
            print(f"FAIL {name}: torchvision raised {type(e).__name__}: {e}")
            failed += 1
            continue
        ok, detail = compare(c["kind"], tensor(c["out"]), ref.as_subclass(torch.Tensor))
        if hasattr(ref, "canvas_size"):
            same = list(ref.canvas_size) == list(c["canvas"] or [])
            ok, detail = ok and same, detail + ("" if same else f"; canvas {c['canvas']} vs {list(ref.canvas_size)}")
        passed, failed = passed + ok, failed + (not ok)
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
