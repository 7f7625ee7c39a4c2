-- Where a transformer training step's GPU time goes (bench/seq_speed.lua's TransformerEncoder,
-- Adam, TF32 off): 20 steps after 10 of warm-up under torch.profiler, the ops by GPU time
-- (bench/seq_profile.py is PyTorch's side, by kernel).
--   nnrepl bench/seq_profile.lua [fp32|amp]
local time = require "time"
local mode = arg[1] or "fp32"
torch.backends.cuda.matmul.allow_tf32 = false
torch.backends.cudnn.allow_tf32 = false
torch.manual_seed(0)
local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, { dim_feedforward = 2048, dropout = 0.1, batch_first = true }), 4):to("cuda")
local src = torch.randn(32, 128, 512):to("cuda")
local opt = torch.optim.Adam(enc:parameters(), { lr = 1e-4 })
local scaler = mode == "amp" and torch.amp.GradScaler("cuda") or nil
local step = dofile((arg[0]:match("^(.*)/") or ".") .. "/train_step.lua").loss(function() return enc(src):pow(2):mean() end, opt,
  scaler and torch.float16 or nil, scaler)
for _ = 1, 10 do step() end
torch.cuda.synchronize()
local prof = torch.profiler.profile({ activities = { "CPU", "CUDA" } })
local t0 = time.perf_counter()
for _ = 1, 20 do step() end
torch.cuda.synchronize()
local wall = (time.perf_counter() - t0) / 20 * 1e3
prof:stop()
print(string.format("transformer %s: %.3f ms a step (wall, profiled)", mode, wall))
print(prof:key_averages():table({ sort_by = "self_cuda_time_total", row_limit = 30 }))
