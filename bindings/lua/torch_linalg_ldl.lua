-- torch.linalg.ldl_factor_ex, ldl_factor, ldl_solve: A = P L D Lᵀ Pᵀ for symmetric A with
-- Bunch-Kaufman pivoting, computed as LAPACK's sytf2 does (lower triangle, the same pivot choices
-- and the same compact LD / pivots layout, so results match PyTorch's), in plain Lua one matrix
-- at a time on the host (a CUDA tensor is copied there and the results back). Real dtypes only;
-- no autograd (PyTorch has none for these either).
local torch = require "torch"
local U = require "nn_util"
local L = torch.linalg
local C = require "linalg_util"

local ALPHA = (1 + math.sqrt(17)) / 8

local function check(fname, A)
  C.need_square(fname, A)
  if A:is_complex() then U.errorf("%s: complex inputs are not supported here (real float32 / float64 only)", fname) end
end

-- the matrices of a (..., n, n) tensor as plain Lua tables (1-based), in batch order
local function host_mats(A)
  local n = A:size(-1)
  return A:detach():to("cpu", torch.float64):reshape(-1, n, n):tolist()
end

-- index (> from) of the largest |a[i][col]| for i in from+1..n, and that value (first on ties)
local function colmax_below(a, col, from, n)
  local best, bi = -1, from
  for i = from + 1, n do
    local v = math.abs(a[i][col])
    if v > best then best, bi = v, i end
  end
  return bi, best
end

-- Factors a (lower triangle used, n x n) in place; returns the pivots and info
local function sytf2(a, n)
  local ipiv, info = {}, 0
  local function swap(i1, j1, i2, j2) a[i1][j1], a[i2][j2] = a[i2][j2], a[i1][j1] end
  local k = 1
  while k <= n do
    local kstep, kp = 1, k
    local absakk = math.abs(a[k][k])
    local imax, colmax = k, 0
    if k < n then imax, colmax = colmax_below(a, k, k, n) end
    if math.max(absakk, colmax) == 0 or absakk ~= absakk then
      if info == 0 then info = k end
    else
      if absakk < ALPHA * colmax then
        -- the largest off-diagonal entry in row / column imax
        local rowmax = -1
        for j = k, imax - 1 do rowmax = math.max(rowmax, math.abs(a[imax][j])) end
        if imax < n then rowmax = math.max(rowmax, select(2, colmax_below(a, imax, imax, n))) end
        if absakk >= ALPHA * colmax * (colmax / rowmax) then kp = k
        elseif math.abs(a[imax][imax]) >= ALPHA * rowmax then kp = imax
        else kp, kstep = imax, 2 end
      end
      local kk = k + kstep - 1
      if kp ~= kk then -- symmetric interchange of kk and kp in the trailing lower triangle
        for i = kp + 1, n do swap(i, kk, i, kp) end
        for j = kk + 1, kp - 1 do swap(j, kk, kp, j) end
        swap(kk, kk, kp, kp)
        if kstep == 2 then swap(k + 1, k, kp, k) end
      end
      if kstep == 1 then
        if k < n then
          local d11 = 1 / a[k][k]
          for j = k + 1, n do
            local f = d11 * a[j][k]
            for i = j, n do a[i][j] = a[i][j] - a[i][k] * f end
          end
          for i = k + 1, n do a[i][k] = a[i][k] * d11 end
        end
      elseif k < n - 1 then
        local d21 = a[k + 1][k]
        local d11, d22 = a[k + 1][k + 1] / d21, a[k][k] / d21
        local t = 1 / (d11 * d22 - 1)
        d21 = t / d21
        for j = k + 2, n do
          local wk = d21 * (d11 * a[j][k] - a[j][k + 1])
          local wkp1 = d21 * (d22 * a[j][k + 1] - a[j][k])
          for i = j, n do a[i][j] = a[i][j] - a[i][k] * wk - a[i][k + 1] * wkp1 end
          a[j][k], a[j][k + 1] = wk, wkp1
        end
      end
    end
    if kstep == 1 then ipiv[k] = kp else ipiv[k], ipiv[k + 1] = -kp, -kp end
    k = k + kstep
  end
  for i = 1, n do for j = i + 1, n do a[i][j] = 0 end end -- LD is lower triangular
  return ipiv, info
end

