# PyTorch's side of bench/seq_speed.lua: the same models, sizes, optimizer and timing.
import torch
import torch.nn as nn

from train_step import make_loss_step, timed

steps, reps, warmup = 10, 5, 3
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def bench(name, model, make_loss):
    for precision in ("fp32", "amp"):
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        scaler = torch.amp.GradScaler("cuda") if precision == "amp" else None
        step = make_loss_step(make_loss, opt, torch.float16 if scaler else None, scaler)
        for _ in range(warmup):
            step()
        times = sorted(timed(step, steps, reps))
        print(f"{name} {precision} step_ms {times[(reps + 1) // 2 - 1]:.3f}")


torch.manual_seed(0)
enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, dim_feedforward=2048, dropout=0.1, batch_first=True), 4,
                            enable_nested_tensor=False).to(dev)
src = torch.randn(32, 128, 512).to(dev)
bench("transformer", enc, lambda: enc(src).pow(2).mean())
lstm = nn.LSTM(256, 512, num_layers=2, batch_first=True).to(dev)
seq = torch.randn(64, 64, 256).to(dev)
bench("lstm", lstm, lambda: lstm(seq)[0].pow(2).mean())

gru = nn.GRU(256, 512, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1).to(dev)
bench("gru", gru, lambda: gru(seq)[0].pow(2).mean())
