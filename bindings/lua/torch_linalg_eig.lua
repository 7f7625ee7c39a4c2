-- torch.linalg.eig / eigvals for general square matrices: complex eigenvalues and eigenvectors
-- (complex64 for float32 / complex64 input, complex128 for float64 / complex128). Computed in
-- plain Lua, one matrix at a time on the host in float64 complex arithmetic (a CUDA tensor is
-- copied there and the results back, as the other host-side linalg code does): reduction to
-- Hessenberg form by Givens rotations, then shifted QR steps (Wilkinson's shift, Givens
-- rotations) to the complex Schur form T = Zᴴ A Z, eigenvectors of T by back substitution,
-- mapped back by Z and scaled to unit norm with their largest component real. The eigenvalues
-- come in the order of T's diagonal (not LAPACK's order). O(n^3) per matrix: meant for small n.
-- Gradients: eig's, through an autograd.Function (PyTorch's formula for distinct eigenvalues).
local torch = require "torch"
local U = require "nn_util"
local L = torch.linalg
local C = require "linalg_util"

-- ---- complex helpers on (re, im) pairs ----

local function cabs(a, b) return math.sqrt(a * a + b * b) end
local function cmul(a, b, c, d) return a * c - b * d, a * d + b * c end
local function cdiv(a, b, c, d)
  if math.abs(c) >= math.abs(d) then
    local r = d / c
    local den = c + d * r
    return (a + b * r) / den, (b - a * r) / den
  end
  local r = c / d
  local den = c * r + d
  return (a * r + b) / den, (b * r - a) / den
end
local function csqrt(a, b)
  local m = cabs(a, b)
  if m == 0 then return 0, 0 end
  local re = math.sqrt((m + math.abs(a)) / 2)
  if a >= 0 then return re, b / (2 * re) end
  local im = b >= 0 and re or -re
  return math.abs(b) / (2 * re), im
end

-- A matrix as two n x n tables (1-based): re, im

-- Givens rotation [c s; -conj(s) c] (c real) with [c s; -conj(s) c] [a; b] = [r; 0]
local function givens(ar, ai, br, bi)
  local na, nb = cabs(ar, ai), cabs(br, bi)
  if nb == 0 then return 1, 0, 0 end
  if na == 0 then return 0, br / nb, -bi / nb end
  local nrm = math.sqrt(na * na + nb * nb)
  local c = na / nrm
  -- s = (a / |a|) conj(b) / nrm
  local sr, si = cmul(ar / na, ai / na, br / nrm, -bi / nrm)
  return c, sr, si
end

-- rows p, q (= p + 1 or any) of M, columns j0..j1: [row p; row q] <- G [row p; row q]
local function rot_rows(Mr, Mi, p, q, c, sr, si, j0, j1)
  local rp, ip, rq, iq = Mr[p], Mi[p], Mr[q], Mi[q]
  for j = j0, j1 do
    local xr, xi, yr, yi = rp[j], ip[j], rq[j], iq[j]
    local syr, syi = cmul(sr, si, yr, yi)
    local sxr, sxi = cmul(sr, -si, xr, xi) -- conj(s) x
    rp[j], ip[j] = c * xr + syr, c * xi + syi
    rq[j], iq[j] = c * yr - sxr, c * yi - sxi
  end
end

-- columns p, q of M, rows i0..i1: M <- M Gᴴ
local function rot_cols(Mr, Mi, p, q, c, sr, si, i0, i1)
  for i = i0, i1 do
    local rr, ri = Mr[i], Mi[i]
    local xr, xi, yr, yi = rr[p], ri[p], rr[q], ri[q]
    local a1, a2 = cmul(sr, -si, yr, yi) -- conj(s) y
    local b1, b2 = cmul(sr, si, xr, xi) -- s x
    rr[p], ri[p] = c * xr + a1, c * xi + a2
    rr[q], ri[q] = c * yr - b1, c * yi - b2
  end
end

local function identity(n)
  local Zr, Zi = {}, {}
  for i = 1, n do
    Zr[i], Zi[i] = {}, {}
    for j = 1, n do Zr[i][j], Zi[i][j] = i == j and 1 or 0, 0 end
  end
  return Zr, Zi
end

