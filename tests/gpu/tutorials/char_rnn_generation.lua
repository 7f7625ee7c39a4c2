-- Parity of scripts/tutorials/char_rnn_generation with PyTorch, nnrepl's side of
-- char_rnn_generation.py (its header describes the steps and files): the port's own RNN
-- (scripts/tutorials/char_rnn_generation/model.lua), the tutorial's train() step.
--   nnrepl tests/gpu/tutorials/char_rnn_generation.lua DIR [cuda|cpu] [--generate]
-- --generate makes the init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local P = dofile(here .. "/../examples/example_parity.lua")
package.path = here .. "/../../../scripts/tutorials/char_rnn_generation/?.lua;" .. package.path

local n_categories, n_letters, K, MAXLEN = 18, 59, 16, 12
local learning_rate = 0.0005
local RNN = require("model")(n_categories)
local run = P.start("char_rnn_generation", ...)
local device = run.device

if run.generate then
  torch.manual_seed(0)
  torch.save(RNN(n_letters, 128, n_letters):state_dict(), run.path("init.safetensors"), { format = "safetensors" })
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for k = 0, K - 1 do
    data["cat." .. k] = torch.randint(0, n_categories, { 1 }, { generator = g })
    data["idx." .. k] = torch.randint(0, n_letters - 1, { MAXLEN }, { generator = g })
    data["len." .. k] = torch.randint(2, MAXLEN + 1, { 1 }, { generator = g })
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

local rnn = RNN(n_letters, 128, n_letters)
rnn:load_state_dict(torch.load(run.path("init.safetensors")))
rnn:to(device)
rnn.dropout.p = 0.0
local data = torch.load(run.path("data.safetensors"))
local criterion = nn.NLLLoss()
local losses = {}
for k = 0, K - 1 do
  local n = data["len." .. k]:item()
  local letters = data["idx." .. k][":" .. n]:tolist()
  local category_tensor = torch.zeros(1, n_categories, { device = device }) -- categoryTensor
  category_tensor[0][data["cat." .. k]:item()] = 1
  local input_line_tensor = torch.zeros(n, 1, n_letters, { device = device }) -- inputTensor
  for li = 0, n - 1 do input_line_tensor[li][0][letters[li + 1]] = 1 end
  local target = { table.unpack(letters, 2) } -- targetTensor
  target[#target + 1] = n_letters - 1
  local target_line_tensor = torch.tensor(target, { dtype = torch.long, device = device })

  -- the tutorial's train()
  target_line_tensor:unsqueeze_(-1)
  local hidden = rnn:initHidden():to(device)
  rnn:zero_grad()
  local loss = 0
  for i = 0, input_line_tensor:size(0) - 1 do
    local output
    output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
    loss = loss + criterion(output, target_line_tensor[i])
  end
  loss:backward()
  for _, p in ipairs(rnn:parameters()) do
    p.data:add_(p.grad.data, { alpha = -learning_rate })
  end
  losses[#losses + 1] = loss:item() / input_line_tensor:size(0)
end
P.finish(run, losses, rnn)
