-- reinforcement_q_learning's Transition, ReplayMemory, DQN and the body of optimize_model, in a
-- module of their own so that tests/gpu/tutorials/reinforcement_q_learning.lua trains with the
-- very same code (main.lua is the tutorial; read its header).
local random = require "random"

local M = {}

-- namedtuple('Transition', ('state', 'action', 'next_state', 'reward')); next_state nil is None
function M.Transition(state, action, next_state, reward)
  return { state = state, action = action, next_state = next_state, reward = reward }
end

-- a deque([], maxlen=capacity) of Transitions; sample is random.sample over the deque's order
-- (oldest first), drawing Python's numbers
local ReplayMemory = {}
ReplayMemory.__index = ReplayMemory
M.ReplayMemory = ReplayMemory

setmetatable(ReplayMemory, { __call = function(cls, capacity)
  return setmetatable({ memory = {}, capacity = capacity, first = 1 }, cls)
end })

-- Save a transition (the oldest goes once capacity is reached, as deque's maxlen)
function ReplayMemory:push(...)
  if #self.memory < self.capacity then
    table.insert(self.memory, M.Transition(...))
  else
    self.memory[self.first] = M.Transition(...)
    self.first = self.first % self.capacity + 1
  end
end

function ReplayMemory:sample(batch_size)
  local n = #self.memory
  local deque = table.move(self.memory, self.first, n, 1, {}) -- the ring from its oldest entry
  table.move(self.memory, 1, self.first - 1, n - self.first + 2, deque)
  return random.sample(deque, batch_size)
end

function ReplayMemory:__len() return #self.memory end

local DQN = nn.Module:extend("DQN")
M.DQN = DQN

function DQN:__init(n_observations, n_actions)
  self.layer1 = nn.Linear(n_observations, 128)
  self.layer2 = nn.Linear(128, 128)
  self.layer3 = nn.Linear(128, n_actions)
end

-- one state (to choose an action) or a batch (to optimize); returns {{left, right}, ...}
function DQN:forward(x)
  x = F.relu(self.layer1(x))
  x = F.relu(self.layer2(x))
  return self.layer3(x)
end

-- optimize_model after memory.sample: one AdamW step of policy_net towards the target net's
-- bootstrapped values on the batch `transitions`; returns the loss (the tutorial drops it)
function M.optimize_transitions(transitions, policy_net, target_net, optimizer, GAMMA, device)
  local BATCH_SIZE = #transitions
  -- Transition(*zip(*transitions)), the None next states left out
  local mask, next_states, states, actions, rewards = {}, {}, {}, {}, {}
  for i, t in ipairs(transitions) do
    mask[i] = t.next_state ~= nil
    if t.next_state ~= nil then table.insert(next_states, t.next_state) end
    states[i], actions[i], rewards[i] = t.state, t.action, t.reward
  end
  local non_final_mask = torch.tensor(mask, { device = device, dtype = torch.bool })
  local non_final_next_states = torch.cat(next_states)
  local state_batch = torch.cat(states)
  local action_batch = torch.cat(actions)
  local reward_batch = torch.cat(rewards)

  -- Q(s_t, a) for the actions taken
  local state_action_values = policy_net(state_batch):gather(1, action_batch)

  -- V(s_{t+1}) = max_a Q_target(s_{t+1}, a), 0 for final states
  local next_state_values = torch.zeros(BATCH_SIZE, { device = device })
  torch.no_grad(function()
    next_state_values[non_final_mask] = (target_net(non_final_next_states):max(1))
  end)
  local expected_state_action_values = (next_state_values * GAMMA) + reward_batch

  -- Huber loss
  local criterion = nn.SmoothL1Loss()
  local loss = criterion(state_action_values, expected_state_action_values:unsqueeze(1))

  optimizer:zero_grad()
  loss:backward()
  -- in-place gradient clipping
  nn.utils.clip_grad_value_(policy_net:parameters(), 100)
  optimizer:step()
  return loss:item()
end

-- the soft update of the target network's weights: θ′ ← τ θ + (1 − τ) θ′
function M.soft_update(target_net, policy_net, TAU)
  local target_net_state_dict = target_net:state_dict()
  local policy_net_state_dict = policy_net:state_dict()
  for key in pairs(policy_net_state_dict) do
    target_net_state_dict[key] = policy_net_state_dict[key] * TAU + target_net_state_dict[key] * (1 - TAU)
  end
  target_net:load_state_dict(target_net_state_dict)
end

return M
