-- pytorch/tutorials intermediate_source/reinforcement_q_learning.py in Lua: a DQN agent
-- (4-128-128-2 MLP, replay memory, epsilon-greedy, Huber loss, AdamW with amsgrad, soft target
-- update) learns CartPole-v1.
--
--   nnrepl scripts/tutorials/reinforcement_q_learning/main.lua [--num-episodes N] [--seed S]
--
-- Differences from the original: gymnasium has no Lua version, so CartPole-v1 is nnrepl's
-- scripts/examples/reinforcement_learning/cartpole.lua (the same constants, equations and
-- rules; no rendering). Python's `random` is nnrepl's `random` module, so random.random and
-- random.sample draw Python's numbers; env.action_space.sample() (numpy's generator in gymnasium)
-- is Lua's math.random, so runs still differ from Python's with the same seeds.
-- matplotlib is not available: plot_durations prints what the plot shows (the last episode's
-- duration and the mean of the last 100). --num-episodes overrides the episode count (the
-- tutorial's: 600 with a GPU, 50 without); --seed fixes the seeds (the tutorial's optional
-- seeding cell). Transition, ReplayMemory, DQN and optimize_model's body live in model.lua,
-- shared with the parity test (tests/gpu/tutorials/reinforcement_q_learning.lua).
local here = debug.getinfo(1, "S").source:match("^@(.*)[/\\]") or "."
package.path = here .. "/../../examples/reinforcement_learning/?.lua;" .. package.path
local argparse = require "argparse"
local random = require "random"
local gym = require "cartpole"
local model = require "model"

local parser = argparse.ArgumentParser({ description = "DQN on CartPole-v1" })
parser:add_argument("--num-episodes", { type = "int", help = "episodes to train (default: 600 on a GPU, 50 on the CPU)" })
parser:add_argument("--seed", { type = "int", help = "seed random, torch and the environment" })
local args = parser:parse_args({ ... })

local env = gym.make("CartPole-v1")

-- if GPU is to be used
local device = torch.device(torch.cuda.is_available() and "cuda" or "cpu")

-- reproducibility (the tutorial's commented-out seeding cell)
local seed = args.seed
if seed then
  random.seed(seed)
  math.randomseed(seed) -- env.action_space.seed(seed)
  torch.manual_seed(seed)
  env:reset({ seed = seed })
  if torch.cuda.is_available() then torch.cuda.manual_seed(seed) end
end

-- Replay Memory
local Transition = model.Transition
local ReplayMemory = model.ReplayMemory

-- Q-network
local DQN = model.DQN

-- Training: hyperparameters and utilities
local BATCH_SIZE = 128 -- transitions sampled from the replay buffer
local GAMMA = 0.99     -- discount factor
local EPS_START = 0.9  -- epsilon at the start
local EPS_END = 0.01   -- epsilon at the end
local EPS_DECAY = 2500 -- the exponential decay's time constant, in steps
local TAU = 0.005      -- update rate of the target network
local LR = 3e-4        -- AdamW's learning rate

-- Get number of actions from gym action space
local n_actions = 2
-- Get the number of state observations
local state, info = env:reset()
local n_observations = state:size(0)

local policy_net = DQN(n_observations, n_actions):to(device)
local target_net = DQN(n_observations, n_actions):to(device)
target_net:load_state_dict(policy_net:state_dict())

local optimizer = optim.AdamW(policy_net:parameters(), { lr = LR, amsgrad = true })
local memory = ReplayMemory(10000)

local steps_done = 0

local function select_action(state)
  local sample = random.random()
  local eps_threshold = EPS_END + (EPS_START - EPS_END) * math.exp(-1. * steps_done / EPS_DECAY)
  steps_done = steps_done + 1
  if sample > eps_threshold then
    return torch.no_grad(function()
      -- the index of the largest Q value of each row: the action with the larger expected reward
      return select(2, policy_net(state):max(1)):view(1, 1)
    end)
  else
    -- env.action_space.sample()
    return torch.tensor({ { math.random(0, n_actions - 1) } }, { device = device, dtype = torch.long })
  end
end

local episode_durations = {}

-- what the tutorial's plot shows: the durations, and their 100-episode mean once there are 100
local function plot_durations(show_result)
  local durations_t = torch.tensor(episode_durations, { dtype = torch.float })
  local line = string.format("%s episode %d: duration %d", show_result and "Result:" or "Training...",
    durations_t:size(0), episode_durations[#episode_durations])
  if durations_t:size(0) >= 100 then
    local means = durations_t:unfold(0, 100, 1):mean(1):view(-1)
    line = line .. string.format(", mean of the last 100 %.1f", means[-1]:item())
  end
  print(line)
end

local function optimize_model()
  if #memory < BATCH_SIZE then return end
  local transitions = memory:sample(BATCH_SIZE)
  return model.optimize_transitions(transitions, policy_net, target_net, optimizer, GAMMA, device)
end

local num_episodes
if torch.cuda.is_available() then num_episodes = 600 else num_episodes = 50 end
num_episodes = args.num_episodes or num_episodes

for i_episode = 0, num_episodes - 1 do
  -- Initialize the environment and get its state
  local state, info = env:reset()
  state = torch.tensor(state, { dtype = torch.float32, device = device }):unsqueeze(0)
  local t = 0
  while true do
    local action = select_action(state)
    local observation, reward, terminated, truncated = env:step(action:item())
    reward = torch.tensor({ reward }, { device = device })
    local done = terminated or truncated

    local next_state
    if not terminated then
      next_state = torch.tensor(observation, { dtype = torch.float32, device = device }):unsqueeze(0)
    end

    -- Store the transition in memory
    memory:push(state, action, next_state, reward)

    -- Move to the next state
    state = next_state

    -- Perform one step of the optimization (on the policy network)
    optimize_model()

    -- Soft update of the target network's weights
    model.soft_update(target_net, policy_net, TAU)

    if done then
      table.insert(episode_durations, t + 1)
      plot_durations()
      break
    end
    t = t + 1
  end
end

print("Complete")
plot_durations(true)
