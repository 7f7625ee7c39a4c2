-- A broadcast mismatch names the last mismatching dim, as PyTorch's infer_size does (it walks
-- the shapes from the end): the cells of the tensors tutorial that are meant to fail.
local T = ...

local function msg(f)
  local ok, err = pcall(f)
  T.check(not ok, "raises")
  return tostring(err):match("%((the size of .*)%)$") or tostring(err)
end

local function run(device)
  T.test("broadcast errors name PyTorch's dimension " .. device, function()
    local function r(a, b) return torch.rand(a, b, { device = device }) end
    T.eq(msg(function() return r(2, 3) * r(3, 2) end),
      "the size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1")
    local a = torch.ones(4, 3, 2, { device = device })
    T.eq(msg(function() return a * r(4, 3) end),
      "the size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 2")
    T.eq(msg(function() return a * r(2, 3) end),
      "the size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 2")
    T.eq(msg(function() return a * torch.rand({ 0 }, { device = device }) end),
      "the size of tensor a (2) must match the size of tensor b (0) at non-singleton dimension 2")
    -- one mismatch: the same dim as before
    T.eq(msg(function() return r(5, 3) + r(4, 3) end),
      "the size of tensor a (5) must match the size of tensor b (4) at non-singleton dimension 0")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end
