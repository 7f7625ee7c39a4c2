-- nn.utils.weight_norm / remove_weight_norm and nn.utils.spectral_norm / remove_spectral_norm,
-- as PyTorch's (the hook forms): the weight becomes a plain attribute recomputed before each
-- forward from new parameters (name_g and name_v; name_orig with buffers name_u and name_v for
-- the spectral norm, whose power iteration runs once per training forward).
local torch = require "torch"
local U = require "nn_util"
local Parameter = require "nn_parameter"

local M = {}

-- a reparametrisation's record on the module (kind: "weight_norm" or "spectral_norm"), kept
-- as a raw field so it is not registered as an attribute
local function remember(module, kind, name, entry)
  local reg = rawget(module, "_" .. kind) or {}
  rawset(module, "_" .. kind, reg)
  reg[name] = entry
end

-- takes the record back off (its hook removed), or fails with PyTorch's message
local function forget(module, kind, name)
  local reg = rawget(module, "_" .. kind)
  local entry = reg and reg[name]
  if not entry then U.errorf("%s of '%s' not found in %s", kind, name, tostring(module:_get_name())) end
  entry.handle.remove()
  reg[name] = nil
  return entry
end

-- the 2-norm of w over every dim but `dim` (kept, size 1 elsewhere); dim nil or -1: the whole tensor
local function norm_except_dim(w, dim)
  if dim == nil or dim == -1 then return (w * w):sum():sqrt() end
  local dims = {}
  for d = 0, w:dim() - 1 do if d ~= dim then dims[#dims + 1] = d end end
  if #dims == 0 then return w:abs() end
  return (w * w):sum(dims, true):sqrt()
end

local function weight_of_norm(m, name, dim)
  local g, v = m[name .. "_g"], m[name .. "_v"]
  return v * (g / norm_except_dim(v, dim))
end

function M.weight_norm(module, name, dim)
  name = name or "weight"
  if dim == nil then dim = 0 end
  local w = module[name]
  if not Parameter.is(w) then U.errorf("weight_norm: %s is not a parameter of the module", name) end
  if rawget(module, "_weight_norm") and rawget(module, "_weight_norm")[name] then
    U.errorf("Cannot register two weight_norm hooks on the same parameter %s", name)
  end
  if dim < -1 then dim = dim + w:dim() end
  module[name] = nil
  module:register_parameter(name .. "_g", Parameter(norm_except_dim(w, dim):detach()))
  module:register_parameter(name .. "_v", Parameter(w:detach()))
  module[name] = weight_of_norm(module, name, dim)
  local handle = module:register_forward_pre_hook(function(m) m[name] = weight_of_norm(m, name, dim) end)
  remember(module, "weight_norm", name, { handle = handle, dim = dim })
  return module
end

function M.remove_weight_norm(module, name)
  name = name or "weight"
  local h = forget(module, "weight_norm", name)
  local w = weight_of_norm(module, name, h.dim):detach()
  module[name .. "_g"], module[name .. "_v"] = nil, nil
  module[name] = nil
  module:register_parameter(name, Parameter(w))
  return module
end

-- ---- spectral norm ----

local function normalize(v, eps) return v / v:norm():clamp(eps) end

-- weight as a matrix: dim first, the rest flattened
local function as_matrix(w, dim)
  if dim ~= 0 then w = w:movedim(dim, 0) end
  return w:reshape(w:size(0), -1)
end

local function spectral_weight(m, name, sn, training)
  local w = m[name .. "_orig"]
  local mat = as_matrix(w, sn.dim)
  local u, v = m[name .. "_u"], m[name .. "_v"]
  if training then
    local _ <close> = torch.no_grad()
    for _ = 1, sn.n_power_iterations do
      v:copy_(normalize(mat:t():matmul(u), sn.eps))
      u:copy_(normalize(mat:matmul(v), sn.eps))
    end
  end
  local sigma = u:dot(mat:matmul(v))
  return w / sigma
end

function M.spectral_norm(module, name, n_power_iterations, eps, dim)
  name = name or "weight"
  n_power_iterations = n_power_iterations or 1
  eps = eps or 1e-12
  local w = module[name]
  if not Parameter.is(w) then U.errorf("spectral_norm: %s is not a parameter of the module", name) end
  if n_power_iterations <= 0 then U.errorf("Expected n_power_iterations to be positive, but got n_power_iterations=%d", n_power_iterations) end
  if dim == nil then -- transposed convolutions keep their output channels in dim 1
    local cls = module:_get_name()
    dim = (cls == "ConvTranspose1d" or cls == "ConvTranspose2d" or cls == "ConvTranspose3d") and 1 or 0
  end
  local mat = as_matrix(w, dim)
  local opts = { dtype = w.dtype, device = w.device }
  local u = normalize(torch.randn(mat:size(0), opts), eps)
  local v = normalize(torch.randn(mat:size(1), opts), eps)
  module[name] = nil
  module:register_parameter(name .. "_orig", Parameter(w:detach()))
  module:register_buffer(name .. "_u", u)
  module:register_buffer(name .. "_v", v)
  local sn = { dim = dim, n_power_iterations = n_power_iterations, eps = eps }
  module[name] = spectral_weight(module, name, sn, true):detach()
  sn.handle = module:register_forward_pre_hook(function(m) m[name] = spectral_weight(m, name, sn, m.training) end)
  remember(module, "spectral_norm", name, sn)
  return module
end

function M.remove_spectral_norm(module, name)
  name = name or "weight"
  local sn = forget(module, "spectral_norm", name)
  local w = spectral_weight(module, name, sn, false):detach()
  module[name .. "_orig"] = nil
  module[name .. "_u"], module[name .. "_v"] = nil, nil
  module[name] = nil
  module:register_parameter(name, Parameter(w))
  return module
end

U.check_all(M, {
  weight_norm = { "module:Module", plain = true }, remove_weight_norm = { "module:Module", plain = true },
  spectral_norm = { "module:Module", plain = true }, remove_spectral_norm = { "module:Module", plain = true },
})

return M
