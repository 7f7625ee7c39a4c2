-- pytorch/examples reinforcement_learning/actor_critic.py in Lua: a one-step-return
-- actor-critic on CartPole-v1, one shared 4-128 layer with an action head (the actor) and a
-- value head (the critic), Adam lr 3e-2, until the running reward passes the environment's
-- threshold (475).
--
--   nnrepl scripts/examples/reinforcement_learning/actor_critic.lua [--gamma 0.99] [--seed 543]
--       [--log-interval 10]
--
-- Differences from the original: gymnasium has no Lua version, so CartPole-v1 is
-- cartpole.lua beside this file (the same constants, equations and rules; its reset noise
-- comes from a torch.Generator, so a seed gives other episodes than in Python); --render is
-- accepted but rendering is not supported (an error says so). The model, SavedAction and the
-- update (finish_episode) live in actor_critic_policy.lua, shared with the parity test.
local argparse = require "argparse"
local gym = require "cartpole"
local pyfloat = require("nn_util").pyfloat -- Python's repr of a float, for f"{x}"
local actor_critic = require "actor_critic_policy"
local Categorical = torch.distributions.Categorical

local parser = argparse.ArgumentParser({ description = "PyTorch actor-critic example" })
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


local SavedAction = actor_critic.SavedAction
local Policy = actor_critic.Policy

local model = Policy()
local optimizer = optim.Adam(model:parameters(), { lr = 3e-2 })


local function select_action(state)
  state = state:float()
  local probs, state_value = model(state)

  -- a categorical distribution over the two actions, and one draw from it
  local m = Categorical(probs)
  local action = m:sample()

  -- kept for the update at the end of the episode
  table.insert(model.saved_actions, SavedAction(m:log_prob(action), state_value))

  -- 0: push left, 1: push right
  return action:item()
end


local function finish_episode()
  actor_critic.finish_episode(model, optimizer, args.gamma)
end


local function main()
  local running_reward = 10

  -- episodes until solved
  for i_episode = 1, math.huge do

    -- a new episode
    local state = env:reset()
    local ep_reward = 0

    -- at most 9999 steps, so that learning cannot loop forever
    local t = 1
    while t < 10000 do

      -- the policy picks the action
      local action = select_action(state)

      -- the environment takes it
      local reward, terminated, truncated
      state, reward, terminated, truncated = env:step(action)

      table.insert(model.rewards, reward)
      ep_reward = ep_reward + reward
      if terminated or truncated then
        break
      end
      t = t + 1
    end

    -- exponential moving average of the episode rewards
    running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward

    -- the update
    finish_episode()

    if i_episode % args.log_interval == 0 then
      print(string.format("Episode %d\tLast reward: %.2f\tAverage reward: %.2f", i_episode, ep_reward, running_reward))
    end

    -- solved when the running reward passes the threshold
    if running_reward > env.spec.reward_threshold then
      print(string.format("Solved! Running reward is now %s and the last episode runs to %d time steps!",
        pyfloat(running_reward), t))
      break
    end
  end
end


main()
