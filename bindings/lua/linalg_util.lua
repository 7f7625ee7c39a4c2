-- Argument checks shared by torch_linalg_more.lua, torch_linalg_ldl.lua and torch_linalg_eig.lua
-- (PyTorch's messages).
local torch = require "torch"
local U = require "nn_util"
local M = {}

-- A (named name, "A" by default) is a float or complex tensor of at least 2 dims
function M.need_matrix(fname, A, name)
  name = name or "A"
  if not torch.is_tensor(A) then U.errorf("%s: %s must be a Tensor, got %s", fname, name, U.typename(A)) end
  if A:dim() < 2 then U.errorf("%s: The input tensor %s must have at least 2 dimensions.", fname, name) end
  if not (A:is_floating_point() or A:is_complex()) then
    U.errorf("%s: Expected a floating point or complex tensor as input. Got %s", fname, U.scalar_name(A.dtype))
  end
end

-- ... and batches of square matrices
function M.need_square(fname, A, name)
  M.need_matrix(fname, A, name)
  if A:size(-1) ~= A:size(-2) then
    U.errorf("%s: %s must be batches of square matrices, but they are %d by %d matrices", fname, name or "A", A:size(-2), A:size(-1))
  end
end

-- a factor F (named fname) and its pivots (F.shape[:-1]) and right-hand sides B of F's dtype
function M.need_factor(fname, F, fname_F, pivots, B)
  M.need_square(fname, F, fname_F)
  M.need_matrix(fname, B, "B")
  if not torch.is_tensor(pivots) or pivots:dim() ~= F:dim() - 1 or pivots:size(-1) ~= F:size(-1) then
    U.errorf("%s: Expected %s.shape[:-1] and pivots.shape to be the same", fname, fname_F)
  end
  if B.dtype ~= F.dtype then
    U.errorf("%s: Expected %s and B to have the same dtype, but found %s of type %s and B of type %s instead", fname,
      fname_F, fname_F, U.scalar_name(F.dtype), U.scalar_name(B.dtype))
  end
end

-- the batch dims of A (all but the last two), a Lua list
function M.batch_of(A)
  local s = {}
  for d = 0, A:dim() - 3 do s[#s + 1] = A:size(d) end
  return s
end

-- the broadcast batch shape of A and B, a Lua list
function M.broadcast_batch(A, B)
  return torch.broadcast_shapes(M.batch_of(A), M.batch_of(B)):totable()
end

return M
