-- Parity of scripts/tutorials/knowledge_distillation_tutorial with PyTorch, nnrepl's side of
-- tests/gpu/tutorials/knowledge_distillation_tutorial.py (its header says what the files hold).
--
--   nnrepl tests/gpu/tutorials/knowledge_distillation_tutorial.lua DIR [cuda|cpu] [--generate]
--
-- K steps of each of the port's three distillation loops (KD, cosine, regressor MSE) with the
-- port's own classes (its model.lua), students in eval mode (no dropout draws).
-- --generate: when the data file is missing, make the init and data files here.
local here = debug.getinfo(1, "S").source:match("^@(.*)/[^/]*$") or "."
package.path = here .. "/../../../scripts/tutorials/knowledge_distillation_tutorial/?.lua;" .. package.path
local M = require("model")
local P = dofile(here .. "/../examples/example_parity.lua")
local Ph = dofile(here .. "/_phases.lua")

local NAME, K, BATCH = "knowledge_distillation_tutorial", 10, 16

local prefixed, unprefixed = Ph.prefixed, Ph.unprefixed

local run = P.start(NAME, ...)
if run.generate then
  torch.manual_seed(0)
  local teacher, light, reg = M.DeepNN(), M.LightNN(), M.ModifiedLightNNRegressor()
  local init = prefixed("kd.", light:state_dict())
  prefixed("cos.", light:state_dict(), init)
  prefixed("mse.", reg:state_dict(), init)
  torch.save(init, run.path("init.safetensors"), { format = "safetensors" })
  torch.manual_seed(1)
  local data = prefixed("teacher.", teacher:state_dict())
  for i = 0, K - 1 do
    data["x." .. i] = torch.randn(BATCH, 3, 32, 32)
    data["y." .. i] = torch.randint(0, 10, { BATCH })
  end
  torch.save(data, run.path("data.safetensors"), { format = "safetensors" })
end

local device = run.device
local init, data = torch.load(run.path("init.safetensors")), torch.load(run.path("data.safetensors"))
local ce_loss = nn.CrossEntropyLoss()
local losses, final = {}, {}

local function train(prefix, student, Teacher, loss_of)
  student:load_state_dict(unprefixed(prefix .. ".", init))
  student:to(device):eval()
  local teacher = Teacher()
  teacher:load_state_dict(unprefixed("teacher.", data))
  teacher:to(device):eval()
  local optimizer = optim.Adam(student:parameters(), { lr = 0.001 })
  for i = 0, K - 1 do
    local inputs, labels = data["x." .. i]:to(device), data["y." .. i]:to(device)
    optimizer:zero_grad()
    local t1, t2
    do
      local _g <close> = torch.no_grad()
      t1, t2 = teacher(inputs)
    end
    local s1, s2 = student(inputs)
    local loss = loss_of(t1, t2, s1, s2, labels)
    loss:backward()
    optimizer:step()
    losses[#losses + 1] = loss:item()
  end
  prefixed(prefix .. ".", student:state_dict(), final)
end

local T = 2
train("kd", M.LightNN(), M.DeepNN, function(teacher_logits, _, student_logits, _, labels)
  local soft_targets = F.softmax(teacher_logits / T, { dim = -1 })
  local soft_prob = F.log_softmax(student_logits / T, { dim = -1 })
  local soft_targets_loss = -torch.sum(soft_targets * soft_prob) / soft_prob:size()[0] * (T ^ 2)
  return 0.25 * soft_targets_loss + 0.75 * ce_loss(student_logits, labels)
end)
local cosine_loss = nn.CosineEmbeddingLoss()
train("cos", M.ModifiedLightNNCosine(), M.ModifiedDeepNNCosine, function(_, teacher_hidden, student_logits, student_hidden, labels)
  local hidden_rep_loss = cosine_loss(student_hidden, teacher_hidden, { target = torch.ones(labels:size(0)):to(device) })
  return 0.25 * hidden_rep_loss + 0.75 * ce_loss(student_logits, labels)
end)
local mse_loss = nn.MSELoss()
train("mse", M.ModifiedLightNNRegressor(), M.ModifiedDeepNNRegressor, function(_, teacher_map, student_logits, reg_map, labels)
  return 0.25 * mse_loss(reg_map, teacher_map) + 0.75 * ce_loss(student_logits, labels)
end)

P.finish(run, losses, Ph.as_model(final))
