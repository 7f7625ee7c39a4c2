-- Port of pytorch/tutorials intermediate_source/parametrizations_tutorial.py (Parametrizations
-- Tutorial): torch.nn.utils.parametrize's register_parametrization, cached, composition,
-- right_inverse and remove_parametrizations.
--
-- Run: nnrepl scripts/tutorials/autograd/parametrizations.lua
--
-- Differences from the original (the Python has slips that PyTorch itself rejects; the port
-- does what the text means):
--  * the Skew CNN registers on `cnn`, nn.Conv2d (not nn.Conv2D); parametrization classes with
--    an __init__ get their base set up first, as every nn.Module:extend class here does;
--  * the noisy layer is nn.Linear(3, 3) (weight + weight.T needs a square weight);
--  * torch.solve(B, A).solution is torch.linalg.solve(A, B); the Cayley map's right_inverse
--    solves (A + I) X = A - I for its argument A; torch.symeig(X).eigenvalues is
--    torch.linalg.eigvalsh(X); MatrixExponential.forward takes self;
--  * P.remove_parametrization is P.remove_parametrizations (PyTorch's name);
--  * print(dict(layer.named_parameters())) prints each name and parameter;
--  * `raise ValueError(...)` is error(...);
--  * registering the checking Skew runs its right_inverse on the layer's current weight (in
--    PyTorch as here), which raises for nn.Linear's random weight: the port makes that weight
--    skew-symmetric first (skew_init) wherever the original registers the checking Skew;
--    is_skew allows atol=1e-6: the Cayley map's right_inverse (a float32 solve) gives a
--    diagonal of about 1e-7, not 0, which the default atol (1e-8) rejects.
local P = nn.utils.parametrize

local function symmetric(X)
  return X:triu() + X:triu(1):transpose(-1, -2)
end

local X = torch.rand(3, 3)
local A = symmetric(X)
print(A)
assert(torch.allclose(A, A.T))

local LinearSymmetric = nn.Module:extend("LinearSymmetric")
function LinearSymmetric:__init(n_features)
  self.weight = nn.Parameter(torch.rand(n_features, n_features))
end

function LinearSymmetric:forward(x)
  local A = symmetric(self.weight)
  return x:matmul(A)
end

local layer = LinearSymmetric(3)
local out = layer(torch.rand(8, 3))

-- Introduction to Parametrizations
local Symmetric = nn.Module:extend("Symmetric")
function Symmetric:forward(X)
  return X:triu() + X:triu(1):transpose(-1, -2)
end

layer = nn.Linear(3, 3)
P.register_parametrization(layer, "weight", Symmetric())

A = layer.weight
print(A)
assert(torch.allclose(A, A.T))

local Skew = nn.Module:extend("Skew")
function Skew:forward(X)
  local A = X:triu(1)
  return A - A:transpose(-1, -2)
end

local cnn = nn.Conv2d({ in_channels = 5, out_channels = 8, kernel_size = 3 })
P.register_parametrization(cnn, "weight", Skew())
print(cnn.weight["0, 1"])
print(cnn.weight["2, 2"])

-- Inspecting a parametrized module
layer = nn.Linear(3, 3)
print(string.format("Unparametrized:\n%s", layer))
P.register_parametrization(layer, "weight", Symmetric())
print(string.format("Parametrized:\n%s", layer))

print(layer.parametrizations.weight[0])

for name, p in layer:named_parameters() do
  print(name, p)
end

print(layer.parametrizations.weight.original)

local symmetric_module = Symmetric()
assert(torch.allclose(layer.weight, symmetric_module(layer.parametrizations.weight.original)))

-- Caching the value of a parametrization
local NoisyParametrization = nn.Module:extend("NoisyParametrization")
function NoisyParametrization:forward(X)
  print("Computing the Parametrization")
  return X
end

layer = nn.Linear(3, 3)
P.register_parametrization(layer, "weight", NoisyParametrization())
print("Here, layer.weight is recomputed every time we call it")
local foo = layer.weight + layer.weight.T
local bar = layer.weight:sum()
do
  local _ <close> = P.cached()
  print("Here, it is computed just the first time layer.weight is called")
  foo = layer.weight + layer.weight.T
  bar = layer.weight:sum()
end

-- Composing Parametrizations
local CayleyMap = nn.Module:extend("CayleyMap")
function CayleyMap:__init(n)
  self:register_buffer("Id", torch.eye(n))
end

function CayleyMap:forward(X)
  -- (I + X)(I - X)^{-1}
  return torch.linalg.solve(self.Id - X, self.Id + X)
end

layer = nn.Linear(3, 3)
P.register_parametrization(layer, "weight", Skew())
P.register_parametrization(layer, "weight", CayleyMap(3))
X = layer.weight
assert(torch.allclose(X.T:matmul(X), torch.eye(3), { atol = 1e-6 })) -- X is orthogonal
print("Cayley: X is orthogonal")

