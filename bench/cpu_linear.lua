-- One Linear layer's forward and backward on the CPU (three matrix products and the bias's sum):
-- AlexNet's classifier layers (document 004) at batch 8 and 64, document 001's MLP layer at batch
-- 128, and a square 1024. Prints "nnrepl linear_<in>x<out> <batch> us <time>": the median over
-- repeats of the mean of a run of calls, after a warm-up. bench/cpu_linear.py is PyTorch's side;
-- bench/ratio_run.sh cpu_linear NNREPL [threads] runs both and prints the ratios.
-- Usage: nnrepl bench/cpu_linear.lua [threads] [repeats] [own]
-- (own: products on OpenBLAS instead of oneDNN, torch.backends.mkldnn off; PyTorch ignores it)
local threads = tonumber(arg and arg[1])
local reps = tonumber(arg and arg[2]) or 7
if threads then torch.set_num_threads(threads) end
if arg and arg[3] == "own" then torch.backends.mkldnn.enabled = false end
torch.manual_seed(0)
local clock = require("time").perf_counter

local cases = { { 9216, 4096, 8 }, { 4096, 4096, 8 }, { 4096, 10, 8 }, { 9216, 4096, 64 }, { 784, 32, 128 }, { 1024, 1024, 1024 } }

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

for _, c in ipairs(cases) do
  local fin, fout, batch = table.unpack(c)
  local layer = torch.nn.Linear(fin, fout)
  local x = torch.randn(batch, fin):requires_grad_()
  local g = torch.randn(batch, fout)
  local function call()
    local y = layer(x)
    y:backward(g)
  end
  local t0 = clock()
  local n = 0
  repeat -- calls per repeat: about 0.1 s of work
    call()
    n = n + 1
  until clock() - t0 > 0.1 and n >= 3
  local times = {}
  for r = 1, reps do
    local t = clock()
    for _ = 1, n do call() end
    times[r] = (clock() - t) / n
  end
  print(string.format("nnrepl linear_%dx%d %d us %.1f", fin, fout, batch, median(times) * 1e6))
end
