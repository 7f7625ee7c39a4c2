-- Parity of scripts/tutorials/nlp/word_embeddings_tutorial.lua (the N-gram language model),
-- nnrepl's side of tests/gpu/tutorials/word_embeddings.py (its header describes the steps and files).
--   nnrepl tests/gpu/tutorials/word_embeddings.lua DIR [cuda|cpu] [--generate]
local NAME, STEPS, VOCAB, EMBEDDING_DIM, CONTEXT_SIZE = "word_embeddings", 20, 97, 10, 2
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/tutorials/nlp/?.lua;" .. package.path
local NGramLanguageModeler = require("word_embeddings_tutorial").NGramLanguageModeler

local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  torch.save(NGramLanguageModeler(VOCAB, EMBEDDING_DIM, CONTEXT_SIZE):state_dict(), path("init.safetensors"))
  local data = {}
  for i = 0, STEPS - 1 do
    data["context." .. i] = torch.randint(0, VOCAB, { CONTEXT_SIZE })
    data["target." .. i] = torch.randint(0, VOCAB, { 1 })
  end
  torch.save(data, path("data.safetensors"))
end

local model = NGramLanguageModeler(VOCAB, EMBEDDING_DIM, CONTEXT_SIZE)
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local data = torch.load(path("data.safetensors"))
local loss_function = nn.NLLLoss()
local optimizer = optim.SGD(model:parameters(), { lr = 0.001 })
local losses = {}
for i = 0, STEPS - 1 do
  local context_idxs = data["context." .. i]:to(device)
  model:zero_grad()
  local log_probs = model(context_idxs)
  local loss = loss_function(log_probs, data["target." .. i]:to(device))
  loss:backward()
  optimizer:step()
  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, model)
