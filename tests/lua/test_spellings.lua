-- torch_spellings.lua: the in-place forms against their out-of-place functions and PyTorch's
-- casting rule, apply_ / map_ against loops over the values, the functional in-place activations
-- against the out-of-place ones, and the old F names against interpolate and the pools.
local T = ...
local f64 = { dtype = torch.float64 }

T.test("in-place forms write the function's result and keep the dtype rule", function()
  local x = torch.tensor({ 1.5, -2.25, 3.0, 0.5 }, f64)
  local y = torch.tensor({ 2.0, 0.5, -1.0, 4.0 }, f64)
  for _, c in ipairs({ { "hypot", y }, { "atan2", y }, { "fmod", y }, { "floor_divide", y }, { "heaviside", y },
    { "ldexp", torch.tensor({ 1, 2, 0, -1 }) }, { "sgn" }, { "deg2rad" }, { "rad2deg" }, { "cumsum", 0 }, { "cumprod", 0 } }) do
    local name, arg = c[1], c[2]
    local want = torch[name](x, arg)
    local z = x:clone()
    local r = z[name .. "_"](z, arg)
    T.check(rawequal(r, z) and torch.equal(z, want), name .. "_ writes torch." .. name .. " into self")
  end
  local m = torch.tensor({ 1.0, 2.0 }, f64)
  local mv = m:clone():addmv_(torch.tensor({ { 1.0, 2.0 }, { 3.0, 4.0 } }, f64), torch.tensor({ 1.0, 1.0 }, f64))
  T.eq(mv:tolist(), { 4.0, 9.0 }, "addmv_")
  local a = torch.zeros(2, 2, f64):addr_(torch.tensor({ 1.0, 2.0 }, f64), torch.tensor({ 3.0, 4.0 }, f64))
  T.eq(a:tolist(), { { 3.0, 4.0 }, { 6.0, 8.0 } }, "addr_")
  T.raises(function() torch.tensor({ 1, 2 }):fmod_(1.5) end, "~result type Float can't be cast to the desired output type Long", "int fmod_ float")
  T.raises(function() torch.tensor({ 1.0 }):hypot_(torch.ones(3)) end, "~doesn't match the broadcast shape", "a broadcast result")
  T.eq(torch.tensor({ 2.0, 3.0 }, f64):float_power_(2):tolist(), { 4.0, 9.0 }, "float_power_ on float64")
  T.raises(function() torch.tensor({ 2.0 }):float_power_(2) end,
    "float_power_: the base given to float_power_ has dtype Float but the operation's result requires dtype Double", "float_power_ on float32")
  T.eq(torch.absolute(torch.tensor({ -1.5, 2.0 })):tolist(), { 1.5, 2.0 }, "torch.absolute")
  local n = torch.tensor({ -3.0 })
  n:absolute_()
  T.eq(n:tolist(), { 3.0 }, "absolute_")
  T.eq(torch.zeros(4):index_fill(0, torch.tensor({ 1, 3 }), 5):tolist(), { 0.0, 5.0, 0.0, 5.0 }, "index_fill out of place")
  T.eq({ torch.tensor({ 1 }):is_signed(), torch.tensor({ 1 }, { dtype = torch.uint8 }):is_signed(), torch.tensor({ true }):is_signed() },
    { true, false, false }, "is_signed")
end)

T.test("apply_ and map_ call a Lua function on each element", function()
  local vals = { { 1.0, -2.0 }, { 3.5, 0.25 } }
  local x = torch.tensor(vals, f64)
  local r = x:apply_(function(v) return v * v + 1 end)
  T.check(rawequal(r, x), "apply_ returns self")
  T.eq(x:tolist(), { { 2.0, 5.0 }, { 13.25, 1.0625 } }, "apply_")
  local y = torch.tensor({ { 1, 2 }, { 3, 4 } })
  y:map_(torch.tensor({ 10, 20 }), function(a, b) return a * b end)
  T.eq(y:tolist(), { { 10, 40 }, { 30, 80 } }, "map_ with the other broadcast")
  T.raises(function() x:apply_(3) end, "apply_: expected a function, got int", "apply_ of a number")
  if torch.cuda.is_available() then
    T.raises(function() torch.zeros(2, { device = "cuda" }):apply_(function(v) return v end) end,
      "apply_: apply_ is only implemented on CPU tensors", "apply_ on the GPU")
  else
    T.skip("no GPU")
  end
end)

T.test("functional in-place activations and the old names", function()
  local x = torch.tensor({ -2.0, -0.5, 0.0, 0.75, 3.0 }, f64)
  for _, c in ipairs({ { "relu" }, { "elu", 0.7 }, { "celu", 1.3 }, { "selu" }, { "leaky_relu", 0.2 }, { "hardtanh", -0.6, 0.8 },
    { "threshold", 0.5, -9.0 } }) do
    local name = c[1]
    local want = F[name](x, table.unpack(c, 2))
    local z = x:clone()
    local r = F[name .. "_"](z, table.unpack(c, 2))
    T.check(rawequal(r, z) and torch.equal(z, want), "F." .. name .. "_")
  end
  local eval = x:clone()
  F.rrelu_(eval) -- eval: the mean slope (lower + upper) / 2
  T.near(eval:tolist(), F.leaky_relu(x, (1 / 8 + 1 / 3) / 2):tolist(), 1e-15, "F.rrelu_ in eval")
  local img = torch.randn(1, 2, 3, 4, f64)
  T.check(torch.equal(F.upsample_nearest(img, nil, 2), F.interpolate(img, { scale_factor = 2, mode = "nearest" })), "upsample_nearest")
  T.check(torch.equal(F.upsample_bilinear(img, { 5, 7 }), F.interpolate(img, { size = { 5, 7 }, mode = "bilinear", align_corners = true })),
    "upsample_bilinear aligns corners")
  local v, i = F.adaptive_max_pool2d_with_indices(img, 2)
  local v2, i2 = F.adaptive_max_pool2d(img, 2, true)
  T.check(torch.equal(v, v2) and torch.equal(i, i2), "adaptive_max_pool2d_with_indices")
  local seq = torch.randn(2, 3, 9, f64)
  local a1, b1 = F.adaptive_max_pool1d_with_indices(seq, 4)
  local a2, b2 = F.adaptive_max_pool1d(seq, 4, true)
  T.check(torch.equal(a1, a2) and torch.equal(b1, b2), "adaptive_max_pool1d_with_indices")
  local p1, j1 = F.max_pool1d_with_indices(seq, 3, 2, 1)
  local p2, j2 = F.max_pool1d(seq, 3, { stride = 2, padding = 1, return_indices = true })
  T.check(torch.equal(p1, p2) and torch.equal(j1, j2), "max_pool1d_with_indices")
  -- the indices point at the maxima: gather them back from each row
  T.check(torch.equal(seq:gather(2, j1), p1), "max_pool1d_with_indices: the indices point at the values")
end)