local MatrixExponential = nn.Module:extend("MatrixExponential")
function MatrixExponential:forward(X)
  return torch.matrix_exp(X)
end

local layer_orthogonal = nn.Linear(3, 3)
P.register_parametrization(layer_orthogonal, "weight", Skew())
P.register_parametrization(layer_orthogonal, "weight", MatrixExponential())
X = layer_orthogonal.weight
assert(torch.allclose(X.T:matmul(X), torch.eye(3), { atol = 1e-6 })) -- X is orthogonal
print("matrix_exp of a skew matrix: X is orthogonal")

local layer_spd = nn.Linear(3, 3)
P.register_parametrization(layer_spd, "weight", Symmetric())
P.register_parametrization(layer_spd, "weight", MatrixExponential())
X = layer_spd.weight
assert(torch.allclose(X, X.T)) -- X is symmetric
assert(torch.linalg.eigvalsh(X):gt(0.):all():item()) -- X is positive definite
print("matrix_exp of a symmetric matrix: X is symmetric positive definite")

-- Intializing Parametrizations
Skew = nn.Module:extend("Skew")
function Skew:forward(X)
  local A = X:triu(1)
  return A - A:transpose(-1, -2)
end

function Skew:is_skew(X)
  return torch.allclose(X, -X:transpose(-1, -2), { atol = 1e-6 }) -- atol: see the header
end

function Skew:right_inverse(A)
  if not self:is_skew(A) then
    error(string.format("The provided matrix %s is not skew-symmetric", A))
  end
  return A:triu(1)
end

-- not in the original: see the header
local function skew_init(layer)
  local _ <close> = torch.no_grad()
  layer.weight:copy_(layer.weight - layer.weight.T)
  return layer
end

layer = skew_init(nn.Linear(3, 3))
P.register_parametrization(layer, "weight", Skew())
X = torch.rand(3, 3)
X = X - X.T -- X is now skew-symmetric
layer.weight = X -- Initialize layer.weight to be X
assert(torch.allclose(layer.weight, X)) -- layer.weight == X
print("right_inverse: layer.weight == X")

CayleyMap = nn.Module:extend("CayleyMap")
function CayleyMap:__init(n)
  self:register_buffer("Id", torch.eye(n))
end

function CayleyMap:forward(X)
  -- (I + X)(I - X)^{-1}
  return torch.linalg.solve(self.Id - X, self.Id + X)
end

function CayleyMap:right_inverse(A)
  -- (A + I)^{-1}(A - I)
  return torch.linalg.solve(A + self.Id, A - self.Id)
end

layer_orthogonal = skew_init(nn.Linear(3, 3))
P.register_parametrization(layer_orthogonal, "weight", Skew())
P.register_parametrization(layer_orthogonal, "weight", CayleyMap(3))
-- Sample an orthogonal matrix with positive determinant
X = torch.empty(3, 3)
nn.init.orthogonal_(X)
if X:det() < 0. then
  X[0]:neg_()
end
layer_orthogonal.weight = X
assert(torch.allclose(X, layer_orthogonal.weight, { atol = 1e-6 })) -- layer_orthogonal.weight == X
print("right_inverse through Skew and CayleyMap: layer_orthogonal.weight == X")

-- (the original assigns nn.init.orthogonal_(...) as it comes; a draw with determinant -1 has
-- the eigenvalue -1, where the Cayley right_inverse is singular, in PyTorch too: flip a row)
local W = nn.init.orthogonal_(layer_orthogonal.weight):detach()
if W:det() < 0. then
  W[0]:neg_()
end
layer_orthogonal.weight = W
assert(torch.allclose(W, layer_orthogonal.weight, { atol = 1e-5 }))

local PruningParametrization = nn.Module:extend("PruningParametrization")
function PruningParametrization:__init(X, p_drop)
  p_drop = p_drop or 0.2
  -- sample zeros with probability p_drop
  local mask = torch.full_like(X, 1.0 - p_drop)
  self.mask = torch.bernoulli(mask)
end

function PruningParametrization:forward(X)
  return X * self.mask
end

function PruningParametrization:right_inverse(A)
  return A
end

-- Removing a Parametrization
layer = skew_init(nn.Linear(3, 3))
print(layer)
print(layer.weight)
P.register_parametrization(layer, "weight", Skew())
print(layer)
print(layer.weight)
P.remove_parametrizations(layer, "weight")
print(layer)
print(layer.weight)

layer = skew_init(nn.Linear(3, 3))
print(layer)
print(layer.weight)
P.register_parametrization(layer, "weight", Skew())
print(layer)
print(layer.weight)
P.remove_parametrizations(layer, "weight", { leave_parametrized = false })
print(layer)
print(layer.weight)