-- Schur form in place: H (Hr, Hi) becomes upper triangular T, Z the accumulated rotations.
-- Returns false when the QR steps do not converge.
local function schur(Hr, Hi, n, want_z)
  local Zr, Zi
  if want_z then Zr, Zi = identity(n) end
  -- Hessenberg: zero column k below row k + 1, bottom up
  for k = 1, n - 2 do
    for i = n, k + 2, -1 do
      local c, sr, si = givens(Hr[i - 1][k], Hi[i - 1][k], Hr[i][k], Hi[i][k])
      if not (c == 1 and sr == 0 and si == 0) then
        rot_rows(Hr, Hi, i - 1, i, c, sr, si, k, n)
        Hr[i][k], Hi[i][k] = 0, 0
        rot_cols(Hr, Hi, i - 1, i, c, sr, si, 1, n)
        if Zr then rot_cols(Zr, Zi, i - 1, i, c, sr, si, 1, n) end
      end
    end
  end
  local eps = 2 ^ -52
  local hi, iter, total = n, 0, 0
  while hi > 1 do
    -- find the active block [lo, hi]: the last negligible subdiagonal entry
    local lo = hi
    while lo > 1 do
      local s = cabs(Hr[lo - 1][lo - 1], Hi[lo - 1][lo - 1]) + cabs(Hr[lo][lo], Hi[lo][lo])
      if s == 0 then s = 1 end
      if cabs(Hr[lo][lo - 1], Hi[lo][lo - 1]) <= eps * s then
        Hr[lo][lo - 1], Hi[lo][lo - 1] = 0, 0
        break
      end
      lo = lo - 1
    end
    if lo == hi then
      hi, iter = hi - 1, 0
    else
      iter, total = iter + 1, total + 1
      if total > 60 * n then return false end
      -- Wilkinson's shift: the eigenvalue of the trailing 2 x 2 block nearer its last entry
      local ar, ai, br, bi = Hr[hi - 1][hi - 1], Hi[hi - 1][hi - 1], Hr[hi - 1][hi], Hi[hi - 1][hi]
      local cr, ci, dr, di = Hr[hi][hi - 1], Hi[hi][hi - 1], Hr[hi][hi], Hi[hi][hi]
      local hr_, hi_ = (ar - dr) / 2, (ai - di) / 2
      local pr, pi = cmul(hr_, hi_, hr_, hi_)
      local qr, qi = cmul(br, bi, cr, ci)
      local sr, si = csqrt(pr + qr, pi + qi)
      -- mu = d + h - sqrt(h^2 + bc) or d + h + sqrt(...): the one nearer d
      local m1r, m1i = dr + hr_ - sr, di + hi_ - si
      local m2r, m2i = dr + hr_ + sr, di + hi_ + si
      local mur, mui = m1r, m1i
      if cabs(m2r - dr, m2i - di) < cabs(m1r - dr, m1i - di) then mur, mui = m2r, m2i end
      if iter % 11 == 10 then -- an exceptional shift breaks cycles
        mur = mur + 0.75 * cabs(Hr[hi][hi - 1], Hi[hi][hi - 1])
        mui = mui + 0.5 * cabs(Hr[hi][hi - 1], Hi[hi][hi - 1])
      end
      -- one explicit QR step on the block: H - mu I = Q R, H <- R Q + mu I
      for i = lo, hi do Hr[i][i], Hi[i][i] = Hr[i][i] - mur, Hi[i][i] - mui end
      local rots = {}
      for k = lo, hi - 1 do
        local c, gr, gi = givens(Hr[k][k], Hi[k][k], Hr[k + 1][k], Hi[k + 1][k])
        rot_rows(Hr, Hi, k, k + 1, c, gr, gi, k, n)
        Hr[k + 1][k], Hi[k + 1][k] = 0, 0
        rots[k] = { c, gr, gi }
      end
      for k = lo, hi - 1 do
        local g = rots[k]
        rot_cols(Hr, Hi, k, k + 1, g[1], g[2], g[3], 1, math.min(k + 1, hi))
        if Zr then rot_cols(Zr, Zi, k, k + 1, g[1], g[2], g[3], 1, n) end
      end
      for i = lo, hi do Hr[i][i], Hi[i][i] = Hr[i][i] + mur, Hi[i][i] + mui end
    end
  end
  return true, Zr, Zi
end

