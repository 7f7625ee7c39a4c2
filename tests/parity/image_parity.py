"""Recomputes the cases of tests/parity/image_dump.lua with Pillow and torchvision
and compares with nnrepl's outputs. Prints one line per case and a summary per op.
Usage: python3 tests/parity/image_parity.py OUTDIR"""
import collections
import os
import sys
import tempfile

import numpy as np
import torch
import torchvision
import torchvision.transforms.functional as F
from PIL import Image
from torchvision.io import ImageReadMode, decode_jpeg, read_file, read_image

d = sys.argv[1]


def load(spec):
    name, dt, shape = spec.split(":")
    shape = [int(s) for s in shape.split("x")]
    a = np.fromfile(os.path.join(d, name + ".bin"), dtype=np.uint8 if dt == "uint8" else "<f4")
    return a.reshape(shape)


MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def pil(a):
    c = a.shape[2]
    return Image.fromarray(a[:, :, 0] if c == 1 else a, MODES[c])


def arr(im):
    a = np.array(im)
    return a[:, :, None] if a.ndim == 2 else a


def compare(ours, ref):
    ours = np.asarray(ours, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ours.shape != ref.shape:
        return f"SHAPE {ours.shape} vs {ref.shape}", False, float("inf")
    diff = np.abs(ours - ref)
    m = float(diff.max()) if diff.size else 0.0
    n = int((diff > 0).sum())
    return ("exact" if m == 0 else f"max diff {m:.3g}, {n}/{diff.size} differ"), m == 0, m


summary = collections.defaultdict(lambda: [0, 0, 0.0])


def floats(v):
    return None if v == "none" else [float(x) for x in v.split(",")]


def points(v):
    return [[int(c) for c in p.split(":")] for p in v.split(",")]


def aug_case(op, f):
    """The augmentations (tv_augment): torchvision's functional on a PIL image or a tensor."""
    a = load(f["input"])
    pil_in = f["kind"] == "pil"
    img = pil(a) if pil_in else torch.from_numpy(a.copy())
    interp = F.InterpolationMode(f["interp"]) if "interp" in f else None
    if op == "aug_point":
        arg = f["arg"]
        fn = getattr(F, f["fn"])
        ref = fn(img) if arg == "none" else fn(img, int(arg) if f["fn"] == "posterize" else float(arg))
        name = f"{f['fn']} {arg}"
    elif op == "aug_sharpness":
        ref, name = F.adjust_sharpness(img, float(f["factor"])), f["factor"]
    elif op == "aug_blur":
        k = [int(v) for v in f["k"].split(",")]
        ref, name = F.gaussian_blur(img, k, floats(f["sigma"])), f"k={k} sigma={f['sigma']}"
    elif op == "aug_rotate":
        center = None if f["center"] == "none" else [int(v) for v in f["center"].split(",")]
        ref = F.rotate(img, float(f["angle"]), interp, f["expand"] == "true", center, floats(f["fill"]))
        name = f"{f['angle']} {f['interp']} expand={f['expand']} center={f['center']} fill={f['fill']}"
    elif op == "aug_affine":
        translate = [int(v) for v in f["translate"].split(",")]
        ref = F.affine(img, float(f["angle"]), translate, float(f["scale"]), floats(f["shear"]), interp, floats(f["fill"]))
        name = f"{f['angle']} {f['translate']} {f['scale']} {f['shear']} {f['interp']} fill={f['fill']}"
    elif op == "aug_perspective":
        ref = F.perspective(img, points(f["startpoints"]), points(f["endpoints"]), interp)
        name = f["interp"]
    elif op == "aug_elastic":
        disp = torch.from_numpy(load(f["displacement"]).copy())
        ref, name = F.elastic_transform(img, disp, interp), f["interp"]
    elif op == "aug_erase":
        v = torch.from_numpy(load(f["value"]).copy())
        ref, name = F.erase(img, int(f["i"]), int(f["j"]), int(f["h"]), int(f["w"]), v), "region"
    else:
        print("unknown op", op)
        return
    ref = arr(ref) if pil_in else ref.numpy()
    tag = "pil" if pil_in else str(a.dtype)
    report(f"{op}_{tag}", f"{name} {a.shape}", load(f["output"]), ref)



def report(op, name, ours, ref):
    text, exact, m = compare(ours, ref)
    s = summary[op]
    s[0] += 1
    s[1] += exact
    s[2] = max(s[2], m)
    print(f"{op:20s} {name:50s} {text}")


for line in open(os.path.join(d, "manifest.txt")):
    f = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t"))
    op = f["op"]
    if op == "pil_resize":
        a = load(f["input"])
        im = pil(a).resize((int(f["w"]), int(f["h"])), getattr(Image.Resampling, f["interp"].upper()))
        report(op, f"{f['mode']} {a.shape[:2]} -> {f['h']}x{f['w']} {f['interp']}", load(f["output"]), arr(im))
    elif op == "tensor_resize":
        x = torch.from_numpy(load(f["input"]).copy())
        aa = f["antialias"] == "true"
        mode = F.InterpolationMode(f["interp"])
        ref = F.resize(x, [int(f["h"]), int(f["w"])], interpolation=mode, antialias=aa)
        report(f"{op}_{f['interp']}_{x.dtype}".replace("torch.", ""), f"{tuple(x.shape)} -> {f['h']}x{f['w']} aa={aa}", load(f["output"]), ref.numpy())
    elif op == "pil_adjust":
        im = pil(load(f["input"]))
        ref = getattr(F, "adjust_" + f["adjust"])(im, float(f["factor"]))
        report(op, f"{f['adjust']} {f['factor']}", load(f["output"]), arr(ref))
    elif op == "tensor_adjust":
        x = torch.from_numpy(load(f["input"]).copy())
        ref = getattr(F, "adjust_" + f["adjust"])(x, float(f["factor"]))
        report(f"{op}_{x.dtype}".replace("torch.", ""), f"{f['adjust']} {f['factor']}", load(f["output"]), ref.numpy())
    elif op == "pil_grayscale":
        report(op, "Grayscale(3)", load(f["output"]), arr(F.to_grayscale(pil(load(f["input"])), 3)))
    elif op == "tensor_grayscale":
        x = torch.from_numpy(load(f["input"]).copy())
        report(op, str(x.dtype), load(f["output"]), F.rgb_to_grayscale(x, 1).numpy())
    elif op == "convert":
        report(op, f"{f['from']} -> {f['to']}", load(f["output"]), arr(pil(load(f["input"])).convert(f["to"])))
    elif op == "to_tensor":
        report(op, "PIL RGB", load(f["output"]), F.to_tensor(pil(load(f["input"]))).numpy())
    elif op == "normalize":
        x = torch.from_numpy(load(f["input"]).copy())
        mean = [float(v) for v in f["mean"].split(",")]
        std = [float(v) for v in f["std"].split(",")]
        report(op, "document 000's mean/std", load(f["output"]), F.normalize(x, mean, std).numpy())
    elif op == "pil_center_crop":
        report(op, f"{f['h']}x{f['w']}", load(f["output"]), arr(F.center_crop(pil(load(f["input"])), [int(f["h"]), int(f["w"])])))
    elif op == "tensor_center_crop":
        x = torch.from_numpy(load(f["input"]).copy())
        report(op, f"{f['h']}x{f['w']}", load(f["output"]), F.center_crop(x, [int(f["h"]), int(f["w"])]).numpy())
    elif op == "pil_pad":
        pad = [int(v) for v in f["padding"].split(",")]
        ref = F.pad(pil(load(f["input"])), pad, fill=int(f["fill"]), padding_mode=f["mode"])
        report(op, f["mode"], load(f["output"]), arr(ref))
    elif op == "tensor_pad":
        x = torch.from_numpy(load(f["input"]).copy())
        pad = [int(v) for v in f["padding"].split(",")]
        report(op, f["mode"], load(f["output"]), F.pad(x, pad, fill=int(f["fill"]), padding_mode=f["mode"]).numpy())
    elif op == "jpeg":
        path = os.path.join(d, f["file"])
        ours = load(f["output"])
        report("jpeg_vs_pil", f["file"], ours, arr(Image.open(path).convert("RGB")))
        report("jpeg_vs_torchvision", f["file"], ours, decode_jpeg(read_file(path)).permute(1, 2, 0).numpy())
        report("jpeg_gray_vs_tv", f["file"], load(f["gray"]), read_image(path, ImageReadMode.GRAY).numpy())
    elif op == "png":
        report("png_read_by_pil", f["file"], load(f["output"]), arr(Image.open(os.path.join(d, f["file"]))))
    elif op == "save_image":
        x = torch.from_numpy(load(f["input"]).copy())
        with tempfile.TemporaryDirectory() as tmp:
            p = os.path.join(tmp, "ref.png")
            torchvision.utils.save_image(x, p, nrow=int(f["nrow"]), padding=int(f["padding"]),
                                         normalize=f.get("normalize") == "true")
            report(op, f["file"], arr(Image.open(os.path.join(d, f["file"]))), arr(Image.open(p)))
    elif op.startswith("aug_"):
        aug_case(op, f)
    else:
        print("unknown op", op)

print()
print(f"torch {torch.__version__}, torchvision {torchvision.__version__}, Pillow {Image.__version__}")
for op, (n, exact, m) in summary.items():
    print(f"SUMMARY {op:28s} {exact}/{n} exact, max diff {m:.3g}")
