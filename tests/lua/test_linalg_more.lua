-- torch.linalg's eig / eigvals, the *_ex forms, lu_solve, ldl_factor / ldl_solve,
-- householder_product, cond, diagonal, matmul, vecdot, vander, tensorinv, tensorsolve and
-- LinAlgError: decompositions checked by reconstruction, values worked out by hand or in plain
-- Lua, gradients by float64 finite differences, error messages.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local L = torch.linalg
local f64 = { dtype = torch.float64 }

local function maxabs(t) return t:abs():max():item() end

-- ---- eig ----

-- |A V - V diag(w)| and the columns' norms
local function check_eig(A, w, V, tol, msg)
  local Ac = A:is_complex() and A or A:to(w.dtype)
  T.check(maxabs(Ac:matmul(V) - V * w:unsqueeze(-2)) < tol, msg .. ": A V = V diag(w)")
  T.check(maxabs((V:abs() ^ 2):sum(-2) - 1) < tol, msg .. ": unit eigenvectors")
end

-- the eigenvalues (complex numbers {re, im}) sorted by real then imaginary part
local function sorted_values(w)
  local re, im = w.real:tolist(), w.imag:tolist()
  local out = {}
  for i = 1, #re do out[i] = { re[i], im[i] } end
  table.sort(out, function(a, b) if math.abs(a[1] - b[1]) > 1e-9 then return a[1] < b[1] end return a[2] < b[2] end)
  return out
end

T.test("eig", function()
  -- companion matrix of (x - 1)(x - 2)(x - 3) = x^3 - 6x^2 + 11x - 6
  local C = torch.tensor({ { 0, 0, 6 }, { 1, 0, -11 }, { 0, 1, 6 } }, f64)
  local w, V = L.eig(C)
  T.eq(tostring(w.dtype) .. " " .. tostring(V.dtype), "torch.complex128 torch.complex128", "float64 gives complex128")
  T.near(sorted_values(w), { { 1, 0 }, { 2, 0 }, { 3, 0 } }, 1e-12, "roots 1, 2, 3")
  check_eig(C, w, V, 1e-12, "companion")
  -- (x^2 + 1)(x - 2) = x^3 - 2x^2 + x - 2: complex pair, exactly conjugate for a real matrix
  local C2 = torch.tensor({ { 0, 0, 2 }, { 1, 0, -1 }, { 0, 1, 2 } }, f64)
  w, V = L.eig(C2)
  T.near(sorted_values(w), { { 0, -1 }, { 0, 1 }, { 2, 0 } }, 1e-12, "roots +-i, 2")
  check_eig(C2, w, V, 1e-12, "complex pair")
  local vals = sorted_values(w)
  T.eq({ vals[1][1] == vals[2][1], vals[1][2] == -vals[2][2], vals[3][2] }, { true, true, 0.0 }, "conjugates, real root real")
  -- rotation by 90 degrees, float32 -> complex64
  local R = torch.tensor({ { 0.0, -1.0 }, { 1.0, 0.0 } })
  w, V = L.eig(R)
  T.eq(tostring(w.dtype), "torch.complex64", "float32 gives complex64")
  T.near(sorted_values(w), { { 0, -1 }, { 0, 1 } }, 1e-6, "rotation")
  check_eig(R, w, V, 1e-5, "rotation")
  -- triangular: its diagonal; the identity: the standard basis; a Jordan block
  w = L.eigvals(torch.tensor({ { 2, 5, 1 }, { 0, -1, 3 }, { 0, 0, 4 } }, f64))
  T.near(sorted_values(w), { { -1, 0 }, { 2, 0 }, { 4, 0 } }, 1e-13, "triangular")
  w, V = L.eig(torch.eye(3, f64))
  T.near(V.real:tolist(), torch.eye(3, f64):tolist(), 1e-15, "identity's vectors")
  w = L.eigvals(torch.tensor({ { 1, 1 }, { 0, 1 } }, f64))
  T.near(sorted_values(w), { { 1, 0 }, { 1, 0 } }, 1e-12, "Jordan block")
  -- batched random, complex input, a 1 x 1 and an empty batch
  torch.manual_seed(3)
  local B = torch.randn(4, 7, 7, f64)
  w, V = L.eig(B)
  T.eq(w:size():totable(), { 4, 7 }, "batched shape")
  check_eig(B, w, V, 1e-11, "batched")
  local w2 = L.eigvals(B)
  T.near(sorted_values(w2[2]), sorted_values(w[2]), 1e-12, "eigvals = eig's values")
  local Cx = torch.complex(torch.randn(5, 5, f64), torch.randn(5, 5, f64))
  w, V = L.eig(Cx)
  check_eig(Cx, w, V, 1e-12, "complex input")
  -- trace and determinant: the sum and the product of the eigenvalues
  local s = w:sum()
  T.near({ s.real:item(), s.imag:item() }, { Cx:diagonal():sum().real:item(), Cx:diagonal():sum().imag:item() }, 1e-12, "trace")
  T.near(sorted_values(L.eigvals(torch.tensor({ { 5 } }, f64))), { { 5, 0 } }, 0, "1 x 1")
  T.eq(L.eigvals(torch.zeros(0, 3, 3, f64)):size():totable(), { 0, 3 }, "empty batch")
  -- errors
  T.raises(function() L.eig(torch.ones(2, 3)) end, "linalg.eig: A must be batches of square matrices, but they are 2 by 3 matrices")
  T.raises(function() L.eig(torch.ones(3)) end, "linalg.eig: The input tensor A must have at least 2 dimensions.")
  T.raises(function() L.eigvals(torch.ones(2, 2, { dtype = torch.int64 })) end,
    "linalg.eigvals: Expected a floating point or complex tensor as input. Got Long")
  T.raises(function() L.eig(torch.tensor({ { 1, 0 / 0 }, { 0, 1 } })) end, "~input should not contain infs or NaNs")
end)

