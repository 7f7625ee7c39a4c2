-- Parity of scripts/examples/vae with PyTorch, nnrepl's side of tests/gpu/examples/vae.py
-- (its header says what the files hold).
--
--   nnrepl tests/gpu/examples/vae.lua DIR [cuda|cpu] [--generate] [--steps N]
--
-- Reads DIR/vae_init.safetensors and DIR/vae_data.safetensors, runs the example's training
-- steps with the port's own VAE and loss_function (scripts/examples/vae/model.lua), each step's
-- torch.randn_like answered by the stored eps, and writes DIR/vae_nnrepl_losses.txt and
-- DIR/vae_nnrepl_final.safetensors. The device defaults to cuda.
-- --generate: when the files are missing, make them here (nnrepl's init, seed 0; N batches of
-- rand images and randn eps, default 12), for a run without PyTorch.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/vae/?.lua;" .. package.path
local model_lib = require "model"
local VAE, loss_function = model_lib.VAE, model_lib.loss_function

local BATCH = 32

local dir, device_name, generate, steps
do
  local argv, i = { ... }, 1
  while i <= #argv do
    local a = argv[i]
    if a == "--generate" then
      generate = true
    elseif a == "--steps" and argv[i + 1] then
      steps = math.tointeger(tonumber(argv[i + 1]))
      i = i + 1
    elseif a:sub(1, 2) ~= "--" and not dir then
      dir = a
    elseif a:sub(1, 2) ~= "--" and not device_name then
      device_name = a
    else
      error("vae.lua: unknown argument " .. a .. " (usage: vae.lua DIR [cuda|cpu] [--generate] [--steps N])", 0)
    end
    i = i + 1
  end
  if not dir then error("vae.lua: usage: vae.lua DIR [cuda|cpu] [--generate] [--steps N]", 0) end
end
local device = torch.device(device_name or "cuda")

local function path(what) return dir .. "/vae_" .. what end

local function exists(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

if generate and not exists(path("data.safetensors")) then
  os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'")
  torch.manual_seed(0)
  torch.save(VAE():state_dict(), path("init.safetensors"), { format = "safetensors" })
  torch.manual_seed(1)
  local data = {}
  for i = 0, (steps or 12) - 1 do
    data["x." .. i] = torch.rand(BATCH, 1, 28, 28)
    data["eps." .. i] = torch.randn(BATCH, 20)
  end
  torch.save(data, path("data.safetensors"), { format = "safetensors" })
end

if device.type == "cuda" then
  torch.backends.cuda.matmul.allow_tf32 = false
  torch.backends.cudnn.allow_tf32 = false
end

local model = VAE()
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local optimizer = optim.Adam(model:parameters(), { lr = 1e-3 })
local data = torch.load(path("data.safetensors"))
if not steps then
  steps = 0
  while data["x." .. steps] do steps = steps + 1 end
end

-- the step's eps from the file in place of the draw; the port itself is unchanged
local randn_like, draw = torch.randn_like, 0
torch.randn_like = function(t)
  local eps = data["eps." .. draw]
  assert(eps and eps.shape == t.shape, "vae.lua: no stored eps of the shape drawn at draw " .. draw)
  draw = draw + 1
  return eps:to({ device = t.device, dtype = t.dtype })
end

local losses = {}
local ok, err = pcall(function()
  model:train()
  for i = 0, steps - 1 do -- the port's train() loop, one batch a step
    local x = data["x." .. i]:to(device)
    optimizer:zero_grad()
    local recon_batch, mu, logvar = model(x)
    local loss = loss_function(recon_batch, x, mu, logvar)
    loss:backward()
    losses[#losses + 1] = loss:item()
    optimizer:step()
  end
end)
torch.randn_like = randn_like
if not ok then error(err, 0) end
assert(draw == steps, string.format("vae.lua: the port drew eps %d times in %d steps", draw, steps))

local f = assert(io.open(path("nnrepl_losses.txt"), "w"))
for _, v in ipairs(losses) do f:write(string.format("%.17g\n", v)) end
f:close()
torch.save(model:state_dict(), path("nnrepl_final.safetensors"), { format = "safetensors" })
print(string.format("nnrepl vae on %s: losses %.4f -> %.4f over %d steps", device, losses[1], losses[#losses], steps))
