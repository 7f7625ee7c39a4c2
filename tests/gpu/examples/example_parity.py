# What the example parity scripts (tests/gpu/examples/<example>.py) share: the command line
# (prepare DIR [--device cuda] / compare DIR), the result files and the one-line verdict.
#   example_parity.main(name, make_files, train)   make_files(d); train(d, device) -> (losses, model)
import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from parity import save_st, load_st, read_losses, loss_diff, update_diff, tf32_off  # noqa: E402,F401


def path(name, d, what):
    return os.path.join(d, f"{name}_{what}")


def weights_diff(w0, wa, wb):
    """update_diff over the weights; BatchNorm's step counts must agree exactly (inf if not): left
    in, they would swamp the weights' norm"""
    counts = [k for k in w0 if k.endswith("num_batches_tracked")]
    if any(not torch.equal(wa[k], wb[k]) for k in counts):
        return math.inf
    return update_diff({k: v for k, v in w0.items() if k not in counts}, wa, wb)


def compare(name, d, tol=1e-4, wtol=1e-3, init=None, lines_per_step=1):
    """parity <name>: max rel loss diff X over K steps, weights Y: PASS|FAIL. init: the initial
    weights (default DIR/<name>_init.safetensors); lines_per_step: loss lines a step writes"""
    ref = read_losses(path(name, d, "torch_losses.txt"))
    try:
        rel = loss_diff(read_losses(path(name, d, "nnrepl_losses.txt")), ref)
        w0 = init if init is not None else load_st(path(name, d, "init.safetensors"))
        upd = weights_diff(w0, load_st(path(name, d, "nnrepl_final.safetensors")), load_st(path(name, d, "torch_final.safetensors")))
    except (OSError, KeyError, RuntimeError):
        rel, upd = math.inf, math.inf
    ok = rel <= tol and upd <= wtol
    print(f"parity {name}: max rel loss diff {rel:.3g} over {len(ref) // lines_per_step} steps, weights {upd:.3g}: "
          f"{'PASS' if ok else 'FAIL'}")
    return ok


def main(name, make_files, train):
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["prepare", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    if args.what == "compare":
        sys.exit(0 if compare(name, args.dir) else 1)
    os.makedirs(args.dir, exist_ok=True)
    if args.device.startswith("cuda"):
        tf32_off()
    make_files(args.dir)
    losses, model = train(args.dir, torch.device(args.device))
    with open(path(name, args.dir, "torch_losses.txt"), "w") as f:
        f.write("".join(f"{v!r}\n" for v in losses))
    save_st(path(name, args.dir, "torch_final.safetensors"), model.state_dict())
    print(f"torch {name}: losses {losses[0]:.6f} -> {losses[-1]:.6f} over {len(losses)} steps")
