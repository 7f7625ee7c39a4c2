-- Custom autograd Functions with a jvp staticmethod under torch.autograd.forward_ad, and
-- gradcheck's check_forward_ad / check_backward_ad, against closed forms and the finite
-- differences gradcheck takes.
local T = ...
local torch = require "torch"
local fwAD = torch.autograd.forward_ad

local Exp = torch.autograd.Function:extend("ExpJvp")
function Exp.forward(ctx, x) local r = torch.exp(x); ctx.result = r; return r end
function Exp.jvp(ctx, t) local g = t * ctx.result; ctx.result = nil; return g end

-- two inputs (one a number), two outputs, with backward too
local MulAdd = torch.autograd.Function:extend("MulAddJvp")
function MulAdd.forward(ctx, x, y, k) ctx:save_for_backward(x, y); ctx.k = k; return x * y, x + k * y end
function MulAdd.backward(ctx, g1, g2)
  local x, y = table.unpack(ctx.saved_tensors)
  return g1 * y + g2, g1 * x + ctx.k * g2, nil
end
function MulAdd.jvp(ctx, tx, ty, tk)
  local x, y = table.unpack(ctx.saved_tensors)
  return tx * y + x * ty, tx + ctx.k * ty
end

local function checks(device)
  local tag = " (" .. device .. ")"
  local opts = { dtype = torch.float64, device = device }
  T.test("jvp through a Function" .. tag, function()
    torch.manual_seed(0)
    local p, t = torch.randn(4, 3, opts), torch.randn(4, 3, opts)
    local tangent
    do
      local _ <close> = fwAD.dual_level()
      local out = Exp.apply(fwAD.make_dual(p, t))
      tangent = fwAD.unpack_dual(out).tangent
      T.check(torch.allclose(fwAD.unpack_dual(out).primal, p:exp()), "primal is exp(x)")
      -- further ops after the Function: d/dx sin(exp(x)) = cos(exp(x)) exp(x)
      local s = fwAD.unpack_dual(out:sin()).tangent
      T.check(torch.allclose(s, p:exp():cos() * p:exp() * t), "chain through later ops")
      -- ops before the Function: d/dx exp(2x) = 2 exp(2x)
      local c = fwAD.unpack_dual(Exp.apply(fwAD.make_dual(p:clone(), t) * 2)).tangent
      T.check(torch.allclose(c, 2 * (2 * p):exp() * t), "chain through earlier ops")
    end
    T.check(torch.allclose(tangent, t * p:exp()), "tangent is t exp(x)")
    -- no level: plain apply (no tangent anywhere)
    T.check(torch.allclose(Exp.apply(p), p:exp()), "outside a level")
  end)
  T.test("two inputs, two outputs" .. tag, function()
    local x, y = torch.randn(5, opts), torch.randn(5, opts)
    local tx, ty = torch.randn(5, opts), torch.randn(5, opts)
    local _ <close> = fwAD.dual_level()
    local a, b = MulAdd.apply(fwAD.make_dual(x, tx), fwAD.make_dual(y, ty), 3)
    T.check(torch.allclose(fwAD.unpack_dual(a).tangent, tx * y + x * ty), "product rule")
    T.check(torch.allclose(fwAD.unpack_dual(b).tangent, tx + 3 * ty), "linear part")
    -- only y carries a tangent: x's is zero
    local a2 = MulAdd.apply(x, fwAD.make_dual(y:clone(), ty), 3)
    T.check(torch.allclose(fwAD.unpack_dual(a2).tangent, x * ty), "zero tangent for x")
  end)
  T.test("gradcheck check_forward_ad" .. tag, function()
    local p = torch.randn(3, 2, { dtype = torch.float64, device = device, requires_grad = true })
    T.check(torch.autograd.gradcheck(Exp.apply, { p }, { check_forward_ad = true, check_backward_ad = false,
      check_undefined_grad = false, check_batched_grad = false }), "Exp: forward only")
    local y = torch.randn(3, 2, { dtype = torch.float64, device = device, requires_grad = true })
    T.check(torch.autograd.gradcheck(function(a, b) return MulAdd.apply(a, b, 0.5) end, { p, y }, { check_forward_ad = true }),
      "MulAdd: both modes, both outputs")
    -- forward mode through ordinary ops too
    T.check(torch.autograd.gradcheck(function(a) return (a * a):sin() end, { p }, { check_forward_ad = true }), "plain ops")
  end)
end

T.test("wrong jvps are caught", function()
  local p = torch.randn(3, { dtype = torch.float64, requires_grad = true })
  local Bad = torch.autograd.Function:extend("BadJvp")
  function Bad.forward(ctx, x) return x:exp() end
  function Bad.jvp(ctx, t) return t end
  T.raises(function() torch.autograd.gradcheck(Bad.apply, { p }, { check_forward_ad = true, check_backward_ad = false }) end,
    "~Jacobian computed with forward mode mismatch for output 0 with respect to input 0,")
  T.check(torch.autograd.gradcheck(Bad.apply, { p }, { check_forward_ad = true, check_backward_ad = false,
    raise_exception = false }) == false, "raise_exception = false gives false")
  local Two = torch.autograd.Function:extend("TwoJvp")
  function Two.forward(ctx, x) return x:exp() end
  function Two.jvp(ctx, t) return t, t end
  local Shape = torch.autograd.Function:extend("ShapeJvp")
  function Shape.forward(ctx, x) return x:exp() end
  function Shape.jvp(ctx, t) return t:sum() end
  local _ <close> = fwAD.dual_level()
  local d = fwAD.make_dual(torch.randn(3, { dtype = torch.float64 }), torch.ones(3, { dtype = torch.float64 }))
  T.raises(function() Two.apply(d) end, "TwoJvp.jvp returned 2 tangents, but forward returned 1 outputs: jvp must return one per output")
  T.raises(function() Shape.apply(d) end, "ShapeJvp.jvp: the tangent of output 0 has shape torch.Size([]), but the output has shape torch.Size([3])")
  local NoJvp = torch.autograd.Function:extend("NoJvp")
  function NoJvp.forward(ctx, x) return x * 3 end
  function NoJvp.backward(ctx, g) return g * 3 end
  -- without jvp, forward AD goes through backward as before
  T.check(torch.allclose(fwAD.unpack_dual(NoJvp.apply(d)).tangent, torch.full({ 3 }, 3.0, { dtype = torch.float64 })), "no jvp: through backward")
end)

checks("cpu")
if torch.cuda.is_available() then checks("cuda") else T.skip("no CUDA", 3) end
