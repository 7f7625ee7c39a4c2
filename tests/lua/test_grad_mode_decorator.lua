-- torch.no_grad()(fn), Python's @torch.no_grad() decorator (also enable_grad, inference_mode).
local T = ...

local function run(device)
  T.test("grad-mode decorators " .. device, function()
    local add2 = torch.no_grad()(function(x, y) return x + y end)
    T.check(torch.is_grad_enabled(), "making the decorator leaves grad mode on")
    local a = torch.ones(2, 3, { requires_grad = true, device = device }) * 2
    local c = add2(a, a)
    T.check(not c.requires_grad and c.grad_fn == nil, "the wrapped function runs without grad")
    T.eq(c:sum():item(), 24.0, "and computes 2 + 2")
    T.check(torch.is_grad_enabled(), "grad mode is back on after the call")
    T.check((a + a).requires_grad, "outside the wrapped function, grad is tracked")
    local twice = torch.enable_grad()(function(x) return x * 2, "extra" end)
    do
      local _ <close> = torch.no_grad()
      local y, extra = twice(a)
      T.check(y.requires_grad, "enable_grad inside no_grad")
      T.eq(extra, "extra", "every result comes back")
      T.check(not torch.is_grad_enabled(), "the outer no_grad is restored")
    end
    local inf = torch.inference_mode()(function(x) return x * 2 end)
    T.check(inf(a):is_inference(), "inference_mode as a decorator")
    T.check(not torch.is_inference_mode_enabled(), "and restored")
    local ok, err = pcall(add2, a, "x")
    T.check(not ok and tostring(err):find("tensor or number expected", 1, true), err)
    T.check(torch.is_grad_enabled(), "an error restores the mode")
    ok, err = pcall(function() return torch.no_grad()(42) end)
    T.check(not ok and tostring(err):find("function expected", 1, true), err)
    T.check(torch.is_grad_enabled(), "a bad argument leaves grad mode on")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 1) end
