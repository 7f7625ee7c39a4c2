-- F.dropout's fused kernels (ops.def dropout) against the composed form x * noise with the same
-- seed (bit for bit, forward and backward, every float dtype), the kept fraction against its
-- binomial spread, and second derivatives by central differences.
local T = ...
local gradcheck = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "gradcheck.lua")(T)
local f64 = { dtype = torch.float64 }

local function composed(x, p, seed)
  torch.manual_seed(seed)
  return x * torch.empty_like(x):_dropout_noise_(1 - p)
end

local function fused(x, p, seed)
  torch.manual_seed(seed)
  return F.dropout(x, p)
end

T.test("the same elements and values as x * noise, in every float dtype", function()
  for _, dt in ipairs({ torch.float32, torch.float64, torch.float16, torch.bfloat16 }) do
    local x = torch.randn(5, 333):to(dt)
    T.check(torch.equal(fused(x, 0.3, 11), composed(x, 0.3, 11)), tostring(dt) .. ": forward")
    local xg, xc = x:clone():requires_grad_(), x:clone():requires_grad_()
    local g = torch.randn(5, 333):to(dt)
    fused(xg, 0.45, 12):backward(g)
    composed(xc, 0.45, 12):backward(g)
    T.check(torch.equal(xg.grad, xc.grad), tostring(dt) .. ": backward")
  end
  local x = torch.randn(64, f64):requires_grad_()
  T.eq(fused(x, 0.5, 1).grad_fn:name(), "NativeDropoutBackward0", "grad_fn")
  local inf = torch.tile(torch.tensor({ math.huge, -math.huge, 0 / 0, 1.0, 2.0, 3.0, 4.0, 5.0 }), { 50 })
  local a, b = fused(inf, 0.5, 3), composed(inf, 0.5, 3)
  T.eq(a:isnan():tolist(), b:isnan():tolist(), "a dropped inf or nan gives nan, as x * 0")
  T.check(torch.equal(a:nan_to_num(), b:nan_to_num()), "and the rest as the composed form")
end)

T.test("views, in place and the edge probabilities keep their meaning", function()
  local base = torch.randn(40, 30, f64)
  local t = base:t()
  T.check(torch.equal(fused(t, 0.2, 4), composed(t, 0.2, 4)), "a transposed view (the composed form)")
  local x = torch.randn(10, f64)
  T.check(rawequal(F.dropout(x, 0.0), x), "p = 0 returns the input")
  T.check(rawequal(F.dropout(x, 0.5, false), x), "eval returns the input")
  T.eq(F.dropout(x, 1.0):tolist(), torch.zeros(10, f64):tolist(), "p = 1 zeros")
  local y = x:clone()
  torch.manual_seed(8)
  F.dropout(y, 0.5, true, true)
  T.check(torch.equal(y, composed(x, 0.5, 8)), "in place")
  T.raises(function() F.dropout(x, 1.5) end, "~dropout probability has to be between 0 and 1, but got 1.5", "p > 1")
end)

T.test("the kept fraction and the scale", function()
  local n, p = 1000000, 0.3
  torch.manual_seed(21)
  local y = F.dropout(torch.ones(n), p)
  local kept = y:ne(0):sum():item()
  local sd = math.sqrt(n * p * (1 - p))
  T.check(math.abs(kept - n * (1 - p)) < 5 * sd, string.format("kept %d of %d, expected %.0f +- %.0f", kept, n, n * (1 - p), sd))
  T.near(y:max():item(), 1 / (1 - p), 1e-6, "kept values are scaled by 1 / (1 - p)")
  T.eq(y:min():item(), 0.0, "dropped ones are 0")
end)

T.test("gradients and second derivatives by central differences", function()
  gradcheck("dropout", function(x) return F.dropout(x, 0.4) end, { torch.randn(6, 7, f64) }, { seed = 5 })
  gradcheck("dropout then square", function(x) return F.dropout(x, 0.25) ^ 2 end, { torch.randn(20, f64) }, { seed = 6 })
  -- d/dx of sum(g * d(dropout(x)^2)/dx) = 2 g m s^2: through create_graph
  local x = torch.randn(30, f64):requires_grad_()
  torch.manual_seed(7)
  local y = F.dropout(x, 0.5)
  local gx = torch.autograd.grad((y ^ 2):sum(), x, { create_graph = true })[1]
  local h = torch.autograd.grad(gx:sum(), x)[1]
  torch.manual_seed(7)
  local m = torch.empty_like(x):_dropout_noise_(0.5) -- the same mask, as the noise 2 or 0
  T.near(h:tolist(), (m * m * 2):tolist(), 1e-12, "second derivative = 2 (m / keep)^2")
end)

T.test("the GPU keeps the same elements as the CPU", function()
  if not torch.cuda.is_available() then return T.skip("no GPU", 6) end
  for _, shift in ipairs({ 1, 4 }) do -- inputs that start off the vectors' alignment, with a tail
    local base = torch.randn(4003)
    local xc, xg = base:narrow(0, shift, 3998), base:cuda():narrow(0, shift, 3998)
    T.check(torch.equal(fused(xc, 0.3, 41), fused(xg, 0.3, 41):cpu()), "a contiguous view at element " .. shift)
  end
  for _, dt in ipairs({ torch.float32, torch.float64, torch.float16, torch.bfloat16 }) do
    local x = torch.randn(7, 1001):to(dt)
    local xc, xg = x:clone():requires_grad_(), x:cuda():requires_grad_()
    local g = torch.randn(7, 1001):to(dt)
    local a, b = fused(xc, 0.35, 31), fused(xg, 0.35, 31)
    a:backward(g)
    b:backward(g:cuda())
    T.check(torch.equal(a:detach(), b:detach():cpu()) and torch.equal(xc.grad, xg.grad:cpu()), tostring(dt))
  end
end)
