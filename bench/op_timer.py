# PyTorch's side of bench/op_timer.lua: CUDA events around `iters` calls after 3 warm-up
# calls, median of `reps` repeats, printed as "op <name> <us> us".
import sys, torch

def make_timer(iters, reps):
    def time(name, fn):
        for _ in range(3): fn()
        t = []
        for _ in range(reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(iters): fn()
            e1.record(); e1.synchronize()
            t.append(e0.elapsed_time(e1) * 1000 / iters)
        t.sort()
        print(f"op {name:<32} {t[(reps + 1) // 2 - 1]:9.2f} us")
    return time

def timer_from_argv(default_iters, default_reps=7):
    """The timer for a benchmark run as `python3 script.py [iters] [reps]`."""
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else default_iters
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else default_reps
    return make_timer(iters, reps)
