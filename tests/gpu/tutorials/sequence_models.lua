-- Parity of scripts/tutorials/nlp/sequence_models_tutorial.lua (the LSTM tagger), nnrepl's side
-- of tests/gpu/tutorials/sequence_models.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/sequence_models.lua DIR [cuda|cpu] [--generate]
local NAME, STEPS = "sequence_models", 20
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/tutorials/nlp/?.lua;" .. package.path
local LSTMTagger = require("sequence_models_tutorial").LSTMTagger

local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  torch.save(LSTMTagger(6, 6, 9, 3):state_dict(), path("init.safetensors"))
  torch.save({ ["sentence.0"] = torch.tensor({ 0, 1, 2, 3, 4 }), ["tags.0"] = torch.tensor({ 0, 1, 2, 0, 1 }),
    ["sentence.1"] = torch.tensor({ 5, 6, 7, 8 }), ["tags.1"] = torch.tensor({ 1, 2, 0, 1 }) }, path("data.safetensors"))
end

local model = LSTMTagger(6, 6, 9, 3)
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local data = torch.load(path("data.safetensors"))
local loss_function = nn.NLLLoss()
local optimizer = optim.SGD(model:parameters(), { lr = 0.1 })
local losses = {}
for step = 0, STEPS - 1 do
  local sentence_in = data["sentence." .. step % 2]:to(device)
  local targets = data["tags." .. step % 2]:to(device)
  model:zero_grad()
  local tag_scores = model(sentence_in)
  local loss = loss_function(tag_scores, targets)
  loss:backward()
  optimizer:step()
  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, model)
