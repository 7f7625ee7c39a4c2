-- More of torch.linalg on top of torch_linalg.lua: the *_ex forms (inv_ex, cholesky_ex, solve_ex,
-- lu_factor_ex), lu_solve, householder_product, cond, diagonal, matmul, vecdot, vander,
-- tensorinv, tensorsolve, LinAlgError. The LDL (Bunch-Kaufman) and general eigenproblems are in
-- torch_linalg_ldl.lua and torch_linalg_eig.lua.
local torch = require "torch"
local U = require "nn_util"
local L = torch.linalg

local function mT(A) return A:transpose(-2, -1) end
local function mH(A) return A:is_complex() and mT(A):conj() or mT(A) end

local C = require "linalg_util"
local need_matrix, need_square, batch_of = C.need_matrix, C.need_square, C.batch_of

-- 1-based index of the first true entry along the last dim (0 where none), int32
local function first_true(bad)
  local n = bad:size(-1)
  local pos = torch.arange(1, n + 1, { device = bad.device })
  local idx = torch.where(bad, pos, n + 1):amin(-1)
  return torch.where(idx:gt(n), 0, idx):to(torch.int32)
end

-- ---- LU with info, lu_solve ----

-- lu_factor_ex(A, {pivot=true, check_errors=false}) -> LU, pivots, info (the first zero
-- diagonal entry of U, 1-based; 0 when there is none)
function L.lu_factor_ex(A, ...)
  local o = U.parse("linalg.lu_factor_ex", { { "pivot", true }, { "check_errors", false } }, ...)
  need_square("linalg.lu_factor_ex", A, "A")
  local LU, piv = L.lu_factor(A, { pivot = o.pivot })
  local info = first_true(LU:diagonal(0, -2, -1):eq(0))
  if o.check_errors and info:ne(0):any():item() then
    U.errorf("torch.linalg.lu_factor_ex: U[%d,%d] is zero and using it on lu_solve would result in a division by zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
      info:max():item(), info:max():item())
  end
  return LU, piv, info
end

-- The row order (..., n) that LAPACK's sequential swaps (row k <-> row piv[k], 1-based) give:
-- (Pᵀ B)[i] = B[perm[i]] for A = P L U.
local function perm_of(piv)
  local n = piv:size(-1)
  local r = torch.arange(n, { device = piv.device })
  local p = piv:to(torch.int64) - 1
  local perm = r:expand(p:size()):contiguous()
  for k = 0, n - 1 do
    local pk = p:narrow(-1, k, 1)
    perm = perm:gather(-1, torch.where(r:eq(k), pk, torch.where(r:eq(pk), k, r)))
  end
  return perm
end

