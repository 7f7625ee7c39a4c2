-- pytorch/examples time_sequence_prediction/generate_sine_wave.py in Lua: 100 sine waves of
-- 1000 points (period 2*pi*20), each shifted by a random integer phase in [-80, 80), written
-- to traindata.pt in the current folder for train.lua.
--
--   build/nnrepl scripts/examples/time_sequence_prediction/generate_sine_wave.lua
--
-- Differences from the original: the phases come from torch.manual_seed(2) and torch.randint
-- (the original draws them with NumPy's generator, seed 2, so the waves' phases differ), and
-- traindata.pt holds a float64 torch tensor [100, 1000] saved with torch.save (the original
-- pickles a NumPy array); torch.load gives it back as a tensor.
local torch = require "torch"

torch.manual_seed(2)

local T = 20
local L = 1000
local N = 100

local x = torch.arange(L):unsqueeze(0) + torch.randint(-4 * T, 4 * T, { N }):view(N, 1)
local data = torch.sin(x:double() / 1.0 / T)
torch.save(data, "traindata.pt")
