-- Sparse COO tensors (bindings/lua/torch_sparse.lua) against hand-built dense tensors, plain Lua
-- loops and float64 finite differences; the same checks on CUDA where a GPU is present.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = torch.float64

-- a dense [m, n] list-of-rows from COO entries, summing duplicates (the reference)
local function dense_of(idx, vals, m, n)
  local d = {}
  for i = 1, m do d[i] = {} for j = 1, n do d[i][j] = 0 end end
  for k = 1, #vals do
    local i, j = idx[1][k] + 1, idx[2][k] + 1
    d[i][j] = d[i][j] + vals[k]
  end
  return d
end

-- A (list of rows) times B (list of rows) by a plain loop
local matmul = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "matmul_ref.lua")

local IDX = { { 1, 0, 2, 1, 0 }, { 0, 2, 3, 0, 2 } } -- (1,0) and (0,2) twice each
local VALS = { 1.5, -2, 3, 0.25, 4 }

local function checks(dev)
  local opts = { device = dev }
  local s = torch.sparse_coo_tensor(IDX, VALS, { 3, 4 }, opts)
  local want = dense_of(IDX, VALS, 3, 4)

  T.test("construction and facts (" .. dev .. ")", function()
    T.eq(s.is_sparse, true, "is_sparse")
    T.eq(torch.zeros(2).is_sparse, false, "a dense tensor is not sparse")
    T.check(s.layout == torch.sparse_coo and torch.zeros(1).layout == torch.strided, "layouts")
    T.eq(s:size():totable(), { 3, 4 }, "size")
    T.eq(s.shape:totable(), { 3, 4 }, "shape")
    T.eq(s:size(-1), 4, "size(-1)")
    T.eq({ s:dim(), s:sparse_dim(), s:dense_dim(), s:_nnz() }, { 2, 2, 0, 5 }, "dims and nnz")
    T.check(s.dtype == torch.float32, "default dtype")
    T.eq(s.device.type, dev, "device")
    T.eq(s:is_coalesced(), false, "5 entries are not coalesced")
    T.eq(s:_indices():tolist(), IDX, "_indices")
    T.near(s:_values():tolist(), VALS, 0, "_values")
    T.raises(function() return s:indices() end,
      "Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
    T.raises(function() return s:values() end,
      "Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    local inferred = torch.sparse_coo_tensor(IDX, VALS, opts)
    T.eq(inferred:size():totable(), { 3, 4 }, "size inferred from the largest indices")
    local one = torch.sparse_coo_tensor({ { 2 } }, { 7 }, { 5 }, opts)
    T.eq(one:is_coalesced(), true, "one entry is coalesced")
    T.check(one.dtype == torch.int64, "integer values stay int64")
    local flagged = torch.sparse_coo_tensor({ { 0, 1 } }, { 1, 2 }, { is_coalesced = true, device = dev })
    T.eq(flagged:is_coalesced(), true, "is_coalesced=true")
    T.eq(torch.sparse_coo_tensor(IDX, VALS, { dtype = f64, device = dev }).dtype == f64, true, "dtype option")
  end)

  T.test("to_dense against a hand-built dense tensor (" .. dev .. ")", function()
    T.near(s:to_dense():tolist(), want, 0, "to_dense sums duplicates")
    T.near(s:to_dense():cpu():tolist(), { { 0, 0, 2, 0 }, { 1.75, 0, 0, 0 }, { 0, 0, 0, 3 } }, 0, "by hand")
    -- a hybrid tensor: one sparse dim, rows of 2 values
    local h = torch.sparse_coo_tensor({ { 2, 0, 2 } }, { { 1, 2 }, { 3, 4 }, { 5, 6 } }, { 4, 2 }, opts)
    T.eq({ h:sparse_dim(), h:dense_dim() }, { 1, 1 }, "hybrid dims")
    T.eq(h:to_dense():tolist(), { { 3, 4 }, { 0, 0 }, { 6, 8 }, { 0, 0 } }, "hybrid to_dense")
    T.eq(h:coalesce():_values():tolist(), { { 3, 4 }, { 6, 8 } }, "hybrid coalesce")
    local h3 = torch.sparse_coo_tensor({ { 1, 0 }, { 0, 1 }, { 2, 0 } }, { 1.0, 2.0 }, { 2, 2, 3 }, opts)
    local d = h3:to_dense():tolist()
    T.eq({ d[2][1][3], d[1][2][1], h3:to_dense():sum():item() }, { 1.0, 2.0, 3.0 }, "3 sparse dims")
  end)

  T.test("coalesce (" .. dev .. ")", function()
    local c = s:coalesce()
    T.eq(c:is_coalesced(), true, "coalesced")
    T.eq(c:indices():tolist(), { { 0, 1, 2 }, { 2, 0, 3 } }, "sorted row-major, duplicates merged")
    T.near(c:values():tolist(), { 2, 1.75, 3 }, 0, "duplicates summed")
    T.check(c:coalesce() == c, "coalescing a coalesced tensor returns it")
    T.near(c:to_dense():tolist(), want, 0, "same dense tensor")
    local unsorted = torch.sparse_coo_tensor({ { 2, 0, 1 } }, { 1, 2, 3 }, opts):coalesce()
    T.eq({ unsorted:indices():tolist(), unsorted:values():tolist() }, { { { 0, 1, 2 } }, { 2, 3, 1 } }, "sorted")
    local empty = torch.sparse_coo_tensor(torch.zeros(2, 0, { dtype = torch.int64 }), torch.zeros(0), { 2, 2 }, opts)
    T.eq({ empty:_nnz(), empty:coalesce():_nnz(), empty:to_dense():sum():item() }, { 0, 0, 0.0 }, "empty")
  end)

  T.test("to_sparse (" .. dev .. ")", function()
    local x = torch.tensor({ { 0, 1.5, 0 }, { 0, 0, 0 }, { -2, 0, 3 } }, opts)
    local sp = x:to_sparse()
    T.eq(sp:is_coalesced(), true, "coalesced")
    T.eq(sp:indices():tolist(), { { 0, 2, 2 }, { 1, 0, 2 } }, "indices of the nonzeros")
    T.near(sp:values():tolist(), { 1.5, -2, 3 }, 0, "values")
    T.eq(sp:to_dense():tolist(), x:tolist(), "round trip")
    T.eq(x:to_sparse_coo():indices():tolist(), sp:indices():tolist(), "to_sparse_coo")
    local rows = x:to_sparse(1)
    T.eq({ rows:sparse_dim(), rows:dense_dim() }, { 1, 1 }, "to_sparse(1) dims")
    T.eq(rows:indices():tolist(), { { 0, 2 } }, "nonzero rows")
    T.near(rows:values():tolist(), { { 0, 1.5, 0 }, { -2, 0, 3 } }, 0, "rows kept whole")
    T.eq(x:to_sparse({ dense_dim = 1 }):indices():tolist(), { { 0, 2 } }, "dense_dim=1")
    T.raises(function() return x:to_sparse(3) end,
      "sparse_dim argument must be in [1, 2] for a 2-D tensor, but got 3")
    T.raises(function() return x:to_sparse({ layout = torch.sparse_csr }) end,
      "to_sparse: layout torch.sparse_csr is not supported (only torch.sparse_coo)")
  end)

  T.test("arithmetic (" .. dev .. ")", function()
    local c = s:coalesce()
    local function dense(v) return v:to_dense():tolist() end
    local twice = {}
    for i, row in ipairs(want) do twice[i] = {} for j, v in ipairs(row) do twice[i][j] = 2 * v end end
    T.near(dense(s + s), twice, 0, "s + s")
    T.eq((c + c):is_coalesced(), true, "coalesced + coalesced is coalesced")
    T.eq((s + s):_nnz(), 10, "uncoalesced + uncoalesced keeps every entry")
    T.near(dense(torch.add(s, s)), twice, 0, "torch.add")
    T.near(dense(s * 2), twice, 0, "s * 2")
    T.near(dense(2 * s), twice, 0, "2 * s")
    T.near(dense(s:mul(2)), twice, 0, "mul")
    T.near(dense(s * torch.tensor(2.0, opts)), twice, 0, "s * 0-dim tensor")
    T.near(dense((s + s) / 2), want, 0, "/ 2")
    T.near(dense(s - s), dense(s * 0), 0, "s - s")
    T.near(dense(-s), dense(s * -1), 0, "-s")
    T.near(dense(torch.add(s, s, { alpha = -1 })), dense(s * 0), 0, "alpha")
    local ones = torch.ones(3, 4, opts)
    local plus1 = {}
    for i, row in ipairs(want) do plus1[i] = {} for j, v in ipairs(row) do plus1[i][j] = v + 1 end end
    T.near(torch.add(s, ones):tolist(), plus1, 0, "sparse + dense is dense")
    T.near(torch.add(ones, s):tolist(), plus1, 0, "torch.add(dense, sparse) is dense")
    T.near((s + ones):tolist(), plus1, 0, "s + dense")
    T.raises(function() return s * s end,
      "mul: a sparse COO tensor can be multiplied or divided only by a scalar (a number or a 0-dim tensor), got a sparse tensor")
    T.raises(function() return s + torch.sparse_coo_tensor({ { 0 } }, { 1.0 }, { 3 }, opts) end,
      "add: sparse tensors must have the same size and sparse_dim, got [3, 4] (sparse_dim 2) and [3] (sparse_dim 1)")
  end)

  T.test("sum, transpose, conversions (" .. dev .. ")", function()
    T.near(s:sum():item(), 6.75, 1e-6, "sum of all")
    local rows = torch.sparse.sum(s, 1)
    T.eq(rows.is_sparse, true, "sum over one dim stays sparse")
    T.near(rows:to_dense():tolist(), { 2, 1.75, 3 }, 0, "row sums")
    T.near(torch.sparse.sum(s, 0):to_dense():tolist(), { 1.75, 0, 2, 3 }, 0, "column sums")
    T.near(torch.sparse.sum(s, { 0, 1 }):item(), 6.75, 1e-6, "sum over every dim is a dense scalar")
    T.near(s:sum(0):to_dense():tolist(), { 1.75, 0, 2, 3 }, 0, "s:sum(0)")
    local t = s:t()
    T.eq(t:size():totable(), { 4, 3 }, "t() size")
    local wt = {}
    for j = 1, 4 do wt[j] = {} for i = 1, 3 do wt[j][i] = want[i][j] end end
    T.near(t:to_dense():tolist(), wt, 0, "t()")
    T.near(s:transpose(0, 1):to_dense():tolist(), wt, 0, "transpose(0, 1)")
    local h = torch.sparse_coo_tensor({ { 0 } }, { { 1, 2 } }, { 2, 2 }, opts)
    T.raises(function() return h:transpose(0, 1) end,
      "transpose(): cannot transpose a sparse dimension (0) with a dense dimension (1)")
    T.check(s:double().dtype == f64 and s:to(f64).dtype == f64, "dtype conversions")
    T.near(s:double():to_dense():tolist(), want, 0, "values kept")
    T.eq(s:cpu().device.type, "cpu", "cpu()")
    T.check(s:long().dtype == torch.int64 and s:long():_indices().dtype == torch.int64, "long() keeps int64 indices")
  end)

  T.test("sparse @ dense against a plain loop (" .. dev .. ")", function()
    local B = { { 1, 2 }, { -1, 0.5 }, { 3, 1 }, { 0.25, -2 } }
    local b = torch.tensor(B, opts)
    local prod = matmul(want, B)
    T.near(torch.sparse.mm(s, b):tolist(), prod, 1e-6, "sparse.mm")
    T.near(torch.mm(s, b):tolist(), prod, 1e-6, "torch.mm")
    T.near(torch.matmul(s, b):tolist(), prod, 1e-6, "torch.matmul")
    T.near(s:mm(b):tolist(), prod, 1e-6, "s:mm")
    local v = torch.tensor({ 1, 2, 3, 4 }, { dtype = torch.float32, device = dev })
    T.near(torch.matmul(s, v):tolist(), { 6, 1.75, 12 }, 1e-6, "sparse @ vector")
    local bias = torch.ones(3, 2, opts)
    local am = {}
    for i = 1, 3 do am[i] = {} for j = 1, 2 do am[i][j] = 0.5 * 1 + 2 * prod[i][j] end end
    T.near(torch.sparse.addmm(bias, s, b, { beta = 0.5, alpha = 2 }):tolist(), am, 1e-6, "sparse.addmm")
    T.near(torch.addmm(bias, s, b, { beta = 0.5, alpha = 2 }):tolist(), am, 1e-6, "torch.addmm")
    T.near(torch.sparse.mm(s, s:t()):to_dense():tolist(), matmul(want, (function()
      local tt = {}
      for j = 1, 4 do tt[j] = {} for i = 1, 3 do tt[j][i] = want[i][j] end end
      return tt
    end)()), 1e-6, "sparse @ sparse")
  end)

  T.test("errors for bad input (" .. dev .. ")", function()
    T.raises(function() return torch.sparse_coo_tensor({ { 0, 4 } }, { 1.0, 2.0 }, { 4 }, opts) end,
      "size is inconsistent with indices: for dim 0, size is 4 but found index 4")
    T.raises(function() return torch.sparse_coo_tensor({ { 0, -1 } }, { 1.0, 2.0 }, opts) end,
      "found negative index -1 for dim 0")
    T.raises(function() return torch.sparse_coo_tensor({ { 0, 1 } }, { 1.0, 2.0, 3.0 }, opts) end,
      "indices and values must have same nnz, but got nnz from indices: 2, nnz from values: 3")
    T.raises(function() return torch.sparse_coo_tensor({ 0, 1 }, { 1.0, 2.0 }, opts) end,
      "indices must be sparse_dim x nnz, but got: [2]")
    T.raises(function() return torch.sparse_coo_tensor({ { 0, 1 } }, { 1.0, 2.0 }, { 3, 2 }, opts) end,
      "number of dimensions must be sparse_dim (1) + dense_dim (0), but got 2")
    T.raises(function() return torch.sparse_coo_tensor({ { 0, 1 } }, { { 1.0 }, { 2.0 } }, { 3, 2 }, opts) end,
      "values has incorrect size, expected [2, 2], got [2, 1]")
    T.raises(function() return torch.sparse_coo_tensor({ { 0 } }, { 1.0 }, { 3 }, { colour = 1 }) end,
      "bad argument #4 to 'sparse_coo_tensor' (unknown keyword 'colour')")
    local b = torch.ones(4, 2, opts)
    T.raises(function() return torch.sparse.mm(s, b:double()) end,
      "sparse.mm: expected mat1 and mat2 to have the same dtype, but got: float32 != float64")
    T.raises(function() return torch.mm(s, torch.ones(3, 2, opts)) end,
      "mm: mat1 and mat2 shapes cannot be multiplied (3x4 and 3x2)")
    -- (dense @ sparse and dense + sparse: test_sparse_dense.lua)
    T.raises(function() return torch.sparse.mm(b, b) end,
      "sparse.mm(): argument 'mat1' (position 1) must be a sparse COO tensor, got " ..
      (dev == "cuda" and "torch.cuda.FloatTensor" or "torch.FloatTensor"))
    -- the dense paths keep their own errors
    T.raises(function() return torch.mm(torch.randn(3, 4), torch.randn(5, 6)) end,
      "bad argument #2 to 'mm' (shapes [3, 4] and [5, 6] cannot be multiplied)")
    T.raises(function() return torch.add(torch.ones(2), "x") end, "~bad argument #2 to 'add'")
  end)

  T.test("gradients by float64 finite differences (" .. dev .. ")", function()
    local idx = torch.tensor(IDX, { device = dev })
    local vals = torch.tensor(VALS, { dtype = f64, device = dev })
    local b = torch.tensor({ { 1, 2 }, { -1, 0.5 }, { 3, 1 }, { 0.25, -2 } }, { dtype = f64, device = dev })
    gradcheck("sparse.mm", function(v, d)
      return torch.sparse.mm(torch.sparse_coo_tensor(idx, v, { 3, 4 }), d)
    end, { vals, b })
    gradcheck("torch.mm of a coalesced tensor", function(v, d)
      return torch.mm(torch.sparse_coo_tensor(idx, v, { 3, 4 }):coalesce(), d)
    end, { vals, b })
    gradcheck("to_dense", function(v) return torch.sparse_coo_tensor(idx, v, { 3, 4 }):to_dense() end, { vals })
    local x = torch.tensor({ { 0, 1.5, 0 }, { 0.5, 0, 2 } }, { dtype = f64, device = dev })
    gradcheck("to_sparse then mm", function(a, d) return torch.sparse.mm(a:to_sparse(), d) end,
      { x, b:narrow(0, 0, 3) }, { const = { true } })
    gradcheck("sparse.softmax", function(v) return torch.sparse.softmax(torch.sparse_coo_tensor(idx, v, { 3, 4 }), 1):_values() end,
      { vals })
    -- a leaf sparse tensor gets a sparse gradient on its own indices
    local leaf = torch.sparse_coo_tensor(idx, vals, { 3, 4 }, { requires_grad = true })
    T.eq({ leaf.requires_grad, leaf.is_leaf }, { true, true }, "requires_grad=true makes a leaf")
    torch.sparse.mm(leaf, b):sum():backward()
    local g = leaf.grad
    T.check(g ~= nil and g.is_sparse, "sparse grad")
    -- d/dv_k of sum(S @ B) = sum_j B[col_k, j]
    local rs = { 3, -0.5, 4, -1.75 }
    local wantg = {}
    for k = 1, #VALS do wantg[k] = rs[IDX[2][k] + 1] end
    T.near(g:_values():tolist(), wantg, 1e-12, "grad values")
  end)

  T.test("softmax and printing (" .. dev .. ")", function()
    local c = torch.sparse_coo_tensor({ { 0, 1, 1 }, { 2, 0, 2 } }, { 3.0, 4.0, 5.0 }, { 2, 3 }, opts)
    local sm = torch.sparse.softmax(c, 1)
    local e = math.exp(1)
    T.near(sm:to_dense():tolist(), { { 0, 0, 1 }, { 1 / (1 + e), 0, e / (1 + e) } }, 1e-6, "softmax over the entries of a row")
    T.near(torch.sparse.log_softmax(c, 0):to_dense():tolist(), { { 0, 0, 3 - math.log(math.exp(3) + math.exp(5)) },
      { 0, 0, 5 - math.log(math.exp(3) + math.exp(5)) } }, 1e-6, "log_softmax over a column")
    local dev_suffix = dev == "cuda" and "device='cuda:0', " or ""
    T.eq(tostring(c), "tensor(indices=tensor([[0, 1, 1],\n" ..
      "                       [2, 0, 2]]),\n" ..
      "       values=tensor([3., 4., 5.]),\n" ..
      "       " .. dev_suffix .. "size=(2, 3), nnz=3, layout=torch.sparse_coo)", "print")
    T.eq(tostring(torch.sparse_coo_tensor({ { 1 } }, { 2.5 }, { 3 }, { dtype = f64, device = dev, requires_grad = true })),
      "tensor(indices=tensor([[1]]),\n" ..
      "       values=tensor([2.5000]),\n" ..
      -- suffixes wrap past 80 columns, as PyTorch's _add_suffixes does
      (dev == "cuda" and "       device='cuda:0', size=(3,), nnz=1, dtype=torch.float64,\n       layout=torch.sparse_coo, requires_grad=True)"
        or "       size=(3,), nnz=1, dtype=torch.float64, layout=torch.sparse_coo,\n       requires_grad=True)"), "print with dtype and requires_grad")
    T.eq(tostring(torch.zeros(2, 2, opts):to_sparse()), "tensor(indices=tensor([], size=(2, 0)),\n" ..
      "       values=tensor([], size=(0,)),\n" ..
      "       " .. dev_suffix .. "size=(2, 2), nnz=0, layout=torch.sparse_coo)", "print empty")
  end)
end

checks("cpu")
if torch.cuda.is_available() then
  checks("cuda")
  T.test("cuda() and cpu() move indices and values", function()
    local s = torch.sparse_coo_tensor({ { 0, 2 } }, { 1.0, 2.0 })
    local g = s:cuda()
    T.check(g.is_cuda and g:_indices().is_cuda and g:_values().is_cuda, "on the GPU")
    T.eq(g:cpu():to_dense():tolist(), { 1.0, 0.0, 2.0 }, "back on the CPU")
    T.eq(s:to("cuda"):to_dense():cpu():tolist(), { 1.0, 0.0, 2.0 }, "to('cuda')")
  end)
else
  T.skip("no GPU: the CUDA run of the sparse checks", 1)
end