local function rows(B, idx)
  local s = idx:size():totable()
  s[#s + 1] = B:size(-1)
  return B:gather(-2, idx:unsqueeze(-1):expand(s))
end

-- lu_solve(LU, pivots, B, {left=true, adjoint=false}): X with A X = B (Aᴴ X = B with adjoint,
-- X A = B with left=false) for A = P L U as lu_factor gives it
function L.lu_solve(LU, pivots, B, ...)
  local o = U.parse("linalg.lu_solve", { { "left", true }, { "adjoint", false } }, ...)
  local fname = "linalg.lu_solve"
  C.need_factor(fname, LU, "LU", pivots, B)
  if not o.left then -- X A = B  <=>  Aᴴ Xᴴ = Bᴴ
    return mH(L.lu_solve(LU, pivots, mH(B), { adjoint = not o.adjoint }))
  end
  if LU:size(-1) ~= B:size(-2) then
    U.errorf("%s: Incompatible shapes of A and B for the equation AX = B (%dx%d and %dx%d)", fname,
      LU:size(-2), LU:size(-1), B:size(-2), B:size(-1))
  end
  local n = LU:size(-1)
  local bs = C.broadcast_batch(LU, B) -- the batch dims of LU, pivots and B broadcast
  local function ex(T, a, b) local s = { table.unpack(bs) }; s[#s + 1], s[#s + 2] = a, b; return T:expand(s) end
  LU, B = ex(LU, n, n), ex(B, n, B:size(-1))
  local ps = { table.unpack(bs) }; ps[#ps + 1] = n
  local perm = perm_of(pivots:expand(ps))
  local Lo = LU:tril(-1) + torch.eye(n, { dtype = LU.dtype, device = LU.device })
  local Up = LU:triu()
  if not o.adjoint then
    local y = L.solve_triangular(Lo, rows(B, perm), { upper = false, unitriangular = true })
    return L.solve_triangular(Up, y, { upper = true })
  end
  -- Aᴴ = Uᴴ Lᴴ Pᵀ: X = P (Lᴴ)⁻¹ (Uᴴ)⁻¹ B
  local y = L.solve_triangular(mH(Up), B, { upper = false })
  local z = L.solve_triangular(mH(Lo), y, { upper = true, unitriangular = true })
  return rows(z, perm:argsort(-1))
end

-- ---- the *_ex forms ----

-- inv_ex(A, {check_errors=false}) -> inverse, info (int32, batch shape; the first zero pivot,
-- 1-based, as LAPACK's getrf reports; the inverse of a singular matrix is not meaningful)
function L.inv_ex(A, ...)
  local o = U.parse("linalg.inv_ex", { { "check_errors", false } }, ...)
  need_square("linalg.inv_ex", A, "A")
  if o.check_errors then return L.inv(A), torch.zeros(batch_of(A), { dtype = torch.int32, device = A.device }) end
  local LU, piv, info = L.lu_factor_ex(A)
  if not info:ne(0):any():item() then return L.inv(A), info end
  local I = torch.eye(A:size(-1), { dtype = A.dtype, device = A.device })
  return L.lu_solve(LU, piv, I:expand(A:size())), info
end

-- solve_ex(A, B, {left=true, check_errors=false}) -> result, info
function L.solve_ex(A, B, ...)
  local o = U.parse("linalg.solve_ex", { { "left", true }, { "check_errors", false } }, ...)
  need_square("linalg.solve_ex", A, "A")
  local info = select(3, L.lu_factor_ex(A))
  if o.check_errors or not info:ne(0):any():item() then return L.solve(A, B, { left = o.left }), info end
  -- some matrix is singular: the same result shape, its values not meaningful
  local X = L.inv_ex(A)
  local vector = B:dim() == 1 or (B:dim() == A:dim() - 1)
  if o.left then
    return vector and X:matmul(B:unsqueeze(-1)):squeeze(-1) or X:matmul(B), info
  end
  return vector and B:unsqueeze(-2):matmul(X):squeeze(-2) or B:matmul(X), info
end

-- cholesky_ex(A, {upper=false, check_errors=false}) -> L, info (the order of the first leading
-- minor that is not positive-definite, 0 when A is). Where info > 0 this L is zeros (PyTorch
-- leaves a partial factor there).
function L.cholesky_ex(A, ...)
  local o = U.parse("linalg.cholesky_ex", { { "upper", false }, { "check_errors", false } }, ...)
  need_square("linalg.cholesky_ex", A, "A")
  if o.check_errors then
    return L.cholesky(A, { upper = o.upper }), torch.zeros(batch_of(A), { dtype = torch.int32, device = A.device })
  end
  local ok, res = pcall(L.cholesky, A, { upper = o.upper })
  if ok then return res, torch.zeros(batch_of(A), { dtype = torch.int32, device = A.device }) end
  if not tostring(res):find("positive%-definite") then error(res, 0) end
  -- factor the matrices one by one to find each one's info
  local n = A:size(-1)
  local flat = A:reshape(-1, n, n)
  local outs, infos = {}, {}
  for b = 0, flat:size(0) - 1 do
    local ok1, r = pcall(L.cholesky, flat[b], { upper = o.upper })
    if ok1 then outs[#outs + 1], infos[#infos + 1] = r, 0
    else
      outs[#outs + 1] = torch.zeros_like(flat[b])
      infos[#infos + 1] = tonumber(tostring(r):match("minor of order (%d+)")) or -1
    end
  end
  local info = torch.tensor(infos, { dtype = torch.int32, device = A.device }):reshape(batch_of(A))
  return torch.stack(outs):reshape(A:size()), info
end

-- ---- Householder product ----

-- householder_product(A, tau): the first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_iᴴ,
-- v_i = (0, ..., 0, 1, A[i+1:, i]) (the reflectors geqrf stores below the diagonal)
function L.householder_product(A, tau)
  local fname = "torch.linalg.householder_product"
  if not torch.is_tensor(A) or A:dim() < 2 then U.errorf("%s: input must have at least 2 dimensions.", fname) end
  if not torch.is_tensor(tau) or tau:dim() ~= A:dim() - 1 then
    U.errorf("%s: Expected tau to have one dimension less than input, but got tau.ndim equal to %s and input.ndim is equal to %d",
      fname, torch.is_tensor(tau) and tau:dim() or "?", A:dim())
  end
  local m, n, k = A:size(-2), A:size(-1), tau:size(-1)
  if m < n then U.errorf("%s: input.shape[-2] must be greater than or equal to input.shape[-1]", fname) end
  if n < k then U.errorf("%s: input.shape[-1] must be greater than or equal to tau.shape[-1]", fname) end
  if tau.dtype ~= A.dtype then
    U.errorf("%s: tau dtype %s does not match input dtype %s", fname, U.scalar_name(tau.dtype), U.scalar_name(A.dtype))
  end
  local r = torch.arange(m, { device = A.device })
  local Q = torch.eye(m, n, { dtype = A.dtype, device = A.device })
  -- apply H_k first to the first columns of the identity: Q = H_1 (H_2 (... H_k I))
  for i = k - 1, 0, -1 do
    local v = A:select(-1, i) * r:gt(i):to(A.dtype) + r:eq(i):to(A.dtype) -- (..., m)
    local vc = v:is_complex() and v:conj() or v
    local t = tau:select(-1, i):unsqueeze(-1):unsqueeze(-1)
    Q = Q - (v:unsqueeze(-1) * t):matmul(vc:unsqueeze(-2):matmul(Q))
  end
  return Q
end

-- ---- condition number ----

-- cond(A, p=nil): 2-norm (nil, 2, -2) from the singular values; 'fro', 'nuc', inf, -inf, 1, -1
-- as norm(A, p) * norm(A⁻¹, p), inf for a singular A
function L.cond(A, ...)
  local o = U.parse("linalg.cond", { { "p" } }, ...)
  local p = o.p
  need_matrix("linalg.cond", A, "A")
  if p == nil or p == 2 or p == -2 then
    local S = L.svdvals(A)
    local big, small = S:narrow(-1, 0, 1):squeeze(-1), S:narrow(-1, S:size(-1) - 1, 1):squeeze(-1)
    if p == -2 then return small / big end
    return big / small
  end
  local valid = { fro = true, nuc = true, [1] = true, [-1] = true, [math.huge] = true, [-math.huge] = true }
  if not valid[p] then U.errorf("linalg.cond got an invalid norm type: %s", tostring(p)) end
  need_square("linalg.cond", A, "A")
  local function norm(M)
    if p == "nuc" then return L.svdvals(M):sum(-1) end
    return L.matrix_norm(M, p)
  end
  local inv, info = L.inv_ex(A)
  local c = norm(A) * norm(inv)
  return torch.where(info:ne(0), math.huge, c)
end

-- ---- small ones ----

-- diagonal(A, {offset=0, dim1=-2, dim2=-1})
function L.diagonal(A, ...)
  local o = U.parse("linalg.diagonal", { { "offset", 0 }, { "dim1", -2 }, { "dim2", -1 } }, ...)
  return torch.diagonal(A, o.offset, o.dim1, o.dim2)
end

function L.matmul(a, b) return torch.matmul(a, b) end

-- vecdot(x, y, {dim=-1}): sum over dim of conj(x) * y
function L.vecdot(x, y, ...)
  local o = U.parse("linalg.vecdot", { { "dim", -1 } }, ...)
  U.check_tensor("linalg.vecdot", "x", 1, x)
  U.check_tensor("linalg.vecdot", "y", 2, y)
  if x.dtype ~= y.dtype then
    U.errorf("linalg.vecdot: Expected x and y to have the same dtype, but found x of type %s and y of type %s instead",
      U.scalar_name(x.dtype), U.scalar_name(y.dtype))
  end
  return ((x:is_complex() and x:conj() or x) * y):sum(o.dim)
end

-- vander(x, {N=x.shape[-1]}): (..., n, N) with columns x^0, x^1, ..., x^(N-1)
function L.vander(x, ...)
  local o = U.parse("linalg.vander", { { "N" } }, ...)
  U.check_tensor("linalg.vander", "x", 1, x)
  if x:dim() < 1 then U.error("linalg.vander: x must have at least one dimension.") end
  local N = o.N or x:size(-1)
  if N <= 1 then U.error("N must be greater than 1.") end
  local shape = x:size():totable()
  shape[#shape + 1] = N - 1
  local powers = x:unsqueeze(-1):expand(shape)
  local ones = torch.ones_like(x):unsqueeze(-1)
  return torch.cat({ ones, powers:cumprod(-1) }, -1)
end

local function prod(t, i, j)
  local p = 1
  for k = i, j do p = p * t[k] end
  return p
end

-- tensorinv(A, {ind=2}): the inverse for tensordot over ind dims: result shape
-- A.shape[ind:] + A.shape[:ind]
function L.tensorinv(A, ...)
  local o = U.parse("linalg.tensorinv", { { "ind", 2 } }, ...)
  U.check_tensor("linalg.tensorinv", "A", 1, A)
  local ind = o.ind
  if math.type(ind) ~= "integer" or ind <= 0 then
    U.errorf("Expected a strictly positive integer for 'ind', but got %s", tostring(ind))
  end
  local s = A:size():totable()
  local out_n, in_n = prod(s, 1, ind), prod(s, ind + 1, #s)
  if out_n ~= in_n then
    U.errorf("Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got %d != %d", in_n, out_n)
  end
  local shape = {}
  for i = ind + 1, #s do shape[#shape + 1] = s[i] end
  for i = 1, ind do shape[#shape + 1] = s[i] end
  return L.inv(A:reshape(out_n, in_n)):reshape(shape)
end

-- tensorsolve(A, B, {dims=nil}): X with tensordot(A, X, X.ndim) = B; dims (a list) are moved to
-- the end of A first
function L.tensorsolve(A, B, ...)
  local o = U.parse("linalg.tensorsolve", { { "dims" } }, ...)
  U.check_tensor("linalg.tensorsolve", "A", 1, A)
  U.check_tensor("linalg.tensorsolve", "B", 2, B)
  if o.dims then
    local dims = type(o.dims) == "table" and o.dims or { o.dims }
    local dst = {}
    for i = 1, #dims do dst[i] = A:dim() - #dims + i - 1 end
    A = torch.movedim(A, dims, dst)
  end
  local s = A:size():totable()
  local nb = B:dim()
  local rows_n, cols_n = prod(s, 1, nb), prod(s, nb + 1, #s)
  local xshape = {}
  for i = nb + 1, #s do xshape[#xshape + 1] = s[i] end
  if rows_n ~= cols_n then
    U.errorf("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got %d != %d",
      cols_n, rows_n)
  end
  return L.solve(A:reshape(rows_n, cols_n), B:reshape(rows_n)):reshape(xshape)
end

-- LinAlgError: linalg's numerical failures (singular matrix, not positive-definite, no
-- convergence) are Lua errors whose message is PyTorch's. There are no exception classes in
-- Lua: LinAlgError.matches(err) tells such an error from others after pcall, and
-- error(LinAlgError("message")) raises one of your own.
L.LinAlgError = setmetatable({
  matches = function(err)
    local s = tostring(err)
    return s:find("singular", 1, true) ~= nil or s:find("positive-definite", 1, true) ~= nil
      or s:find("failed to converge", 1, true) ~= nil or s:find("LinAlgError", 1, true) ~= nil
  end,
}, {
  __call = function(_, msg) return "torch.linalg.LinAlgError: " .. tostring(msg or "") end,
  __tostring = function() return "<class 'torch.linalg.LinAlgError'>" end,
})

return torch
