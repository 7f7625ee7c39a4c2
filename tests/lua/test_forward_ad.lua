-- Forward-mode AD (by double backward): torch.func.jvp / linearize / jacfwd / hessian,
-- torch.autograd.functional.jvp / hvp / vhp / hessian and torch.autograd.forward_ad. References:
-- float64 central differences along the tangent, jacrev (reverse mode), closed forms.
local T = ...
local f64 = { dtype = torch.float64 }
local func, AF, fwAD = torch.func, torch.autograd.functional, torch.autograd.forward_ad
local nnF = torch.nn.functional

-- (f(x + e v) - f(x - e v)) / 2e for f of the list xs, its output a tensor or a list of tensors
local function fd_jvp(f, xs, vs, eps)
  eps = eps or 1e-6
  local up, down = {}, {}
  for i, x in ipairs(xs) do up[i], down[i] = x + eps * vs[i], x - eps * vs[i] end
  local a, b = f(table.unpack(up)), f(table.unpack(down))
  if torch.is_tensor(a) then return (a - b) / (2 * eps) end
  local r = {}
  for k = 1, #a do r[k] = (a[k] - b[k]) / (2 * eps) end
  return r
end

local function flat(t) return t:detach():reshape(-1):tolist() end

-- the ops to check: name, f, primals (float64), tolerance
local function cases(dev)
  local o = { dtype = torch.float64, device = dev }
  torch.manual_seed(3)
  local conv_w = torch.randn(4, 2, 3, 3, o)
  local net = torch.nn.Sequential(torch.nn.Linear(5, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3), torch.nn.Softmax(1)):double():to(dev)
  local params = {}
  for _, e in ipairs(net:named_parameters()) do params[e[1]] = e[2]:detach() end
  local x5 = torch.randn(2, 5, o)
  return {
    { "matmul", function(a, b) return a:matmul(b) end, { torch.randn(3, 4, o), torch.randn(4, 2, o) } },
    { "tanh", function(a) return a:tanh() end, { torch.randn(2, 3, o) } },
    { "softmax", function(a) return torch.softmax(a, 1) end, { torch.randn(3, 5, o) } },
    { "conv2d", function(a, w) return nnF.conv2d(a, w, nil, 1, 1) end, { torch.randn(1, 2, 5, 5, o), conv_w } },
    { "pow", function(a, b) return a:abs():pow(b) + a:pow(3) end, { torch.randn(4, o), torch.randn(4, o) } },
    { "Sequential through functional_call",
      function(w1, b1, w2, b2)
        return func.functional_call(net, { ["0.weight"] = w1, ["0.bias"] = b1, ["2.weight"] = w2, ["2.bias"] = b2 }, { x5 })
      end,
      { params["0.weight"], params["0.bias"], params["2.weight"], params["2.bias"] } },
  }
end

local function check_ops(dev)
  for _, c in ipairs(cases(dev)) do
    local name, f, xs = c[1], c[2], c[3]
    local vs = {}
    for i, x in ipairs(xs) do vs[i] = torch.randn_like(x) end
    local out, jv = func.jvp(f, xs, vs)
    T.near(flat(out), flat(f(table.unpack(xs))), 1e-12, name .. ": jvp's output")
    T.near(flat(jv), flat(fd_jvp(f, xs, vs)), 1e-6, name .. ": jvp against central differences")
    T.check(not jv.requires_grad, name .. ": jvp_out is a plain tensor")
    local _, jv2 = AF.jvp(f, xs, vs)
    T.near(flat(jv2), flat(jv), 1e-12, name .. ": autograd.functional.jvp")
    -- jacfwd against jacrev, every input
    local argnums = {}
    for i = 1, #xs do argnums[i] = i - 1 end
    local Jf = func.jacfwd(f, argnums)(table.unpack(xs))
    local Jr = func.jacrev(f, argnums)(table.unpack(xs))
    for i = 1, #xs do
      T.eq(Jf[i]:size():totable(), Jr[i]:size():totable(), name .. ": jacfwd's shape, input " .. i)
      T.near(flat(Jf[i]), flat(Jr[i]), 1e-10, name .. ": jacfwd = jacrev, input " .. i)
    end
  end
end

T.test("jvp and jacfwd of matmul, tanh, softmax, conv2d, pow and a Sequential against central differences and jacrev", function()
  check_ops("cpu")
end)

