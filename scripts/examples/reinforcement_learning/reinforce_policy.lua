-- reinforce.lua's Policy and finish_episode, in a module of their own so that
-- tests/gpu/examples/reinforcement_learning.lua trains with the very same code.
local M = {}

local Policy = nn.Module:extend("Policy")
M.Policy = Policy

function Policy:__init()
  self.affine1 = nn.Linear(4, 128)
  self.dropout = nn.Dropout({ p = 0.6 })
  self.affine2 = nn.Linear(128, 2)

  self.saved_log_probs = {}
  self.rewards = {}
end

function Policy:forward(x)
  x = self.affine1(x)
  x = self.dropout(x)
  x = F.relu(x)
  local action_scores = self.affine2(x)
  return F.softmax(action_scores, { dim = 1 })
end

local eps = torch.finfo(torch.float32).eps

-- One REINFORCE update from the episode in policy.rewards / policy.saved_log_probs, which it
-- then empties; returns the loss (a Python float in the original, which does not return it).
function M.finish_episode(policy, optimizer, gamma)
  local R = 0
  local policy_loss = {}
  local returns = {}
  for i = #policy.rewards, 1, -1 do
    R = policy.rewards[i] + gamma * R
    table.insert(returns, 1, R)
  end
  returns = torch.tensor(returns)
  returns = (returns - returns:mean()) / (returns:std() + eps)
  for i, log_prob in ipairs(policy.saved_log_probs) do
    table.insert(policy_loss, -log_prob * returns[i - 1])
  end
  optimizer:zero_grad()
  policy_loss = torch.cat(policy_loss):sum()
  policy_loss:backward()
  optimizer:step()
  policy.rewards = {}
  policy.saved_log_probs = {}
  return policy_loss:item()
end

return M
