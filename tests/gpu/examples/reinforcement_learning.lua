-- Parity of scripts/examples/reinforcement_learning with pytorch/examples, nnrepl's side of
-- tests/gpu/examples/reinforcement_learning.py (read its header: files and checks).
--
--   nnrepl tests/gpu/examples/reinforcement_learning.lua DIR [cpu] [--generate]
--
-- For each program (reinforce, actor_critic): loads the initial weights into the port's
-- Policy (eval mode: no dropout), replays the recorded episodes through it (the log
-- probability of each recorded action, reward 1 a step) and updates with the port's
-- finish_episode after each; writes DIR/reinforcement_learning_nnrepl_losses.txt and
-- _nnrepl_final.safetensors. It also steps cartpole.lua from each episode's first state with
-- the recorded actions and fails unless it reaches the recorded states (within 1e-5).
-- --generate: where the files are missing, make them here (seed 0 init; 10 episodes sampled
-- from the initial policies on cartpole.lua), to test this side without PyTorch.
-- CPU only, as the examples (see the Python header).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../../scripts/examples/reinforcement_learning/?.lua;" .. package.path
local gym = require "cartpole"
local Categorical = torch.distributions.Categorical
local PORTS = { reinforce = require "reinforce_policy", actor_critic = require "actor_critic_policy" }
local PROGRAMS = { "reinforce", "actor_critic" }
local LR = { reinforce = 1e-2, actor_critic = 3e-2 }
local NAME, EPISODES, GAMMA = "reinforcement_learning", 10, 0.99

local dir, generate = nil, false
for _, a in ipairs({ ... }) do
  if a == "--generate" then generate = true
  elseif a == "cpu" or a == "cuda" then
    if a == "cuda" then print("note: the examples have no device; the parity run is on the CPU") end
  elseif not dir then dir = a
  else error("reinforcement_learning.lua: unknown argument " .. a, 0) end
end
if not dir then error("usage: nnrepl tests/gpu/examples/reinforcement_learning.lua DIR [cpu] [--generate]", 0) end

local function path(what) return dir .. "/" .. NAME .. "_" .. what end
local function exists(p)
  local f = io.open(p, "rb")
  if f then f:close() end
  return f ~= nil
end

-- one step of the example's select_action with the action given instead of drawn
local function select_recorded(prog, model, state, action)
  if prog == "reinforce" then
    local probs = model(state:unsqueeze(0))
    local m = Categorical(probs)
    table.insert(model.saved_log_probs, m:log_prob(action:view(1)))
  else
    local probs, state_value = model(state)
    local m = Categorical(probs)
    table.insert(model.saved_actions, PORTS.actor_critic.SavedAction(m:log_prob(action), state_value))
  end
end

-- --generate: episodes sampled from the initial policies on cartpole.lua
local function make_files()
  local env = gym.make("CartPole-v1")
  local data = {}
  for _, prog in ipairs(PROGRAMS) do
    torch.manual_seed(0)
    local model = PORTS[prog].Policy()
    model:eval()
    torch.save(model:state_dict(), path("init_" .. prog .. ".safetensors"))
    torch.no_grad(function()
      for k = 0, EPISODES - 1 do
        local state = env:reset({ seed = k })
        local states, actions = {}, {}
        for _ = 1, 9999 do
          table.insert(states, state)
          local probs = prog == "reinforce" and model(state:unsqueeze(0))[0] or model(state)
          local action = Categorical(probs):sample():item()
          table.insert(actions, action)
          local _, _, terminated, truncated
          state, _, terminated, truncated = env:step(action)
          if terminated or truncated then break end
        end
        data[prog .. ".states." .. k] = torch.stack(states)
        data[prog .. ".actions." .. k] = torch.tensor(actions, { dtype = torch.int64 })
      end
    end)
  end
  torch.save(data, path("data.safetensors"))
end

if generate and not exists(path("data.safetensors")) then make_files() end
local data = torch.load(path("data.safetensors"))

-- cartpole.lua against the recorded episodes
local env = gym.make("CartPole-v1")
local env_diff, env_steps = 0, 0
for _, prog in ipairs(PROGRAMS) do
  for k = 0, EPISODES - 1 do
    local states, actions = data[prog .. ".states." .. k], data[prog .. ".actions." .. k]
    env:reset()
    env.state = states[0]:double():tolist()
    for t = 0, states:size(0) - 2 do
      local obs, _, terminated, truncated = env:step(actions[t])
      if terminated or truncated then error(string.format("cartpole.lua: %s episode %d ends at step %d of %d",
        prog, k, t + 1, states:size(0)), 0) end
      env_diff = math.max(env_diff, (obs - states[t + 1]):abs():max():item())
      env_steps = env_steps + 1
    end
    local _, _, terminated, truncated = env:step(actions[-1])
    if not (terminated or truncated) then error(string.format("cartpole.lua: %s episode %d goes on after its last step",
      prog, k), 0) end
  end
end
print(string.format("cartpole.lua on the recorded episodes: max |state diff| %.3g over %d steps", env_diff, env_steps))

local losses, final = {}, {}
for _, prog in ipairs(PROGRAMS) do
  local port = PORTS[prog]
  local model = port.Policy()
  model:load_state_dict(torch.load(path("init_" .. prog .. ".safetensors")))
  model:eval()
  local optimizer = optim.Adam(model:parameters(), { lr = LR[prog] })
  for k = 0, EPISODES - 1 do
    local states, actions = data[prog .. ".states." .. k], data[prog .. ".actions." .. k]
    for t = 0, states:size(0) - 1 do
      select_recorded(prog, model, states[t], actions[t])
      table.insert(model.rewards, 1.0)
    end
    local loss = port.finish_episode(model, optimizer, GAMMA)
    table.insert(losses, loss)
    print(string.format("nnrepl %s episode %d: %d steps, loss %.6f", prog, k, states:size(0), loss))
  end
  for key, v in pairs(model:state_dict()) do final[prog .. "." .. key] = v end
end
local f = assert(io.open(path("nnrepl_losses.txt"), "w"))
for _, v in ipairs(losses) do f:write(string.format("%.17g\n", v)) end
f:close()
torch.save(final, path("nnrepl_final.safetensors"))
if env_diff > 1e-5 then error(string.format("cartpole.lua differs from the recorded episodes by %.3g", env_diff), 0) end
