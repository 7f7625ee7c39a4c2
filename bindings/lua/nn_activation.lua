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
  function cls:forward(x) return x[method](x) end
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

return M
