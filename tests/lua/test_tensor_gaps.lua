-- Tensor attributes and methods of torch_tensor_gaps.lua (and x.retains_grad / x.output_nr),
-- checked against values worked out by hand; the same checks on "cuda" when there is a GPU.
local T = ...

local function sizes(x) return x:size():totable() end

local function run(dev)
  local opt = { device = dev }
  local tag = " [" .. dev .. "]"

  T.test("matrix views" .. tag, function()
    local x = torch.arange(24., opt):view(2, 3, 4)
    T.eq(sizes(x.mT), { 2, 4, 3 }, "mT shape")
    T.eq(x.mT[1][3][2]:item(), x[1][2][3]:item(), "mT element")
    T.eq(sizes(x.mH), { 2, 4, 3 }, "mH of a real tensor")
    local m = torch.arange(6., opt):view(2, 3)
    T.near(m.H:tolist(), { { 0, 3 }, { 1, 4 }, { 2, 5 } }, 0, "H")
    T.eq(m:adjoint():tolist(), m.H:tolist(), "adjoint")
    local c = torch.complex(torch.tensor({ { 1., 2. } }, opt), torch.tensor({ { 3., -4. } }, opt))
    T.eq(c.mH.imag:tolist(), { { -3.0 }, { 4.0 } }, "mH conjugates")
    T.eq(c.H.real:tolist(), { { 1.0 }, { 2.0 } }, "H transposes")
    T.raises(function() return torch.zeros(3, opt).mT end,
      "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor.")
    T.raises(function() return x.H end, "tensor.H is only supported on matrices (2-D tensors). Got 3-D tensor.")
    T.eq(torch.tensor(5., opt).H:item(), 5.0, "H of a 0-d tensor")
    T.eq(sizes(x.T), { 4, 3, 2 }, "T on 3 dims still reverses")
  end)

  T.test("facts" .. tag, function()
    local x = torch.zeros(3, 5, { dtype = torch.float64, device = dev })
    T.eq(x.itemsize, 8, "itemsize")
    T.eq(x.nbytes, 120, "nbytes")
    T.eq(torch.zeros(4, { dtype = torch.int16, device = dev }).nbytes, 8, "int16 nbytes")
    T.eq(x.is_cpu, dev == "cpu", "is_cpu")
    T.check(x.layout == torch.strided, "layout")
    T.eq(tostring(torch.strided), "torch.strided", "strided prints")
    T.eq(tostring(torch.sparse_coo), "torch.sparse_coo", "sparse_coo prints")
    T.check(torch.strided ~= torch.sparse_coo, "layouts differ")
    for _, k in ipairs({ "is_meta", "is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn", "is_xpu", "is_mps" }) do
      T.eq(x[k], false, k)
    end
    T.eq(x:is_inference(), false, "is_inference")
    T.eq(x:share_memory_() == x, true, "share_memory_ returns self")
    T.eq(x:is_shared(), true, "is_shared")
    T.eq(x:dim_order(), { 0, 1 }, "dim_order")
    T.eq(torch.zeros(2, 3, 4, opt):permute(2, 0, 1):dim_order(), { 1, 2, 0 }, "dim_order of a permuted tensor")
    T.eq(x:sparse_dim(), 0, "sparse_dim")
    T.eq(x:dense_dim(), 2, "dense_dim")
    T.check(x:to_dense() == x, "to_dense is identity")
    T.eq(x:to_dense({ dtype = torch.float32 }).dtype, torch.float32, "to_dense dtype")
  end)

  T.test("retains_grad and output_nr" .. tag, function()
    local a = torch.ones(3, { device = dev, requires_grad = true })
    local b = a * 2
    T.eq(b.retains_grad, false, "not yet")
    b:retain_grad()
    T.eq(b.retains_grad, true, "after retain_grad")
    a:retain_grad()
    T.eq(a.retains_grad, false, "leaf")
    local Two = torch.autograd.Function:extend("TwoOutputs")
    function Two.forward(_, t) return t * 2, t * 3 end
    function Two.backward(_, g1, g2) return g1 * 2 + g2 * 3 end
    local p, q = Two.apply(a)
    T.eq({ p.output_nr, q.output_nr }, { 0, 1 }, "output_nr of a two-output function")
    T.eq(a.output_nr, 0, "leaf output_nr")
  end)

  T.test("new tensors" .. tag, function()
    local x = torch.zeros(2, { dtype = torch.float64, device = dev })
    local y = x:new(2, 3)
    T.eq(sizes(y), { 2, 3 }, "new(sizes)")
    T.eq(y.dtype, torch.float64, "new keeps the dtype")
    T.eq(y.device.type, dev, "new keeps the device")
    T.eq(x:new({ 1, 2 }):tolist(), { 1.0, 2.0 }, "new(data)")
    T.eq(x:new({ 1, 2 }).dtype, torch.float64, "new(data) dtype")
    T.eq(sizes(x:new()), { 0 }, "new()")
    T.eq(sizes(x:new(torch.Size({ 4, 1 }))), { 4, 1 }, "new(Size)")
    local z = x:new(x)
    z:fill_(7)
    T.eq(x:tolist(), { 7.0, 7.0 }, "new(tensor) aliases")
    T.raises(function() return x:new(torch.zeros(2, opt)) end, "~expected")
    local s = x:new_empty_strided({ 2, 3 }, { 1, 2 })
    T.eq(s:stride(), { 1, 2 }, "new_empty_strided stride")
    T.eq(s.dtype, torch.float64, "new_empty_strided dtype")
  end)

  T.test("sum_to_size and splits" .. tag, function()
    local x = torch.arange(24., opt):view(2, 3, 4)
    local r = x:sum_to_size(3, 1)
    T.eq(sizes(r), { 3, 1 }, "sum_to_size shape")
    -- element [i][0] = sum over a, c of x[a][i][c]
    local want = {}
    for i = 0, 2 do
      local s = 0
      for a = 0, 1 do for c = 0, 3 do s = s + (a * 12 + i * 4 + c) end end
      want[i + 1] = { s }
    end
    T.near(r:tolist(), want, 0, "sum_to_size values")
    T.eq(x:sum_to_size({ 2, 3, 4 }):tolist(), x:tolist(), "same size")
    T.near(x:sum_to_size(torch.Size({ 1, 1, 4 })):tolist(), { { { 60, 66, 72, 78 } } }, 0, "to Size")
    T.raises(function() return x:sum_to_size(2, 4) end, "size {2, 4} is not expandable to size {2, 3, 4}.")
    local a, b = table.unpack(x:split_with_sizes({ 1, 2 }, 1))
    T.eq(sizes(a), { 2, 1, 4 }, "split_with_sizes first")
    T.near(b[0][1]:tolist(), { 8, 9, 10, 11 }, 0, "split_with_sizes second")
    T.raises(function() return x:split_with_sizes({ 1, 1 }, 1) end, "~split_with_sizes expects split_sizes to sum exactly to 3")
    T.eq(#x:unsafe_chunk(2, 2), 2, "unsafe_chunk")
    T.eq(#x:unsafe_split(2, 2), 2, "unsafe_split")
    T.eq(#torch.unsafe_split_with_sizes(x, { 3, 1 }, 2), 2, "torch.unsafe_split_with_sizes")
  end)

  T.test("nonzero_static" .. tag, function()
    local x = torch.tensor({ { 0, 1 }, { 2, 0 }, { 3, 4 } }, opt)
    T.eq(x:nonzero_static({ size = 2 }):tolist(), { { 0, 1 }, { 1, 0 } }, "cut")
    T.eq(x:nonzero_static({ size = 5, fill_value = -7 }):tolist(), { { 0, 1 }, { 1, 0 }, { 2, 0 }, { 2, 1 }, { -7, -7 } }, "padded")
    T.eq(sizes(torch.nonzero_static(x, 0)), { 0, 2 }, "size 0")
    T.raises(function() return x:nonzero_static() end, "~missing required argument 'size'")
  end)

  T.test("set_ and resize" .. tag, function()
    local src = torch.arange(6., opt)
    local x = torch.zeros(2, opt)
    x:set_(src)
    T.check(x:is_set_to(src), "is_set_to after set_")
    x[0] = 9
    T.eq(src[0]:item(), 9.0, "set_ shares the storage")
    local v = torch.zeros(1, opt):set_(src, 1, { 2, 2 }, { 2, 1 })
    T.near(v:tolist(), { { 1, 2 }, { 3, 4 } }, 0, "set_ with offset, size and stride")
    T.check(not v:is_set_to(src), "a different view is not set to it")
    T.eq(sizes(x:set_()), { 0 }, "set_() empties")
    T.raises(function() return torch.zeros(1, opt):set_(torch.zeros(1, { dtype = torch.int64, device = dev })) end,
      "Could not set tensor of type Long to a tensor of type Float")
    T.eq(sizes(src:resize(2, 3)), { 2, 3 }, "resize")
    T.eq(sizes(src:resize_as(torch.zeros(3, 2))), { 3, 2 }, "resize_as")
    T.raises(function() return src:resize(4) end, "~Requested resize to 4 (4 elements in total)")
  end)

  T.test("in-place aliases" .. tag, function()
    local a = torch.tensor({ 1., 2., 3. }, opt)
    local b = torch.tensor({ 2., 2., 2. }, opt)
    T.near(a:clone():greater_(b):tolist(), { 0, 0, 1 }, 0, "greater_")
    T.near(a:clone():greater_equal_(b):tolist(), { 0, 1, 1 }, 0, "greater_equal_")
    T.near(a:clone():less_(b):tolist(), { 1, 0, 0 }, 0, "less_")
    T.near(a:clone():less_equal_(b):tolist(), { 1, 1, 0 }, 0, "less_equal_")
    T.near(a:clone():not_equal_(b):tolist(), { 1, 0, 1 }, 0, "not_equal_")
    T.near(torch.tensor({ 0., 1., 2. }, opt):logical_xor_(torch.tensor({ 1., 1., 0. }, opt)):tolist(), { 1, 0, 1 }, 0, "logical_xor_")
    T.near(torch.tensor({ 1. }, opt):arctan2_(torch.tensor({ 1. }, opt)):item(), math.pi / 4, 1e-6, "arctan2_")
    local m = torch.ones(2, 2, 2, opt)
    m:baddbmm_(torch.ones(2, 2, 3, opt), torch.ones(2, 3, 2, opt), { beta = 2, alpha = 0.5 })
    T.eq(m[1]:tolist(), { { 3.5, 3.5 }, { 3.5, 3.5 } }, "baddbmm_")
    local c = torch.complex(torch.tensor({ 1. }, opt), torch.tensor({ 2. }, opt))
    c:conj_physical_()
    T.eq(c.imag:item(), -2.0, "conj_physical_")
    T.eq(torch.tensor({ -1., 0.3, 0.7 }, opt):hardshrink():tolist()[2], 0.0, "hardshrink")
    T.near(torch.tensor({ -1., 0.3, 0.7 }, opt):hardshrink():tolist()[3], 0.7, 1e-6, "hardshrink keeps")
    T.eq(torch.tensor({ -2., 3. }, opt):prelu(torch.tensor({ 0.25 }, opt)):tolist(), { -0.5, 3.0 }, "prelu")
  end)

  T.test("module_load" .. tag, function()
    local p = torch.zeros(2, opt)
    local o = torch.ones(2, { device = dev, requires_grad = true })
    T.check(p:module_load(o) == o, "module_load returns other")
    T.eq(p:module_load(o, { assign = true }).requires_grad, false, "assign detaches")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device: the cuda section of test_tensor_gaps", 1) end
