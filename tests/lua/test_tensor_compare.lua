-- Lua's <, <=, >, >= with tensors: one-element tensors (0-dim or not, any dtype) compare as
-- torch.lt's (etc.) value against numbers and other tensors, with PyTorch's dtype rules; larger
-- tensors raise the ambiguity error.
local T = ...

local function run(device)
  T.test("comparison operators " .. device, function()
    local function t(v, dt) return torch.tensor(v, { dtype = dt, device = device }) end
    local half = t(0.5)
    T.check(half > 1e-10 and not (half < 1e-10), "0-dim float against a number")
    T.check(1e-10 < half and 0.5 <= half and half >= 0.5 and not (half > 0.5), "number on the left, equal values")
    T.check(t({ 2.5 }) > t(2) and t({ { 3 } }, torch.int64) >= 3, "one-element tensors of other shapes")
    T.check(t(true) > 0.5 and not (t(false) >= 0.5), "bool tensors compare as 0 and 1")
    T.check(t(7, torch.int64) < 7.5 and t(-1, torch.int32) <= -1, "integer tensors")
    T.check(not (t(0.1, torch.float32) > 0.1) and t(0.1, torch.float32) >= 0.1,
      "a float32 tensor meets the number 0.1 in float32, as in PyTorch")
    T.check(t(0.1, torch.float32) > t(0.1, torch.float64), "two tensors promote: float32 0.1 is above float64 0.1")
    local best = math.huge
    for _, l in ipairs({ 3.0, 2.0, 2.5 }) do
      local loss = t(l)
      if loss < best then best = loss:item() end
    end
    T.eq(best, 2.0, "the best-loss idiom")
    local ok, err = pcall(function() return t({ 1, 2 }) < 3 end)
    T.check(not ok and err:find("Boolean value of Tensor with more than one value is ambiguous", 1, true)
      and err:find("torch.lt(a, b)", 1, true) and err:find("[2]", 1, true), err)
    ok, err = pcall(function() return 0 <= t({}) end)
    T.check(not ok and err:find("torch.le(a, b)", 1, true), err)
    T.eq(tostring(t({ 1, 5 }):lt(3)), tostring(t({ true, false })), "elementwise results stay with torch.lt")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end
