-- torch.autograd.set_detect_anomaly / detect_anomaly: backward names the node whose gradient
-- holds a NaN; gradients are unchanged otherwise; the mode is restored when a block ends.
local T = ...

T.test("anomaly mode", function()
  T.eq(torch.is_anomaly_enabled(), false, "off by default")
  local x = torch.tensor({ 0.0, 4.0 }, { requires_grad = true })
  local function nan_backward() (x:sqrt() * 0):sum():backward() end -- 0 * inf at x = 0
  do
    local _ <close> = torch.autograd.detect_anomaly()
    T.eq(torch.is_anomaly_enabled(), true, "on in the block")
    T.raises(nan_backward, "Function 'SqrtBackward0' returned nan values in its 0th output.", "the node is named")
    -- an infinite gradient is not an anomaly; a clean pass gives the usual gradients
    x.grad = nil
    x:sqrt():sum():backward()
    local g = x.grad:tolist()
    T.eq(g[1], math.huge, "inf passes")
    T.near(g[2], 0.25, 1e-15, "d sqrt(x) at 4")
    local w = torch.tensor({ 1.0, -2.0, 3.0 }, { dtype = torch.float64, requires_grad = true })
    ;(w * w):sum():backward()
    T.eq(w.grad:tolist(), { 2.0, -4.0, 6.0 }, "gradients as without the mode")
    local mid = torch.tensor({ 2.0 }, { requires_grad = true })
    local y = (mid * 3):log()
    T.raises(function() (y * torch.tensor({ 0.0 / 0.0 })):sum():backward() end,
      "Function 'MulBackward0' returned nan values in its 0th output.", "the first node that makes a NaN")
  end
  T.eq(torch.is_anomaly_enabled(), false, "restored after the block")
  x.grad = nil
  nan_backward()
  T.check(x.grad:tolist()[1] ~= x.grad:tolist()[1], "without the mode the NaN flows into .grad")
  pcall(function()
    local _ <close> = torch.autograd.set_detect_anomaly(true)
    error("boom")
  end)
  T.eq(torch.is_anomaly_enabled(), false, "restored after an error")
  torch.autograd.set_detect_anomaly(true)
  T.eq(torch.is_anomaly_enabled(), true, "set for good when called alone")
  torch.autograd.set_detect_anomaly(false)
  T.eq(torch.is_anomaly_enabled(), false, "and off again")
  T.raises(function() torch.autograd.set_detect_anomaly("yes") end, "set_detect_anomaly: mode must be a boolean, got str")
end)
