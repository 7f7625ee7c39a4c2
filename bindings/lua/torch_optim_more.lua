-- More optimizers, with PyTorch's update rules, defaults and state names, written with tensor
-- ops (no fused kernel): Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD, LBFGS. The step count is kept as a number;
-- a loaded state whose step is a tensor (PyTorch's) is read as one. GradScaler takes its
-- unscale-then-check path for them (no device-side skip).
local torch = require "torch"
local U = require "nn_util"
local optim = torch.optim
local Optimizer = optim.Optimizer

local function nonneg(v, what)
  if type(v) ~= "number" or not (v >= 0) then U.errorf("Invalid %s: %s", what, tostring(v)) end
end

local function betas_ok(b)
  if type(b) ~= "table" or type(b[1]) ~= "number" or type(b[2]) ~= "number" then U.error("betas must be a list of two numbers") end
  for i = 1, 2 do
    if not (b[i] >= 0 and b[i] < 1) then U.errorf("Invalid beta parameter at index %d: %s", i - 1, tostring(b[i])) end
  end
end

-- class name with spec (U.parse's) and checks; step_param(p, grad, state, group) updates one parameter
local function define(name, spec, check, init_state, step_param)
  local cls = Optimizer:extend(name)
  cls._step_supports_amp_scaling = false
  cls._counts_steps = true
  function cls:__init(params, ...)
    local o = U.parse(name, spec, ...)
    check(o)
    Optimizer.__init(self, params, o)
  end
  function cls:_update(g)
    local _ <close> = torch.no_grad()
    for _, p in ipairs(g.params) do
      local grad = p.grad
      if grad ~= nil then
        if g.maximize then grad = -grad end
        local s = rawget(self.state, p)
        if s == nil then
          s = init_state(p)
          s.step = 0
          self.state[p] = s
        end
        if torch.is_tensor(s.step) then s.step = s.step:item() end
        s.step = s.step + 1
        step_param(p, grad, s, g)
      end
    end
  end
  optim[name] = cls
  return cls
end

local function zeros(p) return torch.zeros_like(p) end

local function check_adam_like(o)
  nonneg(o.lr, "learning rate")
  nonneg(o.eps, "epsilon value")
  betas_ok(o.betas)
  nonneg(o.weight_decay, "weight_decay value")
end

-- weight decay (L2 into the gradient, or decoupled into the parameter), then Adam's two moments
local function adam_moments(p, grad, s, g)
  if g.weight_decay ~= 0 then
    if g.decoupled_weight_decay then p:mul_(1 - g.lr * g.weight_decay) else grad = grad + p * g.weight_decay end
  end
  local b1, b2 = g.betas[1], g.betas[2]
  s.exp_avg:mul_(b1):add_(grad * (1 - b1))
  s.exp_avg_sq:mul_(b2):add_(grad * grad * (1 - b2))
  return grad
end
local common = { { "maximize", false }, { "foreach" }, { "capturable", false }, { "differentiable", false } }
local function spec_of(list)
  local out = {}
  for _, s in ipairs(list) do out[#out + 1] = s end
  for _, s in ipairs(common) do out[#out + 1] = s end
  return out
end

define("Adadelta", spec_of({ { "lr", 1.0 }, { "rho", 0.9 }, { "eps", 1e-6 }, { "weight_decay", 0 } }),
  function(o)
    nonneg(o.lr, "learning rate")
    if not (o.rho >= 0 and o.rho <= 1) then U.errorf("Invalid rho value: %s", tostring(o.rho)) end
    nonneg(o.eps, "epsilon value")
    nonneg(o.weight_decay, "weight_decay value")
  end,
  function(p) return { square_avg = zeros(p), acc_delta = zeros(p) } end,
  function(p, grad, s, g)
    if g.weight_decay ~= 0 then grad = grad + p * g.weight_decay end
    local rho = g.rho
    s.square_avg:mul_(rho):add_(grad * grad * (1 - rho))
    local delta = (s.acc_delta + g.eps):sqrt() / (s.square_avg + g.eps):sqrt() * grad
    s.acc_delta:mul_(rho):add_(delta * delta * (1 - rho))
    p:add_(delta * -g.lr)
  end)

define("Adamax", spec_of({ { "lr", 2e-3 }, { "betas", { 0.9, 0.999 } }, { "eps", 1e-8 }, { "weight_decay", 0 } }),
  check_adam_like,
  function(p) return { exp_avg = zeros(p), exp_inf = zeros(p) } end,
  function(p, grad, s, g)
    if g.weight_decay ~= 0 then grad = grad + p * g.weight_decay end
    local b1, b2 = g.betas[1], g.betas[2]
    s.exp_avg:mul_(b1):add_(grad * (1 - b1))
    s.exp_inf:copy_(torch.maximum(s.exp_inf * b2, grad:abs() + g.eps))
    p:add_(s.exp_avg / s.exp_inf * -(g.lr / (1 - b1 ^ s.step)))
  end)

define("NAdam", spec_of({ { "lr", 2e-3 }, { "betas", { 0.9, 0.999 } }, { "eps", 1e-8 }, { "weight_decay", 0 },
  { "momentum_decay", 4e-3 }, { "decoupled_weight_decay", false } }),
  function(o)
    check_adam_like(o)
    nonneg(o.momentum_decay, "momentum_decay value")
  end,
  function(p) return { mu_product = 1.0, exp_avg = zeros(p), exp_avg_sq = zeros(p) } end,
  function(p, grad, s, g)
    local t, b1, b2 = s.step, g.betas[1], g.betas[2]
    grad = adam_moments(p, grad, s, g)
    local mu = b1 * (1 - 0.5 * 0.96 ^ (t * g.momentum_decay))
    local mu_next = b1 * (1 - 0.5 * 0.96 ^ ((t + 1) * g.momentum_decay))
    if torch.is_tensor(s.mu_product) then s.mu_product = s.mu_product:item() end
    s.mu_product = s.mu_product * mu
    local denom = (s.exp_avg_sq / (1 - b2 ^ t)):sqrt() + g.eps
    p:add_(grad / denom * -(g.lr * (1 - mu) / (1 - s.mu_product)))
    p:add_(s.exp_avg / denom * -(g.lr * mu_next / (1 - s.mu_product * mu_next)))
  end)

define("RAdam", spec_of({ { "lr", 1e-3 }, { "betas", { 0.9, 0.999 } }, { "eps", 1e-8 }, { "weight_decay", 0 },
  { "decoupled_weight_decay", false } }),
  check_adam_like,
  function(p) return { exp_avg = zeros(p), exp_avg_sq = zeros(p) } end,
  function(p, grad, s, g)
    local t, b1, b2 = s.step, g.betas[1], g.betas[2]
    adam_moments(p, grad, s, g)
    local bc1, bc2 = 1 - b1 ^ t, 1 - b2 ^ t
    local rho_inf = 2 / (1 - b2) - 1
    local rho_t = rho_inf - 2 * t * b2 ^ t / bc2
    if rho_t > 5 then -- the variance is tractable: the rectified adaptive step
      local rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
      local adaptive = (s.exp_avg_sq:sqrt() + g.eps):reciprocal() * math.sqrt(bc2)
      p:add_(s.exp_avg * adaptive * -(g.lr / bc1 * rect))
    else
      p:add_(s.exp_avg * -(g.lr / bc1))
    end
  end)

define("Rprop", spec_of({ { "lr", 1e-2 }, { "etas", { 0.5, 1.2 } }, { "step_sizes", { 1e-6, 50 } } }),
  function(o)
    nonneg(o.lr, "learning rate")
    local e = o.etas
    if type(e) ~= "table" or not (0.0 < e[1] and e[1] < 1.0 and 1.0 < e[2]) then
      U.errorf("Invalid eta values: %s, %s", tostring(type(e) == "table" and e[1]), tostring(type(e) == "table" and e[2]))
    end
  end,
  function(p) return { prev = zeros(p) } end,
  function(p, grad, s, g)
    if s.step_size == nil then s.step_size = torch.full_like(p, g.lr) end
    local sign = (grad * s.prev):sign()
    local grew, shrank = sign:gt(0), sign:lt(0)
    local minus, plus = g.etas[1], g.etas[2]
    -- the step grows where the gradient kept its sign, shrinks where it flipped
    local factor = grew:to(p.dtype) * (plus - 1) + shrank:to(p.dtype) * (minus - 1) + 1
    s.step_size:mul_(factor):clamp_(g.step_sizes[1], g.step_sizes[2])
    grad = grad:masked_fill(shrank, 0) -- a flipped sign skips this step
    p:addcmul_(grad:sign(), s.step_size, { value = -1 })
    s.prev:copy_(grad)
  end)

define("ASGD", spec_of({ { "lr", 1e-2 }, { "lambd", 1e-4 }, { "alpha", 0.75 }, { "t0", 1e6 }, { "weight_decay", 0 } }),
  function(o)
    nonneg(o.lr, "learning rate")
    nonneg(o.weight_decay, "weight_decay value")
  end,
  function(p) return { eta = nil, mu = 1.0, ax = zeros(p) } end,
  function(p, grad, s, g)
    for _, k in ipairs({ "eta", "mu" }) do
      if torch.is_tensor(s[k]) then s[k] = s[k]:item() end
    end
    local eta = s.eta or g.lr
    if g.weight_decay ~= 0 then grad = grad + p * g.weight_decay end
    p:mul_(1 - g.lambd * eta)
    p:add_(grad * -eta)
    if s.mu ~= 1 then s.ax:add_((p - s.ax) * s.mu) else s.ax:copy_(p) end -- the averaged iterate
    s.eta = g.lr / (1 + g.lambd * g.lr * s.step) ^ g.alpha
    s.mu = 1 / math.max(1, s.step - g.t0)
  end)

-- ---- LBFGS ----

-- L-BFGS (PyTorch's algorithm, without a line search): step(closure) runs up to max_iter
-- iterations, calling closure() (which clears the gradients, computes the loss, runs backward
-- and returns the loss) for each new point; one parameter group.
local LBFGS = Optimizer:extend("LBFGS")
LBFGS._step_supports_amp_scaling = false
optim.LBFGS = LBFGS

function LBFGS:__init(params, ...)
  local o = U.parse("LBFGS", { { "lr", 1 }, { "max_iter", 20 }, { "max_eval" }, { "tolerance_grad", 1e-7 },
    { "tolerance_change", 1e-9 }, { "history_size", 100 }, { "line_search_fn" } }, ...)
  nonneg(o.lr, "learning rate")
  if o.max_eval == nil then o.max_eval = o.max_iter * 5 // 4 end
  if o.line_search_fn ~= nil then U.errorf("LBFGS: line_search_fn=%s is not supported (only None)", tostring(o.line_search_fn)) end
  Optimizer.__init(self, params, o)
  if #self.param_groups ~= 1 then U.error("LBFGS doesn't support per-parameter options (parameter groups)") end
end

function LBFGS:_flat_grad()
  local parts = {}
  for _, p in ipairs(self.param_groups[1].params) do
    local g = p.grad
    parts[#parts + 1] = g ~= nil and g:reshape(-1) or torch.zeros(p:numel(), { dtype = p.dtype, device = p.device })
  end
  return torch.cat(parts, 0)
end

-- params += t * d (d flat)
function LBFGS:_add_grad(t, d)
  local offset = 0
  for _, p in ipairs(self.param_groups[1].params) do
    local n = p:numel()
    p:add_(d:narrow(0, offset, n):view(p:size()) * t)
    offset = offset + n
  end
end

function LBFGS:step(closure)
  if type(closure) ~= "function" then U.error("LBFGS requires a closure: opt:step(function() ... return loss end)") end
  local g = self.param_groups[1]
  local lr, max_iter, max_eval = g.lr, g.max_iter, g.max_eval
  local tol_grad, tol_change, history = g.tolerance_grad, g.tolerance_change, g.history_size
  local state = rawget(self.state, g.params[1])
  if state == nil then
    state = {}
    self.state[g.params[1]] = state
  end
  state.func_evals, state.n_iter = state.func_evals or 0, state.n_iter or 0
  local eval = function() return torch.enable_grad(closure) end
  local orig_loss = eval()
  local loss = torch.is_tensor(orig_loss) and orig_loss:item() or orig_loss
  local current_evals = 1
  state.func_evals = state.func_evals + 1
  local _ <close> = torch.no_grad()
  local flat_grad = self:_flat_grad()
  if flat_grad:abs():max():item() <= tol_grad then return orig_loss end
  local d, t = state.d, state.t
  local old_dirs, old_stps, ro, H_diag = state.old_dirs, state.old_stps, state.ro, state.H_diag
  local prev_flat_grad, prev_loss = state.prev_flat_grad, state.prev_loss
  local n_iter = 0
  while n_iter < max_iter do
    n_iter = n_iter + 1
    state.n_iter = state.n_iter + 1
    if state.n_iter == 1 then
      d = -flat_grad
      old_dirs, old_stps, ro, H_diag = {}, {}, {}, 1
    else
      local y = flat_grad - prev_flat_grad
      local s = d * t
      local ys = y:dot(s):item()
      if ys > 1e-10 then
        if #old_dirs == history then
          table.remove(old_dirs, 1); table.remove(old_stps, 1); table.remove(ro, 1)
        end
        old_dirs[#old_dirs + 1], old_stps[#old_stps + 1], ro[#ro + 1] = y, s, 1 / ys
        H_diag = ys / y:dot(y):item()
      end
      local al = {}
      local q = -flat_grad
      for i = #old_dirs, 1, -1 do
        al[i] = old_stps[i]:dot(q):item() * ro[i]
        q = q - old_dirs[i] * al[i]
      end
      local r = q * H_diag
      for i = 1, #old_dirs do
        local be = old_dirs[i]:dot(r):item() * ro[i]
        r = r + old_stps[i] * (al[i] - be)
      end
      d = r
    end
    prev_flat_grad = flat_grad:clone()
    prev_loss = loss
    if state.n_iter == 1 then t = math.min(1, 1 / flat_grad:abs():sum():item()) * lr else t = lr end
    local gtd = flat_grad:dot(d):item()
    if gtd > -tol_change then break end
    local ls_evals = 0
    self:_add_grad(t, d)
    local opt_cond = false
    if n_iter ~= max_iter then
      loss = eval()
      loss = torch.is_tensor(loss) and loss:item() or loss
      flat_grad = self:_flat_grad()
      opt_cond = flat_grad:abs():max():item() <= tol_grad
      ls_evals = 1
    end
    current_evals = current_evals + ls_evals
    state.func_evals = state.func_evals + ls_evals
    if n_iter == max_iter or current_evals >= max_eval or opt_cond then break end
    if (d * t):abs():max():item() <= tol_change then break end
    if math.abs(loss - prev_loss) < tol_change then break end
  end
  state.d, state.t, state.old_dirs, state.old_stps, state.ro = d, t, old_dirs, old_stps, ro
  state.H_diag, state.prev_flat_grad, state.prev_loss = H_diag, prev_flat_grad, prev_loss
  return orig_loss
end

return optim
