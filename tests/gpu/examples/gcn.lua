-- Parity of scripts/examples/gcn with pytorch/examples gcn, nnrepl's side of
-- tests/gpu/examples/gcn.py (its header describes the steps and files).
--
--   nnrepl tests/gpu/examples/gcn.lua DIR [cuda|cpu] [--generate]
--
-- Builds the graph with the port's own loader steps (data.lua's cora_tensors) from
-- DIR/gcn_data.safetensors, trains the port's GCN (model.lua) from DIR/gcn_init.safetensors as
-- train_iter does, and writes DIR/gcn_nnrepl_losses.txt and DIR/gcn_nnrepl_final.safetensors.
-- --generate makes the init and data files with nnrepl when they are missing.
local NAME, STEPS, V, FEAT, CLASSES, E, HIDDEN = "gcn", 15, 60, 12, 3, 150, 16
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/gcn/?.lua;" .. package.path
local GCN = require("model").GCN
local cora_tensors = require("data").cora_tensors

local P = dofile(here .. "/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  torch.save(GCN(FEAT, HIDDEN, CLASSES, true, 0.0):state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  torch.save({
    features = torch.rand(V, FEAT, { generator = g }):lt(0.3):float(),
    labels = torch.randint(0, CLASSES, { V }, { generator = g }),
    edges = torch.randint(0, V, { E, 2 }, { generator = g }),
    idx_train = torch.randperm(V, { generator = g })[":40"],
  }, path("data.safetensors"))
end

local data = torch.load(path("data.safetensors"))
local features, labels, adj_mat = cora_tensors(data.features, data.labels, data.edges, device)
local mask_train = data.idx_train:to(device)
local model = GCN(FEAT, HIDDEN, CLASSES, true, 0.0)
model:load_state_dict(torch.load(path("init.safetensors")))
model = model:to(device)
local optimizer = optim.Adam(model:parameters(), { lr = 0.01, weight_decay = 5e-4 })
local criterion = nn.NLLLoss()
local losses = {}
for _ = 1, STEPS do -- train_iter's step
  model:train()
  optimizer:zero_grad()
  local output = model(features, adj_mat)
  local loss = criterion(output[mask_train], labels[mask_train])
  loss:backward()
  optimizer:step()
  losses[#losses + 1] = loss:item()
end
P.finish(run, losses, model)
