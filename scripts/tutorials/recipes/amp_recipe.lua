-- PyTorch recipe "Automatic Mixed Precision" (recipes_source/recipes/amp_recipe.py) in Lua: a stack
-- of Linear + ReLU timed in default precision, then with autocast and GradScaler.
--
--   nnrepl scripts/tutorials/recipes/amp_recipe.lua
--
-- Differences from the original:
-- * The recipe needs a GPU. Without one the port runs on the CPU with autocast's CPU dtype,
--   bfloat16, and a disabled GradScaler (bfloat16 needs no loss scaling); the memory line then
--   prints 0, as torch.cuda.max_memory_allocated does without CUDA.
-- * torch.cuda.amp.autocast() / GradScaler() are torch.autocast(device) / torch.amp.GradScaler(device).
-- * gc.collect() is collectgarbage(); the 0-epoch illustration loops are kept as 0-iteration loops.
-- * Sizes: RECIPE_AMP_BATCH (512), RECIPE_AMP_SIZE (4096 in and out), RECIPE_AMP_BATCHES (50),
--   RECIPE_AMP_EPOCHS (3).
-- * (extra) each run prints its last loss, and the checkpoint's keys are printed.
local time = require "time"

local device = torch.cuda.is_available() and "cuda" or "cpu"
local amp_dtype = device == "cuda" and torch.float16 or torch.bfloat16

-- Timing utilities
local start_time = nil

local function start_timer()
  collectgarbage()
  if device == "cuda" then
    torch.cuda.empty_cache()
    torch.cuda.reset_max_memory_allocated()
    torch.cuda.synchronize()
  end
  start_time = time.time()
end

local function end_timer_and_print(local_msg)
  if device == "cuda" then torch.cuda.synchronize() end
  local end_time = time.time()
  print("\n" .. local_msg)
  print(string.format("Total execution time = %.3f sec", end_time - start_time))
  print(string.format("Max memory used by tensors = %d bytes", device == "cuda" and torch.cuda.max_memory_allocated() or 0))
end

-- A simple network
local function make_model(in_size, out_size, num_layers)
  local layers = {}
  for _ = 1, num_layers - 1 do
    layers[#layers + 1] = nn.Linear(in_size, in_size)
    layers[#layers + 1] = nn.ReLU()
  end
  layers[#layers + 1] = nn.Linear(in_size, out_size)
  return nn.Sequential(table.unpack(layers)):to(device)
end

local batch_size = tonumber(os.getenv("RECIPE_AMP_BATCH") or "512") -- Try, for example, 128, 256, 513.
local in_size = tonumber(os.getenv("RECIPE_AMP_SIZE") or "4096")
local out_size = in_size
local num_layers = 3
local num_batches = tonumber(os.getenv("RECIPE_AMP_BATCHES") or "50")
local epochs = tonumber(os.getenv("RECIPE_AMP_EPOCHS") or "3")

-- Creates data in default precision.
local data, targets = {}, {}
for i = 1, num_batches do data[i] = torch.randn(batch_size, in_size, { device = device }) end
for i = 1, num_batches do targets[i] = torch.randn(batch_size, out_size, { device = device }) end

local loss_fn = nn.MSELoss():to(device)

-- Default Precision
local net = make_model(in_size, out_size, num_layers)
local opt = optim.SGD(net:parameters(), { lr = 0.001 })

local loss
start_timer()
for _ = 1, epochs do
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    local output = net(input)
    loss = loss_fn(output, target)
    loss:backward()
    opt:step()
    opt:zero_grad() -- set_to_none=True here can modestly improve performance
  end
end
end_timer_and_print("Default precision:")
print(string.format("(extra) last loss %.4f, dtype %s", loss:item(), loss.dtype))

-- Adding autocast
for _ = 1, 0 do -- 0 epochs, this section is for illustration only
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    local output
    do
      local _ <close> = torch.autocast(device, { dtype = amp_dtype })
      output = net(input)
      assert(output.dtype == amp_dtype)
      loss = loss_fn(output, target)
      assert(loss.dtype == torch.float32)
    end
    loss:backward()
    opt:step()
    opt:zero_grad()
  end
end

-- Adding GradScaler
local scaler = torch.amp.GradScaler(device, { enabled = device == "cuda" })

-- All together ("Automatic Mixed Precision")
local use_amp = true

net = make_model(in_size, out_size, num_layers)
opt = optim.SGD(net:parameters(), { lr = 0.001 })
scaler = torch.amp.GradScaler(device, { enabled = use_amp and device == "cuda" })

local output
start_timer()
for _ = 1, epochs do
  for i = 1, num_batches do
    local input, target = data[i], targets[i]
    do
      local _ <close> = torch.autocast(device, { dtype = amp_dtype, enabled = use_amp })
      output = net(input)
      loss = loss_fn(output, target)
    end
    scaler:scale(loss):backward()
    scaler:step(opt)
    scaler:update()
    opt:zero_grad()
  end
end
end_timer_and_print("Mixed precision:")
print(string.format("(extra) last loss %.4f, dtype %s; output dtype %s", loss:item(), loss.dtype, output.dtype))

-- Inspecting/modifying gradients (e.g., clipping)
for _ = 1, 0 do -- 0 epochs, this section is for illustration only
  for i = 1, num_batches do
    do
      local _ <close> = torch.autocast(device, { dtype = amp_dtype })
      loss = loss_fn(net(data[i]), targets[i])
    end
    scaler:scale(loss):backward()
    scaler:unscale_(opt)
    nn.utils.clip_grad_norm_(net:parameters(), { max_norm = 0.1 })
    scaler:step(opt)
    scaler:update()
    opt:zero_grad()
  end
end

-- Saving/Resuming
local checkpoint = { model = net:state_dict(), optimizer = opt:state_dict(), scaler = scaler:state_dict() }

net:load_state_dict(checkpoint["model"])
opt:load_state_dict(checkpoint["optimizer"])
scaler:load_state_dict(checkpoint["scaler"])

local keys = {}
for k in pairs(checkpoint) do keys[#keys + 1] = k end
table.sort(keys)
print("(extra) checkpoint: " .. table.concat(keys, " "))
