-- Document 002 (../shared/seeds/002_*.txt, "PyTorch GPU 加速"): a tour of the device API.
-- torch.cuda.is_available / device_count / current_device / get_device_name, torch.device,
-- device.type, torch.tensor(data, {device=}), :to(device), :cuda(...), :cpu(), .device, and a
-- DataLoader whose collate_fn moves each batch to the GPU.
--
--   build/nnrepl scripts/doc002_devices.lua
--
-- Lines print as Python's print writes them (spaces between values, True/False). Without a
-- GPU, torch.device('cuda') still prints (making a device object needs no GPU), and what
-- needs one is guarded by `if use_gpu`, as the document guards section 1.1's queries; the
-- skipped examples say so in one line each. Section 1.4's loader moves batches to `device`
-- (the GPU when there is one, else the CPU).
local U = require "nn_util"
local DataLoader, default_collate = torch.utils.data.DataLoader, torch.utils.data.default_collate

-- print as Python's print does: spaces between, booleans as True/False
local function pyprint(...)
  local parts = {}
  for i = 1, select("#", ...) do parts[i] = U.pystr((select(i, ...))) end
  print(table.concat(parts, " "))
end

-- ---- 1.1 devices ----

-- example 1: the GPU if it is available, else the CPU
local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")
print(device)

-- example 2: device information
local use_gpu = torch.cuda.is_available() -- whether a GPU can be used
pyprint(torch.cuda.is_available())
print(torch.device("cpu")) -- the CPU device
print(torch.device(0)) -- way 1 to name the GPU
print(torch.device("cuda")) -- way 2
print(torch.device("cuda:0")) -- way 3
local gpu_device = torch.device("cuda")
pyprint(gpu_device, gpu_device.type) -- the GPU device's type
if use_gpu then
  print(torch.cuda.device_count()) -- number of GPUs
  print(torch.cuda.current_device()) -- index of the current GPU
  print(torch.cuda.device(0)) -- the GPU numbered 0 (as a context: it also makes GPU 0 current)
  print(torch.cuda.get_device_name(0)) -- its name
end

-- ---- 1.2 tensors and devices ----

if use_gpu then
  -- example 1: where a tensor lives
  -- way 1 (recommended): create it on the GPU
  local tensor_X1 = torch.tensor({ 1, 2 }, { device = 0 })
  local tensor_X2 = torch.tensor({ 1, 2 }, { device = gpu_device })
  local tensor_X3 = torch.tensor({ 1, 2 }, { device = "cuda:0" })
  pyprint(tensor_X1.device, tensor_X2.device, tensor_X3.device)
  -- Output:  cuda:0  cuda:0  cuda:0

  -- way 2: create it on the CPU, then copy it to the GPU
  tensor_X1 = torch.tensor({ 1, 2 }) -- on the CPU
  tensor_X2 = tensor_X1:to({ device = gpu_device })
  pyprint(tensor_X1.device, tensor_X2.device)
  -- Output:  cpu  cuda:0
  tensor_X3 = tensor_X1:cuda() -- the default device
  local tensor_X4 = tensor_X1:cuda(0) -- the other forms give the same
  local tensor_X5 = tensor_X1:cuda(gpu_device)
  local tensor_X6 = tensor_X1:cuda("cuda:0")
  pyprint(tensor_X3.device, tensor_X4.device, tensor_X5.device, tensor_X6.device)
  -- Output:  cuda:0  cuda:0  cuda:0  cuda:0

  -- example 2: copy a GPU tensor to the CPU
  local cpu_device = torch.device("cpu")
  tensor_X1 = torch.tensor({ 1, 2 }, { device = torch.device("cuda") }) -- on the GPU
  tensor_X2 = tensor_X1:to(cpu_device)
  tensor_X3 = tensor_X1:to("cpu")
  tensor_X4 = tensor_X1:cpu()
  pyprint(tensor_X1.device, tensor_X2.device, tensor_X3.device, tensor_X4.device)
else
  print("no GPU: the examples of 1.2 (tensors created on or copied to cuda:0) are skipped")
end

-- ---- 1.3 training on the GPU ----

-- the document's fragment names data, model and loss_fn without defining them
local cpu_device = torch.device("cpu")
local data = torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } })
local target = torch.tensor({ { 1.0 }, { 0.0 } })
local model = nn.Linear(2, 1)
local loss_fn = nn.MSELoss()

-- data onto the GPU
if use_gpu then
  data = torch.tensor(data, { device = gpu_device }) -- way 1
  data = data:cuda() -- way 2
  data = data:to({ device = gpu_device }) -- way 3
  target = target:to(gpu_device)
end
-- the model's parameters onto the GPU
if use_gpu then
  -- way 1
  model = model:cuda()
  loss_fn = loss_fn:cuda()
  -- way 2
  model = model:to({ device = gpu_device })
  loss_fn = loss_fn:to({ device = gpu_device })
end
local loss = loss_fn(model(data), target)
-- data back from the GPU (sic: the document's test is `if not use_gpu`)
if not use_gpu then
  -- way 1
  loss = loss:cpu()
  model = model:cpu() -- the document's `model.parameters = model.parameters().cpu()` is no valid Python
  -- way 2
  model = model:to({ device = cpu_device })
  loss_fn = loss_fn:to({ device = cpu_device })
end
pyprint("data", data.device, "loss", loss.device, "model", model.weight.device)

-- ---- 1.4 Dataset and DataLoader ----

local mydataset = torch.utils.data.TensorDataset(torch.arange(20):view(10, 2):float(), torch.arange(10))
-- each batch onto the GPU (here `device`: the CPU without one)
local dataloader = DataLoader(mydataset, { batch_size = 4,
  collate_fn = function(x)
    local out = {}
    for i, x_ in ipairs(default_collate(x)) do out[i] = x_:to(device) end
    return out
  end })
local bar = torch.utils.progress(dataloader, { desc = "1.4 batches", leave = false })
for xb, yb in bar do
  bar:write(string.format("%s %s %s %s", tostring(xb.shape), tostring(xb.device), tostring(yb.shape), tostring(yb.device)))
end
