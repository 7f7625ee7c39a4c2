-- The newer modules (LSTM, GRU, MultiheadAttention, TransformerEncoder, Transformer, Conv1d,
-- ConvTranspose2d, PReLU) on the GPU with the same deterministic weights and inputs as bench/module_parity.py: prints the
-- output's and every gradient's sum and absolute sum, keyed, for bench/module_parity.sh to compare.
--   nnrepl bench/module_parity.lua [device]
local device = arg[1] or "cuda"
torch.backends.cuda.matmul.allow_tf32 = false
torch.backends.cudnn.allow_tf32 = false

local function fill(t, off)
  local v = (torch.arange(t:numel(), { dtype = torch.float64 }) * 0.37 + off):sin() * 0.3
  local _ <close> = torch.no_grad()
  t:copy_(v:view(t:size()))
end

local function report(name, m, out)
  out:pow(2):sum():backward()
  print(string.format("%s.out %.9e %.9e", name, out:sum():item(), out:abs():sum():item()))
  for _, np in ipairs(m:named_parameters()) do
    local g = np[2].grad
    print(string.format("%s.%s %.9e %.9e", name, np[1], g:sum():item(), g:abs():sum():item()))
  end
end

local function prepared(m)
  m = m:to(device)
  for i, p in ipairs(m:parameters()) do fill(p, i) end
  return m
end

local function input(off, ...)
  local t = torch.empty(...)
  fill(t, off)
  return t:to(device)
end

local lstm = prepared(nn.LSTM(16, 32, { num_layers = 2, bidirectional = true }))
report("lstm", lstm, (lstm(input(0.5, 7, 4, 16))))
local gru = prepared(nn.GRU(16, 24, { batch_first = true }))
report("gru", gru, (gru(input(0.7, 4, 7, 16))))
local mha = prepared(nn.MultiheadAttention(32, 4))
local q, kv = input(0.1, 5, 3, 32), input(0.2, 9, 3, 32)
local pad = torch.zeros(3, 9, { dtype = torch.bool })
pad[1][8] = true
report("mha", mha, (mha(q, kv, kv, { key_padding_mask = pad:to(device) })))
local enc = prepared(nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, { dim_feedforward = 64, dropout = 0.0 }), 2))
report("encoder", enc, enc(input(0.3, 6, 2, 32), { mask = nn.Transformer.generate_square_subsequent_mask(6):to(device) }))
local tr = prepared(nn.Transformer({ d_model = 32, nhead = 4, num_encoder_layers = 1, num_decoder_layers = 1,
  dim_feedforward = 48, dropout = 0.0, batch_first = true, norm_first = true }))
report("transformer", tr, tr(input(0.4, 2, 6, 32), input(0.6, 2, 5, 32)))
local gen = prepared(nn.Sequential(nn.ConvTranspose2d(16, 8, 4, { stride = 2, padding = 1 }), nn.PReLU(8),
  nn.ConvTranspose2d(8, 3, 3, { stride = 2, padding = 1, output_padding = 1 })))
report("convt", gen, gen(input(0.8, 2, 16, 5, 5)))
local c1 = prepared(nn.Sequential(nn.Conv1d(6, 8, 5, { padding = 2 }), nn.Mish(), nn.MaxPool1d(2), nn.Conv1d(8, 4, 3, { stride = 2 })))
report("conv1d", c1, c1(input(0.9, 3, 6, 20)))
local up = prepared(nn.Sequential(nn.Upsample({ scale_factor = 2, mode = "bilinear" }), nn.Conv2d(4, 4, 3, { padding = 1 }),
  nn.Upsample({ size = { 13, 17 }, mode = "nearest" }), nn.Conv2d(4, 8, 3), nn.PixelShuffle(2),
  nn.UpsamplingBilinear2d({ scale_factor = 1.5 })))
report("upsample", up, up(input(1.1, 2, 4, 5, 6)))
local Stn = nn.Module:extend("Stn")
function Stn:__init() self.loc = nn.Linear(2 * 6 * 7, 6); self.conv = nn.Conv2d(2, 3, 3) end
function Stn:forward(x)
  local theta = self.loc(x:reshape(x:size(0), -1)):view(-1, 2, 3) * 0.3 + torch.tensor({ { 1.0, 0.0, 0.0 }, { 0.0, 1.0, 0.0 } }):to(x.device)
  return self.conv(F.grid_sample(x, F.affine_grid(theta, x:size(), false), { align_corners = false }))
end
local stn = prepared(Stn())
report("stn", stn, stn(input(1.3, 3, 2, 6, 7)))