T.test("eig gradients", function()
  local A = torch.tensor({ { 1, 2, 3 }, { -4, 0.5, 6 }, { 0.3, 6, 0.1 } }, f64) -- one real, two complex eigenvalues
  gradcheck("eigvals", function(X) local w = L.eigvals(X); return torch.cat({ w.real, w.imag }) end, { A })
  -- |V| does not depend on the eigenvectors' phases
  gradcheck("eig vectors", function(X) local _, V = L.eig(X); return V:abs() end, { A })
  local S = torch.tensor({ { 2, 1, 0.5 }, { 0.3, 3, 1 }, { 0.2, 0.1, 5 } }, f64)
  gradcheck("eig both", function(X) local w, V = L.eig(X); return torch.cat({ w.real, V:abs():reshape(-1) }) end, { S })
  -- d(sum of eigenvalues) / dA = I (the trace)
  local X = S:clone():requires_grad_()
  L.eigvals(X):sum().real:backward()
  T.near(X.grad:tolist(), torch.eye(3, f64):tolist(), 1e-10, "trace gradient")
end)

-- ---- LU ----

T.test("lu_factor_ex, lu_solve", function()
  local A = torch.tensor({ { 4, 3, 1 }, { 6, 3, 2 }, { 1, 5, 9 } }, f64)
  local LU, piv, info = L.lu_factor_ex(A)
  local LU2, piv2 = L.lu_factor(A)
  T.check(torch.equal(LU, LU2) and torch.equal(piv, piv2), "lu_factor_ex = lu_factor")
  T.eq({ info:item(), tostring(info.dtype), piv:tolist() }, { 0, "torch.int32", { 2, 3, 3 } }, "info, pivots")
  local B = torch.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, f64)
  T.near(L.lu_solve(LU, piv, B):tolist(), L.solve(A, B):tolist(), 1e-12, "AX = B")
  T.near(L.lu_solve(LU, piv, B, { adjoint = true }):tolist(), L.solve(A:t(), B):tolist(), 1e-12, "AᴴX = B")
  T.near(L.lu_solve(LU, piv, B:t(), { left = false }):tolist(), L.solve(A, B:t(), { left = false }):tolist(), 1e-12, "XA = B")
  T.near(L.lu_solve(LU, piv, B:t(), false, true):tolist(), L.solve(A:t(), B:t(), { left = false }):tolist(), 1e-12,
    "XAᴴ = B, positional")
  -- batches broadcast: one factor, several right-hand sides
  torch.manual_seed(1)
  local Bb = torch.randn(3, 3, 2, f64)
  T.near(L.lu_solve(LU, piv, Bb):tolist(), L.solve(A:expand(3, 3, 3), Bb):tolist(), 1e-12, "broadcast")
  -- singular: info is the first zero pivot
  local _, _, inf2 = L.lu_factor_ex(torch.tensor({ { { 1, 2 }, { 2, 4 } }, { { 1, 0 }, { 0, 1 } } }, f64))
  T.eq(inf2:tolist(), { 2, 0 }, "singular info")
  T.raises(function() L.lu_factor_ex(torch.tensor({ { 1, 2 }, { 2, 4 } }, f64), { check_errors = true }) end, "~U[2,2] is zero")
  -- gradients through LU and B
  gradcheck("lu_solve", function(F, Y) return L.lu_solve(F, piv, Y) end, { LU, B })
  gradcheck("lu_solve adjoint", function(F, Y) return L.lu_solve(F, piv, Y, { adjoint = true, left = false }) end, { LU, B:t() })
  T.raises(function() L.lu_solve(LU, piv, torch.ones(2, 2, f64)) end, "~Incompatible shapes of A and B")
  T.raises(function() L.lu_solve(LU, piv, B:float()) end, "~Expected LU and B to have the same dtype")
  T.raises(function() L.lu_solve(LU, piv, B, { up = 1 }) end, "~unknown keyword 'up'")
