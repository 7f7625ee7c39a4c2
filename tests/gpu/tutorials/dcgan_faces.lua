-- Parity of scripts/tutorials/dcgan_faces_tutorial with PyTorch, nnrepl's side of
-- dcgan_faces.py beside this file (its header describes the steps and files).
--
--   nnrepl tests/gpu/tutorials/dcgan_faces.lua DIR [cuda|cpu] [--generate]
--
-- K steps of the tutorial's D and G updates with the port's own networks
-- (scripts/tutorials/dcgan_faces_tutorial/model.lua) at small sizes, from
-- DIR/dcgan_faces_init.safetensors, on the real batches and noise of _data.safetensors.
-- Writes _nnrepl_losses.txt (per step Loss_D, then Loss_G) and _nnrepl_final.safetensors
-- ("netG.*", "netD.*"). --generate makes the init and data files with nnrepl when they are
-- missing (a run without PyTorch).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local model = dofile(here .. "/../../../scripts/tutorials/dcgan_faces_tutorial/model.lua")
local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start("dcgan_faces", ...)
local device, path = run.device, run.path

local K, batch_size, image_size = 10, 8, 64
local ngpu, nz, ngf, ndf, nc = 1, 16, 8, 8, 3
local lr, beta1 = 0.0002, 0.5

local function build()
  local netG = model.Generator(ngpu, nz, ngf, nc)
  netG:apply(model.weights_init)
  local netD = model.Discriminator(ngpu, ndf, nc)
  netD:apply(model.weights_init)
  return netG, netD
end

local function both(netG, netD)
  local out = {}
  for k, v in pairs(netG:state_dict()) do out["netG." .. k] = v end
  for k, v in pairs(netD:state_dict()) do out["netD." .. k] = v end
  return out
end

if run.generate then
  torch.manual_seed(0)
  torch.save(both(build()), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for i = 0, K - 1 do
    data["real." .. i] = torch.rand(batch_size, nc, image_size, image_size, { generator = g }) * 2 - 1
    data["noise." .. i] = torch.randn(batch_size, nz, 1, 1, { generator = g })
  end
  torch.save(data, path("data.safetensors"))
end

local netG, netD = build()
local init = torch.load(path("init.safetensors"))
local sd = { netG = {}, netD = {} }
for k, v in pairs(init) do
  local net, key = k:match("^(net[GD])%.(.*)$")
  sd[net][key] = v
end
netG:load_state_dict(sd.netG)
netD:load_state_dict(sd.netD)
netG:to(device):double() -- float64, as the .py says why
netD:to(device):double()
local data = torch.load(path("data.safetensors"))

-- the tutorial's training loop, the batches and noise read from the file
local criterion = nn.BCELoss()
local real_label = 1.
local fake_label = 0.
local optimizerD = optim.Adam(netD:parameters(), { lr = lr, betas = { beta1, 0.999 } })
local optimizerG = optim.Adam(netG:parameters(), { lr = lr, betas = { beta1, 0.999 } })
local losses = {}
for i = 0, K - 1 do
  netD:zero_grad()
  local real_cpu = data["real." .. i]:to(device):double()
  local b_size = real_cpu:size(0)
  local label = torch.full({ b_size }, real_label, { dtype = torch.float64, device = device })
  local output = netD(real_cpu):view(-1)
  local errD_real = criterion(output, label)
  errD_real:backward()

  local noise = data["noise." .. i]:to(device):double()
  local fake = netG(noise)
  label:fill_(fake_label)
  output = netD(fake:detach()):view(-1)
  local errD_fake = criterion(output, label)
  errD_fake:backward()
  local errD = errD_real + errD_fake
  optimizerD:step()

  netG:zero_grad()
  label:fill_(real_label)
  output = netD(fake):view(-1)
  local errG = criterion(output, label)
  errG:backward()
  optimizerG:step()
  losses[#losses + 1] = errD:item()
  losses[#losses + 1] = errG:item()
end

local f = assert(io.open(path("nnrepl_losses.txt"), "w"))
for _, v in ipairs(losses) do f:write(string.format("%.17g\n", v)) end
f:close()
torch.save(both(netG, netD), path("nnrepl_final.safetensors"))
print(string.format("nnrepl dcgan_faces: %d steps on %s, last Loss_D %.6f Loss_G %.6f", K, tostring(device),
  losses[#losses - 1], losses[#losses]))