-- ldl_factor_ex(A, {hermitian=false, check_errors=false}) -> LD, pivots (int32), info (int32)
function L.ldl_factor_ex(A, ...)
  local o = U.parse("linalg.ldl_factor_ex", { { "hermitian", false }, { "check_errors", false } }, ...)
  check("torch.linalg.ldl_factor_ex", A)
  local n = A:size(-1)
  local mats, pivs, infos = host_mats(A), {}, {}
  for b, a in ipairs(mats) do pivs[b], infos[b] = sytf2(a, n) end
  local bshape = C.batch_of(A)
  local info = torch.tensor(infos, { dtype = torch.int32 }):reshape(bshape)
  if o.check_errors then
    for b, i in ipairs(infos) do
      if i > 0 then
        local where = A:dim() > 2 and string.format("(Batch element %d): ", b - 1) or ""
        U.errorf("torch.linalg.ldl_factor_ex: %sThe factorization could not be completed because the input is not invertible (D[%d, %d] is zero).",
          where, i, i)
      end
    end
  end
  local ps = { table.unpack(bshape) }; ps[#ps + 1] = n
  local LD = torch.tensor(mats, { dtype = A.dtype }):reshape(A:size()):to(A.device)
  return LD, torch.tensor(pivs, { dtype = torch.int32 }):reshape(ps):to(A.device), info:to(A.device)
end

function L.ldl_factor(A, ...)
  local o = U.parse("linalg.ldl_factor", { { "hermitian", false } }, ...)
  check("torch.linalg.ldl_factor", A)
  local LD, piv, info = L.ldl_factor_ex(A, { hermitian = o.hermitian })
  local bad = info:reshape(-1):tolist()
  for b, i in ipairs(bad) do
    if i > 0 then
      local where = A:dim() > 2 and string.format("(Batch element %d): ", b - 1) or ""
      U.errorf("torch.linalg.ldl_factor: %sThe factorization could not be completed because the input is not invertible (D[%d, %d] is zero).", where, i, i)
    end
  end
  return LD, piv
end

-- Solves (in place) with the factor a, pivots ipiv and right-hand sides b (n x m), as sytrs
local function sytrs(a, ipiv, b, n, m)
  local function swaprows(i, j) if i ~= j then b[i], b[j] = b[j], b[i] end end
  -- L D y = Pᵀ b
  local k = 1
  while k <= n do
    if ipiv[k] > 0 then
      swaprows(k, ipiv[k])
      for i = k + 1, n do for j = 1, m do b[i][j] = b[i][j] - a[i][k] * b[k][j] end end
      for j = 1, m do b[k][j] = b[k][j] / a[k][k] end
      k = k + 1
    else
      swaprows(k + 1, -ipiv[k])
      for i = k + 2, n do
        for j = 1, m do b[i][j] = b[i][j] - a[i][k] * b[k][j] - a[i][k + 1] * b[k + 1][j] end
      end
      local akm1k = a[k + 1][k]
      local akm1, ak = a[k][k] / akm1k, a[k + 1][k + 1] / akm1k
      local denom = akm1 * ak - 1
      for j = 1, m do
        local bkm1, bk = b[k][j] / akm1k, b[k + 1][j] / akm1k
        b[k][j], b[k + 1][j] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
      end
      k = k + 2
    end
  end
  -- Lᵀ x = y, then undo the interchanges
  local function sub_below(row, col)
    for j = 1, m do
      local s = 0
      for i = col + 1, n do s = s + a[i][row] * b[i][j] end
      b[row][j] = b[row][j] - s
    end
  end
  k = n
  while k >= 1 do
    if ipiv[k] > 0 then
      sub_below(k, k)
      swaprows(k, ipiv[k])
      k = k - 1
    else
      sub_below(k, k)
      sub_below(k - 1, k)
      swaprows(k, -ipiv[k])
      k = k - 2
    end
  end
end

-- ldl_solve(LD, pivots, B, {hermitian=false}): X with A X = B for the A that ldl_factor factored
function L.ldl_solve(LD, pivots, B, ...)
  U.parse("linalg.ldl_solve", { { "hermitian", false } }, ...)
  local fname = "torch.linalg.ldl_solve"
  check(fname, LD)
  C.need_factor(fname, LD, "LD", pivots, B)
  local n, m = LD:size(-1), B:size(-1)
  if B:size(-2) ~= n then
    U.errorf("%s: Incompatible shapes of A and B for the equation AX = B (%dx%d and %dx%d)", fname, n, n, B:size(-2), m)
  end
  local bs = C.broadcast_batch(LD, B)
  local function ex(T, ...) local s = { table.unpack(bs) }; for _, v in ipairs({ ... }) do s[#s + 1] = v end; return T:expand(s) end
  local a = host_mats(ex(LD, n, n))
  local p = ex(pivots, n):to("cpu"):reshape(-1, n):tolist()
  local b = ex(B, n, m):detach():to("cpu", torch.float64):reshape(-1, n, m):tolist()
  for i = 1, #a do sytrs(a[i], p[i], b[i], n, m) end
  local shape = { table.unpack(bs) }; shape[#shape + 1], shape[#shape + 2] = n, m
  return torch.tensor(b, { dtype = B.dtype }):reshape(shape):to(B.device)
end

return torch
