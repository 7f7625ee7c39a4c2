-- nn.init: PyTorch's initialisers. Each fills the tensor in place under no_grad
-- and returns it; arguments are positional or a trailing keyword table with
-- PyTorch's names (nn.init.kaiming_uniform_(w, {a=math.sqrt(5)})).
local torch = require "torch"
local U = require "nn_util"

local init = {}

local function no_grad(fn, ...)
  local _ <close> = torch.no_grad()
  return fn(...)
end

local function check_tensor(fname, t)
  if not torch.is_tensor(t) then
    U.errorf("bad argument #1 to '%s' (tensor expected, got %s)", fname, U.typename(t))
  end
end

function init.calculate_gain(nonlinearity, param)
  local linear = {
    linear = true, conv1d = true, conv2d = true, conv3d = true, conv_transpose1d = true,
    conv_transpose2d = true, conv_transpose3d = true, sigmoid = true,
  }
  if linear[nonlinearity] then return 1 end
  if nonlinearity == "tanh" then return 5.0 / 3 end
  if nonlinearity == "relu" then return math.sqrt(2.0) end
  if nonlinearity == "leaky_relu" then
    local slope
    if param == nil then slope = 0.01
    elseif type(param) == "number" then slope = param
    else U.errorf("negative_slope %s not a valid number", U.pystr(param)) end
    return math.sqrt(2.0 / (1 + slope ^ 2))
  end
  if nonlinearity == "selu" then return 3.0 / 4 end
  U.errorf("Unsupported nonlinearity %s", tostring(nonlinearity))
end

