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
