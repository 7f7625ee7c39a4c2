-- Loss parity with PyTorch over 20 training steps (issue 5), nnrepl's side of tests/gpu/parity.py
-- (read its header first: the models, optimizers and files are described there, and each line
-- here mirrors a line there).
--
--   nnrepl tests/gpu/parity.lua --dir DIR [--device cuda] [--steps N] [--models mlp,cnn,alexnet]
--                               [--generate]
--
-- Reads DIR/<model>_init.safetensors and DIR/<model>_data.safetensors (parity.py prepare),
-- trains, and writes DIR/<model>_nnrepl_losses.txt and DIR/<model>_nnrepl_final.safetensors for
-- parity.py compare. --steps defaults to the number of batches in the data file.
-- --generate (a CPU smoke test where PyTorch is absent): when a model's files are missing, make
-- them here from nnrepl's own init and random batches (N steps, default 20).
local models = require "torchvision".models

local args = { dir = nil, device = "cuda", steps = nil, models = "mlp,cnn,alexnet", generate = false }
do
  local argv, i = { ... }, 1
  while i <= #argv do
    local k = argv[i]
    if k == "--generate" then
      args.generate = true
    elseif ({ ["--dir"] = 1, ["--device"] = 1, ["--steps"] = 1, ["--models"] = 1 })[k] and argv[i + 1] then
      args[k:sub(3)] = argv[i + 1]
      i = i + 1
    else
      error("parity.lua: unknown argument " .. k, 0)
    end
    i = i + 1
  end
  if not args.dir then error("parity.lua: --dir DIR is required", 0) end
  args.steps = args.steps and math.tointeger(tonumber(args.steps))
end

local Mnistmodel = nn.Module:extend("Mnistmodel") -- document 001
function Mnistmodel:__init(input_size, hidden_size, out_size)
  self.linear1 = nn.Linear(input_size, hidden_size)
  self.linear2 = nn.Linear(hidden_size, out_size)
end

function Mnistmodel:forward(xb)
  xb = xb:view(xb:size(0), -1)
  local out = self.linear1(xb)
  local rel = F.relu(out)
  out = self.linear2(rel)
  return out
end

package.path = (debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or ".") .. "/../../scripts/?.lua;" .. package.path
local Net = require "doc000_net" -- document 000's Net, scripts/doc000_net.lua

-- name -> batch, input shape, classes (only --generate uses these)
local SPECS = {
  mlp = { 128, { 1, 28, 28 }, 10 },
  cnn = { 32, { 3, 32, 32 }, 101 },
  alexnet = { 16, { 3, 227, 227 }, 1000 },
}

local function build(name)
  if name == "mlp" then return Mnistmodel(784, 32, 10) end
  if name == "cnn" then return Net() end
  local model = models.alexnet()
  for _, m in ipairs(model:modules()) do
    if m:isinstance(nn.Dropout) then
      m:eval() -- dropout off: the same on both sides without a shared RNG
    end
  end
  return model
end

local function make_optimizer(name, params)
  if name == "mlp" then return optim.SGD(params, { lr = 0.5 }) end
  if name == "cnn" then return optim.SGD(params, { lr = 0.001, momentum = 0.9, dampening = 0.1 }) end
  return optim.AdamW(params, { lr = 1e-4 })
end

local function tf32_off()
  local b = torch.backends
  if not (b and b.cuda and b.cudnn) then
    error("parity.lua: torch.backends is missing: TF32 cannot be turned off", 0)
  end
  b.cuda.matmul.allow_tf32 = false
  b.cudnn.allow_tf32 = false
  print(string.format("tf32 off: matmul.allow_tf32 %s, cudnn.allow_tf32 %s", b.cuda.matmul.allow_tf32, b.cudnn.allow_tf32))
end

local function path(name, what) return args.dir .. "/" .. name .. "_" .. what end

local function exists(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

-- --generate: nnrepl's own files, for a run without PyTorch
local function make_files(name, steps)
  local batch, shape, classes = table.unpack(SPECS[name])
  torch.manual_seed(0)
  torch.save(build(name):state_dict(), path(name, "init.safetensors"))
  torch.manual_seed(1)
  local data = {}
  for i = 0, steps - 1 do
    data["x." .. i] = torch.randn(batch, table.unpack(shape))
    data["y." .. i] = torch.randint(0, classes, { batch })
  end
  torch.save(data, path(name, "data.safetensors"))
end

local function train(name, device)
  local model = build(name)
  model:load_state_dict(torch.load(path(name, "init.safetensors")))
  model:to(device)
  local data = torch.load(path(name, "data.safetensors"))
  local steps = args.steps
  if not steps then
    steps = 0
    while data["x." .. steps] do steps = steps + 1 end
  end
  local optimizer = make_optimizer(name, model:parameters())
  local criterion = nn.CrossEntropyLoss()
  local losses = {}
  for i = 0, steps - 1 do
    local x = data["x." .. i]:to(device)
    local y = data["y." .. i]:to(device)
    local out = model(x)
    local loss = criterion(out, y)
    optimizer:zero_grad()
    loss:backward()
    optimizer:step()
    losses[#losses + 1] = loss:item()
  end
  local f = assert(io.open(path(name, "nnrepl_losses.txt"), "w"))
  for _, v in ipairs(losses) do f:write(string.format("%.17g\n", v)) end
  f:close()
  torch.save(model:state_dict(), path(name, "nnrepl_final.safetensors"))
  print(string.format("nnrepl %s: losses %.6f -> %.6f over %d steps", name, losses[1], losses[#losses], steps))
end

local device = torch.device(args.device)
if device.type == "cuda" then tf32_off() end
for name in args.models:gmatch("[^,]+") do
  if not SPECS[name] then error("parity.lua: unknown model " .. name, 0) end
  if args.generate and not exists(path(name, "data.safetensors")) then make_files(name, args.steps or 20) end
  train(name, device)
  collectgarbage() -- the finished model's device memory goes before the next model
end
