-- forward_ad.make_dual with a tangent of another floating dtype: accepted and kept as given (as
-- PyTorch keeps it); a tangent computed from it comes out in the wider of the output's and the
-- tangents' dtypes. References: closed-form derivatives.
local T = ...
local fwAD = torch.autograd.forward_ad

local function flat(t) return t:detach():reshape(-1):tolist() end

local function checks(dev)
  local tag = " [" .. dev .. "]"
  T.test("make_dual keeps a tangent of another dtype" .. tag, function()
    local x = torch.tensor({ 0.5, -1.0, 2.0 }, { device = dev })
    local t = torch.tensor({ 1.0, 2.0, -3.0 }, { dtype = torch.float64, device = dev })
    local _ <close> = fwAD.dual_level()
    local d = fwAD.make_dual(x, t)
    T.eq(d.dtype, torch.float32, "the dual keeps the primal's dtype" .. tag)
    local u = fwAD.unpack_dual(d)
    T.eq(u.tangent.dtype, torch.float64, "its tangent keeps its dtype" .. tag)
    T.near(flat(u.tangent), { 1, 2, -3 }, 0, "its tangent's values" .. tag)
    -- y = sin(x) * 3: tangent 3 cos(x) t, in float64
    local y = fwAD.unpack_dual(d:sin() * 3)
    T.eq(y.primal.dtype, torch.float32, "the output's primal dtype" .. tag)
    T.eq(y.tangent.dtype, torch.float64, "the output's tangent widened to float64" .. tag)
    local want = {}
    for i, xv in ipairs({ 0.5, -1.0, 2.0 }) do want[i] = 3 * math.cos(xv) * ({ 1, 2, -3 })[i] end
    T.near(flat(y.tangent), want, 1e-5, "the output's tangent" .. tag)
  end)

  T.test("a narrower tangent" .. tag, function()
    local x = torch.tensor({ 1.0, 2.0 }, { dtype = torch.float64, device = dev })
    local t = torch.tensor({ 0.5, 0.25 }, { dtype = torch.float32, device = dev })
    local _ <close> = fwAD.dual_level()
    local d = fwAD.make_dual(x, t)
    T.eq(fwAD.unpack_dual(d).tangent.dtype, torch.float32, "kept as float32" .. tag)
    local y = fwAD.unpack_dual(d * d)
    T.eq(y.tangent.dtype, torch.float64, "x * x: float64 tangent" .. tag)
    T.near(flat(y.tangent), { 2 * 1 * 0.5, 2 * 2 * 0.25 }, 1e-12, "2 x t" .. tag)
  end)

  T.test("what make_dual still refuses" .. tag, function()
    local _ <close> = fwAD.dual_level()
    local x = torch.ones(2, 3, { device = dev })
    T.raises(function() fwAD.make_dual(x, torch.ones(2, 3, { dtype = torch.int64, device = dev })) end,
      "Expected tangent to be floating point or complex, but got: torch.int64")
    T.raises(function() fwAD.make_dual(x, torch.ones(3, { dtype = torch.float64, device = dev })) end,
      "~different size than that of the original Tensor")
  end)
end

checks("cpu")
if torch.cuda.is_available() then
  checks("cuda")
else
  T.skip("no CUDA device", 3)
end
