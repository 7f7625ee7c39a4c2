-- The classic cart-pole system (Barto, Sutton & Anderson 1983) with gymnasium's CartPole-v1
-- constants and rules, for the reinforcement_learning ports (gym has no Lua version):
--
--   local gym = require "cartpole"
--   local env = gym.make("CartPole-v1")
--   local state, info = env:reset({seed = 543})    -- state: float32 tensor {4}
--   local state, reward, terminated, truncated, info = env:step(action)   -- action 0 or 1
--   env.spec.reward_threshold                      -- 475
--
-- The observation is (cart position, cart velocity, pole angle, pole angular velocity).
-- reset draws each component uniformly in [-0.05, 0.05]; step pushes the cart left (0) or
-- right (1) with a force of 10 N and advances the equations of motion by one Euler step of
-- 0.02 s. An episode terminates when the angle leaves +-12 degrees or the cart leaves +-2.4,
-- and is truncated after 500 steps (gym's TimeLimit wrapper). Every step gives reward 1,
-- including the one that terminates; stepping on after termination gives 0 and a warning.
-- The internal state is float64 (env.state, a table of 4 numbers, may be set, like gym's
-- env.unwrapped.state); observations are float32, as gym's.
-- Difference from gym: the reset noise comes from a torch.Generator seeded with `seed`, not
-- numpy's PCG64, so the same seed gives other start states than in Python; an unseeded first
-- reset takes a non-deterministic seed, and later resets continue the stream, as in gym.
-- Rendering is not supported (render_mode "human" or "rgb_array" is an error).
local M = {}

local GRAVITY, MASSCART, MASSPOLE = 9.8, 1.0, 0.1
local TOTAL_MASS = MASSPOLE + MASSCART
local LENGTH = 0.5 -- half the pole's length
local POLEMASS_LENGTH = MASSPOLE * LENGTH
local FORCE_MAG, TAU = 10.0, 0.02
local THETA_THRESHOLD = 12 * 2 * math.pi / 360
local X_THRESHOLD = 2.4

local CartPoleEnv = {}
CartPoleEnv.__index = CartPoleEnv
CartPoleEnv.__name = "CartPoleEnv"
M.CartPoleEnv = CartPoleEnv

local function observation(self)
  return torch.tensor(self.state, { dtype = torch.float32 })
end

function CartPoleEnv:reset(opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "seed" then error("CartPoleEnv:reset: unknown option '" .. tostring(k) .. "' (only seed)", 2) end
  end
  if opts.seed ~= nil then
    if math.type(opts.seed) ~= "integer" then error("CartPoleEnv:reset: seed must be an integer", 2) end
    self.np_random:manual_seed(opts.seed)
    self.seeded = true
  elseif not self.seeded then
    self.np_random:seed()
    self.seeded = true
  end
  local s = torch.empty(4, { dtype = torch.float64 }):uniform_(-0.05, 0.05, { generator = self.np_random })
  self.state = s:tolist()
  self.steps_beyond_terminated = nil
  self.elapsed_steps = 0
  return observation(self), {}
end

function CartPoleEnv:step(action)
  if self.state == nil then error("Cannot call env:step() before calling env:reset()", 2) end
  if torch.is_tensor(action) then action = action:item() end
  if action ~= 0 and action ~= 1 then
    error(string.format("CartPoleEnv:step: invalid action %s (the actions are 0: push left, 1: push right)",
      tostring(action)), 2)
  end
  local x, x_dot, theta, theta_dot = table.unpack(self.state)
  local force = action == 1 and FORCE_MAG or -FORCE_MAG
  local costheta, sintheta = math.cos(theta), math.sin(theta)
  local temp = (force + POLEMASS_LENGTH * theta_dot * theta_dot * sintheta) / TOTAL_MASS
  local thetaacc = (GRAVITY * sintheta - costheta * temp)
    / (LENGTH * (4.0 / 3.0 - MASSPOLE * costheta * costheta / TOTAL_MASS))
  local xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS
  x = x + TAU * x_dot
  x_dot = x_dot + TAU * xacc
  theta = theta + TAU * theta_dot
  theta_dot = theta_dot + TAU * thetaacc
  self.state = { x, x_dot, theta, theta_dot }

  local terminated = x < -X_THRESHOLD or x > X_THRESHOLD or theta < -THETA_THRESHOLD or theta > THETA_THRESHOLD
  local reward = 1.0
  if terminated then
    if self.steps_beyond_terminated == nil then
      self.steps_beyond_terminated = 0
    else
      if self.steps_beyond_terminated == 0 then
        io.stderr:write("WARN: You are calling 'step()' even though this environment has already returned " ..
          "terminated = true. You should always call 'reset()' once you receive 'terminated = true'\n")
      end
      self.steps_beyond_terminated = self.steps_beyond_terminated + 1
      reward = 0.0
    end
  end
  self.elapsed_steps = self.elapsed_steps + 1
  local truncated = self.elapsed_steps >= self.spec.max_episode_steps
  return observation(self), reward, terminated, truncated, {}
end

function CartPoleEnv:render()
  error("CartPoleEnv:render: rendering is not supported in nnrepl", 2)
end

function CartPoleEnv:close() end

-- gym.make("CartPole-v1", {render_mode = nil}); max_episode_steps overrides the 500 steps.
function M.make(id, opts)
  if id ~= "CartPole-v1" then
    error("cartpole.make: unknown environment '" .. tostring(id) .. "' (only CartPole-v1 is here)", 2)
  end
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "render_mode" and k ~= "max_episode_steps" then
      error("cartpole.make: unknown option '" .. tostring(k) .. "'", 2)
    end
  end
  if opts.render_mode ~= nil then
    error("cartpole.make: render_mode '" .. tostring(opts.render_mode) ..
      "' is not supported: nnrepl has no display; run without rendering", 2)
  end
  return setmetatable({
    spec = { id = id, reward_threshold = 475.0, max_episode_steps = opts.max_episode_steps or 500 },
    np_random = torch.Generator(),
    seeded = false,
  }, CartPoleEnv)
end

return M
