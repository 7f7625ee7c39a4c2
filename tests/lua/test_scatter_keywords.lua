-- scatter / scatter_ with keyword arguments ({dim =, index =, src = | value =}) and a 0-dim
-- index into a 1-D tensor: the one-hot Lambda of the "Learn the Basics" transforms tutorial,
-- checked against one-hot lists built by hand; the errors for repeated or wrong arguments.
local T = ...

local function onehot(k, n)
  local l = {}
  for i = 1, n do l[i] = (i == k + 1) and 1 or 0 end
  return l
end

local function run(device)
  local o = { dtype = torch.float, device = device }
  T.test("scatter keywords " .. device, function()
    for _, y in ipairs({ 0, 3, 9 }) do
      local idx = torch.tensor(y, { device = device })
      T.near(torch.zeros(10, o):scatter_(0, idx, { value = 1 }):cpu():tolist(), onehot(y, 10), 0, "value= " .. y)
      T.near(torch.zeros(10, o):scatter_({ dim = 0, index = idx, value = 1 }):cpu():tolist(), onehot(y, 10), 0,
        "all keywords " .. y)
    end
    local x = torch.zeros(2, 3, o)
    local idx = torch.tensor({ { 2 }, { 0 } }, { device = device })
    local r = x:scatter(1, idx, { value = 5 })
    T.near(r:cpu():tolist(), { { 0, 0, 5 }, { 5, 0, 0 } }, 0, "scatter value= on 2-D")
    T.near(x:cpu():tolist(), { { 0, 0, 0 }, { 0, 0, 0 } }, 0, "scatter leaves self")
    local src = torch.tensor({ { 7 }, { 8 } }, o)
    T.near(torch.scatter(x, 1, { index = idx, src = src }):cpu():tolist(), { { 0, 0, 7 }, { 8, 0, 0 } }, 0,
      "torch.scatter src= keyword")
    T.near(torch.zeros(4, o):scatter_(0, torch.tensor({ 1, 3 }, { device = device }), 2.5):cpu():tolist(),
      { 0, 2.5, 0, 2.5 }, 0, "positional value unchanged")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA", 10) end

T.test("scatter keyword errors", function()
  local x, idx = torch.zeros(3), torch.tensor({ 1 })
  T.raises(function() return x:scatter_(0, idx, { value = 1, src = torch.ones(1) }) end,
    "scatter_(): give src or value, not both", "value and src")
  T.raises(function() return x:scatter_(0, { index = idx, dim = 0, value = 1 }) end,
    "scatter_() got multiple values for argument 'dim'", "dim twice")
  T.raises(function() return x:scatter_(0, idx, { value = torch.ones(1) }) end,
    "scatter_(): argument 'value' must be Number, not Tensor", "tensor value")
  T.raises(function() return x:scatter_(0, idx, { valu = 1 }) end,
    "scatter_() got an unexpected keyword argument 'valu'", "misspelt key")
  T.raises(function() return torch.scatter(x, 0, idx, { value = 1, reduce = "add" }) end,
    "scatter(): the reduce argument is not supported", "reduce")
end)