end)

-- ---- the *_ex forms ----

T.test("inv_ex, solve_ex, cholesky_ex", function()
  local A = torch.tensor({ { 2, 1 }, { 1, 3 } }, f64)
  local inv, info = L.inv_ex(A)
  T.near(inv:tolist(), { { 0.6, -0.2 }, { -0.2, 0.4 } }, 1e-15, "inverse")
  T.eq({ info:item(), tostring(info.dtype), info:dim() }, { 0, "torch.int32", 0 }, "info")
  local Sg = torch.tensor({ { { 1, 2 }, { 2, 4 } }, { { 2, 1 }, { 1, 3 } } }, f64)
  local inv2, info2 = L.inv_ex(Sg)
  T.eq(info2:tolist(), { 2, 0 }, "batched info")
  T.near(inv2[1]:tolist(), inv:tolist(), 1e-15, "the invertible one")
  T.raises(function() L.inv_ex(torch.tensor({ { 1, 2 }, { 2, 4 } }, f64), { check_errors = true }) end,
    "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.")
  T.raises(function() L.inv(Sg) end,
    "linalg.inv: (Batch element 0): The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.")
  local x, sinfo = L.solve_ex(A, torch.tensor({ 3, 4 }, f64))
  T.near(x:tolist(), { 1, 1 }, 1e-15, "solve_ex")
  T.eq(sinfo:item(), 0)
  local _, sinfo2 = L.solve_ex(Sg, torch.ones(2, 2, 1, f64))
  T.eq(sinfo2:tolist(), { 2, 0 }, "solve_ex info")
  T.raises(function() L.solve_ex(Sg, torch.ones(2, 2, 1, f64), { check_errors = true }) end, "~singular")
  gradcheck("inv_ex", function(X) return (L.inv_ex(X)) end, { A })
  -- Cholesky: info is the order of the first leading minor that is not positive-definite
  local P = torch.tensor({ { { 4, 2, 0 }, { 2, 3, 0 }, { 0, 0, 1 } }, { { 1, 2, 0 }, { 2, 1, 0 }, { 0, 0, 1 } },
    { { 1, 0, 0 }, { 0, 2, 0 }, { 0, 0, -1 } } }, f64)
  local Lc, cinfo = L.cholesky_ex(P)
  T.eq(cinfo:tolist(), { 0, 2, 3 }, "cholesky info")
  T.near(Lc[0]:tolist(), { { 2, 0, 0 }, { 1, math.sqrt(2), 0 }, { 0, 0, 1 } }, 1e-15, "cholesky factor")
  local Lu, _ = L.cholesky_ex(P[0], { upper = true })
  T.near(Lu:tolist(), Lc[0]:t():tolist(), 1e-15, "upper")
  T.raises(function() L.cholesky_ex(P, { check_errors = true }) end, "~(Batch element 1): The factorization could not be completed")
end)

