-- torch_linalg.lua against plain-Lua references (Gaussian elimination, cofactor determinants)
-- and the defining identities of each factorization; gradients by float64 central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64, f32 = { dtype = torch.float64 }, { dtype = torch.float32 }
local LA = torch.linalg

-- ---- plain-Lua matrices (lists of rows) ----

local mm = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")

local function tr(A)
  local C = {}
  for j = 1, #A[1] do C[j] = {} for i = 1, #A do C[j][i] = A[i][j] end end
  return C
end

local function ident(n)
  local I = {}
  for i = 1, n do I[i] = {} for j = 1, n do I[i][j] = i == j and 1.0 or 0.0 end end
  return I
end

local function maxdiff(A, B)
  local w = 0
  for i = 1, #A do for j = 1, #A[i] do w = math.max(w, math.abs(A[i][j] - B[i][j])) end end
  return w
end

-- X with AX = B by Gaussian elimination with partial pivoting
local function ref_solve(A, B)
  local n, m = #A, #B[1]
  local M = {}
  for i = 1, n do
    M[i] = {}
    for j = 1, n do M[i][j] = A[i][j] end
    for j = 1, m do M[i][n + j] = B[i][j] end
  end
  for k = 1, n do
    local p = k
    for i = k + 1, n do if math.abs(M[i][k]) > math.abs(M[p][k]) then p = i end end
    M[k], M[p] = M[p], M[k]
    for i = k + 1, n do
      local f = M[i][k] / M[k][k]
      for j = k, n + m do M[i][j] = M[i][j] - f * M[k][j] end
    end
  end
  local X = {}
  for i = n, 1, -1 do
    X[i] = {}
    for j = 1, m do
      local s = M[i][n + j]
      for k = i + 1, n do s = s - M[i][k] * X[k][j] end
      X[i][j] = s / M[i][i]
    end
  end
  return X
end