T.test("several outputs, output trees, has_aux, argnums", function()
  local x, y = torch.randn(3, f64), torch.randn(3, f64)
  local vx, vy = torch.randn(3, f64), torch.randn(3, f64)
  local function f(a, b) return { a * b, (a + b):sin():sum() } end
  local out, jv = func.jvp(f, { x, y }, { vx, vy })
  local want = fd_jvp(f, { x, y }, { vx, vy })
  T.near(flat(out[1]), flat(x * y), 1e-14, "first output")
  T.near(flat(jv[1]), flat(want[1]), 1e-7, "J v of the first output")
  T.near(jv[2]:item(), want[2]:item(), 1e-7, "J v of the second output")
  -- a dict output and a dict primal
  local function g(p) return { s = p.a:exp() * p.b, t = p.a:sum() } end
  local _, jd = func.jvp(g, { { a = x, b = y } }, { { a = vx, b = vy } })
  T.near(flat(jd.s), flat(x:exp() * vx * y + x:exp() * vy), 1e-12, "dict output from dict primal")
  T.near(jd.t:item(), vx:sum():item(), 1e-12, "sum's J v")
  -- has_aux: (output, aux) as two return values or one {output, aux} table
  local o1, j1, aux = func.jvp(function(a) return a:cos(), a * 10 end, { x }, { vx }, { has_aux = true })
  T.near(flat(j1), flat(-x:sin() * vx), 1e-12, "has_aux: J v")
  T.near(flat(aux), flat(x * 10), 1e-14, "has_aux: aux")
  T.check(not aux.requires_grad and not o1.requires_grad, "aux and output detached")
  local _, _, aux2 = func.jvp(function(a) return { a:cos(), "note" } end, { x }, { vx }, { has_aux = true })
  T.eq(aux2, "note", "aux in a table")
  -- jacfwd: argnums 1, several outputs, has_aux
  local J = func.jacfwd(function(a, b) return a * b end, 1)(x, y)
  T.near(flat(J), flat(torch.diag(x)), 1e-14, "jacfwd argnums=1")
  local Js, a3 = func.jacfwd(function(a) return { a:sin(), a:sum() }, "aux" end, 0, true)(x)
  T.near(flat(Js[1]), flat(torch.diag(x:cos())), 1e-14, "jacfwd of output 1")
  T.near(flat(Js[2]), { 1, 1, 1 }, 1e-14, "jacfwd of output 2 (a scalar)")
  T.eq(a3, "aux", "jacfwd has_aux")
  T.eq(func.jacfwd(function(a) return a:sum() end)(torch.zeros(0, f64)):size():totable(), { 0 }, "jacfwd of an empty input")
end)

T.test("hessian = jacfwd(jacrev(f)) against closed forms and autograd.functional.hessian", function()
  local x = torch.randn(4, f64)
  local H = func.hessian(function(t) return t:sin():sum() end)(x)
  T.near(flat(H), flat(torch.diag(-x:sin())), 1e-12, "Hessian of sum(sin x)")
  local A = torch.randn(4, 4, f64)
  local Hq = func.hessian(function(t) return t:dot(A:mv(t)) end)(x)
  T.near(flat(Hq), flat(A + A:t()), 1e-12, "Hessian of x^T A x")
  local y = torch.randn(4, f64)
  local function f(a, b) return (a * b:exp()):sum() + (a ^ 3):sum() end
  local HH = func.hessian(f, { 0, 1 })(x, y)
  local ref = AF.hessian(f, { x, y })
  for i = 1, 2 do
    for j = 1, 2 do T.near(flat(HH[i][j]), flat(ref[i][j]), 1e-12, string.format("H[%d][%d]", i, j)) end
  end
  -- forward over forward: jvp of a jvp, jacfwd of jacfwd
  local ones = torch.ones(4, f64)
  local _, d2 = func.jvp(function(t) return select(2, func.jvp(torch.sin, { t }, { ones })) end, { x }, { ones })
  T.near(flat(d2), flat(-x:sin()), 1e-12, "second derivative by jvp of jvp")
  local Hff = func.jacfwd(func.jacfwd(function(t) return t:exp():sum() end))(x)
  T.near(flat(Hff), flat(torch.diag(x:exp())), 1e-12, "jacfwd(jacfwd(f))")
  -- autograd.functional.hessian's forward-mode outer strategy gives the same
  local Hf = AF.hessian(function(t) return t:sin():sum() end, x, { outer_jacobian_strategy = "forward-mode" })
  T.near(flat(Hf), flat(H), 1e-14, "outer_jacobian_strategy=forward-mode")
  T.raises(function() AF.hessian(function(t) return t:sum() end, x, { outer_jacobian_strategy = "sideways" }) end,
    'Expected strategy to be either "forward-mode" or "reverse-mode".')
end)

