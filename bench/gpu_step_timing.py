# PyTorch's side of bench/gpu_step_timing.lua: time a training step with CUDA events (median
# and min over reps repeats of `steps` steps), eagerly and captured in a CUDA graph.
import statistics, time, torch


def timed(fn, steps, reps):
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for i in range(steps): fn(i)
        e1.record(); e1.synchronize()
        times.append(e0.elapsed_time(e1) / steps)
    return statistics.median(times), min(times)



def wall_timed(fn, steps, reps):
    """the same on the CPU: wall-clock time (time.perf_counter)"""
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for i in range(steps): fn(i)
        times.append((time.perf_counter() - t0) * 1e3 / steps)
    return statistics.median(times), min(times)

def report(what, forward_loss, opt, xs, ys, steps, reps, warmup):
    """forward_loss(x, y) -> loss; prints '<what> step: ...' and '<what> graph step: ...'."""
    def step(i):
        k = i % len(xs)
        loss = forward_loss(xs[k], ys[k])
        opt.zero_grad(); loss.backward(); opt.step()
    for i in range(warmup): step(i)
    torch.cuda.synchronize()
    print("%s step: median %.4f ms (min %.4f)" % ((what,) + timed(step, steps, reps)))
    # the graph: warm-up on a side stream, as PyTorch's docs do
    sx, sy = xs[0].clone(), ys[0].clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            forward_loss(sx, sy).backward(); opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        static_loss = forward_loss(sx, sy)
        static_loss.backward()
        opt.step()

    def graph_step(i):
        k = i % len(xs)
        sx.copy_(xs[k]); sy.copy_(ys[k])
        g.replay()
    for i in range(warmup): graph_step(i)
    med, mn = timed(graph_step, steps, reps)
    print(f"{what} graph step: median {med:.4f} ms (min {mn:.4f}), last loss {static_loss.item():.4f}")
