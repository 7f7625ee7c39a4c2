-- Randomized low-rank factorizations: torch.svd_lowrank(A, q=6, niter=2, M=nil) -> U, S, V with
-- A - M ~ U diag(S) V^H, and torch.pca_lowrank(A, q=min(6, m, n), center=true, niter=2) (the
-- same of A less its column means). The range of A is found from A times a Gaussian matrix,
-- refined by niter power iterations with QR between them (Halko, Martinsson and Tropp 2009,
-- algorithms 4.4 and 5.1); batches of matrices work, as does autograd (matmul, qr and svd).
local torch = require "torch"
local U = require "nn_util"
require "torch_linalg"
local REQ = U.REQUIRED

local function orthonormal(X) return (torch.linalg.qr(X)) end

-- an m x q matrix with orthonormal columns spanning about the range of A (m x n)
local function approximate_basis(A, q, niter)
  local R = torch.randn(A:size(-1), q, { dtype = A.dtype, device = A.device })
  local Q = orthonormal(A:matmul(R))
  for _ = 1, niter do
    Q = orthonormal(A.mH:matmul(Q))
    Q = orthonormal(A:matmul(Q))
  end
  return Q
end

local function check_sizes(fname, A, q, niter)
  local m, n = A:size(-2), A:size(-1)
  q = U.check_int(fname, "q", q)
  if q < 0 or q > math.min(m, n) then
    U.errorf("q(=%d) must be non-negative integer and not greater than min(m, n)=%d", q, math.min(m, n))
  end
  niter = U.check_int(fname, "niter", niter)
  if niter < 0 then U.errorf("niter(=%d) must be non-negative integer", niter) end
  return q, niter
end

local function svd_lowrank(A, q, niter)
  local wide = A:size(-2) < A:size(-1)
  if wide then A = A.mH end -- work on the tall form: the basis then has the fewer rows' rank
  local Q = approximate_basis(A, q, niter)
  local Ub, S, Vh = torch.linalg.svd(Q.mH:matmul(A), { full_matrices = false })
  local Uf, V = Q:matmul(Ub), Vh.mH
  if wide then return V, S, Uf end
  return Uf, S, V
end

function torch.svd_lowrank(...)
  local o = U.parse("svd_lowrank", { { "A", REQ }, { "q", 6 }, { "niter", 2 }, { "M" } }, ...)
  local A = U.check_tensor("svd_lowrank", "A", 1, o.A)
  if A:dim() < 2 then U.errorf("svd_lowrank: expected A to be a matrix or a batch of matrices, got %d-D", A:dim()) end
  local q, niter = check_sizes("svd_lowrank", A, o.q == nil and 6 or o.q, o.niter)
  if o.M ~= nil then A = A - U.check_tensor("svd_lowrank", "M", 4, o.M):broadcast_to(A:size()) end
  return svd_lowrank(A, q, niter)
end

function torch.pca_lowrank(...)
  local o = U.parse("pca_lowrank", { { "A", REQ }, { "q" }, { "center", true }, { "niter", 2 } }, ...)
  local A = U.check_tensor("pca_lowrank", "A", 1, o.A)
  if A:dim() < 2 then U.errorf("pca_lowrank: expected A to be a matrix or a batch of matrices, got %d-D", A:dim()) end
  local q = o.q == nil and math.min(6, A:size(-2), A:size(-1)) or o.q
  local niter
  q, niter = check_sizes("pca_lowrank", A, q, o.niter)
  if o.center then A = A - A:mean(-2, true) end
  return svd_lowrank(A, q, niter)
end

local pca_lowrank = torch.pca_lowrank
function torch.pca_lowrank(...) return U.call_as("pca_lowrank", pca_lowrank, ...) end -- inner errors under its name

return torch
