# One training step for the benchmarks, and their timer (bench/train_step.lua's twin).
import time

import torch
import torch.nn.functional as F


def make_loss_step(loss_of, opt, dtype=None, scaler=None):
    """A step whose loss is loss_of() (under autocast when dtype is given)."""
    def step():
        opt.zero_grad()
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            loss = loss_of()
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    return step


def make_step(model, opt, x, y, dtype=None, scaler=None):
    """A classifier's step: cross entropy of model(x)."""
    return make_loss_step(lambda: F.cross_entropy(model(x), y), opt, dtype, scaler)


def timed(step, n, reps):
    """ms a step, per repeat: the mean of n steps between two synchronisations."""
    times = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) / n * 1e3)
    return times