-- ---- LDL ----

T.test("ldl_factor, ldl_solve", function()
  -- pivots worked out by hand with Bunch-Kaufman's rule (LAPACK's sytf2, lower)
  local LD, piv, info = L.ldl_factor_ex(torch.tensor({ { 4, 2 }, { 2, 3 } }, f64))
  T.eq({ LD:tolist(), piv:tolist(), info:item() }, { { { 4.0, 0.0 }, { 0.5, 2.0 } }, { 1, 2 }, 0 }, "no pivoting")
  LD, piv = L.ldl_factor(torch.tensor({ { 1, 5 }, { 5, 100 } }, f64))
  T.near(LD:tolist(), { { 100, 0 }, { 0.05, 0.75 } }, 1e-15, "1 x 1 pivot with a swap")
  T.eq(piv:tolist(), { 2, 2 }, "its pivots")
  LD, piv = L.ldl_factor(torch.tensor({ { 0, 1 }, { 1, 0 } }, f64))
  T.eq({ LD:tolist(), piv:tolist() }, { { { 0.0, 0.0 }, { 1.0, 0.0 } }, { -2, -2 } }, "2 x 2 pivot")
  -- solves agree with linalg.solve, batched, indefinite, with 2 x 2 blocks and swaps
  torch.manual_seed(7)
  local M = torch.randn(3, 6, 6, f64)
  M = M + M:transpose(-2, -1)
  M[0][0][0], M[0][1][1] = 1e-3, 2e-3 -- small diagonal entries force 2 x 2 pivots
  local LDb, pivb, infob = L.ldl_factor_ex(M)
  T.eq(infob:tolist(), { 0, 0, 0 }, "batched info")
  T.check(pivb:lt(0):any():item(), "some 2 x 2 pivots")
  local Bm = torch.randn(3, 6, 2, f64)
  T.near(L.ldl_solve(LDb, pivb, Bm):tolist(), L.solve(M, Bm):tolist(), 1e-10, "ldl_solve = solve")
  T.near(L.ldl_solve(LDb[1], pivb[1], Bm):tolist(), L.solve(M[1]:expand(3, 6, 6), Bm):tolist(), 1e-10, "broadcast")
  local M32 = M[2]:float()
  local LD32, piv32 = L.ldl_factor(M32)
  T.eq(tostring(LD32.dtype), "torch.float32")
  T.near(L.ldl_solve(LD32, piv32, Bm[2]:float()):double():tolist(), L.solve(M[2], Bm[2]):tolist(), 1e-3, "float32")
  -- singular
  local _, _, zinfo = L.ldl_factor_ex(torch.zeros(2, 2, f64))
  T.eq(zinfo:item(), 1, "zero matrix")
  T.raises(function() L.ldl_factor(torch.zeros(2, 2, f64)) end, "~(D[1, 1] is zero)")
  T.raises(function() L.ldl_factor(torch.ones(2, 3)) end, "~must be batches of square matrices")
  T.raises(function() L.ldl_solve(LDb, pivb, Bm:float()) end, "~same dtype")
end)

-- ---- Householder product ----

