-- Port of pytorch/tutorials intermediate_source/mixed_precision_tutorial.py (automatic mixed
-- precision: autocast and GradScaler around an MLP trained with SGD on random data).
-- Run: nnrepl scripts/tutorials/intermediate2/mixed_precision_tutorial.lua
-- Differences:
--   * Runs on CUDA when there is one, else on the CPU (the tutorial needs CUDA; its timings and
--     memory figures mean something only there: on the CPU the memory line prints 0).
--   * torch.cuda.amp.autocast() / GradScaler() (deprecated in PyTorch 2.x) are written as their
--     successors torch.amp.autocast(device, {dtype = torch.float16}) and
--     torch.amp.GradScaler(device), so the CPU path runs float16 autocast as CUDA does.
--   * MP_BATCH, MP_SIZE (in_size = out_size), MP_LAYERS, MP_BATCHES, MP_EPOCHS override the
--     sizes (defaults 256, 4096, 6, 128, 3, as the tutorial); the CI test runs tiny ones.
--   * Each phase prints its mean loss over the last epoch, so the training can be followed.
local torch = require "torch"
local time = require "time"

local function env(name, default) return tonumber(os.getenv(name)) or default end

local device = torch.cuda.is_available() and "cuda" or "cpu"
local _start_time

local function start_timer()
  collectgarbage()
  if device == "cuda" then
    torch.cuda.empty_cache()
    torch.cuda.reset_max_memory_allocated()
    torch.cuda.synchronize()
  end
  _start_time = time.time()
end

local function end_timer_and_print(local_msg)
  if device == "cuda" then torch.cuda.synchronize() end
  print(local_msg)
  print(string.format("Total execution time = %.3f sec", time.time() - _start_time))
  print(string.format("Max memory used by tensors = %d bytes", torch.cuda.max_memory_allocated()))
end

local function make_model(in_size, out_size, num_layers)
  local layers = {}
  for _ = 1, num_layers - 1 do
    layers[#layers + 1] = torch.nn.Linear(in_size, in_size)
    layers[#layers + 1] = torch.nn.ReLU()
  end
  layers[#layers + 1] = torch.nn.Linear(in_size, out_size)
  return torch.nn.Sequential(table.unpack(layers)):to(device)
end

local batch_size = env("MP_BATCH", 256)
local in_size = env("MP_SIZE", 4096)
local out_size = in_size
local num_layers = env("MP_LAYERS", 6)
local num_batches = env("MP_BATCHES", 128)
local epochs = env("MP_EPOCHS", 3)

local data, targets = {}, {}
for i = 1, num_batches do data[i] = torch.randn(batch_size, in_size, { device = device }) end
for i = 1, num_batches do targets[i] = torch.randn(batch_size, out_size, { device = device }) end
local loss_fn = torch.nn.MSELoss():to(device)

-- the mean loss of the last epoch (the tutorial prints none)
local last_losses
local function report(name)
  local s = 0
  for _, l in ipairs(last_losses) do s = s + l end
  print(string.format("%s: mean loss of the last epoch %.6f", name, s / #last_losses))
end

local net = make_model(in_size, out_size, num_layers)
local opt = torch.optim.SGD(net:parameters(), { lr = 0.001 })

start_timer()
for epoch = 0, epochs - 1 do
  last_losses = {}
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    local output = net(input)
    local loss = loss_fn(output, target)
    loss:backward()
    opt:step()
    opt:zero_grad()
    last_losses[#last_losses + 1] = loss:item()
  end
end
end_timer_and_print("With default precision:")
report("default precision")

for epoch = 0, epochs - 1 do
  last_losses = {}
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    local output, loss
    do
      local _ <close> = torch.amp.autocast(device, { dtype = torch.float16 })
      output = net(input)
      assert(output.dtype == torch.float16)

      loss = loss_fn(output, target)
      assert(loss.dtype == torch.float32)
    end

    loss:backward()
    opt:step()
    opt:zero_grad()
    last_losses[#last_losses + 1] = loss:item()
  end
end
report("autocast")

local scaler = torch.amp.GradScaler(device)

for epoch = 0, epochs - 1 do
  last_losses = {}
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    local output, loss
    do
      local _ <close> = torch.amp.autocast(device, { dtype = torch.float16 })
      output = net(input)
      loss = loss_fn(output, target)
    end

    scaler:scale(loss):backward()

    scaler:step(opt)

    scaler:update()

    opt:zero_grad()
    last_losses[#last_losses + 1] = loss:item()
  end
end
report("autocast and GradScaler")

net = make_model(in_size, out_size, num_layers)
opt = torch.optim.SGD(net:parameters(), { lr = 0.001 })
scaler = torch.amp.GradScaler(device)

start_timer()
for epoch = 0, epochs - 1 do
  last_losses = {}
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    local output, loss
    do
      local _ <close> = torch.amp.autocast(device, { dtype = torch.float16 })
      output = net(input)
      loss = loss_fn(output, target)
    end
    scaler:scale(loss):backward()
    scaler:step(opt)
    scaler:update()
    opt:zero_grad()
    last_losses[#last_losses + 1] = loss:item()
  end
end
end_timer_and_print("With mixed precision:")
report("all together")

for epoch = 0, epochs - 1 do
  last_losses = {}
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    local output, loss
    do
      local _ <close> = torch.amp.autocast(device, { dtype = torch.float16 })
      output = net(input)
      loss = loss_fn(output, target)
    end
    scaler:scale(loss):backward()

    scaler:unscale_(opt)

    torch.nn.utils.clip_grad_norm_(net:parameters(), { max_norm = 0.1 })

    scaler:step(opt)
    scaler:update()
    opt:zero_grad()
    last_losses[#last_losses + 1] = loss:item()
  end
end
report("with clipping")
print(string.format("scale: %s", tostring(scaler:get_scale())))
