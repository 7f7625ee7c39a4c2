-- Parity of scripts/examples/word_language_model with PyTorch, nnrepl's side of
-- word_language_model.py (read its header: the variants, sizes and files are described there).
--
--   nnrepl tests/gpu/examples/word_language_model.lua DIR [cuda|cpu] [--generate]
--
-- Builds the port's own RNNModel and TransformerModel (scripts/examples/word_language_model/
-- model.lua), loads the initial state_dicts and the batches, trains K steps as main.lua's train()
-- does and writes DIR/word_language_model_{lstm,transformer}_nnrepl_losses.txt and
-- _nnrepl_final.safetensors. --generate makes the init and data files here when they are missing
-- (nnrepl's own init, the same recipe for the batches), so this half runs without PyTorch.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/word_language_model/?.lua;" .. package.path
local model_lib = require "model"

local NAME = "word_language_model"
local VARIANTS = { "lstm", "transformer" }
local NTOKENS, BSZ, BPTT, K, CLIP = 50, 4, 10, 15, 0.25
local LR = { lstm = 5.0, transformer = 2.0 }

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local path = run.path

local function build(variant)
  if variant == "lstm" then return model_lib.RNNModel("LSTM", NTOKENS, 32, 32, 2, 0.0, true) end
  return model_lib.TransformerModel(NTOKENS, 32, 2, 64, 2, 0.0)
end

-- main.lua's batchify and get_batch (local functions of the program there)
local function batchify(data, bsz)
  local nbatch = data:size(0) // bsz
  data = data:narrow(0, 0, nbatch * bsz)
  return data:view(bsz, -1):t():contiguous()
end

local function get_batch(source, i)
  local seq_len = math.min(BPTT, source:size(0) - 1 - i)
  return source[i .. ":" .. (i + seq_len)], source[(i + 1) .. ":" .. (i + 1 + seq_len)]:view(-1)
end

local function repackage_hidden(h)
  if torch.is_tensor(h) then return h:detach() end
  local out = {}
  for i, v in ipairs(h) do out[i] = repackage_hidden(v) end
  return out
end

-- word_language_model.py's token_stream: mostly the last id + 7, one id in 5 random
local function token_stream(n)
  local base = torch.arange(n) * 7 % NTOKENS
  local noise = torch.randint(0, NTOKENS, { n })
  return torch.where(torch.rand(n):lt(0.8), base, noise)
end

local function make_files()
  for _, v in ipairs(VARIANTS) do
    torch.manual_seed(0)
    torch.save(build(v):state_dict(), path(v .. "_init.safetensors"))
  end
  torch.manual_seed(1)
  local train_data = batchify(token_stream(BSZ * (K * BPTT + 1)), BSZ)
  local data, step = {}, 0
  for i = 0, K * BPTT - 1, BPTT do
    data["x." .. step], data["y." .. step] = get_batch(train_data, i)
    step = step + 1
  end
  torch.save(data, path("data.safetensors"))
end

local function train(variant, device)
  local model = build(variant)
  model:load_state_dict(torch.load(path(variant .. "_init.safetensors")))
  model:to(device)
  local data = torch.load(path("data.safetensors"))
  local criterion = nn.NLLLoss()
  local lr = LR[variant]
  local hidden
  if variant == "transformer" then
    model:eval()
  else
    model:train()
    hidden = model:init_hidden(BSZ)
  end
  local losses = {}
  for step = 0, K - 1 do
    local x, targets = data["x." .. step]:to(device), data["y." .. step]:to(device)
    model:zero_grad()
    local output
    if variant == "transformer" then
      output = model(x)
      output = output:view(-1, NTOKENS)
    else
      hidden = repackage_hidden(hidden)
      output, hidden = model(x, hidden)
    end
    local loss = criterion(output, targets)
    loss:backward()
    torch.nn.utils.clip_grad_norm_(model:parameters(), CLIP)
    for _, p in ipairs(model:parameters()) do
      p.data:add_(p.grad, { alpha = -lr })
    end
    losses[#losses + 1] = loss:item()
  end
  local f = assert(io.open(path(variant .. "_nnrepl_losses.txt"), "w"))
  for _, v in ipairs(losses) do f:write(string.format("%.17g\n", v)) end
  f:close()
  local final = nn.OrderedDict and nn.OrderedDict() or {}
  for name, p in model:named_parameters() do final[name] = p end
  torch.save(final, path(variant .. "_nnrepl_final.safetensors"))
  print(string.format("nnrepl %s: losses %.6f -> %.6f over %d steps", variant, losses[1], losses[#losses], K))
end

if run.generate then make_files() end
for _, v in ipairs(VARIANTS) do train(v, run.device) end
