-- Parity of scripts/tutorials/char_rnn_classification with PyTorch, nnrepl's side of
-- char_rnn_classification.py (its header describes the steps and files): the port's own
-- CharRNN (scripts/tutorials/char_rnn_classification/model.lua), the tutorial's train() step.
--   nnrepl tests/gpu/tutorials/char_rnn_classification.lua DIR [cuda|cpu] [--generate]
-- --generate makes the init and data files with nnrepl when they are missing.
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
local P = dofile(here .. "/../examples/example_parity.lua")
package.path = here .. "/../../../scripts/tutorials/char_rnn_classification/?.lua;" .. package.path
local CharRNN = require "model"

local n_letters, n_hidden, n_categories, K, B, MAXLEN = 58, 128, 18, 12, 8, 12
local run = P.start("char_rnn_classification", ...)
local device = run.device

if run.generate then
  torch.manual_seed(0)
  torch.save(CharRNN(n_letters, n_hidden, n_categories):state_dict(), run.path("init.safetensors"), { format = "safetensors" })
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for k = 0, K - 1 do
    data["idx." .. k] = torch.randint(0, n_letters, { B, MAXLEN }, { generator = g })
    data["len." .. k] = torch.randint(1, MAXLEN + 1, { B }, { generator = g })
    data["y." .. k] = torch.randint(0, n_categories, { B }, { generator = g })
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

local function lineToTensor(idx, n)
  local tensor = torch.zeros(n, 1, n_letters, { device = device })
  for li = 0, n - 1 do tensor[li][0][idx[li + 1]] = 1 end
  return tensor
end

local rnn = CharRNN(n_letters, n_hidden, n_categories)
rnn:load_state_dict(torch.load(run.path("init.safetensors")))
rnn:to(device)
local data = torch.load(run.path("data.safetensors"))
local criterion = nn.NLLLoss()
rnn:train()
local optimizer = torch.optim.SGD(rnn:parameters(), { lr = 0.15 })
rnn:zero_grad()
local losses = {}
for k = 0, K - 1 do
  local batch_loss = 0
  for i = 0, B - 1 do
    local text_tensor = lineToTensor(data["idx." .. k][i]:tolist(), data["len." .. k][i]:item())
    local label_tensor = data["y." .. k][string.format("%d:%d", i, i + 1)]:to(device)
    local output = rnn:forward(text_tensor)
    local loss = criterion(output, label_tensor)
    batch_loss = batch_loss + loss
  end
  batch_loss:backward()
  nn.utils.clip_grad_norm_(rnn:parameters(), 3)
  optimizer:step()
  optimizer:zero_grad()
  losses[#losses + 1] = batch_loss:item() / B
end
P.finish(run, losses, rnn)
