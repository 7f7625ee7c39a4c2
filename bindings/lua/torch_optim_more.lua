-- More optimizers, with PyTorch's update rules, defaults and state names, written with tensor
-- ops (no fused kernel): Adadelta, Adamax, NAdam, RAdam, Rprop, ASGD, Adafactor, Muon, LBFGS.
-- SparseAdam is refused (nnrepl has no sparse gradients). The step count is kept as a number;
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

-- class name with spec (U.parse's) and checks; step_param(p, grad, state, group) updates one
-- parameter; no_step: the state has no step count (Muon's)
local function define(name, spec, check, init_state, step_param, no_step)
  local cls = Optimizer:extend(name)
  cls._step_supports_amp_scaling = false
  cls._counts_steps = not no_step
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
          s = init_state(p, grad)
          if not no_step then s.step = 0 end
          self.state[p] = s
        end
        if not no_step then
          if torch.is_tensor(s.step) then s.step = s.step:item() end
          s.step = s.step + 1
        end
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

-- Adafactor (PyTorch's variant): lr caps the relative step size and scales the decoupled
-- weight decay; a parameter of two or more dims keeps row and column means of g^2 over its last
-- two dims instead of a full second moment; eps = {eps1 (nil: the dtype's machine epsilon), eps2}.
local function real_param(name, p)
  if p:is_complex() then U.errorf("%s does not support complex parameters", name) end
end

-- PyTorch's Adafactor takes foreach and maximize only (no capturable, differentiable)
define("Adafactor", { { "lr", 1e-2 }, { "beta2_decay", -0.8 }, { "eps", { nil, 1e-3 } }, { "d", 1.0 }, { "weight_decay", 0.0 },
  { "foreach" }, { "maximize", false } },
  function(o)
    nonneg(o.lr, "learning rate")
    if type(o.beta2_decay) ~= "number" or not (o.beta2_decay <= 0) then U.errorf("beta2_decay should be <= 0 but is: %s", tostring(o.beta2_decay)) end
    local e = o.eps
    if type(e) ~= "table" then U.error("eps must be a list {eps1 or nil, eps2}") end
    if e[1] ~= nil and not (type(e[1]) == "number" and e[1] >= 0) then U.errorf("epsilon1 should be >= 0 but is: %s", tostring(e[1])) end
    if not (type(e[2]) == "number" and e[2] >= 0) then U.errorf("epsilon2 should be >= 0 but is: %s", tostring(e[2])) end
    if not (type(o.d) == "number" and o.d >= 1) then U.errorf("Clipping threshold d should be >= 1 but is: %s", tostring(o.d)) end
    if not (type(o.weight_decay) == "number" and o.weight_decay >= 0) then U.errorf("weight_decay should be >= 0 but is: %s", tostring(o.weight_decay)) end
  end,
  function(p, grad)
    real_param("Adafactor", p)
    if grad:dim() < 2 then return { variance = zeros(grad) } end
    local rows, cols = grad:size():totable(), grad:size():totable()
    rows[#rows], cols[#cols - 1] = 1, 1
    return { row_var = grad:new_zeros(rows), col_var = grad:new_zeros(cols) }
  end,
  function(p, grad, s, g)
    local t = s.step
    local eps1, eps2 = g.eps[1] or torch.finfo(p.dtype).eps, g.eps[2]
    local fresh = t ^ g.beta2_decay -- 1 - beta2_t: the new squares' weight
    local alpha = math.max(eps2, p:norm():item() / math.sqrt(p:numel())) * math.min(g.lr, 1 / math.sqrt(t))
    if g.weight_decay ~= 0 then p:mul_(1 - g.lr * g.weight_decay) end
    local var
    if grad:dim() >= 2 then
      local sq = grad * grad
      s.row_var:lerp_(sq:mean(-1, true), fresh)
      s.col_var:lerp_(sq:mean(-2, true), fresh)
      var = s.row_var:matmul(s.col_var):div_(s.row_var:mean(-2, true):clamp_(eps1))
    else
      s.variance:lerp_(grad * grad, fresh)
      var = s.variance:clone()
    end
    local u = var:clamp_(eps1 * eps1):rsqrt_():mul_(grad)
    local denom = math.max(1.0, u:norm():item() / (math.sqrt(u:numel()) * g.d))
    p:add_(u, { alpha = -alpha / denom })
  end)

-- Muon, for 2-D parameters: momentum (Nesterov by default), the update orthogonalised by a
-- quintic Newton-Schulz iteration in bfloat16, decoupled weight decay, and the learning rate
-- scaled for the matrix's shape (adjust_lr_fn "original": sqrt(max(1, rows / cols));
-- "match_rms_adamw": 0.2 sqrt(max(rows, cols))).
local function muon_orthogonalize(G, coeffs, steps, eps, use_addmm)
  if steps >= 100 then U.error("Number of steps must be less than 100 for computational efficiency") end
  if G:dim() ~= 2 then U.error("Input tensor gradient must be a 2D matrix") end
  if type(coeffs) ~= "table" or #coeffs ~= 3 then U.error("Coefficients must be a tuple of exactly 3 values") end
  local a, b, c = coeffs[1], coeffs[2], coeffs[3]
  local tall = G:size(0) > G:size(1)
  local X = G:bfloat16()
  if tall then X = X:t() end
  X = X / X:norm():clamp(eps)
  for _ = 1, steps do
    local A = X:mm(X:t())
    if use_addmm then
      X = torch.addmm(X, torch.addmm(A, A, A, { beta = b, alpha = c }), X, { beta = a })
    else
      X = X * a + (A * b + A:mm(A) * c):mm(X)
    end
  end
  return tall and X:t() or X
end

local Muon = define("Muon", { { "lr", 1e-3 }, { "weight_decay", 0.1 }, { "momentum", 0.95 }, { "nesterov", true },
  { "ns_coefficients", { 3.4445, -4.7750, 2.0315 } }, { "eps", 1e-7 }, { "ns_steps", 5 }, { "adjust_lr_fn" }, { "use_addmm", false } },
  function(o)
    if not (type(o.lr) == "number" and o.lr >= 0) then U.errorf("Learning rate should be >= 0 but is: %s", tostring(o.lr)) end
    if not (type(o.momentum) == "number" and o.momentum >= 0) then U.errorf("momentum should be >= 0 but is: %s", tostring(o.momentum)) end
    if not (type(o.weight_decay) == "number" and o.weight_decay >= 0) then U.errorf("weight decay should be >= 0 but is: %s", tostring(o.weight_decay)) end
    local f = o.adjust_lr_fn
    if f ~= nil and f ~= "original" and f ~= "match_rms_adamw" then U.errorf("Adjust learning rate function %s is not supported", tostring(f)) end
  end,
  function(p, grad)
    real_param("Muon", p)
    return { momentum_buffer = zeros(grad) }
  end,
  function(p, grad, s, g)
    if grad:dim() ~= 2 then U.error("Param gradient must be a 2D matrix") end
    local buf, m = s.momentum_buffer, g.momentum
    buf:lerp_(grad, 1 - m)
    local update = muon_orthogonalize(g.nesterov and grad:lerp(buf, m) or buf, g.ns_coefficients, g.ns_steps, g.eps, g.use_addmm)
    local rows, cols = p:size(0), p:size(1)
    local ratio = (g.adjust_lr_fn == nil or g.adjust_lr_fn == "original") and math.sqrt(math.max(1, rows / cols)) or 0.2 * math.sqrt(math.max(rows, cols))
    p:mul_(1 - g.lr * g.weight_decay)
    p:add_(update, { alpha = -(g.lr * ratio) }) -- in the param's dtype, as PyTorch's add_
  end, true)
Muon._orthogonalize = muon_orthogonalize

local muon_init = Muon.__init
function Muon:__init(params, ...)
  muon_init(self, params, ...)
  for _, g in ipairs(self.param_groups) do
    for _, p in ipairs(g.params) do
      if p:dim() ~= 2 then U.errorf("Muon only supports 2D parameters whereas we found a parameter with size: %s", tostring(p:size())) end
    end
  end
end

-- SparseAdam updates only the rows a sparse gradient touches; nnrepl's gradients are dense.
local SparseAdam = Optimizer:extend("SparseAdam")
function SparseAdam:__init()
  U.error("SparseAdam needs sparse gradients, which nnrepl does not have (nn.Embedding(sparse=true) gives dense ones): use optim.Adam or optim.AdamW")
end
optim.SparseAdam = SparseAdam

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

-- params += t * d (d flat), with add_'s alpha as PyTorch's _add_grad
function LBFGS:_add_grad(t, d)
  local offset = 0
  for _, p in ipairs(self.param_groups[1].params) do
    local n = p:numel()
    p:add_(d:narrow(0, offset, n):view(p:size()), { alpha = t })
    offset = offset + n
  end
end

local function num(x) return torch.is_tensor(x) and x:item() or x end

-- The scalars ys, ro, H_diag, al, be and the first step size stay 0-d tensors of the
-- parameters' dtype, as in PyTorch, so float32 rounds them as PyTorch does.
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
  local loss = num(orig_loss)
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
      local ys = y:dot(s)
      if ys:item() > 1e-10 then
        if #old_dirs == history then
          table.remove(old_dirs, 1); table.remove(old_stps, 1); table.remove(ro, 1)
        end
        old_dirs[#old_dirs + 1], old_stps[#old_stps + 1], ro[#ro + 1] = y, s, ys:reciprocal()
        H_diag = ys / y:dot(y)
      end
      local al = {}
      local q = -flat_grad
      for i = #old_dirs, 1, -1 do
        al[i] = old_stps[i]:dot(q) * ro[i]
        q:add_(old_dirs[i], { alpha = -al[i]:item() })
      end
      d = q * H_diag
      for i = 1, #old_dirs do
        local be = old_dirs[i]:dot(d) * ro[i]
        d:add_(old_stps[i], { alpha = (al[i] - be):item() })
      end
    end
    if prev_flat_grad == nil then prev_flat_grad = flat_grad:clone() else prev_flat_grad:copy_(flat_grad) end
    prev_loss = loss
    if state.n_iter == 1 then
      -- PyTorch's min(1.0, 1.0 / sum) * lr: a 0-d tensor unless the minimum is 1.0
      local inv = flat_grad:abs():sum():reciprocal()
      t = inv:item() < 1 and inv * lr or lr
    else
      t = lr
    end
    local gtd = flat_grad:dot(d):item()
    if gtd > -tol_change then break end
    local ls_evals = 0
    self:_add_grad(num(t), d)
    local opt_cond = false
    if n_iter ~= max_iter then
      loss = num(eval())
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