-- plain Lua: the first n columns of H_1 ... H_k
local function householder_ref(A, tau)
  local m, n, k = #A, #A[1], #tau
  local Q = {}
  for i = 1, m do Q[i] = {}; for j = 1, m do Q[i][j] = i == j and 1 or 0 end end
  for r = 1, k do
    local v = {}
    for i = 1, m do v[i] = i < r and 0 or (i == r and 1 or A[i][r]) end
    -- Q <- Q (I - tau v vᵀ)
    for i = 1, m do
      local s = 0
      for j = 1, m do s = s + Q[i][j] * v[j] end
      for j = 1, m do Q[i][j] = Q[i][j] - tau[r] * s * v[j] end
    end
  end
  local out = {}
  for i = 1, m do out[i] = {}; for j = 1, n do out[i][j] = Q[i][j] end end
  return out
end

T.test("householder_product", function()
  local A = torch.tensor({ { 1, 2, 3 }, { 0.5, -1, 2 }, { 0.25, 0.3, 1 }, { -2, 0.1, 0.7 } }, f64)
  local tau = torch.tensor({ 1.2, 0.4 }, f64)
  local Q = L.householder_product(A, tau)
  T.near(Q:tolist(), householder_ref(A:tolist(), tau:tolist()), 1e-14, "against plain Lua")
  -- tau = 2 / |v|^2 makes each H a reflection: Q has orthonormal columns
  local m, n = 5, 3
  local R = torch.randn(m, n, f64)
  local taus = {}
  for i = 0, n - 1 do
    local v = R:select(1, i):narrow(0, i + 1, m - i - 1)
    taus[i + 1] = 2 / (1 + (v * v):sum():item())
  end
  local Qo = L.householder_product(R, torch.tensor(taus, f64))
  T.near(Qo:t():matmul(Qo):tolist(), torch.eye(n, f64):tolist(), 1e-13, "orthonormal")
  local Qb = L.householder_product(torch.stack({ A, A * 2 }), torch.stack({ tau, tau }))
  T.near(Qb[1]:tolist(), householder_ref((A * 2):tolist(), tau:tolist()), 1e-14, "batched")
  gradcheck("householder_product", function(X, t) return L.householder_product(X, t) end, { A, tau })
  T.raises(function() L.householder_product(A:t(), tau) end,
    "torch.linalg.householder_product: input.shape[-2] must be greater than or equal to input.shape[-1]")
  T.raises(function() L.householder_product(A, torch.ones(4, f64)) end,
    "torch.linalg.householder_product: input.shape[-1] must be greater than or equal to tau.shape[-1]")
end)

-- ---- cond and the small ones ----

T.test("cond", function()
  local A = torch.tensor({ { 1, 2 }, { 3, 4 } }, f64) -- A⁻¹ = [[-2, 1], [1.5, -0.5]]
  local r = math.sqrt(221)
  T.near(L.cond(A):item(), math.sqrt((15 + r) / (15 - r)), 1e-12, "2-norm")
  T.near(L.cond(A, -2):item(), math.sqrt((15 - r) / (15 + r)), 1e-12, "-2")
  T.near(L.cond(A, "fro"):item(), 15, 1e-13, "fro")
  T.near(L.cond(A, 1):item(), 6 * 3.5, 1e-13, "1")
  T.near(L.cond(A, math.huge):item(), 7 * 3, 1e-13, "inf")
  T.near(L.cond(A, -1):item(), 4 * 1.5, 1e-13, "-1")
  T.near(L.cond(A, -math.huge):item(), 3 * 2, 1e-13, "-inf")
  T.near(L.cond(torch.diag(torch.tensor({ 3, 1, 0.5 }, f64)), "nuc"):item(), 4.5 * (1 / 3 + 1 + 2), 1e-13, "nuc")
  T.eq(L.cond(torch.tensor({ { 1, 2 }, { 2, 4 } }, f64), 1):item(), math.huge, "singular: inf")
  T.near(L.cond(torch.tensor({ { 3, 0 }, { 0, 1 }, { 0, 0 } }, f64)):item(), 3, 1e-12, "non-square, 2-norm")
  T.eq(L.cond(torch.stack({ A, A })):size():totable(), { 2 }, "batched")
  T.raises(function() L.cond(A, 3) end, "linalg.cond got an invalid norm type: 3")
  T.raises(function() L.cond(torch.ones(2, 3), 1) end, "~must be batches of square matrices")
end)