-- eigenvectors of the triangular T, mapped back by Z, unit norm, largest component real
local function vectors(Tr, Ti, Zr, Zi, n)
  local norm = 0
  for i = 1, n do for j = i, n do norm = math.max(norm, cabs(Tr[i][j], Ti[i][j])) end end
  local small = math.max(norm * 2 ^ -52, 2 ^ -1000)
  local Vr, Vi = {}, {}
  for i = 1, n do Vr[i], Vi[i] = {}, {} end
  for k = 1, n do
    local yr, yi = {}, {}
    yr[k], yi[k] = 1, 0
    for i = k - 1, 1, -1 do
      local sr, si = 0, 0
      for j = i + 1, k do
        local a, b = cmul(Tr[i][j], Ti[i][j], yr[j], yi[j])
        sr, si = sr + a, si + b
      end
      local dr, di = Tr[i][i] - Tr[k][k], Ti[i][i] - Ti[k][k]
      if cabs(dr, di) < small then dr, di = small, 0 end
      yr[i], yi[i] = cdiv(-sr, -si, dr, di)
    end
    -- x = Z y, then normalise
    local xr, xi, nrm, big, bi = {}, {}, 0, -1, 1
    for i = 1, n do
      local sr, si = 0, 0
      for j = 1, k do
        local a, b = cmul(Zr[i][j], Zi[i][j], yr[j], yi[j])
        sr, si = sr + a, si + b
      end
      xr[i], xi[i] = sr, si
      local m = cabs(sr, si)
      nrm = nrm + m * m
      if m > big then big, bi = m, i end
    end
    nrm = math.sqrt(nrm)
    -- divide by nrm * (x_bi / |x_bi|): unit norm, component bi real and positive
    local pr, pi = xr[bi] / big * nrm, xi[bi] / big * nrm
    for i = 1, n do Vr[i][k], Vi[i][k] = cdiv(xr[i], xi[i], pr, pi) end
  end
  return Vr, Vi
end

local function check(fname, A)
  C.need_square(fname, A)
  if A.dtype == torch.float16 or A.dtype == torch.bfloat16 then
    U.errorf("%s: Low precision dtypes not supported. Got %s", fname, U.scalar_name(A.dtype))
  end
end

local function complex_of(A)
  return (A.dtype == torch.float64 or A.dtype == torch.complex128) and torch.complex128 or torch.complex64
end

-- For a real A: eigenvalues within rounding of the real axis made real (their vectors too), and
-- the others put in exact conjugate pairs, as LAPACK's real algorithm gives them. w (wr, wi) and
-- the vectors' columns (vr, vi, nil without vectors) change in place; T (Tr, Ti) gives the scale.
local function realify(wr, wi, vr, vi, n, Tr, Ti)
  local tn = 0
  for i = 1, n do for j = i, n do tn = math.max(tn, cabs(Tr[i][j], Ti[i][j])) end end
  for i = 1, n do
    if math.abs(wi[i]) <= 4 * n * 2 ^ -52 * tn then
      wi[i] = 0
      if vi then for r = 1, n do vi[r][i] = 0 end end
    end
  end
  local used = {}
  for i = 1, n do
    local best, bj = math.huge, nil -- the nearest unused conjugate of w[i] (im > 0)
    for j = 1, n do
      local d = cabs(wr[j] - wr[i], wi[j] + wi[i])
      if wi[i] > 0 and not used[j] and wi[j] < 0 and d < best then best, bj = d, j end
    end
    if bj then
      used[bj] = true
      local re, im = (wr[i] + wr[bj]) / 2, (wi[i] - wi[bj]) / 2
      wr[i], wi[i], wr[bj], wi[bj] = re, im, re, -im
      if vr then for r = 1, n do vr[r][bj], vi[r][bj] = vr[r][i], -vi[r][i] end end
    end
  end
end

