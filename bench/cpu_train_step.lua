-- The documents' small models, one CPU training step each (forward, loss, zero_grad, backward,
-- SGD step with momentum) on fixed random batches: document 001's MLP (784->32->10, batch 128),
-- document 000's CNN (scripts/doc000_net.lua, batch 32 of 3x32x32, 101 classes) and document
-- 003's CIFAR CNN (scripts/doc003_net.lua, batch 4 as in PyTorch's tutorial and 128 as in the
-- document) and document 004's AlexNet (torchvision's, 10 classes, 227x227, batch 8). Prints "nnrepl <case> <batch> us <time>": the median over repeats of the mean
-- step of a run of steps, after a warm-up. bench/cpu_train_step.py is PyTorch's side;
-- bench/ratio_run.sh cpu_train_step NNREPL [threads] runs both and prints the ratios.
-- Usage: nnrepl bench/cpu_train_step.lua [threads] [repeats] [own | bf16]
-- (own: convolutions on nnrepl's own kernels instead of oneDNN, PyTorch's side ignores it; bf16: the
-- forward and loss under CPU autocast in bfloat16 on both sides, the cases named <case>_bf16)
local threads = tonumber(arg and arg[1])
local reps = tonumber(arg and arg[2]) or 7
if threads then torch.set_num_threads(threads) end
if arg and arg[3] == "own" then torch.backends.mkldnn.enabled = false end
local bf16 = arg and arg[3] == "bf16"
torch.manual_seed(0)

package.path = (debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or ".") .. "/../scripts/?.lua;" .. package.path
local nn = torch.nn
local clock = require("time").perf_counter

local function mlp()
  return nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
end

local function alexnet() return require("torchvision").models.alexnet({ num_classes = 10 }) end

local cases = {
  { "mlp_doc001", mlp, 128, { 1, 28, 28 }, 10, 0.1, 0 },
  { "cnn_doc000", require "doc000_net", 32, { 3, 32, 32 }, 101, 0.001, 0.9 },
  { "cnn_doc003", require "doc003_net", 4, { 3, 32, 32 }, 10, 0.001, 0.9 },
  { "cnn_doc003", require "doc003_net", 128, { 3, 32, 32 }, 10, 0.01, 0.9 },
  { "alexnet_doc004", alexnet, 8, { 3, 227, 227 }, 10, 1e-4, 0.9 },
}

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

for _, c in ipairs(cases) do
  local name, make, batch, shape, classes, lr, momentum = table.unpack(c)
  local model = make()
  local opt = torch.optim.SGD(model:parameters(), { lr = lr, momentum = momentum })
  local xs, ys = {}, {}
  for i = 1, 4 do
    xs[i] = torch.randn(batch, table.unpack(shape))
    ys[i] = torch.randint(0, classes, { batch })
  end
  local function step(i)
    local x, y = xs[i % 4 + 1], ys[i % 4 + 1]
    local loss
    if bf16 then
      local _ <close> = torch.autocast("cpu", { dtype = torch.bfloat16 })
      loss = nn.functional.cross_entropy(model(x), y)
    else
      loss = nn.functional.cross_entropy(model(x), y)
    end
    opt:zero_grad()
    loss:backward()
    opt:step()
  end
  -- steps per repeat: about 0.2 s of work
  local t0 = clock()
  local n = 0
  repeat
    step(n)
    n = n + 1
  until clock() - t0 > 0.2 and n >= 5
  local per = math.max(5, n)
  local times = {}
  for r = 1, reps do
    local w0 = clock()
    for i = 1, per do step(i) end
    times[r] = (clock() - w0) / per * 1e6
  end
  print(string.format("nnrepl %s%s %d us %.1f", name, bf16 and "_bf16" or "", batch, median(times)))
end
