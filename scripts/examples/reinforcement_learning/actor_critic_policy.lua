-- actor_critic.lua's Policy (actor and critic in one model), SavedAction and finish_episode,
-- in a module of their own so that tests/gpu/examples/reinforcement_learning.lua trains with
-- the very same code.
local M = {}

-- namedtuple('SavedAction', ['log_prob', 'value'])
function M.SavedAction(log_prob, value)
  return { log_prob = log_prob, value = value }
end

local Policy = nn.Module:extend("Policy")
M.Policy = Policy

function Policy:__init()
  self.affine1 = nn.Linear(4, 128)

  -- the actor's head: a score per action
  self.action_head = nn.Linear(128, 2)

  -- the critic's head: the state's value
  self.value_head = nn.Linear(128, 1)

  -- what the episode saved for the update
  self.saved_actions = {}
  self.rewards = {}
end

-- returns the action probabilities (actor) and the state's value (critic)
function Policy:forward(x)
  x = F.relu(self.affine1(x))
  local action_prob = F.softmax(self.action_head(x), { dim = -1 })
  local state_values = self.value_head(x)
  return action_prob, state_values
end

local eps = torch.finfo(torch.float32).eps

-- One actor-critic update from the episode in model.rewards / model.saved_actions, which it
-- then empties: the actor's loss weighs each log probability by its advantage (discounted,
-- normalised return minus the critic's value), the critic's is smooth L1 to the return.
-- Returns the loss (the original does not return it).
function M.finish_episode(model, optimizer, gamma)
  local R = 0
  local saved_actions = model.saved_actions
  local policy_losses = {}
  local value_losses = {}
  local returns = {}

  for i = #model.rewards, 1, -1 do
    R = model.rewards[i] + gamma * R
    table.insert(returns, 1, R)
  end

  returns = torch.tensor(returns)
  returns = (returns - returns:mean()) / (returns:std() + eps)

  for i, saved in ipairs(saved_actions) do
    local log_prob, value, R = saved.log_prob, saved.value, returns[i - 1]
    local advantage = R - value:item()
    table.insert(policy_losses, -log_prob * advantage)
    table.insert(value_losses, F.smooth_l1_loss(value, torch.tensor({ R })))
  end

  optimizer:zero_grad()
  local loss = torch.stack(policy_losses):sum() + torch.stack(value_losses):sum()
  loss:backward()
  optimizer:step()

  model.rewards = {}
  model.saved_actions = {}
  return loss:item()
end

return M
