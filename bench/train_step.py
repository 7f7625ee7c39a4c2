# One classifier training step for the benchmarks (bench/train_step.lua's twin).
import torch
import torch.nn.functional as F


def make_step(model, opt, x, y, dtype=None, scaler=None):
    def step():
        opt.zero_grad()
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            loss = F.cross_entropy(model(x), y)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss

    return step
