"""PyTorch's half of the checkpoint / TensorBoard / argparse parity check.

  python3 tests/parity/io_parity.py phase1 DIR   after `io_dump.lua save DIR`: PyTorch loads
      nnrepl's AlexNet checkpoint (safetensors.torch.load_file + torchvision) and must
      give nnrepl's logits; writes its own AlexNet checkpoint and input for nnrepl;
      TensorBoard's EventAccumulator reads every scalar back; histograms compared with
      torch.utils.tensorboard's; argparse outputs compared with Python's argparse.
  python3 tests/parity/io_parity.py phase2 DIR   after `io_dump.lua load DIR`: nnrepl's
      logits from PyTorch's checkpoint must equal PyTorch's.
Prints one line per check ("ok ..." / "FAIL ...") and exits 1 on any failure.
"""
import contextlib
import io
import os
import sys

import torch

failures = 0


def report(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures += 1


def close(a, b, tol=1e-4):
    return a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol)


def phase1(d):
    import torchvision
    from safetensors.torch import load_file, save_file

    # nnrepl's AlexNet checkpoint into torchvision's AlexNet
    sd = load_file(f"{d}/alexnet_nnrepl.safetensors")
    model = torchvision.models.alexnet(num_classes=10).eval()
    ref = model.state_dict()
    report(list(sd.keys()) == list(ref.keys()) or sorted(sd) == sorted(ref), f"AlexNet keys match torchvision ({len(sd)})")
    report(all(sd[k].shape == ref[k].shape and sd[k].dtype == ref[k].dtype for k in ref), "shapes and dtypes match")
    missing = model.load_state_dict(sd, strict=True)
    report(not missing.missing_keys and not missing.unexpected_keys, "load_state_dict(strict=True)")
    data = load_file(f"{d}/io_nnrepl.safetensors")
    with torch.no_grad():
        logits = model(data["x"])
    diff = (logits - data["logits"]).abs().max().item()
    report(close(logits, data["logits"]), f"PyTorch logits from nnrepl's checkpoint equal nnrepl's (max diff {diff:.3g})")

    # a checkpoint with plain values: tensors under flattened names, skeleton in metadata
    from safetensors import safe_open
    with safe_open(f"{d}/ckpt_nnrepl.safetensors", "pt") as f:
        keys = list(f.keys())
        meta = f.metadata()
    report("model.features.0.weight" in keys and "optimizer.state.0.exp_avg" not in keys and meta.get("format") == "pt",
           f"nested checkpoint names ({len(keys)} tensors) and metadata {sorted(meta)}")

    # PyTorch's checkpoint and input for nnrepl (phase 2)
    torch.manual_seed(1)
    pt = torchvision.models.alexnet(num_classes=10).eval()
    x = torch.randn(2, 3, 224, 224)
    with torch.no_grad():
        y = pt(x)
    save_file(pt.state_dict(), f"{d}/alexnet_pt.safetensors", metadata={"format": "pt"})
    save_file({"x": x, "logits": y}, f"{d}/io_pt.safetensors")

    # event files through TensorBoard's reader
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError as e:
        report(False, f"tensorboard is not importable: {e}")
        EventAccumulator = None
    if EventAccumulator:
        want = {}
        for line in open(f"{d}/scalars.txt"):
            run, tag, step, value = line.rstrip("\n").split("\t")
            want.setdefault((run, tag), []).append((int(step), float(value)))
        total = bad = 0
        for (run, tag), values in sorted(want.items()):
            acc = EventAccumulator(f"{d}/{run}", size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
            acc.Reload()
            got = [(e.step, e.value) for e in acc.Scalars(tag)]
            total += len(values)
            ok = len(got) == len(values) and all(
                gs == ws and abs(gv - ws_v) <= 1e-6 * max(1.0, abs(ws_v)) for (gs, gv), (ws, ws_v) in zip(got, values))
            if not ok:
                bad += 1
                print(f"  {run} {tag}: got {got[:5]}... want {values[:5]}...")
        report(bad == 0, f"EventAccumulator read back all {total} scalars of {len(want)} series")
        acc = EventAccumulator(f"{d}/tb", size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0})
        acc.Reload()
        tags = acc.Tags()
        report(sorted(tags["histograms"]) == ["fc", "uniform10", "weights"], f"histogram tags {tags['histograms']}")
        report(sorted(tags["images"]) == ["image", "images"], f"image tags {tags['images']}")
        report("note/text_summary" in tags["tensors"], f"text tag {tags['tensors']}")
        im = acc.Images("image")[0]
        report((im.height, im.width) == (16, 24) and im.encoded_image_string[:4] == b"\x89PNG", "image size and PNG bytes")
        text = acc.Tensors("note/text_summary")[0].tensor_proto.string_val[0]
        report(text == b"hello from nnrepl", f"text {text!r}")
        # histograms against torch.utils.tensorboard's own
        from torch.utils.tensorboard import SummaryWriter
        hv = load_file(f"{d}/histo_values.safetensors")
        w = SummaryWriter(f"{d}/tb_torch")
        w.add_histogram("weights", hv["h"], 1)
        w.add_histogram("uniform10", hv["h2"], 2, bins=10)
        w.close()
        ref_acc = EventAccumulator(f"{d}/tb_torch", size_guidance={"histograms": 0})
        ref_acc.Reload()
        for tag in ("weights", "uniform10"):
            a = acc.Histograms(tag)[0].histogram_value
            b = ref_acc.Histograms(tag)[0].histogram_value
            same = (list(a.bucket_limit) == list(b.bucket_limit) and list(a.bucket) == list(b.bucket)
                    and a.num == b.num and abs(a.sum - b.sum) < 1e-6 * max(1, abs(b.sum))
                    and abs(a.sum_squares - b.sum_squares) < 1e-6 * b.sum_squares and a.min == b.min and a.max == b.max)
            if not same:
                print(f"  ours: {a.min} {a.max} {a.num} {a.sum} {a.sum_squares} {list(a.bucket_limit)[:6]} {list(a.bucket)[:6]}")
                print(f"  torch: {b.min} {b.max} {b.num} {b.sum} {b.sum_squares} {list(b.bucket_limit)[:6]} {list(b.bucket)[:6]}")
            report(same, f"histogram '{tag}' equals torch.utils.tensorboard's ({len(a.bucket)} buckets)")

    # argparse: the same parsers and command lines in Python
    argparse_parity(d)


