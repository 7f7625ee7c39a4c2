# Parity of scripts/examples/time_sequence_prediction (the port of pytorch/examples
# time_sequence_prediction/train.py) with PyTorch, PyTorch's side.
#
#   python3 tests/gpu/examples/time_sequence_prediction.py prepare DIR [--device cuda] [--steps 3]
#   nnrepl  tests/gpu/examples/time_sequence_prediction.lua DIR [cuda|cpu]
#   python3 tests/gpu/examples/time_sequence_prediction.py compare DIR
#
# prepare: train.py's Sequence (seed 0, .double()) -> DIR/time_sequence_prediction_init.safetensors;
# 6 sine waves of 51 points at fixed phases -> _data.safetensors ("data"); then train.py's loop
# for K L-BFGS steps (lr 0.8, its closure) on data[3:], writing the loss of every closure call
# (K * 20 when no tolerance stops a step early) to _torch_losses.txt and the final weights to
# _torch_final.safetensors. float64 throughout, as the example (TF32 does not touch it).
# compare: PASS when both sides made the same number of closure calls, every loss agrees to
# 1e-9 relative and ||w_nnrepl - w_torch|| / ||w_torch - w_init|| <= 1e-9. K is 3 because
# L-BFGS amplifies rounding: initial weights moved by 1 ulp change nnrepl's losses by 4e-11
# after 3 steps but by 1e-5 after 5.
import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.optim as optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from parity import save_st, load_st  # noqa: E402

NAME = "time_sequence_prediction"


class Sequence(nn.Module):  # train.py's, with the states made on the input's device
    def __init__(self):
        super(Sequence, self).__init__()
        self.lstm1 = nn.LSTMCell(1, 51)
        self.lstm2 = nn.LSTMCell(51, 51)
        self.linear = nn.Linear(51, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), 51, dtype=torch.double, device=input.device)
        c_t = torch.zeros(input.size(0), 51, dtype=torch.double, device=input.device)
        h_t2 = torch.zeros(input.size(0), 51, dtype=torch.double, device=input.device)
        c_t2 = torch.zeros(input.size(0), 51, dtype=torch.double, device=input.device)

        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        outputs = torch.cat(outputs, dim=1)
        return outputs


def path(d, what):
    return os.path.join(d, f"{NAME}_{what}")


def make_data():  # the .lua's make_data
    phase = torch.tensor([[-37], [5], [61], [-70], [22], [48]])
    return torch.sin((torch.arange(51).unsqueeze(0) + phase).double() / 1.0 / 20)


def prepare(d, device, steps):
    torch.manual_seed(0)
    seq = Sequence()
    seq.double()
    save_st(path(d, "init.safetensors"), seq.state_dict())
    data = make_data()
    save_st(path(d, "data.safetensors"), {"data": data})
    seq.to(device)
    data = data.to(device)
    input = data[3:, :-1]
    target = data[3:, 1:]
    criterion = nn.MSELoss()
    optimizer = optim.LBFGS(seq.parameters(), lr=0.8)
    losses = []
    for i in range(steps):
        def closure():
            optimizer.zero_grad()
            out = seq(input)
            loss = criterion(out, target)
            losses.append(loss.item())
            loss.backward()
            return loss
        optimizer.step(closure)
    with open(path(d, "torch_losses.txt"), "w") as f:
        f.write("".join(f"{v!r}\n" for v in losses))
    save_st(path(d, "torch_final.safetensors"), seq.state_dict())
    print(f"torch {NAME}: {len(losses)} closure calls over {steps} steps, loss {losses[0]:.6g} -> {losses[-1]:.6g}")


def compare(d):
    def read(side):
        with open(path(d, f"{side}_losses.txt")) as f:
            return [float(line) for line in f if line.strip()]
    lt, ln = read("torch"), read("nnrepl")
    x = max((abs(a - b) / abs(a) for a, b in zip(lt, ln)), default=float("inf"))
    if len(lt) != len(ln):
        x = float("inf")
    w0 = load_st(path(d, "init.safetensors"))
    wt = load_st(path(d, "torch_final.safetensors"))
    wn = load_st(path(d, "nnrepl_final.safetensors"))
    num = sum(((wn[k] - wt[k]) ** 2).sum().item() for k in wt)
    den = sum(((wt[k] - w0[k]) ** 2).sum().item() for k in wt)
    y = (num / den) ** 0.5 if den > 0 else float("inf")
    ok = x <= 1e-9 and y <= 1e-9
    calls = f"{len(ln)} vs {len(lt)} closure calls" if len(lt) != len(ln) else f"{len(lt)} closure calls"
    print(f"parity {NAME}: max rel loss diff {x:.3g} over {calls}, weights {y:.3g}: {'PASS' if ok else 'FAIL'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["prepare", "compare"])
    ap.add_argument("dir")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--steps", type=int, default=3)
    a = ap.parse_args()
    if a.cmd == "prepare":
        prepare(a.dir, a.device, a.steps)
    else:
        compare(a.dir)


if __name__ == "__main__":
    main()
