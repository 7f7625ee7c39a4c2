-- Parity of scripts/tutorials/reinforcement_q_learning with pytorch/tutorials, nnrepl's side of
-- tests/gpu/tutorials/reinforcement_q_learning.py (its header describes the steps and files).
--
--   nnrepl tests/gpu/tutorials/reinforcement_q_learning.lua DIR [cuda|cpu] [--generate]
--
-- The port's DQN, Transition, optimize_model body and soft update (model.lua) on the K fixed
-- batches, from DIR/reinforcement_q_learning_init and _data.safetensors; writes
-- _nnrepl_losses.txt and _nnrepl_final.safetensors. --generate makes the init and data files
-- with nnrepl when they are missing (a run without PyTorch).
local NAME, K = "reinforcement_q_learning", 12
local BATCH_SIZE, GAMMA, TAU, LR = 128, 0.99, 0.005, 3e-4
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/tutorials/reinforcement_q_learning/?.lua;" .. package.path
local model = require "model"
local DQN, Transition = model.DQN, model.Transition

local P = dofile(here .. "/../examples/example_parity.lua")
local run = P.start(NAME, ...)
local device, path = run.device, run.path

if run.generate then
  torch.manual_seed(0)
  local nets = nn.ModuleDict({ policy = DQN(4, 2), target = DQN(4, 2) })
  nets.target:load_state_dict(nets.policy:state_dict())
  torch.save(nets:state_dict(), path("init.safetensors"))
  local g = torch.Generator():manual_seed(1)
  local data = {}
  for k = 0, K - 1 do
    data["state." .. k] = torch.randn(BATCH_SIZE, 4, { generator = g }) * 0.5
    data["action." .. k] = torch.randint(0, 2, { BATCH_SIZE, 1 }, { generator = g })
    data["next_state." .. k] = torch.randn(BATCH_SIZE, 4, { generator = g }) * 0.5
    data["non_final." .. k] = torch.rand(BATCH_SIZE, { generator = g }):gt(0.1):long()
    data["reward." .. k] = torch.ones(BATCH_SIZE)
  end
  torch.save(data, path("data.safetensors"))
end

local nets = nn.ModuleDict({ policy = DQN(4, 2), target = DQN(4, 2) })
nets:load_state_dict(torch.load(path("init.safetensors")))
nets = nets:to(device)
local policy_net, target_net = nets.policy, nets.target
local optimizer = optim.AdamW(policy_net:parameters(), { lr = LR, amsgrad = true })
local data = torch.load(path("data.safetensors"))
local losses = {}
for k = 0, K - 1 do
  -- the transitions memory:sample would give, as the training loop pushes them
  local transitions = {}
  local non_final = data["non_final." .. k]:tolist()
  for i = 0, BATCH_SIZE - 1 do
    local state = data["state." .. k][i]:to(device):unsqueeze(0)
    local action = data["action." .. k][i]:to(device):view(1, 1)
    local next_state = non_final[i + 1] ~= 0 and data["next_state." .. k][i]:to(device):unsqueeze(0) or nil
    local reward = data["reward." .. k][i]:to(device):view(1)
    transitions[i + 1] = Transition(state, action, next_state, reward)
  end
  losses[#losses + 1] = model.optimize_transitions(transitions, policy_net, target_net, optimizer, GAMMA, device)
  model.soft_update(target_net, policy_net, TAU)
end
P.finish(run, losses, nets)