-- the decomposition of A (no autograd): values (..., n), vectors (..., n, n) or nil
local function decompose(fname, A, want_vectors)
  local n = A:size(-1)
  local host = A:detach():to("cpu")
  local re, im
  if host:is_complex() then re, im = host.real:to(torch.float64), host.imag:to(torch.float64)
  else re, im = host:to(torch.float64), torch.zeros(host:size(), { dtype = torch.float64 }) end
  local Rs, Is = re:reshape(-1, n, n):tolist(), im:reshape(-1, n, n):tolist()
  local wr, wi, vr, vi = {}, {}, {}, {}
  for b = 1, #Rs do
    local Hr, Hi = Rs[b], Is[b]
    for i = 1, n do for j = 1, n do
      if Hr[i][j] ~= Hr[i][j] or Hi[i][j] ~= Hi[i][j] or math.abs(Hr[i][j]) == math.huge or math.abs(Hi[i][j]) == math.huge then
        U.errorf("%s: input should not contain infs or NaNs.", fname)
      end
    end end
    local ok, Zr, Zi = schur(Hr, Hi, n, want_vectors)
    if not ok then
      U.errorf("%s: The algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues (error code: %d).", fname, n)
    end
    wr[b], wi[b] = {}, {}
    for i = 1, n do wr[b][i], wi[b][i] = Hr[i][i], Hi[i][i] end
    if want_vectors then vr[b], vi[b] = vectors(Hr, Hi, Zr, Zi, n) end
    if not host:is_complex() then realify(wr[b], wi[b], vr[b], vi[b], n, Hr, Hi) end
  end
  local ct = complex_of(A)
  local vshape = A:size():totable()
  local wshape = { table.unpack(vshape, 1, #vshape - 1) }
  local function cx(r, i, shape)
    local t = torch.complex(torch.tensor(r, { dtype = torch.float64 }), torch.tensor(i, { dtype = torch.float64 }))
    return t:reshape(shape):to(A.device, ct)
  end
  if #Rs == 0 then
    local w = torch.zeros(wshape, { dtype = ct, device = A.device })
    return w, want_vectors and torch.zeros(vshape, { dtype = ct, device = A.device }) or nil
  end
  return cx(wr, wi, wshape), want_vectors and cx(vr, vi, vshape) or nil
end

local function mH(X) return X:transpose(-2, -1):conj() end

-- X with A X = B for complex A, B: the real system [[Re A, -Im A], [Im A, Re A]] [Re X; Im X] =
-- [Re B; Im B] (linalg.solve is real only)
local function csolve(A, B)
  local Ar, Ai, Br, Bi = A.real, A.imag, B.real, B.imag
  local M = torch.cat({ torch.cat({ Ar, -Ai }, -1), torch.cat({ Ai, Ar }, -1) }, -2)
  local X = L.solve(M, torch.cat({ Br, Bi }, -2))
  local n = A:size(-1)
  return torch.complex(X:narrow(-2, 0, n), X:narrow(-2, n, n))
end

-- Gradient (A = V diag(w) V⁻¹): gA = V⁻ᴴ (diag(gw) + (VᴴgV - VᴴV Re(diag(VᴴgV))) / conj(E)) Vᴴ,
-- E[i][j] = w[j] - w[i] off the diagonal; the real part for a real A.
local Eig = torch.autograd.Function:extend("LinalgEigBackward0")
function Eig.forward(ctx, A)
  local w, V = decompose("linalg.eig", A, true)
  ctx.real_input = not A:is_complex()
  ctx.w, ctx.V = w, V
  return w, V
end
function Eig.backward(ctx, gw, gV)
  local w, V = ctx.w, ctx.V
  local n = w:size(-1)
  local Vh = mH(V)
  local inner = torch.zeros_like(V)
  if gV then
    local VhgV = Vh:matmul(gV)
    local d = VhgV:diagonal(0, -2, -1).real -- the normalisation's part
    inner = VhgV - Vh:matmul(V) * d:unsqueeze(-2):to(V.dtype)
    local E = w:unsqueeze(-2) - w:unsqueeze(-1) -- E[i][j] = w[j] - w[i]
    local eye = torch.eye(n, { dtype = torch.bool, device = V.device })
    E = torch.where(eye, torch.ones_like(E), E)
    inner = torch.where(eye, torch.zeros_like(inner), inner / E:conj())
  end
  if gw then inner = inner + torch.diag_embed(gw) end
  -- V⁻ᴴ X = solve(Vᴴ, X)
  local gA = csolve(Vh, inner:matmul(Vh))
  if ctx.real_input then gA = gA.real end
  return gA
end

-- eig(A) -> eigenvalues (..., n), eigenvectors (..., n, n), both complex
function L.eig(A)
  check("linalg.eig", A)
  if A.requires_grad and torch.is_grad_enabled() then return Eig.apply(A) end
  return decompose("linalg.eig", A, true)
end

-- eigvals(A) -> eigenvalues (..., n), complex. Its gradient goes through eig's.
function L.eigvals(A)
  check("linalg.eigvals", A)
  if A.requires_grad and torch.is_grad_enabled() then return (Eig.apply(A)) end
  return (decompose("linalg.eigvals", A, false))
end

return torch
