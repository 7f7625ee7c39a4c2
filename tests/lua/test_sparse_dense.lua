-- dense @ sparse (torch.mm / torch.matmul / x:mm / x:matmul), dense +/- sparse and torch.spmm
-- (bindings/lua/torch_sparse.lua) against plain Lua loops, float64 finite differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local matmul = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")
local f64 = torch.float64

local IDX = { { 1, 0, 2, 1, 0 }, { 0, 2, 3, 0, 2 } } -- duplicates (1,0) and (0,2)
local VALS = { 1.5, -2, 3, 0.25, 4 }
-- the dense [3, 4] matrix of IDX / VALS, duplicates summed, by hand
local S = { { 0, 0, 2, 0 }, { 1.75, 0, 0, 0 }, { 0, 0, 0, 3 } }
local D = { { 1, -1, 0.5 }, { 2, 0.25, -3 } } -- [2, 3]

local function checks(dev)
  local opts = { dtype = torch.float32, device = dev }
  local s = torch.sparse_coo_tensor(IDX, VALS, { 3, 4 }, opts)
  local d = torch.tensor(D, opts)
  local prod = matmul(D, S)

  T.test("dense @ sparse against a plain loop (" .. dev .. ")", function()
    T.near(torch.mm(d, s):tolist(), prod, 1e-6, "torch.mm")
    T.near(torch.matmul(d, s):tolist(), prod, 1e-6, "torch.matmul")
    T.near(d:mm(s):tolist(), prod, 1e-6, "d:mm")
    T.near(d:matmul(s):tolist(), prod, 1e-6, "d:matmul")
    T.check(torch.is_tensor(d:mm(s)), "the result is dense")
    T.near(torch.matmul(torch.tensor({ 1, 2, 3 }, opts), s):tolist(), { 3.5, 0, 2, 9 }, 1e-6, "vector @ sparse")
    T.near(d:mm(s:coalesce()):tolist(), prod, 1e-6, "coalesced")
    -- the GCN normalisation D^-1/2 A D^-1/2 with sparse diagonals on both sides
    local a = torch.tensor({ { 1, 1, 0 }, { 1, 1, 1 }, { 0, 1, 1 } }, opts)
    local dg = torch.diag(torch.tensor({ 1, 2, 4 }, opts)):to_sparse()
    T.near(dg:matmul(a):matmul(dg):tolist(), { { 1, 2, 0 }, { 2, 4, 8 }, { 0, 8, 16 } }, 0, "sparse @ dense @ sparse")
    -- the dense paths are unchanged
    T.near(d:mm(torch.ones(3, 1, opts)):tolist(), { { 0.5 }, { -0.75 } }, 1e-6, "dense x:mm")
  end)

  T.test("dense + / - sparse (" .. dev .. ")", function()
    local ones = torch.ones(3, 4, opts)
    local plus, minus = {}, {}
    for i = 1, 3 do
      plus[i], minus[i] = {}, {}
      for j = 1, 4 do plus[i][j], minus[i][j] = 1 + S[i][j], 1 - S[i][j] end
    end
    T.near((ones + s):tolist(), plus, 0, "dense + sparse")
    T.near((ones - s):tolist(), minus, 0, "dense - sparse")
    T.near((ones + 1):tolist(), (ones * 2):tolist(), 0, "dense + number still works")
    -- eye + an int64 sparse adjacency is a float tensor (PyTorch's promotion)
    local adj = torch.sparse_coo_tensor({ { 0, 1, 1 }, { 1, 2, 2 } }, torch.ones(3), { 3, 3 },
      { dtype = torch.int64, device = dev })
    local r = torch.eye(3, { device = dev }) + adj
    T.eq(r.dtype, torch.float32, "promoted to float32")
    T.near(r:cpu():tolist(), { { 1, 1, 0 }, { 0, 1, 2 }, { 0, 0, 1 } }, 0, "self-loops plus the duplicate edge")
  end)

  T.test("torch.spmm (" .. dev .. ")", function()
    local b = torch.tensor({ { 1, 2 }, { -1, 0.5 }, { 3, 1 }, { 0.25, -2 } }, opts)
    T.near(torch.spmm(s, b):tolist(), matmul(S, b:cpu():tolist()), 1e-6, "sparse, dense")
    T.near(torch.spmm(d, torch.ones(3, 2, opts)):tolist(), { { 0.5, 0.5 }, { -0.75, -0.75 } }, 1e-6, "dense, dense")
    T.raises(function() return torch.spmm(d, s) end,
      "~spmm(): argument 'mat2' (position 2) must be a dense Tensor, got a sparse COO tensor")
  end)

  T.test("dense @ sparse errors (" .. dev .. ")", function()
    T.raises(function() return torch.mm(torch.ones(2, 4, opts), s) end,
      "mm: mat1 and mat2 shapes cannot be multiplied (2x4 and 3x4)")
    T.raises(function() return d:mm(s:double()) end,
      "mm: expected mat1 and mat2 to have the same dtype, but got: float32 != float64")
    T.raises(function() return torch.matmul(torch.ones(2, 2, 3, opts), s) end,
      "matmul: expected a 1-D or 2-D dense tensor as mat1, got a 3-D tensor")
    local hybrid = torch.sparse_coo_tensor({ { 0, 2 } }, { { 1, 2 }, { 3, 4 } }, { 3, 2 }, opts)
    T.raises(function() return d:mm(hybrid) end,
      "mm: expected a 2-D sparse matrix with 2 sparse dims as mat2, got size [3, 2] with sparse_dim 1")
    T.raises(function() return torch.mm(torch.randn(3, 4), torch.randn(5, 6)) end,
      "bad argument #2 to 'mm' (shapes [3, 4] and [5, 6] cannot be multiplied)")
  end)

  T.test("dense @ sparse gradients by float64 finite differences (" .. dev .. ")", function()
    local idx = torch.tensor(IDX, { device = dev })
    local vals = torch.tensor(VALS, { dtype = f64, device = dev })
    local a = torch.tensor(D, { dtype = f64, device = dev })
    gradcheck("dense @ sparse", function(x, v) return torch.mm(x, torch.sparse_coo_tensor(idx, v, { 3, 4 })) end,
      { a, vals })
    gradcheck("dense - sparse", function(x, v) return x - torch.sparse_coo_tensor(idx, v, { 3, 4 }) end,
      { torch.ones(3, 4, { dtype = f64, device = dev }), vals })
  end)
end

checks("cpu")
if torch.cuda.is_available() then
  checks("cuda")
else
  T.skip("no GPU: the CUDA run of the dense-and-sparse checks", 1)
end
