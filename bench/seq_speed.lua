-- Training-step time of the sequence models written in Lua (bench/seq_speed.py is PyTorch's
-- side): a TransformerEncoder (4 layers, d_model 512, 8 heads, ff 2048, sequence 128, batch 32)
-- an LSTM (2 layers, 512 hidden, sequence 64, batch 64) and a GRU (the same, both ways, dropout
-- 0.1 between its layers), Adam, float32 (TF32 off) and under
-- autocast. Per step: the mean over `steps` steps between two synchronisations, median of
-- `reps` repeats after a warm-up. Prints "model precision step_ms X".
local train_steps = dofile((arg[0]:match("^(.*)/") or ".") .. "/train_step.lua")
local steps, reps, warmup = 10, 5, 3
torch.backends.cuda.matmul.allow_tf32 = false
torch.backends.cudnn.allow_tf32 = false
local dev = "cuda"

local function bench(name, model, make_loss)
  for _, precision in ipairs({ "fp32", "amp" }) do
    local opt = torch.optim.Adam(model:parameters(), { lr = 1e-4 })
    local scaler = precision == "amp" and torch.amp.GradScaler("cuda") or nil
    local step = train_steps.loss(make_loss, opt, scaler and torch.float16 or nil, scaler)
    for _ = 1, warmup do step() end
    print(string.format("%s %s step_ms %.3f", name, precision, train_steps.median(train_steps.timed(step, steps, reps))))
  end
end

torch.manual_seed(0)
local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(512, 8, { dim_feedforward = 2048, dropout = 0.1, batch_first = true }), 4):to(dev)
local src = torch.randn(32, 128, 512):to(dev)
bench("transformer", enc, function() return enc(src):pow(2):mean() end)

local lstm = nn.LSTM(256, 512, { num_layers = 2, batch_first = true }):to(dev)
local seq = torch.randn(64, 64, 256):to(dev)
bench("lstm", lstm, function() local out = lstm(seq); return out:pow(2):mean() end)

local gru = nn.GRU(256, 512, { num_layers = 2, batch_first = true, bidirectional = true, dropout = 0.1 }):to(dev)
bench("gru", gru, function() local out = gru(seq); return out:pow(2):mean() end)
