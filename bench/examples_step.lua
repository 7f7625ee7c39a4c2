-- One training step of each ported pytorch/examples program (scripts/examples/) at the
-- example's default sizes, with the port's own model classes, timed with CUDA events (median
-- and min of reps repeats of `steps` steps, after warm-up); bench/examples_step.py is
-- PyTorch's side, bench/examples_run.sh runs both and prints the ratios.
--   nnrepl bench/examples_step.lua [steps reps warmup] [names]
local argv = { ... }
local steps, reps, warmup = tonumber(argv[1] or 20), tonumber(argv[2] or 7), tonumber(argv[3] or 5)
local names
if argv[4] then names = {} for n in argv[4]:gmatch("[^,]+") do names[n] = true end end
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
local timing = require "gpu_step_timing"
local dev = "cuda"
torch.manual_seed(0)

-- the example's model.lua, loaded from its folder
local function example(name)
  return dofile(here .. "/../scripts/examples/" .. name .. "/model.lua")
end

local benches, order = {}, { "dcgan", "vae", "mnist_rnn", "siamese_network", "wlm_lstm", "wlm_transformer" }

function benches.dcgan()
  local ex = example("dcgan")
  local netG, netD = ex.Generator(1, 100, 64, 3):to(dev), ex.Discriminator(1, 64, 3):to(dev)
  netG:apply(ex.weights_init); netD:apply(ex.weights_init)
  local criterion = nn.BCELoss()
  local optD = optim.Adam(netD:parameters(), { lr = 0.0002, betas = { 0.5, 0.999 } })
  local optG = optim.Adam(netG:parameters(), { lr = 0.0002, betas = { 0.5, 0.999 } })
  local reals = {}
  for i = 1, 4 do reals[i] = torch.rand(64, 3, 64, 64, { device = dev }) * 2 - 1 end
  return function(i)
    local real = reals[i % 4 + 1]
    netD:zero_grad()
    local label = torch.full({ 64 }, 1.0, { device = dev })
    criterion(netD(real), label):backward()
    local fake = netG(torch.randn(64, 100, 1, 1, { device = dev }))
    label:fill_(0.0)
    criterion(netD(fake:detach()), label):backward()
    optD:step()
    netG:zero_grad()
    label:fill_(1.0)
    criterion(netD(fake), label):backward()
    optG:step()
  end
end

function benches.vae()
  local ex = example("vae")
  local model = ex.VAE():to(dev)
  local opt = optim.Adam(model:parameters(), { lr = 1e-3 })
  local xs = {}
  for i = 1, 4 do xs[i] = torch.rand(128, 1, 28, 28, { device = dev }) end
  return function(i)
    opt:zero_grad()
    local recon, mu, logvar = model(xs[i % 4 + 1])
    ex.loss_function(recon, xs[i % 4 + 1], mu, logvar):backward()
    opt:step()
  end
end

function benches.mnist_rnn()
  local Net = example("mnist_rnn")
  local model = Net():to(dev)
  local opt = optim.Adadelta(model:parameters(), { lr = 0.1 })
  local xs, ys = {}, {}
  for i = 1, 4 do
    xs[i] = torch.randn(64, 1, 28, 28, { device = dev })
    ys[i] = torch.randint(0, 10, { 64 }, { device = dev })
  end
  return function(i)
    opt:zero_grad()
    F.nll_loss(model(xs[i % 4 + 1]), ys[i % 4 + 1]):backward()
    opt:step()
  end
end

function benches.siamese_network()
  local SiameseNetwork = example("siamese_network")
  local model = SiameseNetwork():to(dev)
  local opt = optim.Adadelta(model:parameters(), { lr = 1.0 })
  local criterion = nn.BCELoss()
  local a, b, t = {}, {}, {}
  for i = 1, 4 do
    a[i] = torch.randn(64, 1, 28, 28, { device = dev })
    b[i] = torch.randn(64, 1, 28, 28, { device = dev })
    t[i] = torch.randint(0, 2, { 64 }, { device = dev }):float()
  end
  return function(i)
    opt:zero_grad()
    local out = model(a[i % 4 + 1], b[i % 4 + 1]):squeeze()
    criterion(out, t[i % 4 + 1]):backward()
    opt:step()
  end
end

-- main.lua's train() step: bptt 35, batch 20, emsize = nhid = 200, 2 layers, lr 20, clip 0.25
local function wlm(kind)
  local ex = example("word_language_model")
  local ntokens = 33278 -- WikiText-2's vocabulary
  local model = kind == "LSTM" and ex.RNNModel("LSTM", ntokens, 200, 200, 2, 0.2):to(dev)
    or ex.TransformerModel(ntokens, 200, 2, 200, 2, 0.2):to(dev)
  local criterion = nn.NLLLoss()
  local data = {}
  for i = 1, 4 do data[i] = torch.randint(0, ntokens, { 36, 20 }, { device = dev }) end
  local hidden = kind == "LSTM" and model:init_hidden(20) or nil
  local params = model:parameters()
  return function(i)
    local src, targets = data[i % 4 + 1][":35"], data[i % 4 + 1]["1:"]:reshape(-1)
    model:zero_grad()
    local output
    if kind == "LSTM" then
      hidden = { hidden[1]:detach(), hidden[2]:detach() }
      output, hidden = model(src, hidden)
    else
      output = model(src):view(-1, ntokens)
    end
    criterion(output, targets):backward()
    nn.utils.clip_grad_norm_(params, 0.25)
    for _, p in ipairs(params) do p.data:add_(p.grad, { alpha = -20 }) end
  end
end
benches.wlm_lstm = function() return wlm("LSTM") end
benches.wlm_transformer = function() return wlm("Transformer") end

for _, name in ipairs(order) do
  if not names or names[name] then
    local step = benches[name]()
    for i = 1, warmup do step(i) end
    torch.cuda.synchronize()
    print(string.format("example %s nnrepl: median %.4f ms (min %.4f)", name, timing.timed(step, steps, reps)))
  end
end
