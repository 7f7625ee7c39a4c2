-- Activation modules: ReLU, ReLU6, LeakyReLU, ELU, GELU, SiLU, Sigmoid, Tanh,
-- Softmax, LogSoftmax. Each forwards to torch.nn.functional and prints as PyTorch.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"

local M = {}


local function inplace_str(self) return self.inplace and "inplace=True" or "" end

-- A module whose only argument is `inplace` and whose forward is F[fname](x, inplace).
local function inplace_activation(name, fname)
  local cls = Module:extend(name)
  function cls:__init(...)
    self.inplace = U.parse(name, { { "inplace", false } }, ...).inplace
  end
  function cls:forward(x) return U.F(fname, x, self.inplace) end
  cls.extra_repr = inplace_str
  M[name] = cls
  return cls
end

inplace_activation("ReLU", "relu")
inplace_activation("ReLU6", "relu6")
inplace_activation("SiLU", "silu")

local LeakyReLU = Module:extend("LeakyReLU")
M.LeakyReLU = LeakyReLU
function LeakyReLU:__init(...)
  local o = U.parse("LeakyReLU", { { "negative_slope", 0.01 }, { "inplace", false } }, ...)
  self.negative_slope, self.inplace = o.negative_slope, o.inplace
end
function LeakyReLU:forward(x) return U.F("leaky_relu", x, self.negative_slope, self.inplace) end
function LeakyReLU:extra_repr()
  return "negative_slope=" .. U.pystr(self.negative_slope) .. (self.inplace and ", inplace=True" or "")
end

local ELU = Module:extend("ELU")
M.ELU = ELU
function ELU:__init(...)
  local o = U.parse("ELU", { { "alpha", 1.0 }, { "inplace", false } }, ...)
  self.alpha, self.inplace = o.alpha, o.inplace
end
function ELU:forward(x) return U.F("elu", x, self.alpha, self.inplace) end
function ELU:extra_repr() return "alpha=" .. U.pystr(self.alpha) .. (self.inplace and ", inplace=True" or "") end

local GELU = Module:extend("GELU")
M.GELU = GELU
function GELU:__init(...)
  self.approximate = U.parse("GELU", { { "approximate", "none" } }, ...).approximate
end
function GELU:forward(x) return U.F("gelu", x, { approximate = self.approximate }) end
function GELU:extra_repr() return "approximate=" .. U.pyrepr(self.approximate) end

local function plain_activation(name, method)
  local cls = Module:extend(name)
  function cls:__init(...) U.parse(name, {}, ...) end
  function cls:forward(x)
    U.check_tensor(method, "input", 1, x)
    return x[method](x)
  end
  M[name] = cls
  return cls
end

plain_activation("Sigmoid", "sigmoid")
plain_activation("Tanh", "tanh")

local function softmax_module(name, fname)
  local cls = Module:extend(name)
  function cls:__init(...)
    local dim = U.parse(name, { { "dim" } }, ...).dim
    if dim ~= nil then dim = U.check_int(name, "dim", dim) end
    self.dim = dim
  end
  -- dim=None: F picks PyTorch's implicit dim and warns, as PyTorch does
  function cls:forward(x) return U.F(fname, x, self.dim) end
  function cls:extra_repr() return "dim=" .. U.pystr(self.dim) end
  M[name] = cls
  return cls
end

softmax_module("Softmax", "softmax")
softmax_module("LogSoftmax", "log_softmax")
softmax_module("Softmin", "softmin")

inplace_activation("Mish", "mish")
inplace_activation("SELU", "selu")
inplace_activation("Hardsigmoid", "hardsigmoid")
inplace_activation("Hardswish", "hardswish")

-- modules whose forward is F[fname](x, <their arguments in order>); spec as U.parse's
local function functional_activation(name, fname, spec, repr)
  local cls = Module:extend(name)
  function cls:__init(...)
    local o = U.parse(name, spec, ...)
    for _, s in ipairs(spec) do self[s[1]] = o[s[1]] end
  end
  function cls:forward(x)
    local args = {}
    for i, s in ipairs(spec) do args[i] = self[s[1]] end
    return U.F(fname, x, table.unpack(args, 1, #spec))
  end
  if repr then cls.extra_repr = repr end
  M[name] = cls
  return cls
end

local function keyed(...)
  local keys = { ... }
  return function(self)
    local parts = {}
    for _, k in ipairs(keys) do
      local v = self[k]
      if k ~= "inplace" or v then parts[#parts + 1] = k .. "=" .. (type(v) == "boolean" and (v and "True" or "False") or U.pystr(v)) end
    end
    return table.concat(parts, ", ")
  end
end

functional_activation("Softsign", "softsign", {})
functional_activation("Tanhshrink", "tanhshrink", {})
functional_activation("LogSigmoid", "logsigmoid", {})
functional_activation("CELU", "celu", { { "alpha", 1.0 }, { "inplace", false } }, keyed("alpha", "inplace"))
functional_activation("GLU", "glu", { { "dim", -1 } }, keyed("dim"))
functional_activation("Softplus", "softplus", { { "beta", 1.0 }, { "threshold", 20.0 } }, keyed("beta", "threshold"))
functional_activation("Hardtanh", "hardtanh", { { "min_val", -1.0 }, { "max_val", 1.0 }, { "inplace", false } },
  keyed("min_val", "max_val", "inplace"))
functional_activation("Threshold", "threshold", { { "threshold", U.REQUIRED }, { "value", U.REQUIRED }, { "inplace", false } },
  keyed("threshold", "value", "inplace"))

-- PReLU: a learnt negative slope, one or one per channel
local PReLU = Module:extend("PReLU")
M.PReLU = PReLU
function PReLU:__init(...)
  local o = U.parse("PReLU", { { "num_parameters", 1 }, { "init", 0.25 }, { "device" }, { "dtype" } }, ...)
  self.num_parameters = U.check_int("PReLU", "num_parameters", o.num_parameters, 1)
  self.init = o.init
  self.weight = require("nn_parameter")(torch.full({ self.num_parameters }, o.init, { device = o.device, dtype = o.dtype }))
end
function PReLU:reset_parameters() torch.nn.init.constant_(self.weight, self.init) end
function PReLU:forward(x) return U.F("prelu", x, self.weight) end
function PReLU:extra_repr() return "num_parameters=" .. self.num_parameters end

return M