T.test("diagonal, matmul, vecdot, vander", function()
  local A = torch.arange(24, f64):reshape(2, 3, 4)
  T.eq(L.diagonal(A):tolist(), { { 0.0, 5.0, 10.0 }, { 12.0, 17.0, 22.0 } }, "last two dims")
  T.eq(L.diagonal(A, { offset = 1 }):tolist(), { { 1.0, 6.0, 11.0 }, { 13.0, 18.0, 23.0 } }, "offset")
  T.eq(L.diagonal(A, { dim1 = 0, dim2 = 1 }):tolist(), { { 0.0, 16.0 }, { 1.0, 17.0 }, { 2.0, 18.0 }, { 3.0, 19.0 } }, "dims")
  T.check(torch.equal(L.matmul(A, A:transpose(1, 2)), A:matmul(A:transpose(1, 2))), "matmul")
  local x, y = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, f64), torch.tensor({ 1, 0, -1 }, f64)
  T.eq(L.vecdot(x, y):tolist(), { -2.0, -2.0 }, "vecdot broadcasts")
  T.eq(L.vecdot(x, x, { dim = 0 }):tolist(), { 17.0, 29.0, 45.0 }, "dim")
  local z = torch.complex(torch.tensor({ 1, 2 }, f64), torch.tensor({ 1, -1 }, f64))
  local d = L.vecdot(z, z) -- conj(z) . z = |z|^2
  T.near({ d.real:item(), d.imag:item() }, { 7, 0 }, 1e-15, "complex: conjugates x")
  T.raises(function() L.vecdot(x, y:float()) end, "~Expected x and y to have the same dtype")
  local V = L.vander(torch.tensor({ 2, 3, -1 }, f64))
  T.eq(V:tolist(), { { 1.0, 2.0, 4.0 }, { 1.0, 3.0, 9.0 }, { 1.0, -1.0, 1.0 } }, "vander")
  T.eq(L.vander(torch.tensor({ { 2, 3 } }, f64), { N = 4 }):tolist(), { { { 1.0, 2.0, 4.0, 8.0 }, { 1.0, 3.0, 9.0, 27.0 } } }, "N")
  gradcheck("vander", function(t) return L.vander(t, { N = 4 }) end, { torch.tensor({ 0.5, -1.5, 2 }, f64) })
  T.raises(function() L.vander(torch.tensor({ 1.0 }), { N = 1 }) end, "N must be greater than 1.")
  T.raises(function() L.vander(torch.tensor(1.0)) end, "linalg.vander: x must have at least one dimension.")
end)

T.test("tensorinv, tensorsolve", function()
  torch.manual_seed(5)
  local A = torch.randn(4, 6, 8, 3, f64)
  local Ai = L.tensorinv(A, { ind = 2 })
  T.eq(Ai:size():totable(), { 8, 3, 4, 6 }, "shape")
  T.near(A:reshape(24, 24):matmul(Ai:reshape(24, 24)):tolist(), torch.eye(24, f64):tolist(), 1e-9, "inverse")
  local A1 = torch.randn(6, 2, 3, f64)
  T.eq(L.tensorinv(A1, 1):size():totable(), { 2, 3, 6 }, "ind = 1")
  T.raises(function() L.tensorinv(A, { ind = 0 }) end, "Expected a strictly positive integer for 'ind', but got 0")
  T.raises(function() L.tensorinv(torch.randn(2, 3, 4), 1) end,
    "Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), but got 12 != 2")
  local As = torch.randn(2, 3, 6, f64)
  local B = torch.randn(2, 3, f64)
  local X = L.tensorsolve(As, B)
  T.eq(X:size():totable(), { 6 }, "tensorsolve shape")
  T.near(As:reshape(6, 6):matmul(X):reshape(2, 3):tolist(), B:tolist(), 1e-10, "tensorsolve")
  local Ad = As:permute(2, 0, 1) -- (6, 2, 3): move dim 0 to the end
  T.near(L.tensorsolve(Ad, B, { dims = { 0 } }):tolist(), X:tolist(), 1e-10, "dims")
  T.raises(function() L.tensorsolve(torch.randn(2, 3, 4), torch.randn(2, 3)) end,
    "Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), but got 4 != 6")
end)

