-- Error messages for bad input: PyTorch's text (or the library's "bad argument #n to 'name'" form
-- naming the function the user called), never a Lua runtime error or a line inside bindings/.
-- Grown from the audit in docs/errors_audit.md; the expected texts are PyTorch's where it has one.
local T = ...
local data = torch.utils.data

-- the raw message of fn's error, position included (nil if none)
local function raw(fn)
  local ok, err = pcall(fn)
  if ok then return nil end
  return tostring(err)
end

-- fn fails with want (as T.raises) and the message neither starts at a line of the library nor
-- is a Lua runtime error
local function clean(fn, want, msg)
  T.raises(fn, want, msg)
  local err = raw(fn) or ""
  T.check(not err:find("bindings/", 1, true) and not err:find("attempt to ", 1, true),
    (msg or want) .. ": leaks internals: " .. err)
end

T.test("division and where name the function called", function()
  local x = torch.randn(2, 3)
  clean(function() return torch.div(x, "x") end, "bad argument #2 to 'div' (tensor or number expected, got string)")
  clean(function() return x:div({}) end, "bad argument #2 to 'div' (tensor or number expected, got table)")
  clean(function() return x:divide(nil) end, "bad argument #2 to 'divide' (tensor or number expected, got nil)")
  clean(function() return x:div_("x") end, "bad argument #2 to 'div_' (tensor or number expected, got string)")
  clean(function() return torch.div(x, torch.randn(5, 7)) end,
    "bad argument #2 to 'div' (the size of tensor a (3) must match the size of tensor b (7) at non-singleton dimension 1)")
  clean(function() return torch.where("x") end, "bad argument #1 to 'where' (tensor expected, got string)")
  clean(function() return torch.where(x:gt(0), x, "x") end, "~bad argument #3 to 'where' (")
  -- valid calls are unchanged
  T.eq(torch.div(torch.tensor({ 6.0 }), 4):item(), 1.5, "div")
  T.eq(torch.div(torch.tensor({ 7 }), 2, { rounding_mode = "floor" }):item(), 3, "div floor")
  T.eq(torch.where(torch.tensor({ true, false }), 1, 0):tolist(), { 1, 0 }, "where")
end)

T.test("torch-level forms of methods and Tensor:type name themselves", function()
  local x = torch.randn(2, 3)
  clean(function() return torch.fill_(x, "x") end, "bad argument #2 to 'fill_' (number expected, got string)")
  clean(function() return torch.clamp_(x, "x") end, "~to 'clamp_' (")
  clean(function() return x:type(-5) end, "bad argument #2 to 'type' (dtype, device or tensor expected, got number)")
  clean(function() return x:type({ foo = 1 }) end, "bad argument #2 to 'type' (unknown keyword 'foo')")
  T.eq(x:type(torch.float64).dtype, torch.float64, "type converts")
end)

