-- pytorch/examples reinforcement_learning/reinforce.py in Lua: REINFORCE (Monte-Carlo policy
-- gradient) on CartPole-v1, a 4-128-2 policy with dropout, Adam lr 1e-2, until the running
-- reward passes the environment's threshold (475).
--
--   nnrepl scripts/examples/reinforcement_learning/reinforce.lua [--gamma 0.99] [--seed 543]
--       [--log-interval 10]
--
-- Differences from the original: gymnasium has no Lua version, so CartPole-v1 is
-- cartpole.lua beside this file (the same constants, equations and rules; its reset noise
-- comes from a torch.Generator, so a seed gives other episodes than in Python); --render is
-- accepted but rendering is not supported (an error says so). The policy and the update
-- (finish_episode) live in reinforce_policy.lua, shared with the parity test.
local argparse = require "argparse"
local gym = require "cartpole"
local pyfloat = require("nn_util").pyfloat -- Python's repr of a float, for f"{x}"
local reinforce = require "reinforce_policy"
local Categorical = torch.distributions.Categorical

local parser = argparse.ArgumentParser({ description = "PyTorch REINFORCE example" })
parser:add_argument("--gamma", { type = "float", default = 0.99, metavar = "G",
  help = "discount factor (default: 0.99)" })
parser:add_argument("--seed", { type = "int", default = 543, metavar = "N",
  help = "random seed (default: 543)" })
parser:add_argument("--render", { action = "store_true",
  help = "render the environment" })
parser:add_argument("--log-interval", { type = "int", default = 10, metavar = "N",
  help = "interval between training status logs (default: 10)" })
local args = parser:parse_args({ ... })


local render_mode = args.render and "human" or nil
local env = gym.make("CartPole-v1", { render_mode = render_mode })
env:reset({ seed = args.seed })
torch.manual_seed(args.seed)


local Policy = reinforce.Policy

local policy = Policy()
local optimizer = optim.Adam(policy:parameters(), { lr = 1e-2 })


local function select_action(state)
  state = state:float():unsqueeze(0)
  local probs = policy(state)
  local m = Categorical(probs)
  local action = m:sample()
  table.insert(policy.saved_log_probs, m:log_prob(action))
  return action:item()
end


local function finish_episode()
  reinforce.finish_episode(policy, optimizer, args.gamma)
end


local function main()
  local running_reward = 10
  for i_episode = 1, math.huge do
    local state = env:reset()
    local ep_reward = 0
    local t = 1
    while t < 10000 do -- don't loop forever while learning
      local action = select_action(state)
      local reward, terminated, truncated
      state, reward, terminated, truncated = env:step(action)
      if args.render then
        env:render()
      end
      table.insert(policy.rewards, reward)
      ep_reward = ep_reward + reward
      if terminated or truncated then
        break
      end
      t = t + 1
    end

    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
    finish_episode()
    if i_episode % args.log_interval == 0 then
      print(string.format("Episode %d\tLast reward: %.2f\tAverage reward: %.2f", i_episode, ep_reward, running_reward))
    end
    if running_reward > env.spec.reward_threshold then
      print(string.format("Solved! Running reward is now %s and the last episode runs to %d time steps!",
        pyfloat(running_reward), t))
      break
    end
  end
end


main()
