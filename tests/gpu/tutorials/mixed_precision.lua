-- Parity of scripts/tutorials/intermediate2/mixed_precision_tutorial.lua, nnrepl's side of
-- tests/gpu/tutorials/mixed_precision.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/mixed_precision.lua DIR [cuda|cpu] [--generate]
-- The tutorial's make_model is a function inside the script, so it is built here as the port
-- builds it; --generate makes the init and data files with nnrepl when they are missing.
local NAME, STEPS = "mixed_precision", 16
local batch_size, in_size, out_size, num_layers = 32, 64, 64, 3
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

local function make_model(in_size, out_size, num_layers) -- the port's
  local layers = {}
  for _ = 1, num_layers - 1 do
    layers[#layers + 1] = torch.nn.Linear(in_size, in_size)
    layers[#layers + 1] = torch.nn.ReLU()
  end
  layers[#layers + 1] = torch.nn.Linear(in_size, out_size)
  return torch.nn.Sequential(table.unpack(layers))
end

if run.generate then
  torch.manual_seed(0)
  torch.save(make_model(in_size, out_size, num_layers):state_dict(), path("init.safetensors"))
  local files = {}
  for i = 0, STEPS - 1 do
    files["x." .. i] = torch.randn(batch_size, in_size)
    files["y." .. i] = torch.randn(batch_size, out_size)
  end
  torch.save(files, path("data.safetensors"))
end

local net = make_model(in_size, out_size, num_layers)
net:load_state_dict(torch.load(path("init.safetensors")))
net = net:to(device)
local batches = torch.load(path("data.safetensors"))
local loss_fn = torch.nn.MSELoss()
local opt = torch.optim.SGD(net:parameters(), { lr = 0.001 })
local scaler = torch.amp.GradScaler(device.type)
local losses = {}
for i = 0, STEPS - 1 do
  local input, target = batches["x." .. i]:to(device), batches["y." .. i]:to(device)
  local loss
  do
    local _ <close> = torch.autocast(device.type, { dtype = torch.float16 })
    local output = net(input)
    loss = loss_fn(output, target)
  end
  scaler:scale(loss):backward()
  scaler:step(opt)
  scaler:update()
  opt:zero_grad()
  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, net)