T.test("LinAlgError", function()
  local ok, err = pcall(L.inv, torch.tensor({ { 1, 2 }, { 2, 4 } }, f64))
  T.eq({ ok, L.LinAlgError.matches(err) }, { false, true }, "inv's error is one")
  ok, err = pcall(L.cholesky, torch.tensor({ { -1.0 } }))
  T.eq({ ok, L.LinAlgError.matches(err) }, { false, true }, "cholesky's error is one")
  ok, err = pcall(L.inv, torch.ones(2, 3))
  T.eq({ ok, L.LinAlgError.matches(err) }, { false, false }, "a shape error is not")
  T.raises(function() error(L.LinAlgError("mine"), 0) end, "torch.linalg.LinAlgError: mine")
  T.check(L.LinAlgError.matches(L.LinAlgError("mine")), "its own")
end)

T.test("CUDA", function()
  if not torch.cuda.is_available() then return T.skip("no GPU") end
  local C = torch.tensor({ { 0, 0, 6 }, { 1, 0, -11 }, { 0, 1, 6 } }, f64):cuda()
  local w, V = L.eig(C)
  T.eq({ w.device.type, V.device.type }, { "cuda", "cuda" }, "eig stays on the GPU")
  T.near(sorted_values(w:cpu()), { { 1, 0 }, { 2, 0 }, { 3, 0 } }, 1e-12, "eig values")
  check_eig(C, w, V, 1e-12, "eig cuda")
  local A = torch.tensor({ { 4, 3, 1 }, { 6, 3, 2 }, { 1, 5, 9 } }, f64)
  local LU, piv = L.lu_factor(A:cuda())
  local B = torch.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } }, f64)
  T.near(L.lu_solve(LU, piv, B:cuda(), { adjoint = true }):cpu():tolist(), L.solve(A:t(), B):tolist(), 1e-12, "lu_solve")
  local M = A + A:t()
  local LD, p = L.ldl_factor(M:cuda())
  T.eq(LD.device.type, "cuda")
  T.near(L.ldl_solve(LD, p, B:cuda()):cpu():tolist(), L.solve(M, B):tolist(), 1e-12, "ldl_solve")
  local Aq = torch.tensor({ { 1, 2, 3 }, { 0.5, -1, 2 }, { 0.25, 0.3, 1 }, { -2, 0.1, 0.7 } }, f64)
  local tau = torch.tensor({ 1.2, 0.4 }, f64)
  T.near(L.householder_product(Aq:cuda(), tau:cuda()):cpu():tolist(), householder_ref(Aq:tolist(), tau:tolist()), 1e-14,
    "householder_product")
  T.near(L.cond(A:cuda(), 1):item(), L.cond(A, 1):item(), 1e-12, "cond")
  local _, info = L.inv_ex(torch.tensor({ { 1, 2 }, { 2, 4 } }, f64):cuda())
  T.eq({ info.device.type, info:item() }, { "cuda", 2 }, "inv_ex info")
  local _, cinfo = L.cholesky_ex(torch.tensor({ { 1, 2 }, { 2, 1 } }, f64):cuda())
  T.eq({ cinfo.device.type, cinfo:item() }, { "cuda", 2 }, "cholesky_ex info")
  T.near(L.vander(torch.tensor({ 2, 3 }, f64):cuda()):cpu():tolist(), { { 1, 2 }, { 1, 3 } }, 0, "vander")
end)
