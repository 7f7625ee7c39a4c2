-- torch.where(condition) with the condition alone: as torch.nonzero(condition, as_tuple=True),
-- the indices of the true (nonzero) elements along each dimension, a Lua list of 1-D int64
-- tensors where PyTorch gives a tuple (so Python's torch.where(c)[0] is torch.where(c)[1]).
-- The three-argument form is unchanged.
local torch = require "torch"
require "torch_more_ops" -- torch.nonzero
local U = require "nn_util"

local where3 = torch.where

function torch.where(condition, ...)
  if select("#", ...) == 0 and torch.is_tensor(condition) then
    return torch.nonzero(condition, { as_tuple = true })
  end
  return U.call_as("where", where3, condition, ...)
end