def argparse_parity(d):
    import argparse
    os.environ["COLUMNS"] = "80"

    def doc_parser():
        parser = argparse.ArgumentParser(prog="train.lua", description="CV Train")
        parser.add_argument("--dataset", type=str, default="CIFAR10", help="CIFAR10")
        parser.add_argument("--dataset_root", type=str, default="../data", help="Dataset root directory path")
        parser.add_argument("--img_size", type=int, default=227, help="image size")
        parser.add_argument("--tensorboard", type=str, default=True, help="Use tensorboard for loss visualization")
        parser.add_argument("--tensorboard_log", type=str, default="../tensorboard", help="tensorboard folder")
        parser.add_argument("--cuda", type=str, default=True, help="if is cuda available")
        parser.add_argument("--batch_size", type=int, default=64, help="batch size")
        parser.add_argument("--lr", type=float, default=1e-4, help="learning rate")
        parser.add_argument("--epochs", type=int, default=20, help="Number of epochs to train.")
        parser.add_argument("--checkpoint", type=str, default="../checkpoint", help="Save .pth fold")
        return parser

    def small_parser():
        p = argparse.ArgumentParser(prog="small.lua", description="A small parser.", epilog="Done.")
        p.add_argument("--lr", type=float, default=1e-4, help="learning rate (default: %(default)s)")
        p.add_argument("-e", "--epochs", type=int, default=20, help="Number of epochs to train.")
        p.add_argument("--amp", action="store_true", help="use mixed precision")
        p.add_argument("--mode", choices=["train", "eval"], default="train")
        p.add_argument("--gpus", nargs="+", type=int, metavar="ID",
                       help="GPU ids to use for the data parallel replicas of the model, in order")
        p.add_argument("-v", "--verbose", action="count", default=0)
        g = p.add_argument_group("data", "Where the data lives.")
        g.add_argument("--root", default="../data", help="dataset root")
        p.add_argument("data", nargs="?", default=".", help="dataset root")
        p.add_argument("out", help="output file")
        return p

    builders = {"doc": doc_parser, "small": small_parser}
    ours = open(f"{d}/argparse_nnrepl.txt").read().split("=== ")[1:]
    same = 0
    for block in ours:
        header, _, rest = block.partition("\n")
        name, _, argline = header.partition(" ")
        argv = argline.split(" ") if argline else []
        buf = io.StringIO()
        status = "ok"
        shown = ""
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            try:
                ns = builders[name]().parse_args(argv)
                shown = repr(ns)
            except SystemExit as e:
                status = str(e.code)
        theirs = f"status {status}\n{buf.getvalue()}{shown}\n"
        if theirs == rest:
            same += 1
        else:
            print(f"  argparse '{header}' differs:\n--- python\n{theirs}--- nnrepl\n{rest}")
    report(same == len(ours), f"argparse: {same} of {len(ours)} cases identical to Python {sys.version.split()[0]}")


def phase2(d):
    from safetensors.torch import load_file
    ours = load_file(f"{d}/logits_nnrepl_from_pt.safetensors")["logits"]
    ref = load_file(f"{d}/io_pt.safetensors")["logits"]
    diff = (ours - ref).abs().max().item()
    report(close(ours, ref), f"nnrepl logits from PyTorch's checkpoint equal PyTorch's (max diff {diff:.3g})")


if __name__ == "__main__":
    {"phase1": phase1, "phase2": phase2}[sys.argv[1]](sys.argv[2])
    sys.exit(1 if failures else 0)