T.test("linearize: one run, J v for any tangent", function()
  local x = torch.randn(3, 2, f64)
  local calls = 0
  local function f(a) calls = calls + 1; return (a:tanh() * 2):matmul(a:t()) end
  local out, jvp_fn = func.linearize(f, x)
  T.eq(calls, 1, "func ran once")
  T.near(flat(out), flat(f(x)), 1e-14, "output")
  for k = 1, 2 do
    local v = torch.randn(3, 2, f64)
    T.near(flat(jvp_fn(v)), flat(fd_jvp(f, { x }, { v })), 1e-7, "jvp_fn call " .. k)
  end
  local _, jf2 = func.linearize(function(a, b) return a * b end, x, x * 2)
  T.near(flat(jf2(torch.ones(3, 2, f64), torch.zeros(3, 2, f64))), flat(x * 2), 1e-14, "two primals")
  T.raises(function() jvp_fn(torch.ones(2, 3, f64)) end,
    "tangent:0 with shape torch.Size([2, 3]) in flattened pytree doesn't match the shape torch.Size([3, 2]) of the corresponding primal.")
  T.raises(function() jvp_fn(torch.ones(3, 2)) end,
    "tangent:0 with dtype torch.float32 in flattened pytree doesn't match the dtype torch.float64 of the corresponding primal.")
  T.raises(function() jvp_fn(x, x) end, "Expected the tangents (*, *) to have the same argspec as the primals (*,)")
end)

T.test("jvp nested in grad: the JVP is differentiable (create_graph)", function()
  local x, v = torch.randn(3, f64), torch.randn(3, f64)
  local function jv_sum(t)
    local _, j = func.jvp(function(a) return a:sin() * a end, { t }, { v })
    return j:sum()
  end
  local g = func.grad(jv_sum)(x)
  -- d/dx sum(v * (cos x * x + sin x)) = v * (2 cos x - x sin x)
  T.near(flat(g), flat(v * (x:cos() * 2 - x * x:sin())), 1e-12, "grad of a jvp")
  -- autograd.functional.jvp with create_graph
  local xr = x:clone():requires_grad_()
  local _, jv = AF.jvp(function(a) return a:exp() end, xr, v, { create_graph = true })
  T.check(jv.requires_grad, "create_graph: J v requires grad")
  local gx = torch.autograd.grad({ jv:sum() }, { xr })[1]
  T.near(flat(gx), flat(x:exp() * v), 1e-12, "d/dx sum(exp(x) v)")
end)