local function cofactor_det(A)
  local n = #A
  if n == 1 then return A[1][1] end
  local d = 0
  for j = 1, n do
    local minor = {}
    for i = 2, n do
      local row = {}
      for k = 1, n do if k ~= j then row[#row + 1] = A[i][k] end end
      minor[#minor + 1] = row
    end
    d = d + (j % 2 == 1 and 1 or -1) * A[1][j] * cofactor_det(minor)
  end
  return d
end

local function is_upper(R, tol)
  for i = 1, #R do for j = 1, math.min(i - 1, #R[i]) do if math.abs(R[i][j]) > tol then return false end end end
  return true
end

-- max |A B - C| for tensors (batched)
local function resid(A, B, C) return (A:matmul(B) - C):abs():max():item() end
local function orth_err(Q) -- max |QᵀQ - I|
  local k = Q:size(-1)
  return (Q:transpose(-2, -1):matmul(Q) - torch.eye(k, { dtype = Q.dtype })):abs():max():item()
end

torch.manual_seed(7)
local function spd(n, batch) -- a well-conditioned symmetric positive-definite matrix
  local X = batch and torch.randn(batch, n, n, f64) or torch.randn(n, n, f64)
  return X:matmul(X:transpose(-2, -1)) + torch.eye(n, f64) * n
end

-- ---- solve, inv, det ----

T.test("solve against plain Gaussian elimination", function()
  local A, B = torch.randn(4, 4, f64), torch.randn(4, 3, f64)
  T.near(LA.solve(A, B):tolist(), ref_solve(A:tolist(), B:tolist()), 1e-12, "solve 4x4, 3 rhs")
  local b = torch.randn(4, f64)
  local xv = LA.solve(A, b)
  T.eq(xv.shape:totable(), { 4 }, "vector rhs gives a vector")
  T.near(xv:tolist(), LA.solve(A, b:unsqueeze(-1)):squeeze(-1):tolist(), 1e-14, "vector rhs")
  local C = torch.randn(3, 4, f64)
  T.check(resid(LA.solve(A, C, { left = false }), A, C) < 1e-12, "left=false solves XA = B")
  local xr = LA.solve(A, b, { left = false })
  T.check(xr:dim() == 1 and resid(xr:unsqueeze(0), A, b:unsqueeze(0)) < 1e-12, "left=false vector rhs: a row")
  -- a zero leading entry needs the row swap
  local P = { { 0.0, 2.0, 1.0 }, { 1.0, 1.0, 0.0 }, { 3.0, 0.0, 1.0 } }
  T.near(LA.solve(torch.tensor(P, f64), torch.eye(3, f64)):tolist(), ref_solve(P, ident(3)), 1e-14, "pivoting needed")
end)

T.test("solve batched, broadcast, float32", function()
  local A, B = torch.randn(2, 3, 3, f64), torch.randn(3, 2, f64)
  local X = LA.solve(A, B)
  T.eq(X.shape:totable(), { 2, 3, 2 }, "batch broadcast shape")
  for b = 0, 1 do
    T.near(X:select(0, b):tolist(), ref_solve(A:select(0, b):tolist(), B:tolist()), 1e-12, "batch element " .. b)
  end
  local bv = torch.randn(2, 3, f64) -- shape A.shape[:-1]: a batch of vectors
  T.eq(LA.solve(A, bv).shape:totable(), { 2, 3 }, "batched vector rhs")
  local A32, B32 = A:select(0, 0):to(torch.float32), B:to(torch.float32)
  local X32 = LA.solve(A32, B32)
  T.eq(tostring(X32.dtype), "torch.float32", "float32 stays float32")
  T.near(X32:tolist(), ref_solve(A:select(0, 0):tolist(), B:tolist()), 1e-4, "float32 solve")
end)

T.test("inv", function()
  local A = torch.randn(4, 4, f64)
  local Ai = LA.inv(A)
  T.check(maxdiff(mm(A:tolist(), Ai:tolist()), ident(4)) < 1e-12, "A inv(A) = I")
  T.near(Ai:tolist(), ref_solve(A:tolist(), ident(4)), 1e-12, "inv against elimination")
  T.near(torch.inverse(A):tolist(), Ai:tolist(), 0, "torch.inverse")
  T.near(A:inverse():tolist(), Ai:tolist(), 0, "Tensor:inverse")
  local Ab = torch.randn(3, 2, 3, 3, f64)
  T.check(resid(Ab, LA.inv(Ab), torch.eye(3, f64):expand(3, 2, 3, 3)) < 1e-11, "batched inv")
  T.near(LA.inv(torch.tensor({ { 2, 0 }, { 0, 4 } }, f32)):tolist(), { { 0.5, 0 }, { 0, 0.25 } }, 1e-7, "float32 inv")
end)

T.test("det, slogdet, lu", function()
  for n = 1, 4 do
    local A = torch.randn(n, n, f64)
    T.near(LA.det(A):item(), cofactor_det(A:tolist()), 1e-12, "det n=" .. n)
  end
  local A = torch.randn(5, 4, 4, f64)
  local d = LA.det(A):tolist()
  for b = 1, 5 do T.near(d[b], cofactor_det(A:select(0, b - 1):tolist()), 1e-12, "batched det " .. b) end
  T.near(torch.det(A):tolist(), d, 0, "torch.det")
  T.near(A:det():tolist(), d, 0, "Tensor:det")
  local sign, logabs = LA.slogdet(A)
  for b = 1, 5 do
    T.near(sign:tolist()[b] * math.exp(logabs:tolist()[b]), d[b], 1e-12, "slogdet " .. b)
    T.eq(sign:tolist()[b], d[b] < 0 and -1.0 or 1.0, "slogdet sign " .. b)
  end
  T.eq(LA.det(torch.tensor({ { 1, 2 }, { 2, 4 } }, f64)):item(), 0.0, "singular det is 0")
  local s0, l0 = torch.slogdet(torch.tensor({ { 1, 2 }, { 2, 4 } }, f64))
  T.eq({ s0:item(), l0:item() }, { 0.0, -math.huge }, "singular slogdet")
  local S = spd(3)
  T.near(torch.logdet(S):item(), math.log(cofactor_det(S:tolist())), 1e-12, "logdet")
  T.near(LA.det(torch.tensor({ { 1, 2 }, { 3, 4 } }, f32)):item(), -2, 1e-6, "float32 det")
  -- LAPACK's packed LU and 1-based pivots
  local LU, piv = LA.lu_factor(torch.tensor({ { 1, 2 }, { 3, 4 } }, f64))
  T.near(LU:tolist(), { { 3, 4 }, { 1 / 3, 2 / 3 } }, 1e-15, "lu_factor LU")
  T.eq(piv:tolist(), { 2, 2 }, "lu_factor pivots")
  T.eq(tostring(piv.dtype), "torch.int32", "pivots are int32")
  local B = torch.randn(2, 4, 4, f64)
  local P, Lm, Um = LA.lu(B)
  T.check(resid(P, Lm:matmul(Um), B) < 1e-14, "A = P L U")
  T.check(is_upper(Um:select(0, 0):tolist(), 0) and is_upper(Lm:select(0, 1):transpose(0, 1):tolist(), 0), "U upper, L lower")
  T.check(Lm:abs():max():item() <= 1 + 1e-15, "partial pivoting bounds L by 1")
end)

-- ---- Cholesky, triangular solves ----

T.test("cholesky", function()
  local A = spd(4)
  local Lc = LA.cholesky(A)
  local l = Lc:tolist()
  T.check(maxdiff(mm(l, tr(l)), A:tolist()) < 1e-12, "A = L Lᵀ")
  T.check(is_upper(tr(l), 0), "L lower triangular")
  T.check(Lc:diagonal():min():item() > 0, "positive diagonal")
  T.near(LA.cholesky(A, { upper = true }):tolist(), tr(l), 0, "upper=true gives Lᵀ")
  T.near(LA.cholesky(A:tril()):tolist(), l, 0, "reads the lower triangle only")
  local Ab = spd(3, 4)
  local Lb = LA.cholesky(Ab)
  T.check(resid(Lb, Lb:transpose(-2, -1), Ab) < 1e-12, "batched cholesky")
  local L32 = LA.cholesky(A:to(torch.float32))
  T.near(L32:tolist(), l, 1e-5, "float32 cholesky")
  -- solve_triangular and cholesky_solve
  local B = torch.randn(4, 2, f64)
  T.near(LA.solve_triangular(Lc, B, { upper = false }):tolist(), ref_solve(l, B:tolist()), 1e-12, "solve_triangular lower")
  T.near(LA.solve_triangular(Lc:t(), B, { upper = true }):tolist(), ref_solve(tr(l), B:tolist()), 1e-12, "solve_triangular upper")
  local C = torch.randn(3, 4, f64)
  T.check(resid(LA.solve_triangular(Lc, C, { upper = false, left = false }), Lc, C) < 1e-12, "solve_triangular left=false")
  T.near(torch.cholesky_solve(B, Lc):tolist(), ref_solve(A:tolist(), B:tolist()), 1e-12, "cholesky_solve")
  T.near(torch.cholesky_solve(B, Lc:t(), true):tolist(), ref_solve(A:tolist(), B:tolist()), 1e-12, "cholesky_solve upper")
end)

-- ---- QR ----

T.test("qr", function()
  for _, sh in ipairs({ { 5, 3 }, { 3, 5 }, { 4, 4 }, { 2, 4, 3 } }) do
    local A = torch.randn(sh, f64)
    local m, n = sh[#sh - 1], sh[#sh]
    local k = math.min(m, n)
    local tag = table.concat(sh, "x")
    local Q, R = LA.qr(A)
    T.eq({ Q:size(-2), Q:size(-1), R:size(-2), R:size(-1) }, { m, k, k, n }, "reduced shapes " .. tag)
    T.check(resid(Q, R, A) < 1e-13 and orth_err(Q) < 1e-13, "reduced A = QR, QᵀQ = I " .. tag)
    local Qc, Rc = LA.qr(A, "complete")
    T.eq({ Qc:size(-1), Rc:size(-2) }, { m, m }, "complete shapes " .. tag)
    T.check(resid(Qc, Rc, A) < 1e-13 and orth_err(Qc) < 1e-13, "complete A = QR, QᵀQ = I " .. tag)
    local R1 = #sh == 2 and Rc:tolist() or Rc:select(0, 1):tolist()
    T.check(is_upper(R1, 0), "R upper triangular " .. tag)
    local Qr, Rr = LA.qr(A, { mode = "r" })
    T.eq(Qr:numel(), 0, "mode r: empty Q " .. tag)
    T.near(Rr:tolist(), R:tolist(), 0, "mode r: same R " .. tag)
  end
  local Q, R = LA.qr(torch.tensor({ { 3 }, { 4 } }, f64)) -- LAPACK's signs
  T.near({ Q:tolist(), R:tolist() }, { { { -0.6 }, { -0.8 } }, { { -5 } } }, 1e-15, "Householder signs")
  local Q32, R32 = LA.qr(torch.randn(4, 3, f32))
  T.check(orth_err(Q32) < 1e-5 and tostring(R32.dtype) == "torch.float32", "float32 qr")
end)

-- ---- eigh, svd ----

T.test("eigh and eigvalsh", function()
  local w, V = LA.eigh(torch.tensor({ { 2, 1 }, { 1, 2 } }, f64))
  T.near(w:tolist(), { 1, 3 }, 1e-15, "eigenvalues of [[2,1],[1,2]]")
  for _, n in ipairs({ 1, 3, 6 }) do
    local X = torch.randn(n, n, f64)
    local A = X + X:t()
    w, V = LA.eigh(A)
    local wl = w:tolist()
    local sorted = true
    for i = 2, n do sorted = sorted and wl[i - 1] <= wl[i] end
    T.check(sorted, "ascending n=" .. n)
    T.check(resid(A, V, V * w) < 1e-12 and orth_err(V) < 1e-13, "A V = V diag(w), VᵀV = I n=" .. n)
    local tracesum = 0
    for i = 1, n do tracesum = tracesum + A:tolist()[i][i] end
    local wsum = 0
    for i = 1, n do wsum = wsum + wl[i] end
    T.near(wsum, tracesum, 1e-12, "sum of eigenvalues = trace n=" .. n)
    T.near(LA.eigvalsh(A):tolist(), wl, 1e-12, "eigvalsh n=" .. n)
  end
  local X = torch.randn(4, 4, f64)
  local A = X + X:t()
  T.near(LA.eigvalsh(A:triu() + torch.randn(4, 4, f64):tril(-1), "U"):tolist(), LA.eigvalsh(A):tolist(), 1e-12, "UPLO=U reads the upper triangle")
  local wi, Vi = LA.eigh(torch.eye(3, f64) * 2)
  T.near({ wi:tolist(), Vi:tolist() }, { { 2, 2, 2 }, ident(3) }, 0, "eigh of 2I")
  local Z = torch.tensor({ { 1, 1, 0 }, { 1, 1, 0 }, { 0, 0, 2 } }, f64) -- a repeated eigenvalue
  w, V = LA.eigh(Z)
  T.near(w:tolist(), { 0, 2, 2 }, 1e-15, "repeated eigenvalues")
  T.check(resid(Z, V, V * w) < 1e-14 and orth_err(V) < 1e-14, "repeated: A V = V diag(w)")
  local Ab = spd(4, 3)
  local wb, Vb = LA.eigh(Ab)
  T.check(resid(Ab, Vb, Vb * wb:unsqueeze(-2)) < 1e-11, "batched eigh")
  local w32, V32 = LA.eigh(A:to(torch.float32))
  T.near(w32:tolist(), LA.eigvalsh(A):tolist(), 1e-5, "float32 eigh")
  T.check(orth_err(V32) < 1e-5, "float32 eigenvectors orthogonal")
end)

T.test("svd, svdvals, pinv, matrix_rank, lstsq", function()
  for _, sh in ipairs({ { 5, 3 }, { 3, 5 }, { 2, 4, 4 } }) do
    local A = torch.randn(sh, f64)
    local m, n = sh[#sh - 1], sh[#sh]
    local k = math.min(m, n)
    local tag = table.concat(sh, "x")
    local U, S, Vh = LA.svd(A)
    T.eq({ U:size(-1), S:size(-1), Vh:size(-2) }, { m, k, n }, "full shapes " .. tag)
    T.check(orth_err(U) < 1e-13 and orth_err(Vh:transpose(-2, -1)) < 1e-13, "U, V orthogonal " .. tag)
    T.check(resid(U:narrow(-1, 0, k), S:unsqueeze(-1) * Vh:narrow(-2, 0, k), A) < 1e-13, "A = U S Vᵀ " .. tag)
    local Ur, Sr, Vr = LA.svd(A, false)
    T.eq({ Ur:size(-1), Vr:size(-2) }, { k, k }, "reduced shapes " .. tag)
    T.check(resid(Ur, Sr:unsqueeze(-1) * Vr, A) < 1e-13, "reduced A = U S Vᵀ " .. tag)
    -- the singular values are the square roots of AᵀA's (or AAᵀ's) eigenvalues, descending
    local G = m >= n and A:transpose(-2, -1):matmul(A) or A:matmul(A:transpose(-2, -1))
    T.near(LA.svdvals(A):tolist(), LA.eigvalsh(G):flip(-1):sqrt():tolist(), 1e-12, "svdvals " .. tag)
  end
  local D = torch.tensor({ { 1, 2 }, { 2, 4 }, { 3, 6 } }, f64) -- rank 1
  local U, S = LA.svd(D)
  T.near(S:tolist(), { math.sqrt(70), 0 }, 1e-14, "rank-1 singular values")
  T.check(orth_err(U) < 1e-13, "rank-deficient U still orthogonal")
  local Uo, So, Vo = D:svd() -- the old API: reduced, and V rather than Vh
  T.check(Uo:size(-1) == 2 and resid(Uo * So, Vo:t(), D) < 1e-13, "Tensor:svd")
  T.near(torch.pinverse(D):tolist(), LA.pinv(D):tolist(), 1e-13, "torch.pinverse")
  T.eq(LA.matrix_rank(D):item(), 1, "matrix_rank 1")
  local U0, S0, V0 = LA.svd(torch.zeros(3, 2, f64))
  T.check(S0:abs():max():item() == 0 and orth_err(U0) < 1e-15 and orth_err(V0) < 1e-15, "svd of zeros")
  T.eq(LA.matrix_rank(torch.randn(3, 4, 5, f64)):tolist(), { 4, 4, 4 }, "batched matrix_rank")
  local P = LA.pinv(D)
  T.check(resid(D, P:matmul(D), D) < 1e-13 and resid(P, D:matmul(P), P) < 1e-13, "Moore-Penrose conditions")
  local A, B = torch.randn(6, 3, f64), torch.randn(6, 2, f64)
  local At = A:t():tolist()
  T.near(LA.lstsq(A, B).solution:tolist(), ref_solve(mm(At, A:tolist()), mm(At, B:tolist())), 1e-12, "lstsq = normal equations")
  T.near(LA.pinv(torch.randn(4, 4, f64):matmul(torch.eye(4, f64))):matmul(torch.eye(4, f64)):size(-1), 4, 0, "pinv square")
  local S32 = LA.svdvals(torch.tensor({ { 3, 0 }, { 0, -4 } }, f32))
  T.near(S32:tolist(), { 4, 3 }, 1e-6, "float32 svdvals")
end)

-- ---- gradients ----

T.test("gradients", function()
  local A, B = torch.randn(3, 3, f64) + torch.eye(3, f64) * 3, torch.randn(3, 2, f64)
  gradcheck("solve", function(a, b) return LA.solve(a, b) end, { A, B })
  gradcheck("solve left=false", function(a, b) return LA.solve(a, b, { left = false }) end, { A, B:t():contiguous() })
  gradcheck("inv", LA.inv, { A })
  gradcheck("det", LA.det, { torch.randn(2, 3, 3, f64) })
  gradcheck("slogdet", function(a) return select(2, LA.slogdet(a)) end, { A })
  -- through a symmetric product, as PyTorch's cholesky gradient assumes a symmetric input
  gradcheck("cholesky", function(x) return LA.cholesky(x:matmul(x:t()) + torch.eye(3, f64)) end, { torch.randn(3, 3, f64) })
  -- a raw input gets PyTorch's symmetric gradient (cholesky and eigh read one triangle)
  for name, f in pairs({ cholesky = LA.cholesky, eigvalsh = LA.eigvalsh }) do
    local x = spd(3):requires_grad_()
    f(x):sum():backward()
    local g = x.grad
    T.check(g ~= nil and (g - g:t()):abs():max():item() < 1e-12 and g:abs():max():item() > 0, name .. ": symmetric gradient")
  end
  gradcheck("qr", function(a) local q, r = LA.qr(a); return q:sum() + r:sum() * 0.5 end, { torch.randn(4, 3, f64) })
  gradcheck("eigvalsh", function(x) return LA.eigvalsh(x + x:t()) end, { torch.randn(3, 3, f64) }, { tol = 1e-5 })
  gradcheck("svdvals", LA.svdvals, { torch.randn(4, 3, f64) }, { tol = 1e-5 })
end)

-- ---- errors ----

T.test("errors", function()
  local R = torch.randn(2, 3, f64)
  T.raises(function() LA.solve(R, torch.randn(2, f64)) end, "linalg.solve: A must be batches of square matrices, but they are 2 by 3 matrices", "solve non-square")
  T.raises(function() LA.inv(R) end, "linalg.inv: A must be batches of square matrices, but they are 2 by 3 matrices", "inv non-square")
  T.raises(function() LA.det(R) end, "linalg.det: A must be batches of square matrices, but they are 2 by 3 matrices", "det non-square")
  T.raises(function() LA.cholesky(R) end, "linalg.cholesky: A must be batches of square matrices, but they are 2 by 3 matrices", "cholesky non-square")
  T.raises(function() LA.eigh(R) end, "linalg.eigh: A must be batches of square matrices, but they are 2 by 3 matrices", "eigh non-square")
  T.raises(function() LA.inv(torch.randn(3, f64)) end, "linalg.inv: The input tensor A must have at least 2 dimensions.", "1-D input")
  T.raises(function() LA.solve(torch.eye(3, f64), torch.randn(2, 2, f64)) end,
    "linalg.solve: Incompatible shapes of A and B for the equation AX = B (3x3 and 2x2)", "solve shape mismatch")
  T.raises(function() LA.solve(torch.eye(3, f64), torch.randn(2, 2, f64), { left = false }) end,
    "linalg.solve: Incompatible shapes of A and B for the equation XA = B (3x3 and 2x2)", "solve left=false shape mismatch")
  local sing = torch.tensor({ { 1, 2 }, { 2, 4 } }, f64)
  T.raises(function() LA.solve(sing, torch.randn(2, 1, f64)) end,
    "torch.linalg.solve: The solver failed because the input matrix is singular.", "singular solve")
  T.raises(function() LA.solve(torch.stack({ torch.eye(2, f64), sing }), torch.randn(2, 1, f64)) end,
    "torch.linalg.solve: (Batch element 1): The solver failed because the input matrix is singular.", "singular solve, batched")
  T.raises(function() LA.inv(sing) end,
    "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is singular.", "singular inv")
  T.raises(function() LA.inv(torch.zeros(2, 2, f64)) end,
    "linalg.inv: The diagonal element 1 is zero, the inversion could not be completed because the input matrix is singular.", "zero inv")
  local npd = torch.tensor({ { 4, 2, 0 }, { 2, 5, 3 }, { 0, 3, 1 } }, f64) -- minors 4, 16, -20
  T.raises(function() LA.cholesky(npd) end,
    "linalg.cholesky: The factorization could not be completed because the input is not positive-definite (the leading minor of order 3 is not positive-definite).", "not positive-definite")
  T.raises(function() LA.cholesky(torch.stack({ spd(3), spd(3), -spd(3) })) end,
    "linalg.cholesky: (Batch element 2): The factorization could not be completed because the input is not positive-definite (the leading minor of order 1 is not positive-definite).", "not positive-definite, batched")
  T.raises(function() LA.solve(torch.eye(2, f64), torch.ones(2, 1, f32)) end,
    "linalg.solve: Expected A and B to have the same dtype, but found A of type Double and B of type Float instead", "solve dtypes")
  T.raises(function() LA.qr(R, "full") end,
    "qr received unrecognized mode 'full' but expected one of 'reduced' (default), 'r', or 'complete'", "qr mode")
  T.raises(function() LA.eigh(torch.eye(2, f64), "X") end, "Expected UPLO argument to be 'L' or 'U', but got X", "eigh UPLO")
  T.raises(function() LA.det(torch.eye(2, { dtype = torch.int64 })) end,
    "linalg.det: Expected a floating point or complex tensor as input. Got Long", "integer input")
end)

-- ---- CUDA ----

T.test("cuda", function()
  if not (torch.cuda and torch.cuda.is_available()) then return T.skip("no CUDA device", 4) end
  local A, B = torch.randn(2, 3, 3, f64) + torch.eye(3, f64) * 3, torch.randn(2, 3, 2, f64)
  local Ac, Bc = A:to("cuda"), B:to("cuda")
  T.near(LA.solve(Ac, Bc):cpu():tolist(), LA.solve(A, B):tolist(), 1e-12, "cuda solve")
  T.near(LA.det(Ac):cpu():tolist(), LA.det(A):tolist(), 1e-12, "cuda det")
  local S = spd(3)
  T.near(LA.cholesky(S:to("cuda")):cpu():tolist(), LA.cholesky(S):tolist(), 1e-12, "cuda cholesky")
  T.near(LA.eigvalsh(S:to("cuda")):cpu():tolist(), LA.eigvalsh(S):tolist(), 1e-12, "cuda eigvalsh")
end)
