# PyTorch's side of bench/zoo_step.lua (same arguments, same output lines).
import statistics, sys
import torch, torch.nn.functional as F, torchvision

precision, B = sys.argv[1], int(sys.argv[2])
steps, reps, warmup = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
for name in sys.argv[6].split(","):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().cuda()
    x = torch.rand(B, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (B,), device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda") if precision == "amp" else None

    def step():
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16, enabled=scaler is not None):
            out = model(x)
            if isinstance(out, tuple) or hasattr(out, "logits"):
                out = out[0]
            loss = F.cross_entropy(out, y)
        if scaler:
            scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
        else:
            loss.backward(); opt.step()
        return loss

    first = step().item()
    for _ in range(warmup - 1):
        step()
    times = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(steps):
            last = step()
        e1.record(); e1.synchronize()
        times.append(e0.elapsed_time(e1) / steps)
    print(f"model {name} precision {precision} batch {B} step_ms {statistics.median(times):.3f} loss {first:.4f}->{last.item():.4f}")
    del model, opt, x, y
    torch.cuda.empty_cache()
