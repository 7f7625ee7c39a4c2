-- Parity of the dcgan port with PyTorch, nnrepl's side (tests/gpu/examples/dcgan.py is PyTorch's):
--
--   python3 tests/gpu/examples/dcgan.py prepare DIR [--device cuda]
--   nnrepl  tests/gpu/examples/dcgan.lua DIR [cuda|cpu] [--generate]
--   python3 tests/gpu/examples/dcgan.py compare DIR
--
-- K steps of main.lua's alternating D and G updates with the port's own Generator,
-- Discriminator (scripts/examples/dcgan/model.lua) at small sizes (imageSize 64, batch 8,
-- nz 16, ngf = ndf = 8, 3 channels), from DIR/dcgan_init_netG.safetensors and
-- _init_netD.safetensors, on the real batches and noise vectors of DIR/dcgan_data.safetensors
-- ("real.i", "noise.i"). Writes DIR/dcgan_nnrepl_losses.txt (per step two lines: Loss_D, then
-- Loss_G) and DIR/dcgan_nnrepl_final.safetensors (the weights, keys "netG.*" and "netD.*").
-- --generate: when the data file is missing, make the init and data files here (nnrepl's own
-- seed-0 init and random batches), so this side runs where PyTorch is absent.
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/../../../scripts/examples/dcgan/?.lua;" .. package.path
local model = require "model"

local K, batch, nz, ngf, ndf, nc, image = 10, 8, 16, 8, 8, 3, 64
local lr, beta1 = 0.0002, 0.5

local dir, device_name, generate = nil, "cuda", false
for _, a in ipairs({ ... }) do
  if a == "--generate" then generate = true
  elseif a == "cuda" or a == "cpu" then device_name = a
  elseif not dir then dir = a
  else error("dcgan.lua: unknown argument " .. a, 0) end
end
if not dir then error("usage: nnrepl tests/gpu/examples/dcgan.lua DIR [cuda|cpu] [--generate]", 0) end
local function path(what) return dir .. "/dcgan_" .. what end

local function build()
  local netG = model.Generator(1, nz, ngf, nc)
  netG:apply(model.weights_init)
  local netD = model.Discriminator(1, ndf, nc)
  netD:apply(model.weights_init)
  return netG, netD
end

local f = io.open(path("data.safetensors"), "rb")
if f then f:close() elseif generate then
  torch.manual_seed(0)
  local netG, netD = build()
  torch.save(netG:state_dict(), path("init_netG.safetensors"))
  torch.save(netD:state_dict(), path("init_netD.safetensors"))
  torch.manual_seed(1)
  local data = {}
  for i = 0, K - 1 do
    data["real." .. i] = torch.rand(batch, nc, image, image) * 2 - 1
    data["noise." .. i] = torch.randn(batch, nz, 1, 1)
  end
  torch.save(data, path("data.safetensors"))
end

local device = torch.device(device_name)
if device.type == "cuda" then
  torch.backends.cuda.matmul.allow_tf32 = false
  torch.backends.cudnn.allow_tf32 = false
end

local netG, netD = build()
netG:load_state_dict(torch.load(path("init_netG.safetensors")))
netD:load_state_dict(torch.load(path("init_netD.safetensors")))
netG:to(device)
netD:to(device)
local data = torch.load(path("data.safetensors"))

-- the training loop of main.lua, the data and noise read from the file
local criterion = nn.BCELoss()
local real_label, fake_label = 1, 0
local optimizerD = optim.Adam(netD:parameters(), { lr = lr, betas = { beta1, 0.999 } })
local optimizerG = optim.Adam(netG:parameters(), { lr = lr, betas = { beta1, 0.999 } })
local lines = {}
for i = 0, K - 1 do
  netD:zero_grad()
  local real_cpu = data["real." .. i]:to(device)
  local batch_size = real_cpu:size(0)
  local label = torch.full({ batch_size }, real_label, { dtype = real_cpu.dtype, device = device })
  local output = netD(real_cpu)
  local errD_real = criterion(output, label)
  errD_real:backward()

  local noise = data["noise." .. i]:to(device)
  local fake = netG(noise)
  label:fill_(fake_label)
  output = netD(fake:detach())
  local errD_fake = criterion(output, label)
  errD_fake:backward()
  local errD = errD_real + errD_fake
  optimizerD:step()

  netG:zero_grad()
  label:fill_(real_label)
  output = netD(fake)
  local errG = criterion(output, label)
  errG:backward()
  optimizerG:step()
  lines[#lines + 1] = string.format("%.17g\n%.17g\n", errD:item(), errG:item())
end

local out = assert(io.open(path("nnrepl_losses.txt"), "w"))
out:write(table.concat(lines))
out:close()
local final = {}
for k, v in pairs(netG:state_dict()) do final["netG." .. k] = v end
for k, v in pairs(netD:state_dict()) do final["netD." .. k] = v end
torch.save(final, path("nnrepl_final.safetensors"), { format = "safetensors" })
print(string.format("nnrepl dcgan: %d steps on %s, last Loss_D %s Loss_G %s", K, device_name,
  lines[#lines]:match("^(%S+)\n(%S+)")))