-- fan_in = size(1) * receptive field, fan_out = size(0) * receptive field
function init._calculate_fan_in_and_fan_out(t)
  local d = t:dim()
  if d < 2 then
    U.error("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
  end
  local receptive = 1
  for i = 2, d - 1 do receptive = receptive * t:size(i) end
  return t:size(1) * receptive, t:size(0) * receptive
end

local function correct_fan(t, mode)
  if mode ~= "fan_in" and mode ~= "fan_out" then
    U.errorf("Mode %s not supported, please use one of ['fan_in', 'fan_out']", tostring(mode))
  end
  local fan_in, fan_out = init._calculate_fan_in_and_fan_out(t)
  return mode == "fan_in" and fan_in or fan_out
end

local function has_zero_dim(t)
  for i = 0, t:dim() - 1 do
    if t:size(i) == 0 then return true end
  end
  return false
end

function init.uniform_(...)
  local o = U.parse("uniform_", { { "tensor", U.REQUIRED }, { "a", 0.0 }, { "b", 1.0 }, { "generator" } }, ...)
  check_tensor("uniform_", o.tensor)
  return no_grad(function() return o.tensor:uniform_(o.a, o.b) end)
end

function init.normal_(...)
  local o = U.parse("normal_", { { "tensor", U.REQUIRED }, { "mean", 0.0 }, { "std", 1.0 }, { "generator" } }, ...)
  check_tensor("normal_", o.tensor)
  return no_grad(function() return o.tensor:normal_(o.mean, o.std) end)
end

-- Normal(mean, std) truncated to [a, b]: draws outside are drawn again.
function init.trunc_normal_(...)
  local o = U.parse("trunc_normal_",
    { { "tensor", U.REQUIRED }, { "mean", 0.0 }, { "std", 1.0 }, { "a", -2.0 }, { "b", 2.0 }, { "generator" } }, ...)
  local t = o.tensor
  check_tensor("trunc_normal_", t)
  return no_grad(function()
    local x = torch.empty(t.shape, { dtype = torch.float64 }):normal_(o.mean, o.std)
    for _ = 1, 100 do
      local bad = x:lt(o.a):logical_or(x:gt(o.b))
      if not bad:any():item() then break end
      x = torch.where(bad, torch.empty(t.shape, { dtype = torch.float64 }):normal_(o.mean, o.std), x)
    end
    return t:copy_(x:clamp(o.a, o.b))
  end)
end

function init.constant_(...)
  local o = U.parse("constant_", { { "tensor", U.REQUIRED }, { "val", U.REQUIRED } }, ...)
  check_tensor("constant_", o.tensor)
  return no_grad(function() return o.tensor:fill_(o.val) end)
end

function init.ones_(t)
  check_tensor("ones_", t)
  return no_grad(function() return t:fill_(1) end)
end

function init.zeros_(t)
  check_tensor("zeros_", t)
  return no_grad(function() return t:zero_() end)
end

function init.eye_(t)
  check_tensor("eye_", t)
  if t:dim() ~= 2 then U.error("Only tensors with 2 dimensions are supported") end
  return no_grad(function() return t:copy_(torch.eye(t:size(0), t:size(1))) end)
end

function init.xavier_uniform_(...)
  local o = U.parse("xavier_uniform_", { { "tensor", U.REQUIRED }, { "gain", 1.0 }, { "generator" } }, ...)
  check_tensor("xavier_uniform_", o.tensor)
  local fan_in, fan_out = init._calculate_fan_in_and_fan_out(o.tensor)
  local std = o.gain * math.sqrt(2.0 / (fan_in + fan_out))
  local a = math.sqrt(3.0) * std
  return no_grad(function() return o.tensor:uniform_(-a, a) end)
end

function init.xavier_normal_(...)
  local o = U.parse("xavier_normal_", { { "tensor", U.REQUIRED }, { "gain", 1.0 }, { "generator" } }, ...)
  check_tensor("xavier_normal_", o.tensor)
  local fan_in, fan_out = init._calculate_fan_in_and_fan_out(o.tensor)
  local std = o.gain * math.sqrt(2.0 / (fan_in + fan_out))
  return no_grad(function() return o.tensor:normal_(0.0, std) end)
end

local kaiming_spec = {
  { "tensor", U.REQUIRED }, { "a", 0 }, { "mode", "fan_in" }, { "nonlinearity", "leaky_relu" }, { "generator" },
}

local function kaiming_std(fname, o)
  check_tensor(fname, o.tensor)
  local fan = correct_fan(o.tensor, o.mode)
  local gain = init.calculate_gain(o.nonlinearity, o.a)
  return gain / math.sqrt(fan)
end

function init.kaiming_uniform_(...)
  local o = U.parse("kaiming_uniform_", kaiming_spec, ...)
  check_tensor("kaiming_uniform_", o.tensor)
  if has_zero_dim(o.tensor) then return o.tensor end -- PyTorch warns and leaves it
  local bound = math.sqrt(3.0) * kaiming_std("kaiming_uniform_", o)
  return no_grad(function() return o.tensor:uniform_(-bound, bound) end)
end

function init.kaiming_normal_(...)
  local o = U.parse("kaiming_normal_", kaiming_spec, ...)
  check_tensor("kaiming_normal_", o.tensor)
  if has_zero_dim(o.tensor) then return o.tensor end
  local std = kaiming_std("kaiming_normal_", o)
  return no_grad(function() return o.tensor:normal_(0.0, std) end)
end

-- Q of the QR decomposition of a normal matrix, by modified Gram-Schmidt in
-- float64 (the signs come out as PyTorch's Q * sign(diag(R)): R's diagonal is
-- positive). For rows < cols the transpose is orthogonalised.
function init.orthogonal_(...)
  local o = U.parse("orthogonal_", { { "tensor", U.REQUIRED }, { "gain", 1 }, { "generator" } }, ...)
  local t = o.tensor
  check_tensor("orthogonal_", t)
  if t:dim() < 2 then U.error("Only tensors with 2 or more dimensions are supported") end
  if t:numel() == 0 then return t end
  local rows = t:size(0)
  local cols = t:numel() // rows
  local flat = torch.empty(rows, cols, { dtype = torch.float64 }):normal_(0, 1)
  if rows < cols then flat = flat:t() end
  local a = flat:contiguous():t():contiguous():tolist() -- a[j] = column j
  local m, n = #a[1], #a -- m >= n
  for j = 1, n do
    local v = a[j]
    for _ = 1, 2 do -- twice, for accuracy
      for k = 1, j - 1 do
        local q, dot = a[k], 0.0
        for i = 1, m do dot = dot + q[i] * v[i] end
        for i = 1, m do v[i] = v[i] - dot * q[i] end
      end
    end
    local norm = 0.0
    for i = 1, m do norm = norm + v[i] * v[i] end
    norm = math.sqrt(norm)
    for i = 1, m do v[i] = v[i] / norm end
  end
  local q = torch.tensor(a, { dtype = torch.float64 }):t() -- [m, n]
  if rows < cols then q = q:t() end
  return no_grad(function()
    t:view(rows, cols):copy_(q:mul(o.gain))
    return t
  end)
end

return init
