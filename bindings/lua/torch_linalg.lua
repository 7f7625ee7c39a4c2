-- torch.linalg made of tensor ops (so autograd and every device come with them), on batches
-- (..., n, n): solve, inv, det, slogdet, lu_factor, lu, solve_triangular, cholesky, qr
-- (Householder), eigh / eigvalsh (parallel-order Jacobi), svd / svdvals (one-sided Jacobi), pinv,
-- matrix_rank, lstsq; plus torch.inverse, det, slogdet, logdet, cholesky, cholesky_solve, svd,
-- pinverse and their Tensor methods. Singularity and definiteness checks read the pivots back
-- once per call (a sync on CUDA). Jacobi costs O(n^3) per sweep: meant for small n.
local torch = require "torch"
local U = require "nn_util"
torch.linalg = torch.linalg or {}
local L = torch.linalg

-- ---- argument checks (PyTorch's messages) ----

local scalar_name = U.scalar_name

local function check_matrix(fname, A, name)
  if not torch.is_tensor(A) then U.errorf("%s: %s must be a Tensor, got %s", fname, name or "A", U.typename(A)) end
  if A:dim() < 2 then U.errorf("%s: The input tensor %s must have at least 2 dimensions.", fname, name or "A") end
  if not A:is_floating_point() then
    U.errorf("%s: Expected a floating point or complex tensor as input. Got %s", fname, scalar_name(A.dtype))
  end
end

local function check_square(fname, A, name)
  check_matrix(fname, A, name)
  if A:size(-1) ~= A:size(-2) then
    U.errorf("%s: %s must be batches of square matrices, but they are %d by %d matrices", fname, name or "A", A:size(-2), A:size(-1))
  end
end

local function batch_shape(A)
  local s = {}
  for d = 0, A:dim() - 3 do s[#s + 1] = A:size(d) end
  return s
end

-- A and B expanded to their broadcast batch shape (the last two dims kept)
local function broadcast_batch(fname, A, B)
  local a, b = batch_shape(A), batch_shape(B)
  local n = math.max(#a, #b)
  local s = {}
  for i = 1, n do
    local x, y = a[i - n + #a] or 1, b[i - n + #b] or 1
    if x ~= y and x ~= 1 and y ~= 1 then
      U.errorf("%s: The size of tensor a (%d) must match the size of tensor b (%d) at non-singleton dimension %d", fname, x, y, i - 1)
    end
    s[i] = x == 1 and y or x
  end
  local function ex(T)
    local sh = { table.unpack(s) }
    sh[#sh + 1], sh[#sh + 2] = T:size(-2), T:size(-1)
    return T:expand(sh)
  end
  return ex(A), ex(B)
end

local function mT(A) return A:transpose(-2, -1) end

local function eye(n, like)
  return torch.eye(n, { dtype = like.dtype, device = like.device })
end

-- The first failing (batch element, 1-based index) of a bool tensor (..., n) of failures, or nil.
local function first_failure(bad)
  if not bad:any():item() then return nil end
  local n = bad:size(-1)
  local rows = bad:reshape(-1, n):tolist()
  for b, row in ipairs(rows) do
    for i, v in ipairs(row) do if v then return b - 1, i end end
  end
end

-- PyTorch's error text: "name: (Batch element b): message" for batched inputs
local function linalg_error(fname, batched, b, msg)
  if batched then U.errorf("%s: (Batch element %d): %s", fname, b, msg) end
  U.errorf("%s: %s", fname, msg)
end

-- ---- Gaussian elimination with partial pivoting ----

-- Eliminates the first n columns of M (..., n, m >= n), choosing each pivot as the largest
-- magnitude in its column at or below the diagonal. mode "jordan" clears above the pivots as
-- well (then M[.., :n] is diagonal), "lu" keeps the multipliers below the diagonal (LAPACK's
-- packed LU). Returns M, the pivots (..., n), the row order perm (..., n) (M's row i came from
-- row perm[i]), the LAPACK-style 1-based pivot rows (..., n) and whether the number of row
-- swaps is odd (..., 1).
local function eliminate(M, n, mode)
  local r = torch.arange(n, { device = M.device })
  local ncols = M:size(-1)
  local exshape = batch_shape(M)
  exshape[#exshape + 1], exshape[#exshape + 2] = n, ncols
  local perm
  local pivots, piv_rows, flips = {}, {}, nil
  for k = 0, n - 1 do
    local col = M:select(-1, k):abs():masked_fill(r:lt(k), -1)
    local p = col:argmax(-1, true) -- (..., 1)
    local idx = torch.where(r:eq(k), p, torch.where(r:eq(p), k, r)) -- swap rows k and p
    M = M:gather(-2, idx:unsqueeze(-1):expand(exshape))
    perm = perm and perm:gather(-1, idx) or idx
    piv_rows[k + 1] = p + 1
    local sw = p:ne(k)
    flips = flips and flips:logical_xor(sw) or sw
    local piv = M:narrow(-2, k, 1):narrow(-1, k, 1) -- (..., 1, 1)
    pivots[k + 1] = piv:squeeze(-1)
    -- a zero pivot means a zero column below it (LAPACK skips that step): multipliers 0
    local safe = torch.where(piv:eq(0), torch.ones_like(piv), piv)
    local rows = (mode == "jordan" and r:ne(k) or r:gt(k)):unsqueeze(-1):to(M.dtype)
    local f = M:narrow(-1, k, 1) / safe * rows -- (..., n, 1)
    local prow = M:narrow(-2, k, 1)
    if mode == "lu" then prow = prow * r:ge(k):to(M.dtype) end -- keep the stored multipliers
    M = M - f * prow
    if mode == "lu" then
      M = torch.where(r:eq(k):unsqueeze(-2):logical_and(r:gt(k):unsqueeze(-1)), f, M) -- column k below the pivot
    end
  end
  return M, torch.cat(pivots, -1), perm, torch.cat(piv_rows, -1), flips
end

-- torch.linalg.solve(A, B, {left=true}): X with AX = B (XA = B when left=false); B may be a
-- vector (..., n) (then X is too). Batch dims broadcast.
function L.solve(A, B, ...)
  local o = U.parse("linalg.solve", { { "left", true } }, ...)
  local fname = "linalg.solve"
  check_square(fname, A)
  if not torch.is_tensor(B) then U.errorf("%s: B must be a Tensor, got %s", fname, U.typename(B)) end
  -- PyTorch's rule: B is a vector if it is 1-D, or its shape is A's without the last dim
  local vector = B:dim() == 1
  if not vector and B:dim() == A:dim() - 1 then
    vector = true
    for d = 0, B:dim() - 1 do if B:size(d) ~= A:size(d) then vector = false end end
  end
  local left = o.left
  local Bm = vector and B:unsqueeze(left and -1 or -2) or B
  check_matrix(fname, Bm, "B")
  if Bm.dtype ~= A.dtype then
    U.errorf("%s: Expected A and B to have the same dtype, but found A of type %s and B of type %s instead", fname,
      scalar_name(A.dtype), scalar_name(B.dtype))
  end
  if (left and A:size(-2) ~= Bm:size(-2)) or (not left and A:size(-1) ~= Bm:size(-1)) then
    U.errorf("%s: Incompatible shapes of A and B for the equation %s (%dx%d and %dx%d)", fname,
      left and "AX = B" or "XA = B", A:size(-2), A:size(-1), Bm:size(-2), Bm:size(-1))
  end
  if not left then -- XA = B  <=>  AᵀXᵀ = Bᵀ
    local X = mT(L.solve(mT(A), mT(Bm)))
    return vector and X:squeeze(-2) or X
  end
  local n = A:size(-1)
  local batched = A:dim() > 2
  local Ab, Bb = broadcast_batch(fname, A, Bm)
  local M, piv = eliminate(torch.cat({ Ab, Bb }, -1), n, "jordan")
  local b = first_failure(piv:eq(0))
  if b then linalg_error("torch." .. fname, batched, b, "The solver failed because the input matrix is singular.") end
  local X = M:narrow(-1, n, Bb:size(-1)) / piv:unsqueeze(-1)
  return vector and X:squeeze(-1) or X
end

function L.inv(A)
  check_square("linalg.inv", A)
  local n = A:size(-1)
  local I = eye(n, A):expand(A:size())
  local M, piv = eliminate(torch.cat({ A, I }, -1), n, "jordan")
  local b, i = first_failure(piv:eq(0))
  if b then
    linalg_error("linalg.inv", A:dim() > 2, b,
      string.format("The diagonal element %d is zero, the inversion could not be completed because the input matrix is singular.", i))
  end
  return M:narrow(-1, n, n) / piv:unsqueeze(-1)
end
torch.inverse = L.inv

-- det = product of the LU pivots, negated once per row swap
function L.det(A)
  check_square("linalg.det", A)
  local _, piv, _, _, flips = eliminate(A, A:size(-1), "forward")
  local sign = 1 - flips:to(A.dtype):squeeze(-1) * 2
  return piv:prod(-1) * sign
end
torch.det = L.det

-- slogdet(A) -> sign, logabsdet (sign 0 and logabsdet -inf for a singular A)
function L.slogdet(A)
  check_square("linalg.slogdet", A)
  local _, piv, _, _, flips = eliminate(A, A:size(-1), "forward")
  local sign = (1 - flips:to(A.dtype):squeeze(-1) * 2) * piv:sign():prod(-1)
  return sign, piv:abs():log():sum(-1)
end
torch.slogdet = L.slogdet

function torch.logdet(A)
  local sign, logabs = L.slogdet(A)
  return torch.where(sign:lt(0), torch.full({}, 0 / 0, { dtype = A.dtype, device = A.device }), logabs)
end

-- lu_factor(A) -> LU (L's multipliers below the diagonal, U on and above), pivots (int32, 1-based)
function L.lu_factor(A, ...)
  local o = U.parse("linalg.lu_factor", { { "pivot", true } }, ...)
  if not o.pivot then U.error("linalg.lu_factor: LU without pivoting is not implemented on the CPU") end
  check_square("linalg.lu_factor", A)
  local M, _, _, rows = eliminate(A, A:size(-1), "lu")
  return M, rows:to(torch.int32)
end

-- lu(A) -> P, L, U with A = P L U
function L.lu(A, ...)
  local o = U.parse("linalg.lu", { { "pivot", true } }, ...)
  if not o.pivot then U.error("linalg.lu: LU without pivoting is not implemented on the CPU") end
  check_square("linalg.lu", A)
  local n = A:size(-1)
  local M, _, perm = eliminate(A, n, "lu")
  local r = torch.arange(n, { device = A.device })
  local P = r:unsqueeze(-1):eq(perm:unsqueeze(-2)):to(A.dtype) -- P[a, i] = (a == perm[i])
  return P, M:tril(-1) + eye(n, A), M:triu()
end

-- The symmetric matrix A's lower (or upper) triangle describes. Under autograd its gradient
-- comes out symmetric, as PyTorch's eigh / cholesky gradients are (the value is unchanged).
local function sym_from(A, uplo)
  local S
  if uplo == "L" then S = A:tril() + mT(A:tril(-1)) else S = A:triu() + mT(A:triu(1)) end
  if not A.requires_grad then return S end
  local half = (A + mT(A)) * 0.5
  return half + (S - half):detach()
end

-- ---- triangular solves, Cholesky ----

-- solve_triangular(A, B, {upper=, left=true, unitriangular=false}): substitution row by row
function L.solve_triangular(A, B, ...)
  local o = U.parse("linalg.solve_triangular", { { "upper", U.REQUIRED }, { "left", true }, { "unitriangular", false } }, ...)
  local fname = "linalg.solve_triangular"
  check_square(fname, A)
  check_matrix(fname, B, "B")
  if not o.left then
    return mT(L.solve_triangular(mT(A), mT(B), { upper = not o.upper, unitriangular = o.unitriangular }))
  end
  if A:size(-2) ~= B:size(-2) then
    U.errorf("%s: Incompatible shapes of A and B for the equation AX = B (%dx%d and %dx%d)", fname,
      A:size(-2), A:size(-1), B:size(-2), B:size(-1))
  end
  A, B = broadcast_batch(fname, A, B)
  local n = A:size(-1)
  local first, last, step = 0, n - 1, 1
  if o.upper then first, last, step = n - 1, 0, -1 end
  local done -- the solved rows so far, in order of index
  for i = first, last, step do
    local x = B:narrow(-2, i, 1)
    if done then
      local lo = o.upper and i + 1 or 0
      x = x - A:narrow(-2, i, 1):narrow(-1, lo, done:size(-2)):matmul(done)
    end
    if not o.unitriangular then x = x / A:narrow(-2, i, 1):narrow(-1, i, 1) end
    done = done == nil and x or (o.upper and torch.cat({ x, done }, -2) or torch.cat({ done, x }, -2))
  end
  return done
end

-- cholesky(A, {upper=false}): L lower triangular with A = L Lᴴ, column by column from A's lower
-- triangle
function L.cholesky(A, ...)
  local o = U.parse("linalg.cholesky", { { "upper", false } }, ...)
  check_square("linalg.cholesky", A)
  A = sym_from(A, "L")
  local n = A:size(-1)
  local r = torch.arange(n, { device = A.device })
  local diag = {}
  local Lp -- (..., n, j): the columns so far
  for j = 0, n - 1 do
    local c = A:narrow(-1, j, 1) -- (..., n, 1)
    if Lp then c = c - Lp:matmul(mT(Lp:narrow(-2, j, 1))) end
    local d = c:narrow(-2, j, 1) -- (..., 1, 1)
    diag[j + 1] = d:squeeze(-1)
    local safe = torch.where(d:gt(0), d, torch.ones_like(d)):sqrt()
    local col = c / safe * r:ge(j):unsqueeze(-1):to(A.dtype)
    Lp = Lp and torch.cat({ Lp, col }, -1) or col
  end
  local bad = torch.cat(diag, -1):gt(0):logical_not() -- NaN fails too
  local b, i = first_failure(bad)
  if b then
    linalg_error("linalg.cholesky", A:dim() > 2, b, string.format(
      "The factorization could not be completed because the input is not positive-definite (the leading minor of order %d is not positive-definite).", i))
  end
  return o.upper and mT(Lp) or Lp
end
function torch.cholesky(A, upper) return L.cholesky(A, { upper = upper or false }) end

-- cholesky_solve(B, L, upper=false): X with (L Lᴴ) X = B
function torch.cholesky_solve(B, Lf, ...)
  local o = U.parse("cholesky_solve", { { "upper", false } }, ...)
  check_matrix("cholesky_solve", B, "B")
  check_square("cholesky_solve", Lf)
  if o.upper then Lf = mT(Lf) end
  local Y = L.solve_triangular(Lf, B, { upper = false })
  return L.solve_triangular(mT(Lf), Y, { upper = true })
end

-- ---- QR (Householder) ----

-- qr(A, mode="reduced"|"complete"|"r") -> Q, R. Each reflection maps column k (from row k on)
-- to beta e_k with beta = -sign(a_kk) ||x|| (LAPACK's choice); no reflection when the part
-- below the diagonal is already zero.
function L.qr(A, ...)
  local o = U.parse("linalg.qr", { { "mode", "reduced" } }, ...)
  local mode = o.mode
  if mode ~= "reduced" and mode ~= "complete" and mode ~= "r" then
    U.errorf("qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'", tostring(mode))
  end
  check_matrix("linalg.qr", A)
  local m, n = A:size(-2), A:size(-1)
  local k = math.min(m, n)
  local r = torch.arange(m, { device = A.device })
  local R = A
  local Q = mode ~= "r" and eye(m, A) or nil
  for j = 0, k - 1 do
    local x = R:narrow(-1, j, 1) -- (..., m, 1)
    local x0 = x:narrow(-2, j, 1) -- (..., 1, 1)
    local tail = x * r:gt(j):unsqueeze(-1):to(A.dtype)
    local t2 = (tail * tail):sum(-2, true)
    local skip = t2:eq(0)
    local norm = (x0 * x0 + torch.where(skip, torch.ones_like(t2), t2)):sqrt()
    local beta = torch.where(x0:ge(0), -norm, norm)
    local v = tail + r:eq(j):unsqueeze(-1):to(A.dtype) * (x0 - beta) -- (..., m, 1)
    local vtv = (v * v):sum(-2, true)
    local scale = torch.where(skip, torch.zeros_like(vtv), 2 / torch.where(skip, torch.ones_like(vtv), vtv))
    R = R - v * (mT(v):matmul(R) * scale)
    if Q then Q = Q - Q:matmul(v) * (mT(v) * scale) end
  end
  R = R:triu()
  if mode == "complete" then return Q, R end
  R = R:narrow(-2, 0, k)
  if mode == "r" then return torch.empty(0, { dtype = A.dtype, device = A.device }), R end
  return Q:narrow(-1, 0, k), R
end

-- ---- symmetric eigenproblem (cyclic Jacobi) ----

local function eps_of(dtype)
  return dtype == torch.float64 and 2 ^ -52 or 2 ^ -23
end

-- Round-robin pairings: each round a set of disjoint pairs (p < q), every pair once per sweep,
-- so a round's rotations commute and apply together as one matrix. Each round carries the
-- one-hot rows OP, OQ (k x n) of its p's and q's and the diagonal of the indices it leaves out.
local function schedule(n, like)
  local N = n + n % 2
  local players = {}
  for i = 0, N - 1 do players[i + 1] = i end
  local rounds = {}
  local opts = { dtype = like.dtype, device = like.device }
  for _ = 1, N - 1 do
    local P, Q = {}, {}
    for i = 1, N / 2 do
      local x, y = players[i], players[N + 1 - i]
      if x < n and y < n then
        if x > y then x, y = y, x end
        local rp, rq = {}, {}
        for j = 0, n - 1 do rp[j + 1], rq[j + 1] = j == x and 1.0 or 0.0, j == y and 1.0 or 0.0 end
        P[#P + 1], Q[#Q + 1] = rp, rq
      end
    end
    if #P > 0 then
      local OP, OQ = torch.tensor(P, opts), torch.tensor(Q, opts)
      rounds[#rounds + 1] = { OP = OP, OQ = OQ, idle = eye(n, like) - mT(OP):matmul(OP) - mT(OQ):matmul(OQ) }
    end
    table.insert(players, 2, table.remove(players)) -- rotate all but the first
  end
  return rounds
end

-- The round's rotations as one matrix J (..., n, n), J[p,q] = s, J[q,p] = -s, from tan t (..., k)
local function rotation(rd, t)
  local c = (1 / (t * t + 1):sqrt()):unsqueeze(-2)
  local s = t:unsqueeze(-2) * c
  local OPt, OQt = mT(rd.OP), mT(rd.OQ)
  return (OPt * c):matmul(rd.OP) + (OQt * c):matmul(rd.OQ) + (OPt * s):matmul(rd.OQ) - (OQt * s):matmul(rd.OP) + rd.idle
end

-- tan of the rotation angle that zeroes the (p, q) entry of [[app, apq], [apq, aqq]]
local function jacobi_tan(app, aqq, apq)
  local zero = apq:eq(0)
  local theta = (aqq - app) / (torch.where(zero, torch.ones_like(apq), apq) * 2)
  local t = theta:sign() / (theta:abs() + (theta * theta + 1):sqrt())
  t = torch.where(theta:eq(0), torch.ones_like(t), t) -- sign(0) = 0, but t should be 1
  return torch.where(zero, torch.zeros_like(t), t)
end

-- Sweeps Jacobi rotations over every (p, q) until the off-diagonal part is negligible in every
-- batch element. Returns the eigenvalues (unsorted, ..., n) and eigenvectors (columns).
local function jacobi(S, want_vectors)
  local n = S:size(-1)
  local I = eye(n, S)
  local V = want_vectors and I:expand(S:size()) or nil
  local rounds = schedule(n, S)
  local offmask = 1 - I
  local tol = eps_of(S.dtype)
  for _ = 1, 60 do
    local fro2 = (S * S):sum({ -2, -1 })
    local off2 = (S * S * offmask):sum({ -2, -1 })
    if not off2:gt(fro2 * (tol * tol)):any():item() then break end
    for _, rd in ipairs(rounds) do
      local d = S:diagonal(0, -2, -1):unsqueeze(-2) -- (..., 1, n)
      local app, aqq = d:matmul(mT(rd.OP)):squeeze(-2), d:matmul(mT(rd.OQ)):squeeze(-2)
      local apq = (rd.OP:matmul(S) * rd.OQ):sum(-1)
      local J = rotation(rd, jacobi_tan(app, aqq, apq))
      S = mT(J):matmul(S):matmul(J)
      if V then V = V:matmul(J) end
    end
  end
  return S:diagonal(0, -2, -1), V
end

-- eigh(A, UPLO="L") -> eigenvalues ascending (..., n), eigenvectors as columns (..., n, n)
function L.eigh(A, ...)
  local o = U.parse("linalg.eigh", { { "UPLO", "L" } }, ...)
  if o.UPLO ~= "L" and o.UPLO ~= "U" then U.errorf("Expected UPLO argument to be 'L' or 'U', but got %s", tostring(o.UPLO)) end
  check_square("linalg.eigh", A)
  local w, V = jacobi(sym_from(A, o.UPLO), true)
  local ws, idx = w:sort(-1)
  local ex = batch_shape(V)
  ex[#ex + 1], ex[#ex + 2] = A:size(-1), A:size(-1)
  return ws, V:gather(-1, idx:unsqueeze(-2):expand(ex))
end

function L.eigvalsh(A, ...)
  local o = U.parse("linalg.eigvalsh", { { "UPLO", "L" } }, ...)
  if o.UPLO ~= "L" and o.UPLO ~= "U" then U.errorf("Expected UPLO argument to be 'L' or 'U', but got %s", tostring(o.UPLO)) end
  check_square("linalg.eigvalsh", A)
  return (jacobi(sym_from(A, o.UPLO), false):sort(-1))
end

-- ---- SVD (one-sided Jacobi) ----

-- The same rotations as jacobi() on the Gram matrix AᵀA, applied to A's columns (m >= n)
-- until they are orthogonal: their norms are the singular values, V the accumulated rotations.
local function one_sided(A)
  local n = A:size(-1)
  local I = eye(n, A)
  local vs = batch_shape(A)
  vs[#vs + 1], vs[#vs + 2] = n, n
  local V = I:expand(vs)
  local rounds = schedule(n, A)
  local offmask = 1 - I
  local tol = eps_of(A.dtype)
  for _ = 1, 60 do
    local G = mT(A):matmul(A)
    if not (G * G * offmask):sum({ -2, -1 }):gt((G * G * I):sum({ -2, -1 }) * (tol * tol)):any():item() then break end
    for _, rd in ipairs(rounds) do
      local ap, aq = A:matmul(mT(rd.OP)), A:matmul(mT(rd.OQ)) -- (..., m, k)
      local J = rotation(rd, jacobi_tan((ap * ap):sum(-2), (aq * aq):sum(-2), (ap * aq):sum(-2)))
      A = A:matmul(J)
      V = V:matmul(J)
    end
  end
  return A, V
end

local function expand_last2(T, a, b)
  local s = batch_shape(T)
  s[#s + 1], s[#s + 2] = a, b
  return s
end

-- U (m x m, or m x k when not full), S (k) descending, Vh (n x n, or k x n) with A = U diag(S) Vh
local function svd(A, full, want_uv)
  local m, n = A:size(-2), A:size(-1)
  if m < n then
    local U, S, Vh = svd(mT(A), full, want_uv)
    if not want_uv then return nil, S end
    return mT(Vh), S, mT(U)
  end
  local W, V = one_sided(A)
  local sigma = (W * W):sum(-2):sqrt() -- (..., n)
  local S, idx = sigma:sort(-1, true)
  if not want_uv then return nil, S end
  W = W:gather(-1, idx:unsqueeze(-2):expand(expand_last2(W, m, n)))
  V = V:gather(-1, idx:unsqueeze(-2):expand(expand_last2(V, n, n)))
  -- columns of (numerically) zero singular values carry no direction: left for the completion
  local Su = S:unsqueeze(-2)
  local small = Su:le(Su:narrow(-1, 0, 1) * (eps_of(A.dtype) * m))
  local Uk = torch.where(small, torch.zeros_like(W), W / torch.where(small, torch.ones_like(Su), Su))
  -- Complete U (and fill columns of zero singular values) with a Householder QR of Uk: the
  -- nonzero columns come first, so Q's first columns are ±those, the rest orthonormal.
  local Q, R = L.qr(Uk, "complete")
  local d = R:diagonal(0, -2, -1) -- (..., n)
  local flip = torch.where(d:lt(0), -torch.ones_like(d), torch.ones_like(d))
  local Qk = Q:narrow(-1, 0, n) * flip:unsqueeze(-2)
  local Uf = torch.where(small, Qk, Uk)
  if full and m > n then Uf = torch.cat({ Uf, Q:narrow(-1, n, m - n) }, -1) end
  return Uf, S, mT(V)
end

-- svd(A, full_matrices=true) -> U, S, Vh
function L.svd(A, ...)
  local o = U.parse("linalg.svd", { { "full_matrices", true }, { "driver" } }, ...)
  check_matrix("linalg.svd", A)
  return svd(A, o.full_matrices, true)
end

function L.svdvals(A, ...)
  U.parse("linalg.svdvals", { { "driver" } }, ...)
  check_matrix("linalg.svdvals", A)
  local _, S = svd(A, false, false)
  return S
end

-- torch.svd (the old API): U, S, V (not Vh), reduced by default
function torch.svd(A, some, compute_uv)
  U.check_tensor("svd", "input", 1, A)
  if not (A:is_floating_point() or A:is_complex()) then
    U.errorf("linalg.svd: Expected a floating point or complex tensor as input. Got %s", U.scalar_name(A.dtype))
  end
  if A:dim() < 2 then U.errorf("linalg.svd: The input tensor A must have at least 2 dimensions.") end
  local Uu, S, Vh = svd(A, some == false, true)
  return Uu, S, mT(Vh)
end

-- the tolerance for "zero" singular values: max(atol, rtol * largest); rtol defaults to
-- eps * max(m, n) when neither is given
local function sv_tol(fname, A, S, ...)
  local o = U.parse(fname, { { "atol" }, { "rtol" }, { "hermitian", false } }, ...)
  local atol, rtol = o.atol or 0, o.rtol
  if rtol == nil then rtol = o.atol and 0 or eps_of(A.dtype) * math.max(A:size(-2), A:size(-1)) end
  local smax = S:size(-1) > 0 and S:narrow(-1, 0, 1) or torch.zeros_like(S)
  return torch.clamp(smax * rtol, atol) -- (..., 1)
end

-- pinv(A, atol=None, rtol=None, hermitian=False)
function L.pinv(A, ...)
  check_matrix("linalg.pinv", A)
  local Uu, S, Vh = svd(A, false, true)
  local tol = sv_tol("linalg.pinv", A, S, ...)
  local keep = S:gt(tol)
  local Sinv = torch.where(keep, 1 / torch.where(keep, S, torch.ones_like(S)), torch.zeros_like(S))
  return mT(Vh):matmul(Sinv:unsqueeze(-1) * mT(Uu))
end
-- rcond: a number, or a 0-d tensor (PyTorch's parser takes one for a float)
torch.pinverse = U.checked("pinverse", { "input:Tensor", "rcond:any?" }, function(A, rcond)
  if rcond ~= nil and type(rcond) ~= "number" and not torch.is_tensor(rcond) then
    U.errorf("pinverse(): argument 'rcond' (position 2) must be float, not %s", U.typename(rcond))
  end
  if torch.is_tensor(rcond) then
    if rcond:dim() > 0 then U.error("pinverse(): argument 'rcond' (position 2) must be float, not Tensor") end
    rcond = rcond:item()
  end
  return L.pinv(A, { rtol = rcond or 1e-15 })
end)

-- matrix_rank(A, atol=None, rtol=None, hermitian=False) -> int64
function L.matrix_rank(A, ...)
  check_matrix("linalg.matrix_rank", A)
  local S = L.svdvals(A)
  return S:gt(sv_tol("linalg.matrix_rank", A, S, ...)):sum(-1)
end

-- lstsq(A, B, rcond=None, driver=None) -> {solution=, residuals=, rank=, singular_values=}
-- (the minimum-norm least-squares solution through pinv; the other fields are empty)
function L.lstsq(A, B, ...)
  local o = U.parse("linalg.lstsq", { { "rcond" }, { "driver" } }, ...)
  check_matrix("linalg.lstsq", A)
  local vector = torch.is_tensor(B) and B:dim() == A:dim() - 1
  local Bm = vector and B:unsqueeze(-1) or B
  check_matrix("linalg.lstsq", Bm, "B")
  if A:size(-2) ~= Bm:size(-2) then
    U.errorf("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
  end
  local X = L.pinv(A, { rtol = o.rcond }):matmul(Bm)
  local empty = torch.empty(0, { dtype = A.dtype, device = A.device })
  return { solution = vector and X:squeeze(-1) or X, residuals = empty, rank = torch.empty(0, { dtype = torch.int64, device = A.device }),
    singular_values = empty }
end

local Tensor = torch.Tensor
for _, name in ipairs({ "inverse", "det", "slogdet", "logdet", "cholesky", "cholesky_solve", "svd", "pinverse" }) do
  Tensor[name] = torch[name]
end

return torch