T.test("jvp's errors and strict mode", function()
  local x, v = torch.randn(3, f64), torch.randn(3, f64)
  local id = function(a) return a * 1 end
  local js = "jvp(f, primals, tangents): "
  T.raises(function() func.jvp(id, x, { v }) end, js .. "Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
  T.raises(function() func.jvp(id, { x }, { v, v }) end, js .. "Expected primals and tangents to have the same python structure. " ..
    "For example, if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure (*,) and tangents with structure (*, *)")
  T.raises(function() func.jvp(id, {}, {}) end, js .. "Expected primals to contain at least one Tensor.")
  T.raises(function() func.jvp(id, { 2 }, { v }) end, js .. "Expected primals to only contain Tensors, got int")
  T.raises(function() func.jvp(id, { x }, { 1.5 }) end, js .. "Expected tangents to only contain Tensors, got float")
  T.raises(function() func.jvp(id, { x }, { torch.ones(4, f64) }) end,
    "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. " ..
    "Tensor is of size [3] while the given forward gradient is of size [4].")
  T.raises(function() func.jvp(id, { x }, { torch.ones(3) }) end, "~forward gradient of dtype torch.float32 on a Tensor of dtype torch.float64")
  T.raises(function() func.jvp(id, { torch.ones(3, { dtype = torch.int64 }) }, { v }) end,
    "Expected primal to be floating point or complex, but got: torch.int64")
  T.raises(function() func.jvp(id, { x }, { v }, { has_aux = true }) end,
    js .. "output of function f should be a tuple: (output, aux) if has_aux is True")
  T.raises(function() func.jvp(function() return { 1 } end, { x }, { v }) end,
    js .. "expected f(*args) to return only tensors, got unsupported type int")
  T.raises(function() func.jvp(id, { x }, { v }, { stict = true }) end, "~stict")
  -- an output independent of the inputs: zeros, or an error with strict
  local c = torch.ones(2, f64)
  local _, z = func.jvp(function() return c * 2 end, { x }, { v })
  T.eq(z:tolist(), { 0.0, 0.0 }, "independent output: zero tangent")
  T.raises(function() func.jvp(function() return c * 2 end, { x }, { v }, { strict = true }) end,
    "jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. This is not allowed with strict=True.")
  -- an op whose backward has no derivative: named, with forward-mode AD
  local err = T.errmsg(function()
    func.jvp(function(a)
      local y = a * 1
      y:narrow(0, 0, 2):mul_(y:narrow(0, 1, 2))
      return y
    end, { x }, { v })
  end)
  T.check(err ~= nil and err:find("forward-mode AD", 1, true) and err:find("CopySlices", 1, true) ~= nil,
    "no double backward: " .. tostring(err))
end)

T.test("autograd.functional jvp / hvp / vhp: v checks and strict mode", function()
  local x, v = torch.randn(3, f64), torch.randn(3, f64)
  local function f(t) return t:pow(3):sum() end
  local _, hv = AF.hvp(f, x, v)
  T.near(flat(hv), flat(x * v * 6), 1e-12, "hvp of sum(x^3)")
  local _, vh = AF.vhp(f, x, v)
  T.near(flat(vh), flat(x * v * 6), 1e-12, "vhp of sum(x^3)")
  local s = torch.tensor({ 0.7 }, f64)
  local _, h1 = AF.hvp(f, s)
  T.near(h1:item(), 0.7 * 6, 1e-12, "hvp with v=None for a one-element input")
  local _, j1 = AF.jvp(function(t) return t:exp() end, s)
  T.near(j1:item(), math.exp(0.7), 1e-12, "jvp with v=None")
  T.raises(function() AF.hvp(f, x) end,
    "The vector v can only be None if the input to the user-provided function is a single Tensor with a single element.")
  T.raises(function() AF.jvp(f, { x, x }, { v }) end, "v is a tuple of invalid length: should be 2 but got 1.")
  T.raises(function() AF.jvp(f, x, { v, v }) end, "The given v should contain a single Tensor.")
  T.raises(function() AF.vhp(f, { x, x }, { v, torch.ones(2, f64) }) end,
    "Entry 1 in v has invalid size: should be torch.Size([3]) but got torch.Size([2]).")
  local c = torch.ones(3, f64)
  T.raises(function() AF.jvp(function() return c * 1 end, x, v, { strict = true }) end,
    "Output 0 of the user-provided function does not require gradients. The outputs must be computed in a differentiable manner from the input when running in strict mode.")
  T.raises(function() AF.jvp(function(a, b) return a * 2 end, { x, x }, { v, v }, { strict = true }) end,
    "The output of the user-provided function is independent of input 1. This is not allowed in strict mode.")
  local _, jz = AF.jvp(function(a, b) return a * 2 end, { x, x }, { v, v })
  T.near(flat(jz), flat(v * 2), 1e-14, "non-strict: the unused input adds nothing")
  T.raises(function() AF.vhp(function(t) return (t * 2):sum() end, x, v, { strict = true }) end,
    "~found that the jacobian of the user-provided function with respect to input 0 is independent of the input")
  local _, lin = AF.vhp(function(t) return (t * 2):sum() end, x, v)
  T.eq(lin:tolist(), { 0.0, 0.0, 0.0 }, "vhp of a linear function: zeros")
end)

T.test("forward_ad: make_dual / unpack_dual against central differences", function()
  local x, tx = torch.randn(2, 3, f64), torch.randn(2, 3, f64)
  local w, tw = torch.randn(3, 4, f64), torch.randn(3, 4, f64)
  local function f(a, b) return torch.softmax(a:matmul(b):tanh(), 1) end
  local want = fd_jvp(f, { x, w }, { tx, tw })
  local level_out
  do
    local level <close> = fwAD.dual_level()
    local dx, dw = fwAD.make_dual(x, tx), fwAD.make_dual(w, tw)
    local out = f(dx, dw)
    local u = fwAD.unpack_dual(out)
    T.near(flat(u.primal), flat(f(x, w)), 1e-14, "primal")
    T.near(flat(u.tangent), flat(want), 1e-7, "tangent = J_x t_x + J_w t_w")
    local p, t = table.unpack(u, 1, 2)
    T.check(p == u.primal and t == u.tangent, "unpacks like a namedtuple")
    local ud = fwAD.unpack_dual(dx)
    T.check(ud.tangent == tx, "a dual's tangent is the one given")
    T.near(flat(ud.primal), flat(x), 0, "a dual's primal")
    T.check(fwAD.unpack_dual(torch.ones(2, f64)).tangent == nil, "a plain tensor has no tangent")
    T.check(fwAD.unpack_dual((dx * 0):detach()).tangent == nil, "a detached result has no tangent")
    local only_w = fwAD.unpack_dual(dw:exp())
    T.near(flat(only_w.tangent), flat(w:exp() * tw), 1e-12, "depends on one dual only")
    T.raises(function() fwAD.make_dual(dx, tx) end,
      "Making a dual Tensor based on a Tensor that already has a forward gradient at the same level 0 is not supported.")
    T.raises(function() fwAD.make_dual(x, torch.ones(3, f64)) end,
      "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size [2, 3] while the given forward gradient is of size [3].")
    T.raises(function() fwAD.make_dual(torch.ones(2, { dtype = torch.int64 }), tx) end,
      "Expected primal to be floating point or complex, but got: torch.int64")
    T.raises(function() fwAD.make_dual(x, torch.ones(2, 3, { dtype = torch.int64 })) end,
      "Expected tangent to be floating point or complex, but got: torch.int64")
    T.raises(function() fwAD.enter_dual_level() end, "Nested forward mode AD is not supported at the moment")
    T.raises(function() fwAD.exit_dual_level({ level = 3 }) end,
      "Trying to exit a forward AD level that was not the last one that was created. This is not supported.")
    level_out = out
  end
  T.check(fwAD.unpack_dual(level_out).tangent == nil, "after the level: no tangent")
  T.raises(function() fwAD.make_dual(x, tx) end,
    "Trying to create a dual Tensor for forward AD but no level exists, make sure to enter_dual_level() first.")
  -- the function form and enter / exit by hand
  local t = fwAD.dual_level(function()
    return fwAD.unpack_dual(fwAD.make_dual(x, tx):pow(2)).tangent
  end)
  T.near(flat(t), flat(x * tx * 2), 1e-12, "dual_level(fn)")
  T.eq(fwAD.enter_dual_level(), 0, "enter_dual_level returns the level")
  local dx = fwAD.make_dual(x, tx, { level = 0 })
  T.near(flat(fwAD.unpack_dual(dx:sin(), { level = 0 }).tangent), flat(x:cos() * tx), 1e-12, "explicit level")
  fwAD.exit_dual_level()
  T.raises(function() fwAD.exit_dual_level() end,
    "Trying to exit a forward AD level that was not the last one that was created. This is not supported.")
  local u = fwAD.UnpackedDualTensor(x, nil)
  T.check(u.primal == x and u[1] == x and u.tangent == nil, "UnpackedDualTensor")
  T.check(tostring(u):find("^UnpackedDualTensor%(primal=") ~= nil, "its repr")
  -- a primal that requires grad: backward through the dual still reaches it
  local xr = x:clone():requires_grad_()
  fwAD.dual_level(function()
    local d = fwAD.make_dual(xr, tx)
    local y = (d * d):sum()
    T.near(fwAD.unpack_dual(y).tangent:item(), (x * tx * 2):sum():item(), 1e-12, "tangent of a requires-grad primal")
    y:backward()
  end)
  T.near(flat(xr.grad), flat(x * 2), 1e-14, "backward through make_dual")
end)

if torch.cuda.is_available() then
  T.test("CUDA: jvp, jacfwd, hessian and forward_ad on cuda", function()
    check_ops("cuda")
    local x, v = torch.randn(4, f64):cuda(), torch.randn(4, f64):cuda()
    local H = func.hessian(function(t) return t:sin():sum() end)(x)
    T.check(H.device.type == "cuda", "hessian on cuda")
    T.near(flat(H), flat(torch.diag(-x:sin())), 1e-12, "Hessian on cuda")
    local _, jf = func.linearize(function(t) return t:exp() end, x)
    T.near(flat(jf(v)), flat(x:exp() * v), 1e-12, "linearize on cuda")
    fwAD.dual_level(function()
      local t = fwAD.unpack_dual(fwAD.make_dual(x, v):tanh()).tangent
      T.check(t.device.type == "cuda", "tangent on cuda")
      T.near(flat(t), flat((1 - x:tanh() ^ 2) * v), 1e-12, "forward_ad on cuda")
    end)
    T.raises(function() func.jvp(function(a) return a end, { x }, { v:cpu() }) end, "~same device")
  end)
else
  T.skip("no CUDA device: the CUDA section", 1)
end