T.test("Sigmoid and Tanh check their input as torch.sigmoid does", function()
  clean(function() return nn.Sigmoid()("x") end, "sigmoid(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return nn.Tanh()() end, "tanh(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return nn.Tanh()({}) end, "tanh(): argument 'input' (position 1) must be Tensor, not table")
  T.eq(nn.Sigmoid()(torch.zeros(2)):tolist(), { 0.5, 0.5 }, "sigmoid")
end)

T.test("recurrent layers and cells check input and hidden state", function()
  for _, name in ipairs({ "RNN", "LSTM", "GRU" }) do
    local m = nn[name](3, 4)
    clean(function() return m("x") end, name .. " expected a tensor as input, got str")
    clean(function() return m() end, name .. " expected a tensor as input, got NoneType")
  end
  clean(function() return nn.GRU(3, 4)(torch.randn(2, 3), "x") end, "GRU: hx must be a tensor, got str")
  clean(function() return nn.RNN(3, 4)(torch.randn(5, 2, 3), 7) end, "RNN: hx must be a tensor, got int")
  for _, name in ipairs({ "RNNCell", "LSTMCell", "GRUCell" }) do
    local m = nn[name](3, 4)
    clean(function() return m({}) end, name .. " expected a tensor as input, got table")
    -- PyTorch's check_rnn_cell_forward_input
    clean(function() return m(torch.randn(2, 5)) end, "input has inconsistent input_size: got 5 expected 3")
    clean(function() return m(torch.randn(7)) end, "input has inconsistent input_size: got 7 expected 3")
  end
  local out = nn.GRUCell(3, 4)(torch.randn(2, 3))
  T.eq(out.shape:totable(), { 2, 4 }, "GRUCell output")
end)

T.test("integer subscripts past either end raise PyTorch's IndexError text", function()
  local x = torch.randn(10, 3)
  clean(function() return x[10] end, "index 10 is out of bounds for dimension 0 with size 10")
  clean(function() return x[-11] end, "index -11 is out of bounds for dimension 0 with size 10")
  clean(function() x[12] = 1 end, "index 12 is out of bounds for dimension 0 with size 10")
  T.eq(x[-10]:tolist(), x[0]:tolist(), "x[-10] is the first row")
end)

T.test("torch.utils.data errors point at the user's line", function()
  local ds = data.TensorDataset(torch.randn(10, 3), torch.arange(10))
  clean(function() return data.DataLoader(ds, { foo = 1 }) end, "DataLoader: unknown keyword 'foo'")
  clean(function() return data.DataLoader(ds, { batch_size = 0 }) end,
    "batch_size should be a positive integer value, but got batch_size=0")
  clean(function() return data.DataLoader(ds, { num_workers = -1 }) end,
    "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
  clean(function() return data.BatchSampler(data.SequentialSampler(ds), { foo = 1 }) end, "BatchSampler: unknown keyword 'foo'")
  clean(function() return data.RandomSampler(ds, { foo = 1 }) end, "RandomSampler: unknown keyword 'foo'")
  -- Python's len() of a value that has none
  clean(function() return data.random_split() end, "object of type 'NoneType' has no len()")
  clean(function() return data.RandomSampler(-1) end, "object of type 'int' has no len()")
  clean(function() return ds[10] end, "index 10 is out of bounds for dimension 0 with size 10")
  clean(function() return data.Subset(ds, { 100 })[0] end, "index 100 is out of bounds for dimension 0 with size 10")
  T.eq(#data.RandomSampler("abc"), 3, "a string has a length, as in Python")
end)

T.test("lr_scheduler errors point at the user's line and name Python's type", function()
  local S = optim.lr_scheduler
  clean(function() return S.StepLR() end, "StepLR.__init__() missing 1 required positional argument: 'step_size'")
  -- PyTorch's LRScheduler: f"{type(optimizer).__name__} is not an Optimizer"
  clean(function() return S.StepLR(nil, 3) end, "NoneType is not an Optimizer")
  clean(function() return S.LinearLR("x") end, "str is not an Optimizer")
  clean(function() return S.ReduceLROnPlateau(5) end, "int is not an Optimizer")
  local opt = optim.SGD(nn.Linear(2, 1):parameters(), { lr = 0.1 })
  T.eq(S.StepLR(opt, 3):get_last_lr()[1], 0.1, "valid StepLR")
end)

T.test("torch functions made of ops check their arguments as PyTorch's parser does", function()
  local x = torch.randn(2, 3)
  clean(function() return torch.hypot() end, "hypot(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return torch.hypot(x, "x") end, "hypot(): argument 'other' (position 2) must be Tensor or Number, not str")
  clean(function() return torch.addcmul(x, "x", x) end, "addcmul(): argument 'tensor1' (position 2) must be Tensor, not str")
  clean(function() return torch.cross({}, x) end, "cross(): argument 'input' (position 1) must be Tensor, not table")
  clean(function() return torch.broadcast_to(x, "x") end, "broadcast_to(): argument 'size' (position 2) must be tuple of ints, not str")
  clean(function() return torch.hstack(x) end, "hstack(): argument 'tensors' (position 1) must be tuple of Tensors, not torch.FloatTensor")
  clean(function() return torch.vstack({ x, "x" }) end, "expected Tensor as element 1 in argument 0, but got str")
  clean(function() return torch.movedim(x) end, "movedim(): argument 'source' (position 2) must be tuple of ints, not NoneType")
  clean(function() return torch.swapaxes(x, "a", 1) end, "swapaxes(): argument 'axis0' (position 2) must be int, not str")
  clean(function() return torch.narrow_copy(x, 0, 0) end, "narrow_copy(): argument 'length' (position 4) must be int, not NoneType")
  clean(function() return torch.isnan("x") end, "isnan(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return torch.floor_divide() end, "floor_divide(): argument 'input' (position 1) must be Tensor or Number, not NoneType")
  clean(function() return torch.absolute(-1) end, "absolute(): argument 'input' (position 1) must be Tensor, not int")
  -- a method's positions count after self
  clean(function() return x:addcmul_(nil, x) end, "addcmul_(): argument 'tensor1' (position 1) must be Tensor, not NoneType")
  clean(function() return x:unfold(0, "x", 1) end, "unfold(): argument 'size' (position 2) must be int, not str")
  clean(function() return x:exponential_("x") end, "exponential_(): argument 'lambd' (position 1) must be Number, not str")
  clean(function() return x:type_as(nil) end, "type_as(): argument 'other' (position 1) must be Tensor, not NoneType")
  clean(function() return torch.Tensor.addcmul_("x", x, x) end,
    "descriptor 'addcmul_' requires a 'torch._C.TensorBase' object but received a 'str'")
  -- the errors of the ops inside name the function called
  clean(function() return torch.hypot(x, torch.randn(5, 7)) end,
    "bad argument #2 to 'hypot' (the size of tensor a (3) must match the size of tensor b (7) at non-singleton dimension 1)")
  clean(function() return x:count_nonzero("x") end, "~to 'count_nonzero' (")
  -- valid calls are unchanged
  T.eq(torch.hypot(torch.tensor({ 3.0 }), 4):tolist(), { 5.0 }, "hypot with a number")
  T.eq(torch.addcmul(torch.zeros(2), torch.ones(2), torch.ones(2), { value = 2 }):tolist(), { 2.0, 2.0 }, "addcmul value")
  T.eq(torch.logit(torch.tensor({ 0.5 }), { eps = 0.1 }):tolist(), { 0.0 }, "logit eps keyword")
  T.eq(torch.swapaxes(x, 0, 1).shape:totable(), { 3, 2 }, "swapaxes")
  T.eq(torch.hstack({ torch.ones(2), torch.zeros(1) }):tolist(), { 1.0, 1.0, 0.0 }, "hstack")
  T.eq(torch.floor_divide(7, torch.tensor({ 2 })):tolist(), { 3 }, "floor_divide of a number")
  T.eq((torch.tensor({ 7 }) // 2):tolist(), { 3 }, "//")
end)

T.test("channel_shuffle, adaptive_max_pool1d and the functional in-place activations check their input", function()
  clean(function() return F.channel_shuffle() end, "channel_shuffle(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return F.channel_shuffle(torch.randn(2, 4, 3), "x") end,
    "channel_shuffle(): argument 'groups' (position 2) must be int, not str")
  -- PyTorch's ChanelShuffle.cpp checks
  clean(function() return F.channel_shuffle(torch.randn(2, 4), 2) end,
    "channel_shuffle expects input to have at least 3 dimensions, but got input with sizes [2, 4]")
  clean(function() return F.channel_shuffle(torch.randn(2, 4, 3), 0) end,
    "Number of groups to divide channels in must be positive. Value of groups:0")
  clean(function() return F.adaptive_max_pool1d("x", 2) end, "adaptive_max_pool1d(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return F.adaptive_max_pool1d(torch.randn(1, 2, 3, 4), 2) end,
    "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)")
  clean(function() return F.relu_() end, "relu_(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return F.celu_(torch.randn(2), "x") end, "celu_(): argument 'alpha' (position 2) must be Number, not str")
  T.eq(F.channel_shuffle(torch.arange(4):float():reshape(1, 4, 1), 2):reshape(-1):tolist(), { 0.0, 2.0, 1.0, 3.0 }, "shuffle")
  T.eq(F.adaptive_max_pool1d(torch.tensor({ { { 1.0, 3.0, 2.0, 0.0 } } }), 2):reshape(-1):tolist(), { 3.0, 2.0 }, "pool")
end)

T.test("nn.utils functions check their module argument", function()
  local U = nn.utils
  clean(function() return U.prune.remove(nil, "weight") end, "remove(): argument 'module' (position 1) must be Module, not NoneType")
  clean(function() return U.prune.identity(nn.Linear(2, 2), 3) end, "identity(): argument 'name' (position 2) must be str, not int")
  clean(function() return U.prune.is_pruned("x") end, "is_pruned(): argument 'module' (position 1) must be Module, not str")
  clean(function() return U.remove_weight_norm() end, "remove_weight_norm(): argument 'module' (position 1) must be Module, not NoneType")
  clean(function() return U.parametrize.register_parametrization(nn.Linear(2, 2), "weight") end,
    "register_parametrization(): argument 'parametrization' (position 3) must be Module, not NoneType")
  clean(function() return U.parametrize.refresh({}) end, "refresh(): argument 'module' (position 1) must be Module, not table")
  clean(function() return U.convert_conv2d_weight_memory_format() end,
    "convert_conv2d_weight_memory_format(): argument 'module' (position 1) must be Module, not NoneType")
  clean(function() return U.fuse_linear_bn_eval(nn.Linear(2, 2)) end,
    "fuse_linear_bn_eval(): argument 'bn' (position 2) must be Module, not NoneType")
  -- PyTorch's is_parametrized is getattr(module, "parametrizations", None): false for anything else
  T.eq(U.parametrize.is_parametrized("x"), false, "is_parametrized of a string")
  local m = U.prune.l1_unstructured(nn.Linear(2, 2), "weight", { amount = 0.5 })
  T.eq(U.prune.is_pruned(m), true, "pruned")
  T.eq(U.prune.is_pruned(U.prune.remove(m, "weight")), false, "removed")
end)

T.test("Conv1d and the 1-d pools speak of the 1-d op and the user's shapes", function()
  local c = nn.Conv1d(3, 4, 3)
  clean(function() return c(torch.randn(2, 5, 7)) end,
    "Given groups=1, weight of size [4, 3, 3], expected input[2, 5, 7] to have 3 channels, but got 5 channels instead")
  clean(function() return c(torch.randn(7)) end, "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [7]")
  clean(function() return nn.Conv1d(3, 4, 9)(torch.randn(2, 3, 5)) end,
    "Calculated padded input size per channel: (5). Kernel size: (9). Kernel size can't be greater than actual input size")
  clean(function() return c(torch.randn(2, 3, 7):long()) end, "~to 'conv1d' (")
  clean(function() return nn.MaxPool1d(9)(torch.randn(2, 3, 5)) end, "max_pool1d() Invalid computed output size: 0")
  clean(function() return nn.MaxPool1d(2)(torch.randn(5)) end, "max_pool1d() Expected 2D or 3D input tensor, but got [5]")
  -- PyTorch's avg_pool1d runs avg_pool2d too, and its message shows the added dim
  clean(function() return nn.AvgPool1d(9)(torch.randn(2, 3, 5)) end,
    "~(Given input size: (3x1x5). Calculated output size: (3x1x0). Output size is too small)")
  clean(function() return nn.AvgPool1d(2)(torch.randn(5)) end,
    "Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #1 'self' (while checking arguments for avg_pool1d)")
  T.eq(c(torch.randn(3, 7)).shape:totable(), { 4, 5 }, "unbatched conv1d")
  T.eq(nn.MaxPool1d(2, { ceil_mode = true })(torch.randn(2, 3, 5)).shape:totable(), { 2, 3, 3 }, "ceil_mode")
end)

T.test("nn.init names itself and checks its numbers", function()
  local w = torch.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
  clean(function() return nn.init.kaiming_normal_(w) end, "bad argument #1 to 'kaiming_normal_' (expected a floating point dtype, but got int64)")
  clean(function() return nn.init.uniform_(w) end, "~to 'uniform_' (expected a floating point dtype")
  clean(function() return nn.init.normal_(torch.randn(2, 3), "x") end, "normal_(): argument 'mean' (position 2) must be Number, not str")
  clean(function() return nn.init.xavier_uniform_(torch.randn(2, 3), "x") end, "xavier_uniform_(): argument 'gain' (position 2) must be Number, not str")
  clean(function() return nn.init.sparse_(torch.randn(2, 3), "x") end, "sparse_(): argument 'sparsity' (position 2) must be Number, not str")
  T.eq(nn.init.constant_(torch.zeros(2), torch.tensor(3.0)):tolist(), { 3.0, 3.0 }, "constant_ with a 0-d tensor")
  T.eq(nn.init.kaiming_uniform_(torch.zeros(4, 4), { a = math.sqrt(5) }):abs():max():item() <= 0.5, true, "kaiming_uniform_ keywords")
end)

T.test("layers and functions check a non-tensor input", function()
  clean(function() return nn.InstanceNorm1d(3)("x") end, "instance_norm(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return nn.InstanceNorm2d(3)() end, "instance_norm(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return nn.PixelShuffle(2)({}) end, "pixel_shuffle(): argument 'input' (position 1) must be Tensor, not table")
  clean(function() return nn.PixelUnshuffle(2)("x") end, "pixel_unshuffle(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return nn.Unfold(2)("x") end, "im2col(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return nn.Fold({ 4, 4 }, 2)("x") end, "col2im(): argument 'input' (position 1) must be Tensor, not str")
  local x = torch.randn(2, 3)
  clean(function() return nn.SoftMarginLoss()(x, "y") end, "soft_margin_loss(): argument 'target' (position 2) must be Tensor, not str")
  clean(function() return nn.HingeEmbeddingLoss()(x, "y") end, "hinge_embedding_loss(): argument 'target' (position 2) must be Tensor, not str")
  clean(function() return nn.PoissonNLLLoss()(x, "y") end, "poisson_nll_loss(): argument 'target' (position 2) must be Tensor, not str")
  clean(function() return F.softshrink(x, "x") end, "softshrink(): argument 'lambd' (position 2) must be Tensor or Number, not str")
  clean(function() return F.glu(x, "x") end, "glu(): argument 'dim' (position 2) must be int, not str")
  T.eq(F.softshrink(torch.tensor({ 1.0 }), 0.5):tolist(), { 0.5 }, "softshrink")
end)

T.test("torch functions with a missing or wrong argument", function()
  local x = torch.randn(2, 3)
  clean(function() return torch.broadcast_tensors(x, "x") end, "expected Tensor as element 1 in argument 0, but got str")
  clean(function() return torch.broadcast_tensors(x, torch.randn(5, 7)) end, "~to 'broadcast_tensors' (the size of tensor a (3) must match")
  T.eq(select("#", torch.broadcast_tensors()), 0, "no tensors, no results")
  clean(function() return torch.cartesian_prod() end, "meshgrid expects a non-empty TensorList")
  clean(function() return torch.cartesian_prod(x) end, "Expect a 1D vector, but got shape [2, 3]")
  clean(function() return torch.cartesian_prod("x") end, "expected Tensor as element 0 in argument 0, but got str")
  clean(function() return torch.svd("x") end, "svd(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return torch.svd(torch.tensor({ { 1, 2 } })) end, "linalg.svd: Expected a floating point or complex tensor as input. Got Long")
  clean(function() return torch.bernoulli() end, "bernoulli(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return torch.round("x") end, "round(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return torch.as_strided(x, "x") end, "as_strided(): argument 'size' (position 2) must be tuple of ints, not str")
  clean(function() return x:as_strided() end, "as_strided(): argument 'size' (position 1) must be tuple of ints, not NoneType")
  T.eq(torch.cartesian_prod(torch.tensor({ 1, 2 }), torch.tensor({ 3 })):tolist(), { { 1, 3 }, { 2, 3 } }, "cartesian_prod")
  T.eq(x:as_strided({ 3 }, { 1 }):size(0), 3, "as_strided")
end)

T.test("schedulers and default_collate with wrong arguments", function()
  local opt = torch.optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 0.1 })
  clean(function() return torch.optim.lr_scheduler.LambdaLR(opt, "x") end, "'str' object is not callable")
  clean(function() return torch.optim.lr_scheduler.ChainedScheduler() end, "object of type 'NoneType' has no len()")
  clean(function() return data.default_collate() end, "'NoneType' object is not subscriptable")
  clean(function() return data.default_collate(torch.zeros(2)) end, "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor")
  T.eq(data.default_collate({ 1, 2 }):tolist(), { 1, 2 }, "collate numbers")
end)

T.test("DataParallel and nn.utils.rnn check their arguments", function()
  clean(function() return nn.DataParallel() end, "DataParallel.__init__() missing 1 required positional argument: 'module'")
  -- with no GPU PyTorch's DataParallel keeps any module and fails when it calls it
  clean(function() return nn.DataParallel("x")(torch.randn(2, 3)) end, "'str' object is not callable")
  local R = nn.utils.rnn
  clean(function() return R.invert_permutation("x") end, "empty_like(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return R.pack_padded_sequence(torch.randn(3, 2), 99) end,
    "'lengths' argument should be a 1D CPU int64 tensor, but got 0D cpu Long tensor")
  clean(function() return R.pack_padded_sequence(torch.randn(3, 2), torch.ones(2, 2)) end,
    "'lengths' argument should be a 1D CPU int64 tensor, but got 2D cpu Long tensor")
  clean(function() return R.pack_padded_sequence(torch.randn(3, 2), "x") end, "new(): invalid data type 'str'")
  clean(function() return R.pack_sequence() end, "'NoneType' object is not iterable")
  clean(function() return R.pack_sequence(-1) end, "'int' object is not iterable")
  clean(function() return R.pack_sequence({ torch.randn(2), "x" }) end, "'str' object has no attribute 'size'")
  clean(function() return R.pad_sequence({ torch.randn(2), "x" }) end, "expected Tensor as element 1 in argument 0, but got str")
  clean(function() return R.unpad_sequence(torch.randn(3, 2)) end, "'NoneType' object is not iterable")
  clean(function() return R.unpad_sequence(torch.tensor(1.0), {}) end, "Dimension out of range (expected to be in range of [-1, 0], but got 1)")
  local p = R.pack_padded_sequence(torch.randn(3, 2), torch.tensor({ 3, 2 }))
  T.eq(p.batch_sizes:tolist(), { 2, 2, 1 }, "pack_padded_sequence with tensor lengths")
  T.eq(#R.unpad_sequence(torch.randn(3, 2), { 3, 1 }), 2, "unpad_sequence")
end)

T.test("Flatten, Unflatten, ConvTranspose and the recurrent cells give PyTorch's texts", function()
  local x = torch.randn(2, 3)
  clean(function() return nn.Flatten(0, 99)(x) end, "Dimension out of range (expected to be in range of [-2, 1], but got 99)")
  clean(function() return nn.Flatten()(torch.tensor(1.0)) end, "Dimension out of range (expected to be in range of [-1, 0], but got 1)")
  clean(function() return nn.Unflatten(1, { 3, 2 })(x) end,
    "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (3) in the input tensor")
  T.eq(nn.Unflatten(1, { 3, -1 })(x).shape:totable(), { 2, 3, 1 }, "Unflatten infers -1")
  clean(function() return nn.ConvTranspose2d(3, 2, 2)() end, "conv_transpose2d(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return nn.ConvTranspose1d(3, 2, 2)("x") end, "conv_transpose1d(): argument 'input' (position 1) must be Tensor, not str")
  clean(function() return nn.ConvTranspose3d(3, 2, 2)(torch.randn(1, 3, 2, 2, 2), {}) end,
    "ConvTranspose3D: for 5D input, output_size must have 3 or 5 elements (got 0)")
  clean(function() return nn.ConvTranspose1d(3, 2, 2)(torch.randn(1, 3, 4), 99) end, "object of type 'int' has no len()")
  local up = nn.ConvTranspose2d(3, 2, 3, { stride = 2 })
  T.eq(up(torch.randn(1, 3, 4, 4), torch.Size({ 1, 2, 10, 10 })).shape:totable(), { 1, 2, 10, 10 }, "output_size as a Size")
  clean(function() return nn.RNNCell(3, 4)(torch.tensor({ { 1, 2, 3 } })) end, "mat1 and mat2 must have the same dtype, but got Long and Float")
  clean(function() return nn.GRUCell(3, 4)(x, "x") end, "'str' object has no attribute 'dim'")
  clean(function() return nn.RNNCell(3, 4)(x, torch.randn(2, 3)) end, "hidden0 has inconsistent hidden_size: got 3, expected 4")
  clean(function() return nn.GRUCell(3, 4)(x, torch.randn(5, 4)) end, "Input batch size 2 doesn't match hidden0 batch size 5")
  clean(function() return nn.RNNCell(3, 4)(x, torch.randn(1, 2, 4)) end, "RNNCell: Expected hidden to be 1D or 2D, got 3D instead")
  clean(function() return nn.LSTMCell(3, 4)(x, torch.randn(2, 4)) end,
    "lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor")
  clean(function() return nn.LSTMCell(3, 4)(x, { torch.randn(2, 4), torch.randn(2, 5) }) end,
    "hidden1 has inconsistent hidden_size: got 5, expected 4")
  local h, c = nn.LSTMCell(3, 4)(torch.randn(3), { torch.randn(4), torch.randn(4) })
  T.eq({ h.shape:totable(), c.shape:totable() }, { { 4 }, { 4 } }, "unbatched LSTMCell with hx")
end)

T.test("loss layers, LocalResponseNorm, PairwiseDistance, Fold and Unfold check their call", function()
  local x = torch.randn(2, 3)
  -- Python's TypeError for the forward's missing positional arguments
  clean(function() return nn.KLDivLoss()() end, "KLDivLoss.forward() missing 2 required positional arguments: 'input' and 'target'")
  clean(function() return nn.SoftMarginLoss()(x) end, "SoftMarginLoss.forward() missing 1 required positional argument: 'target'")
  clean(function() return nn.PoissonNLLLoss()(x) end, "PoissonNLLLoss.forward() missing 1 required positional argument: 'target'")
  clean(function() return nn.MarginRankingLoss()(x, x) end, "MarginRankingLoss.forward() missing 1 required positional argument: 'target'")
  clean(function() return nn.TripletMarginLoss()() end,
    "TripletMarginLoss.forward() missing 3 required positional arguments: 'anchor', 'positive', and 'negative'")
  clean(function() return nn.HingeEmbeddingLoss()(x, { foo = 1 }) end, "HingeEmbeddingLoss.forward() got an unexpected keyword argument 'foo'")
  clean(function() return nn.MultiLabelSoftMarginLoss()(nil, x) end,
    "multilabel_soft_margin_loss(): argument 'input' (position 1) must be Tensor, not NoneType")
  clean(function() return nn.KLDivLoss()(x, "y") end, "kl_div(): argument 'target' (position 2) must be Tensor, not str")
  clean(function() return F.kl_div(x, torch.randn(5, 7)) end, "~to 'kl_div' (the size of tensor a (7) must match")
  T.near(nn.MSELoss()(torch.ones(2), { target = torch.zeros(2) }):item(), 1.0, 1e-6, "target by name still counts")
  clean(function() return nn.LocalResponseNorm(2)() end, "LocalResponseNorm.forward() missing 1 required positional argument: 'input'")
  clean(function() return nn.LocalResponseNorm(2)("x") end, "'str' object has no attribute 'dim'")
  clean(function() return F.local_response_norm(nil, 2) end, "'NoneType' object has no attribute 'dim'")
  clean(function() return nn.PairwiseDistance()() end, "PairwiseDistance.forward() missing 2 required positional arguments: 'x1' and 'x2'")
  clean(function() return nn.PairwiseDistance()(x, {}) end, "pairwise_distance(): argument 'x2' (position 2) must be Tensor, not table")
  clean(function() return nn.Fold({ 4, 4 }, 2)() end, "Fold.forward() missing 1 required positional argument: 'input'")
  clean(function() return nn.Unfold(2)(nil) end, "im2col(): argument 'input' (position 1) must be Tensor, not NoneType")
  T.eq(nn.PairwiseDistance()(torch.zeros(1, 2), torch.ones(1, 2)):size(0), 1, "PairwiseDistance")
  T.eq(nn.LocalResponseNorm(2)(torch.ones(1, 3, 2)).shape:totable(), { 1, 3, 2 }, "LocalResponseNorm")
end)

T.test("nn.utils conversions, get_total_norm, global_unstructured and the uninitialized placeholders", function()
  local m = nn.Linear(2, 2)
  clean(function() return nn.utils.parameters_to_vector({}) end, "torch.cat(): expected a non-empty list of Tensors")
  clean(function() return nn.utils.vector_to_parameters(torch.zeros(5), m:parameters()) end, "shape '[2]' is invalid for input of size 1")
  clean(function() return nn.utils.vector_to_parameters(torch.zeros(2, 3), m:parameters()) end, "shape '[2, 2]' is invalid for input of size 6")
  clean(function() return nn.utils.get_total_norm({ torch.tensor({ 1, 2 }) }) end,
    "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long")
  clean(function() return nn.utils.clip_grad.get_total_norm(torch.tensor({ 1, 2 })) end,
    "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long")
  local P = nn.utils.prune
  clean(function() return P.global_unstructured({ { m, "weight" } }, "x") end, "'str' object is not callable")
  clean(function() return P.global_unstructured({ { m, "nope" } }, P.L1Unstructured, { amount = 1 }) end, "'Linear' object has no attribute 'nope'")
  clean(function() return P.global_unstructured({ "x" }, P.L1Unstructured, { amount = 1 }) end, "not enough values to unpack (expected 2, got 1)")
  clean(function() return P.global_unstructured({ { 5, "weight" } }, P.L1Unstructured, { amount = 1 }) end, "'int' object has no attribute 'weight'")
  clean(function() return P.global_unstructured(5, P.L1Unstructured, { amount = 1 }) end, "global_unstructured(): parameters is not an Iterable")
  clean(function() return nn.UninitializedParameter(true, "x") end, "~device type at start of device string: x")
  clean(function() return nn.UninitializedBuffer(false, torch.zeros(2)) end, "empty(): argument 'device' must be torch.device, not Tensor")
  clean(function() return nn.UninitializedParameter(true, -1) end, "Device index must not be negative")
  T.eq(tostring(nn.UninitializedParameter(true, "cpu").device), "cpu", "device kept")
  T.eq(nn.utils.parametrize.type_before_parametrizations(nil), "NoneType", "PyTorch's type(None)")
  T.eq(nn.utils.parametrize.type_before_parametrizations(m), nn.Linear, "a module's class")
  local v = nn.utils.parameters_to_vector(m:parameters())
  nn.utils.vector_to_parameters(v * 0, m:parameters())
  T.eq(m.weight:abs():sum():item(), 0.0, "vector_to_parameters")
  P.global_unstructured({ { m, "weight" } }, P.L1Unstructured, { amount = 1 })
  T.eq(P.is_pruned(m), true, "global_unstructured prunes")
end)

T.test("LinearLR/ConstantLR factors, MultiStepLR milestones, DataLoader datasets and F.rrelu_ keywords", function()
  local S = optim.lr_scheduler
  local opt = optim.SGD({ torch.zeros(1, { requires_grad = true }) }, { lr = 0.1 })
  clean(function() return S.ConstantLR(opt, "x") end, "'>' not supported between instances of 'str' and 'float'")
  clean(function() return S.LinearLR(opt, torch.ones(2, 3)) end, "Boolean value of Tensor with more than one value is ambiguous")
  clean(function() return S.LinearLR(opt, 0.5, "x") end, "'>' not supported between instances of 'str' and 'float'")
  clean(function() return S.MultiStepLR(opt, 99) end, "'int' object is not iterable")
  T.check(S.MultiStepLR(opt, "x") ~= nil, "a string is iterable, as for Python's Counter")
  T.check(nn.DataParallel(nil) ~= nil, "DataParallel(None) is made, as PyTorch's on a machine without GPUs")
  T.eq(S.MultiStepLR(opt, { 2, 4 }):get_last_lr()[1], 0.1, "MultiStepLR")
  T.check(S.ConstantLR(opt, torch.tensor(0.5)) ~= nil, "a one-element tensor factor compares as its value")
  local data = torch.utils.data
  local D = data.Dataset:extend("NoGetitem")
  function D:__len() return 2 end
  clean(function() for _ in data.DataLoader(D()) do end end, "~must define __getitem")
  clean(function() for _ in data.DataLoader(setmetatable({}, { __len = function() return 2 end })) do end end,
    "'table' object is not subscriptable")
  clean(function() for _ in data.DataLoader(torch.tensor(1.0)) do end end, "len() of a 0-d tensor")
  -- a tensor is a dataset of its rows and a string one of its characters, as in PyTorch
  local rows = {}
  for b in data.DataLoader(torch.arange(6):reshape(3, 2), { batch_size = 2 }) do rows[#rows + 1] = b:tolist() end
  T.eq(rows, { { { 0, 1 }, { 2, 3 } }, { { 4, 5 } } }, "a tensor dataset")
  local chars = {}
  for c in data.DataLoader("abc") do chars[#chars + 1] = c end
  T.eq(chars, { "a", "b", "c" }, "a string dataset")
  clean(function() return F.rrelu_(torch.randn(2), { foo = 1 }) end, "~to 'rrelu_' (unknown keyword 'foo')")
  T.eq(F.rrelu_(torch.ones(2), { lower = 0.1 }):tolist(), { 1.0, 1.0 }, "rrelu_ keywords")
end)

T.test("Tensor methods: split sections, quantile q, sizes, sampler keywords, broadcasting and number arguments", function()
  local x = torch.randn(2, 3)
  clean(function() return x:tensor_split(torch.ones(2, 3):long()) end,
    "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, but got a tensor with 2 dims")
  clean(function() return x:tensor_split(torch.ones(2)) end, "tensor_split expected tensor_indices_or_sections to have dtype of long, but got Float")
  clean(function() return torch.tensor(1.0):tensor_split(2) end, "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
  clean(function() return x:tensor_split(2, 5) end, "Dimension out of range (expected to be in range of [-2, 1], but got 5)")
  clean(function() return torch.tensor(1.0):hsplit(2) end, "torch.hsplit requires a tensor with at least 1 dimension, but got a tensor with 0 dimensions!")
  clean(function() return torch.ones(4):vsplit(2) end, "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 dimensions!")
  T.eq(select("#", x:tensor_split(torch.tensor(2), 1)), 2, "a 0-d tensor of sections")
  clean(function() return x:quantile(torch.ones(2, 3)) end, "quantile() q must be a scalar or 1D tensor")
  clean(function() return x:quantile(torch.tensor({ 0.5 }, { dtype = torch.float64 })) end, "quantile() q tensor must be same dtype as the input tensor")
  clean(function() return torch.arange(5):quantile(0.5) end, "quantile() input tensor must be either float or double dtype")
  T.eq(torch.tensor({ 1.0, 2.0, 3.0 }):quantile(torch.tensor(0.5)):dim(), 0, "a 0-d q gives a 0-d result")
  clean(function() return x:sum_to_size("x") end, "sum_to_size(): argument 'size' (position 1) must be tuple of ints, not str")
  clean(function() return x:sum_to_size({ 1, "x" }) end,
    "sum_to_size(): argument 'size' (position 1) must be tuple of ints, but found element of type str at pos 1")
  clean(function() return x:resize(2, "x") end, "resize(): argument 'size' (position 1) must be tuple of ints, not str")
  T.eq(x:sum_to_size(1, 3).shape:totable(), { 1, 3 }, "sum_to_size of ints")
  clean(function() return x:to_dense("x") end, "to_dense(): argument 'dtype' must be torch.dtype, not str")
  clean(function() return x:random_({ foo = 1 }) end, "~to 'random_' (unknown keyword 'foo')")
  clean(function() return x:exponential_({ foo = 1 }) end, "~to 'exponential_' (unknown keyword 'foo')")
  T.eq(torch.zeros(20):random_({ to = 2 }):max():item() <= 1, true, "random_ with to by name")
  T.eq(torch.zeros(4):bernoulli_({ p = 0 }):sum():item(), 0.0, "bernoulli_ with p by name")
  local six = torch.randn(1, 1, 1, 1, 1, 2)
  clean(function() return x:clamp_max(six) end, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 5")
  clean(function() return x:igamma(six) end, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 5")
  clean(function() return x:xlogy(six) end, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 5")
  clean(function() return x:logaddexp2(six) end, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 5")
  clean(function() return torch.pinverse(x, "x") end, "pinverse(): argument 'rcond' (position 2) must be float, not str")
  clean(function() return torch.pinverse(x, {}) end, "~pinverse")
  clean(function() return x:stft("x") end, "stft(): argument 'n_fft' (position 2) must be int, not str")
  clean(function() return x:istft("x") end, "istft(): argument 'n_fft' (position 2) must be int, not str")
  T.eq(torch.pinverse(torch.eye(2)):tolist(), { { 1.0, 0.0 }, { 0.0, 1.0 } }, "pinverse")
  -- PyTorch's parser takes a 0-d tensor for a float, not a larger one
  T.eq(torch.pinverse(torch.eye(2), torch.tensor(0.1)):tolist(), { { 1.0, 0.0 }, { 0.0, 1.0 } }, "pinverse with a 0-d rcond")
  clean(function() return torch.pinverse(x, torch.ones(2)) end, "pinverse(): argument 'rcond' (position 2) must be float, not Tensor")
  T.eq(torch.xlogy(torch.zeros(2), torch.ones(1)):tolist(), { 0.0, 0.0 }, "xlogy broadcasts")
end)

T.test("torch functions: autocast queries, tensor lists, copies, as_tensor, svd, and the ops inside named", function()
  local x = torch.randn(2, 3)
  clean(function() return torch.get_autocast_dtype() end, "get_autocast_dtype(): argument 'device_type' (position 1) must be str, not NoneType")
  clean(function() return torch.is_autocast_enabled(5) end, "is_autocast_enabled(): argument 'device_type' (position 1) must be str, not int")
  clean(function() return torch.get_autocast_dtype("x") end, "~to 'get_autocast_dtype' (")
  T.eq(torch.is_autocast_enabled("cpu"), false, "is_autocast_enabled")
  clean(function() return torch.empty_permuted("x", { 0 }) end, "empty_permuted(): argument 'size' (position 1) must be tuple of ints, not str")
  clean(function() return torch.block_diag(99) end, "expected Tensor as element 0 in argument 0, but got int")
  clean(function() return torch.meshgrid(x, "x") end, "expected Tensor as element 1 in argument 0, but got str")
  clean(function() return torch.hstack({}) end, "hstack expects a non-empty TensorList")
  clean(function() return torch.column_stack({}) end, "column_stack expects a non-empty TensorList")
  clean(function() return torch.expand_copy(x, "x") end, "~to 'expand_copy' (")
  clean(function() return torch.view_copy(x, { 99 }) end, "~to 'view_copy' (shape '[99]' is invalid for input of size 6)")
  clean(function() return torch.as_tensor(x, "x") end, "~to 'as_tensor' (")
  clean(function() return torch.asarray("x") end, "~to 'asarray' (")
  clean(function() return torch.svd(torch.tensor(1.0)) end, "linalg.svd: The input tensor A must have at least 2 dimensions.")
  clean(function() return torch.logspace(x, 1, 3) end, "~a Tensor with 6 elements cannot be converted to Scalar")
  clean(function() return torch.trapezoid(torch.tensor(1.0)) end, "~to 'trapezoid' (")
  clean(function() return torch.pca_lowrank(torch.tensor({ { 1, 2 }, { 3, 4 } })) end, "~to 'pca_lowrank' (")
  clean(function() return torch.sparse_coo_tensor(x, "x") end, "~to 'sparse_coo_tensor' (")
  clean(function() return torch.histogramdd(x, torch.ones(5, 7)) end, "a Tensor with 7 elements cannot be converted to Scalar")
  clean(function() return torch.hinge_embedding_loss(x, 99) end, "hinge_embedding_loss(): argument 'target' (position 2) must be Tensor, not int")
  clean(function() return torch.GradScaler("cpu", "x") end, "GradScaler: the options must be a keyword table, got str")
  clean(function() return nn.Linear(3, 2)(torch.tensor({ { 1, 2, 3 } })) end, "mat1 and mat2 must have the same dtype, but got Long and Float")
  -- with GPUs, DataParallel first finds the module on the CPU (PyTorch's check); without, it runs it as is
  clean(function() return nn.DataParallel(nn.Linear(3, 2))(torch.tensor({ { 1, 2, 3 } })) end,
    torch.cuda.is_available()
      and "module must have its parameters and buffers on device cuda:0 (device_ids[0]) but found one of them on device: cpu"
      or "mat1 and mat2 must have the same dtype, but got Long and Float")
  clean(function() return nn.Container("x") end, "Container.__init__() takes 1 positional argument but 2 were given")
  -- valid calls keep working
  T.eq(#{ torch.meshgrid({ torch.arange(2), torch.arange(3) }, { indexing = "xy" }) }, 2, "meshgrid of a list")
  T.eq(torch.block_diag(torch.ones(1, 1), torch.ones(2)).shape:totable(), { 2, 3 }, "block_diag")
  T.eq(torch.as_tensor({ 1, 2 }, { dtype = torch.float64 }).dtype, torch.float64, "as_tensor")
  T.eq(torch.empty_permuted({ 2, 3 }, { 1, 0 }).shape:totable(), { 2, 3 }, "empty_permuted")
  T.eq(torch.trapezoid(torch.tensor({ 1.0, 2.0, 3.0 })):item(), 4.0, "trapezoid")
  -- PyTorch's sparse_ takes row_indices[:num_zeros]: a sparsity over 1 zeroes every row
  T.eq(nn.init.sparse_(torch.ones(2, 3), 99):abs():sum():item(), 0.0, "sparse_ with sparsity 99")
  -- vec[pointer:pointer + n] of a 2-d vec takes rows, as PyTorch's vector_to_parameters does
  local p = torch.zeros(2, 3)
  nn.utils.vector_to_parameters(torch.ones(2, 3), { p })
  T.eq(p:sum():item(), 6.0, "vector_to_parameters with a 2-d vec")
end)
