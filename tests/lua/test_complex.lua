-- Complex tensors (complex64, complex128) against plain-Lua complex arithmetic: dtypes and promotion,
-- the Lua complex number, creation, views, elementwise ops, reductions, matrix products, errors,
-- printing, files, and gradients (conjugate Wirtinger: dL/dre + i dL/dim) against float64 central
-- differences of the real and imaginary parts.
local T = ...
local C = dofile(debug.getinfo(1, "S").source:match("^@(.*/)") .. "complex_ref.lua")
local c64, c128, f64 = { dtype = torch.complex64 }, { dtype = torch.complex128 }, { dtype = torch.float64 }
local cn = torch.complex_number
local function same(got, want, msg) return T.near(got, want, 0, msg) end -- floats and integers alike

-- ---- dtypes and promotion ----

T.test("dtypes", function()
  T.eq({ tostring(torch.complex64), tostring(torch.cfloat), tostring(torch.cdouble) },
    { "torch.complex64", "torch.complex64", "torch.complex128" }, "names")
  T.eq({ torch.complex64.itemsize, torch.complex128.itemsize }, { 8, 16 }, "itemsize")
  T.eq({ torch.complex64.is_complex, torch.complex64.is_floating_point, torch.float32.is_complex }, { true, false, false })
  local z = torch.zeros(2, c64)
  T.eq({ z:is_complex(), torch.is_complex(z), z:is_floating_point(), torch.zeros(2):is_complex() }, { true, true, false, false })
  T.eq({ z:element_size(), z:type(), z:cdouble().dtype == torch.complex128 }, { 8, "torch.ComplexFloatTensor", true })
  local P = torch.promote_types
  T.eq({ tostring(P(torch.float32, torch.complex64)), tostring(P(torch.float64, torch.complex64)),
    tostring(P(torch.int64, torch.complex64)), tostring(P(torch.complex128, torch.float16)) },
    { "torch.complex64", "torch.complex128", "torch.complex64", "torch.complex128" }, "promote_types")
  local f32t, f64t, it = torch.ones(2), torch.ones(2, f64), torch.ones(2, { dtype = torch.int64 })
  T.eq({ tostring((f32t + torch.j).dtype), tostring((f64t + torch.j).dtype), tostring((it * torch.j).dtype),
    tostring((f32t + torch.tensor(1, c128)).dtype), tostring((f64t + torch.tensor(1, c64)).dtype),
    tostring((f32t + torch.ones(2, c128)).dtype) },
    { "torch.complex64", "torch.complex128", "torch.complex64", "torch.complex64", "torch.complex128", "torch.complex128" },
    "result types")
  torch.set_default_dtype(torch.float64)
  local d = torch.tensor({ cn(1, 2) }).dtype
  torch.set_default_dtype(torch.float32)
  T.eq(tostring(d), "torch.complex128", "default complex follows the default float")
end)

-- ---- the Lua complex number ----

T.test("complex numbers", function()
  local a, b = cn(1, 2), cn(3, -4)
  T.eq({ tostring(a), tostring(b), tostring(torch.j), tostring(-torch.j), tostring(cn(1.5, 0)), tostring(cn(0, -2.25)) },
    { "(1+2j)", "(3-4j)", "1j", "(-0-1j)", "(1.5+0j)", "-2.25j" }, "repr")
  T.eq({ tostring(a + b), tostring(a - b), tostring(a * b), tostring(a / b), tostring(-a), tostring(2 * a), tostring(a + 1) },
    { "(4-2j)", "(-2+6j)", "(11+2j)", "(-0.2+0.4j)", "(-1-2j)", "(2+4j)", "(2+2j)" }, "arithmetic")
  T.eq({ a == cn(1, 2), a == b, a ~= b, a.real, a.imag, tostring(a:conjugate()), b:abs() },
    { true, false, true, 1.0, 2.0, "(1-2j)", 5.0 }, "fields")
  T.near({ (a ^ 2).real, (a ^ 2).imag }, { -3, 4 }, 1e-12, "power")
  local t = torch.tensor({ 1.0, 2.0 })
  T.eq({ tostring((a * t)[1]:item()), tostring((t * a)[1]:item()), tostring((a + t).dtype) },
    { "(2+4j)", "(2+4j)", "torch.complex64" }, "with tensors")
  T.eq(tostring(torch.tensor({ { cn(1, 1), 2 } }):tolist()[1][2]), "(2+0j)", "tolist")
  T.eq(tostring(torch.tensor(cn(0.5, -1)):item()), "(0.5-1j)", "item")
end)

-- ---- creation ----

T.test("creation", function()
  local re, im = torch.tensor({ 1.0, -2.0, 0.5 }), torch.tensor({ 3.0, 0.0, -1.5 })
  local z = torch.complex(re, im)
  T.eq(tostring(z.dtype), "torch.complex64")
  same(C.of(z), { { 1, 3 }, { -2, 0 }, { 0.5, -1.5 } }, "complex")
  T.eq(tostring(torch.complex(re:double(), im:double()).dtype), "torch.complex128")
  same(C.of(torch.complex(torch.tensor({ { 1.0 }, { 2.0 } }), torch.tensor({ 5.0, 6.0 }))),
    { { { 1, 5 }, { 1, 6 } }, { { 2, 5 }, { 2, 6 } } }, "complex broadcasts")
  local p = torch.polar(torch.tensor({ 2.0, 1.0 }, f64), torch.tensor({ math.pi / 2, math.pi }, f64))
  T.near(C.of(p), { { 0, 2 }, { -1, 0 } }, 1e-12, "polar")
  same(C.of(torch.zeros(2, c128)), { { 0, 0 }, { 0, 0 } }, "zeros")
  same(C.of(torch.ones(1, 2, c64)), { { { 1, 0 }, { 1, 0 } } }, "ones")
  same(C.of(torch.full({ 2 }, cn(1, -2))), { { 1, -2 }, { 1, -2 } }, "full of a complex number")
  T.eq(tostring(torch.full({ 2 }, cn(1, -2)).dtype), "torch.complex64")
  same(C.of(torch.full({ 1 }, 3, c128)), { { 3, 0 } }, "full of a real number")
  same(C.of(torch.full_like(z, cn(0, 1))), { { 0, 1 }, { 0, 1 }, { 0, 1 } }, "full_like")
  T.eq({ torch.empty(2, 3, c64):size(1), tostring(torch.zeros_like(z).dtype) }, { 3, "torch.complex64" })
  same(C.of(torch.tensor({ cn(1, 2), 3, 4.5 }, c128)), { { 1, 2 }, { 3, 0 }, { 4.5, 0 } }, "tensor")
  same(C.of(torch.tensor({ torch.tensor(cn(1, 1)), 2 })), { { 1, 1 }, { 2, 0 } }, "tensor of 0-dim complex tensors")
  torch.manual_seed(0)
  local r = torch.randn(20000, c128)
  T.near({ r.real:mean():item(), r.imag:mean():item() }, { 0, 0 }, 0.03, "randn mean")
  T.near({ r.real:var():item(), r.imag:var():item(), r:abs():pow(2):mean():item() }, { 0.5, 0.5, 1 }, 0.05, "randn: N(0, 1/2) each part")
  local u = torch.rand(1000, c64)
  T.eq({ u.real:min():item() >= 0, u.imag:max():item() < 1, tostring(u.dtype) }, { true, true, "torch.complex64" }, "rand")
end)

-- ---- views ----

T.test("views", function()
  local z = torch.tensor({ cn(1, 2), cn(3, 4) }, c128)
  local r = torch.view_as_real(z)
  T.eq({ r:size():totable(), r:stride(), tostring(r.dtype) }, { { 2, 2 }, { 2, 1 }, "torch.float64" })
  r[1][0] = 30
  same(C.of(z), { { 1, 2 }, { 30, 4 } }, "writing through view_as_real")
  local w = torch.view_as_complex(r)
  w[0] = cn(-1, -1)
  same(C.of(z), { { -1, -1 }, { 30, 4 } }, "view_as_complex shares storage")
  z.real:mul_(2)
  same(C.of(z), { { -2, -1 }, { 60, 4 } }, "x.real is a view")
  z.imag = torch.tensor({ 7.0, 8.0 }, f64)
  same(C.of(z), { { -2, 7 }, { 60, 8 } }, "x.imag = v")
  T.eq({ z.real:stride(), z.imag:storage_offset() }, { { 2 }, 1 })
  local x = torch.randn(3)
  T.eq(rawequal(x.real, x) or x.real:data_ptr() == x:data_ptr(), true, "real of a real tensor is itself")
  T.raises(function() return x.imag end, "~imag is not implemented for tensors with non-complex dtypes.")
  T.raises(function() torch.view_as_real(x) end, "~view_as_real is only supported for complex tensors")
  T.raises(function() torch.view_as_complex(torch.randn(3)) end, "~Tensor must have a last dimension of size 2")
  T.raises(function() torch.view_as_complex(torch.randn(2, 2):t()) end, "~Tensor must have a last dimension with stride 1")
  T.raises(function() torch.view_as_complex(torch.ones(2, 2, { dtype = torch.int64 })) end,
    "~view_as_complex is only supported for float and double tensors")
  -- dtype-size generic paths
  local m = torch.complex(torch.arange(12.0):view(3, 4), -torch.arange(12.0):view(3, 4))
  same(C.of(m:t():contiguous()[1]), C.of(m[":, 1"]), "t, contiguous, slicing")
  same(C.of(m:select(1, 2)), { { 2, -2 }, { 6, -6 }, { 10, -10 } }, "select")
  same(C.of(m:reshape(2, 6)[1]), C.of(m:view(-1)["6:"]), "reshape")
  same(C.of(torch.cat({ m[0], m[2] })), { { 0, 0 }, { 1, -1 }, { 2, -2 }, { 3, -3 }, { 8, -8 }, { 9, -9 }, { 10, -10 }, { 11, -11 } }, "cat")
  T.eq(torch.stack({ m[0], m[1] }):size():totable(), { 2, 4 }, "stack")
  same(C.of(m[torch.tensor({ 2, 0 })][":, 0"]), { { 8, -8 }, { 0, 0 } }, "index by a tensor")
  local c = m:clone()
  c[1] = cn(5, 5)
  same({ C.of(c[1][0]), C.of(m[1][0]) }, { { 5, 5 }, { 4, -4 } }, "clone and assignment")
  local d = torch.zeros(3, 4, c64)
  d:copy_(m)
  same(C.of(d), C.of(m), "copy_ complex64 -> complex64")
  d:copy_(torch.ones(4))
  same(C.of(d[2][3]), { 1, 0 }, "copy_ of a real tensor")
  same(C.of(m:flip(0)[0]), C.of(m[2]), "flip")
end)

-- ---- elementwise ops against plain Lua ----

local function case(shape, dt, seed)
  torch.manual_seed(seed)
  if #shape == 1 then return torch.randn(shape[1] * 2, dt)["::2"] end -- non-contiguous
  return torch.randn(shape[2], shape[1], dt):t()
end

T.test("unary ops", function()
  for _, dt in ipairs({ c64, c128 }) do
    local tol = dt == c64 and 2e-5 or 1e-12
    local x = case({ 3, 4 }, dt, 1) * 1.5
    local X = C.of(x)
    local ops = { "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid", "reciprocal",
      "conj", "sgn", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2", "log10", "log1p", "expm1", "exp2" }
    for _, op in ipairs(ops) do
      T.near(C.of(x[op](x)), C.map(X, C[op]), tol, tostring(dt.dtype) .. " " .. op)
    end
    T.near(C.of(x:abs()), C.map(X, C.abs), tol, "abs")
    T.eq(tostring(x:abs().dtype), dt == c64 and "torch.float32" or "torch.float64", "abs is real")
    T.near(C.of(x:angle()), C.map(X, C.angle), tol, "angle")
    T.near(C.of(x ^ 2), C.map(X, function(z) return C.mul(z, z) end), tol, "pow 2")
    T.near(C.of(x ^ 0.5), C.map(X, C.sqrt), tol * 10, "pow 0.5")
    T.near(C.of(x:pow(cn(0.5, 1))), C.map(X, function(z) return C.pow(z, { 0.5, 1 }) end), tol * 10, "pow complex exponent")
    same(C.of(x:conj_physical()), C.of(x:conj()), "conj_physical")
    T.eq({ x:is_conj(), x:resolve_conj():data_ptr() == x:data_ptr() }, { false, true }, "conj bit")
    local y = x:clone()
    y:exp_()
    T.near(C.of(y), C.map(X, C.exp), tol, "exp_")
  end
  T.near(C.of(torch.angle(torch.tensor({ -2.0, 0.0, 3.0, 0 / 0 }))), { math.pi, 0, 0, 0 / 0 }, 1e-6, "angle of reals")
  T.near(C.of(torch.sgn(torch.tensor({ -2.0, 0.0, 3.0 }))), { -1, 0, 1 }, 0, "sgn of reals")
  T.near(C.of(torch.tensor({ cn(0, 0) }):sgn()), { { 0, 0 } }, 0, "sgn(0)")
  T.near(C.of(torch.tensor({ cn(0, 0), cn(0, 1) }):pow(0)), { { 1, 0 }, { 1, 0 } }, 0, "x^0")
end)

T.test("binary ops", function()
  for _, dt in ipairs({ c64, c128 }) do
    local tol = dt == c64 and 2e-5 or 1e-12
    local a, b = case({ 3, 4 }, dt, 2), case({ 4 }, dt, 3) -- b broadcasts
    local A, B = C.of(a), C.of(b)
    local function ref(f)
      local r = {}
      for i = 1, #A do
        r[i] = {}
        for j = 1, #A[i] do r[i][j] = f(A[i][j], B[j]) end
      end
      return r
    end
    T.near(C.of(a + b), ref(C.add), tol, "add")
    T.near(C.of(a - b), ref(C.sub), tol, "sub")
    T.near(C.of(a * b), ref(C.mul), tol, "mul")
    T.near(C.of(a / b), ref(C.div), tol, "div")
    T.near(C.of(a:pow(b)), ref(C.pow), tol * 100, "pow")
    T.near(C.of(torch.add(a, b, { alpha = 2 })), ref(function(p, q) return C.add(p, C.mul(q, { 2, 0 })) end), tol, "add alpha")
    T.near(C.of(a * 2.5), C.map(A, function(z) return C.mul(z, { 2.5, 0 }) end), tol, "times a number")
    T.near(C.of(a * cn(1, -1)), C.map(A, function(z) return C.mul(z, { 1, -1 }) end), tol, "times a complex number")
    T.near(C.of(a + a.real), C.map(A, function(z) return { 2 * z[1], z[2] } end), tol, "plus a real tensor")
    local c = a:clone()
    c:mul_(b)
    T.near(C.of(c), ref(C.mul), tol, "mul_")
    same(C.of(a:eq(a:clone())), C.map(A, function() return true end), "eq")
    same(C.of(torch.tensor({ cn(1, 2), cn(1, 2) }):eq(torch.tensor({ cn(1, 2), cn(1, 3) }))), { true, false }, "eq compares both parts")
    same(C.of(torch.tensor({ cn(1, 2), cn(1, 2) }):ne(torch.tensor({ cn(1, 2), cn(2, 2) }))), { false, true }, "ne")
  end
  local x = torch.tensor({ cn(1, 0), cn(0 / 0, 1), cn(1 / 0, 0), cn(0, -1 / 0) })
  T.eq({ C.of(torch.isnan(x)), C.of(torch.isinf(x)), C.of(torch.isfinite(x)) },
    { { false, true, false, false }, { false, false, true, true }, { true, false, false, false } }, "isnan, isinf, isfinite")
  same(C.of(torch.isreal(torch.tensor({ cn(1, 0), cn(1, 1) }))), { true, false }, "isreal")
  same(C.of(torch.where(torch.tensor({ true, false }), torch.tensor({ cn(1, 1), cn(2, 2) }), torch.tensor({ 5.0, 6.0 }))),
    { { 1, 1 }, { 6, 0 } }, "where")
end)

-- ---- conversions ----

T.test("conversions", function()
  local z = torch.tensor({ cn(1.5, 2), cn(-3, -4) })
  T.near(C.of(z:to(torch.float64)), { 1.5, -3 }, 0, "complex -> real keeps the real part")
  same(C.of(z:long()), { 1, -3 }, "complex -> long")
  same(C.of(torch.tensor({ cn(0, 1), cn(0, 0) }):bool()), { true, false }, "complex -> bool: nonzero")
  T.near(C.of(torch.tensor({ 1, 2 }):to(torch.complex64)), { { 1, 0 }, { 2, 0 } }, 0, "long -> complex")
  T.near(C.of(z:to(torch.complex128)), { { 1.5, 2 }, { -3, -4 } }, 0, "complex64 -> complex128")
  T.near(C.of(z:double():to(torch.complex64)), { { 1.5, 0 }, { -3, 0 } }, 0, "double -> complex64")
end)

-- ---- reductions and products ----

T.test("reductions", function()
  for _, dt in ipairs({ c64, c128 }) do
    local tol = dt == c64 and 1e-5 or 1e-12
    local x = case({ 3, 4 }, dt, 4)
    local X = C.of(x)
    local function fold(f, init, dim)
      local r = {}
      if dim == 0 then
        for j = 1, #X[1] do
          local acc = init
          for i = 1, #X do acc = f(acc, X[i][j]) end
          r[j] = acc
        end
      else
        for i = 1, #X do
          local acc = init
          for j = 1, #X[i] do acc = f(acc, X[i][j]) end
          r[i] = acc
        end
      end
      return r
    end
    T.near(C.of(x:sum(0)), fold(C.add, { 0, 0 }, 0), tol, "sum(0)")
    T.near(C.of(x:sum(1)), fold(C.add, { 0, 0 }, 1), tol, "sum(1)")
    T.near(C.of(x:prod(1)), fold(C.mul, { 1, 0 }, 1), tol, "prod(1)")
    T.near(C.of(x:mean(0)), C.map(fold(C.add, { 0, 0 }, 0), function(z) return { z[1] / 3, z[2] / 3 } end), tol, "mean(0)")
    local all = C.add(C.add(fold(C.add, { 0, 0 }, 1)[1], fold(C.add, { 0, 0 }, 1)[2]), fold(C.add, { 0, 0 }, 1)[3])
    T.near(C.of(x:sum()), all, tol, "sum()")
    T.eq(x:sum(1, true):size():totable(), { 3, 1 }, "keepdim")
    T.near(x:norm():item(), math.sqrt(x:abs():pow(2):sum():item()), tol, "norm")
    T.near(x:var():item(), x.real:var():item() + x.imag:var():item(), tol, "var")
  end
  T.near(C.of(torch.zeros(0, c64):sum()), { 0, 0 }, 0, "empty sum")
  T.near(C.of(torch.zeros(0, c64):prod()), { 1, 0 }, 0, "empty prod")
  T.eq({ torch.tensor({ cn(0, 1), cn(1, 0) }):all():item(), torch.tensor({ cn(0, 0) }):any():item() }, { true, false }, "all, any")
end)

T.test("matrix products", function()
  for _, dt in ipairs({ c64, c128 }) do
    local tol = dt == c64 and 1e-5 or 1e-12
    torch.manual_seed(5)
    local a, b = torch.randn(4, 3, dt):t(), torch.randn(4, 2, dt) -- a: [3,4] transposed
    T.near(C.of(a:mm(b)), C.matmul(C.of(a), C.of(b)), tol, "mm")
    T.near(C.of(a:matmul(b)), C.matmul(C.of(a), C.of(b)), tol, "matmul")
    local A, B = torch.randn(2, 3, 4, dt), torch.randn(2, 4, 5, dt)
    local r = torch.bmm(A, B)
    for k = 0, 1 do T.near(C.of(r[k]), C.matmul(C.of(A[k]), C.of(B[k])), tol, "bmm") end
    local v = torch.randn(4, dt)
    local av = C.matmul(C.of(a), C.map(C.of(v), function(z) return { z } end))
    for i = 1, #av do av[i] = av[i][1] end
    T.near(C.of(a:matmul(v)), av, tol, "mv")
    T.near(C.of(a:matmul(torch.ones(4, 2, { dtype = dt.dtype == torch.complex64 and torch.float32 or torch.float64 }):to(dt.dtype))),
      C.matmul(C.of(a), { { { 1, 0 }, { 1, 0 } }, { { 1, 0 }, { 1, 0 } }, { { 1, 0 }, { 1, 0 } }, { { 1, 0 }, { 1, 0 } } }), tol)
  end
end)

-- ---- errors ----

T.test("errors", function()
  local z = torch.tensor({ cn(1, 2) })
  T.raises(function() return z:lt(z) end, "~\"lt\" not implemented for 'ComplexFloat'")
  T.raises(function() return z:maximum(z) end, "~maximum not implemented for complex tensors.")
  T.raises(function() return z:clamp(0, 1) end, "~clamp is not supported for complex types")
  T.raises(function() return z:sign() end, "~torch.sign is not intended to support complex numbers. Please use torch.sgn instead.")
  T.raises(function() return z:relu() end, "~relu is not supported for complex types")
  T.raises(function() return z:floor() end, "~\"floor\" not implemented for 'ComplexFloat'")
  T.raises(function() return z:amax() end, "~\"amax\" not implemented for 'ComplexFloat'")
  T.raises(function() return z:argmax() end, "~not implemented for 'ComplexFloat'")
  T.raises(function() return z:erf() end, "~\"erf\" not implemented for 'ComplexFloat'")
  T.raises(function() return torch.complex(torch.ones(1), torch.ones(1, f64)) end,
    "~Expected object of scalar type Float but got scalar type Double for second argument")
  T.raises(function() return torch.complex(torch.ones(1, { dtype = torch.int64 }), torch.ones(1, { dtype = torch.int64 })) end,
    "~Expected both inputs to be Half, Float or Double tensors but got Long and Long")
  local f = torch.ones(2)
  T.raises(function() f:add_(z) end, "~result type ComplexFloat can't be cast to the desired output type Float")
  local x = torch.randn(2, c128):requires_grad_()
  T.raises(function() (x * 2):sum():backward() end, "~grad can be implicitly created only for real scalar outputs")
  T.raises(function() torch.ones(2, { dtype = torch.int64 }):requires_grad_() end,
    "~only Tensors of floating point and complex dtype can require gradients")
end)

-- ---- printing ----

T.test("printing", function()
  T.eq(tostring(torch.tensor({ cn(1, 2), cn(3, -4) })), "tensor([1.+2.j, 3.-4.j])")
  T.eq(tostring(torch.tensor({ cn(1.5, 2), cn(-3, -4.25) }, c128)), "tensor([ 1.5000+2.0000j, -3.0000-4.2500j], dtype=torch.complex128)")
  T.eq(tostring(torch.tensor(cn(0, 1))), "tensor(0.+1.j)")
  T.eq(tostring(torch.zeros(2, 2, c64)), "tensor([[0.+0.j, 0.+0.j],\n        [0.+0.j, 0.+0.j]])")
  T.eq(tostring(torch.zeros(0, c64)), "tensor([], dtype=torch.complex64)")
  T.eq(tostring(torch.tensor({ cn(1e-5, 1), cn(1, 0) })), "tensor([1.0000e-05+1.j, 1.0000e+00+0.j])")
  torch.set_default_dtype(torch.float64)
  local s = tostring(torch.tensor({ cn(1, 1) }))
  torch.set_default_dtype(torch.float32)
  T.eq(s, "tensor([1.+1.j])", "complex128 is the default complex dtype under float64")
  local x = torch.ones(2, c64):requires_grad_()
  T.eq(tostring(x * 2), "tensor([2.+0.j, 2.+0.j], grad_fn=<MulBackward0>)")
end)

-- ---- files ----

T.test("save and load", function()
  local dir = os.getenv("TMPDIR") or "/tmp"
  local path = dir .. "/nnrepl_test_complex.safetensors"
  local z = torch.randn(3, 2, c64)
  torch.save({ z = z }, path)
  local back = torch.load(path)
  same(C.of(back.z), C.of(z), "complex64 round trip")
  T.eq(tostring(back.z.dtype), "torch.complex64")
  T.raises(function() torch.save({ z = z:cdouble() }, path) end, "~complex128, which safetensors files cannot hold")
  os.remove(path)
end)

-- ---- gradients ----

T.test("gradients", function()
  local cg = C.gradcheck(T)
  torch.manual_seed(7)
  local x, y = torch.randn(3, c128), torch.randn(3, c128)
  local r = torch.randn(3, f64)
  local unary = { "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid", "reciprocal",
    "conj", "sgn", "abs", "angle", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2", "log10", "log1p", "expm1", "exp2" }
  for _, op in ipairs(unary) do cg(op, function(a) return a[op](a) end, { x }) end
  cg("pow 3", function(a) return a ^ 3 end, { x })
  cg("pow 0.5", function(a) return a ^ 0.5 end, { x })
  cg("add", function(a, b) return a + b * cn(0.5, 2) end, { x, y })
  cg("sub", function(a, b) return a - b end, { x, y })
  cg("mul", function(a, b) return a * b end, { x, y })
  cg("div", function(a, b) return a / b end, { x, y })
  cg("pow", function(a, b) return a:pow(b) end, { x, y })
  cg("real * complex", function(a, b) return a * b end, { r, y })
  cg("complex / real", function(a, b) return a / b end, { x, r })
  cg("sum", function(a) return a:view(3, 1):expand(3, 2):sum(0) end, { x })
  cg("mean", function(a) return a:mean() end, { x })
  cg("prod", function(a) return a:prod() end, { x })
  cg("norm", function(a) return a:norm() end, { x })
  cg("var", function(a) return a:var() end, { x })
  local A, B = torch.randn(2, 3, c128), torch.randn(3, 2, c128)
  cg("matmul", function(a, b) return a:matmul(b) end, { A, B })
  cg("bmm", function(a, b) return torch.bmm(a:unsqueeze(0), b:unsqueeze(0)) end, { A, B })
  T.raises(function() return A.real:matmul(B) end, "~expected m1 and m2 to have the same dtype")
  cg("view_as_real", function(a) return torch.view_as_real(a) end, { x })
  cg("view_as_complex", function(a) return torch.view_as_complex(a) end, { torch.randn(3, 2, f64) })
  cg("real, imag", function(a) return a.real * a.imag end, { x })
  cg("complex", function(a, b) return torch.complex(a, b) end, { r, torch.randn(3, f64) })
  cg("polar", function(a, b) return torch.polar(a, b) end, { r:abs() + 0.5, torch.randn(3, f64) })
  cg("where, index, cat", function(a, b) return torch.cat({ a[torch.tensor({ 2, 0 })], b["1:"] }) end, { x, y })
  cg("clone, contiguous", function(a) return a:clone():view(3, 1):t():contiguous() * 2 end, { x })
  cg("to real", function(a) return a:to(torch.float64) * 3 end, { x })
  -- |x|^2 summed: the gradient is 2x
  local l = x:clone():requires_grad_()
  ;(l * l:conj()).real:sum():backward()
  T.near(C.of(l.grad), C.of(l:detach() * 2), 1e-12, "d|x|^2 = 2x")
  -- a complex output with an explicit grad
  local v = x:clone():requires_grad_()
  local out = v * cn(0, 1)
  out:backward(torch.ones(3, c128))
  T.near(C.of(v.grad), C.map(C.of(torch.ones(3, c128)), function() return { 0, -1 } end), 1e-12, "backward(grad) of i*x")
end)

-- ---- on a GPU: complex tensors move and print there, and every op above runs there with the
-- CPU's results and gradients (C.devcheck) ----

T.test("complex tensors on a GPU", function()
  if not torch.cuda.is_available() then return T.skip("no GPU") end
  local z = torch.complex(torch.tensor({ 1.5, -2.0 }), torch.tensor({ 0.25, 3.0 }))
  local g = z:cuda()
  T.eq({ tostring(g.dtype), g.device.type }, { "torch.complex64", "cuda" }, "moved")
  T.check(torch.equal(g:cpu(), z), "back bit for bit")
  T.check(torch.equal(z:to(torch.complex128):cuda():cpu(), z:to(torch.complex128)), "complex128 too")
  T.check(tostring(g):find("1.5000+0.2500j", 1, true) ~= nil and tostring(g):find("device='cuda:0'", 1, true) ~= nil, "printed")
  local s = g + g
  T.eq({ s.device.type, C.of(s:cpu()) }, { "cuda", { { 3.0, 0.5 }, { -4.0, 6.0 } } }, "g + g on the GPU")
  T.eq(C.of(torch.zeros(2, { dtype = torch.complex64, device = "cuda" }):cpu()), { { 0.0, 0.0 }, { 0.0, 0.0 } }, "zeros on the GPU")
  T.eq(C.of(torch.full({ 2 }, cn(1, -2), { device = "cuda" }):cpu()), { { 1.0, -2.0 }, { 1.0, -2.0 } }, "full on the GPU")
  torch.manual_seed(3)
  local r = torch.randn(4000, { dtype = torch.complex128, device = "cuda" })
  T.near({ r.real:var():item(), r.imag:var():item() }, { 0.5, 0.5 }, 0.08, "randn on the GPU")
  -- the ops with no complex form are refused as on the CPU
  T.raises(function() return g:lt(g) end, "~\"lt\" not implemented for 'ComplexFloat'")
  T.raises(function() return g:floor() end, "~\"floor\" not implemented for 'ComplexFloat'")
  T.raises(function() return g:amax() end, "~\"amax\" not implemented for 'ComplexFloat'")
  T.raises(function() return g:clamp(0, 1) end, "~clamp is not supported for complex types")
end)

T.test("complex ops on a GPU against the CPU", function()
  if not torch.cuda.is_available() then return T.skip("no GPU") end
  local dc = C.devcheck(T)
  local unary = { "neg", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid", "reciprocal",
    "conj", "conj_physical", "sgn", "abs", "angle", "asin", "acos", "atan", "asinh", "acosh", "atanh", "log2", "log10", "log1p",
    "expm1", "exp2" }
  for _, dt in ipairs({ c64, c128 }) do
    local tol = dt == c64 and 1e-4 or 1e-10
    local name = tostring(dt.dtype) .. " "
    local x, y = case({ 3, 4 }, dt, 1) * 1.5, case({ 3, 4 }, dt, 2) -- transposed views
    local b, v = case({ 4 }, dt, 3), case({ 3 }, dt, 4)            -- strided, broadcast
    local real = torch.randn(4, { dtype = dt == c64 and torch.float32 or torch.float64 })
    for _, op in ipairs(unary) do dc(name .. op, function(a) return a[op](a) end, { x }, tol) end
    for _, e in ipairs({ 0, 1, 2, 3, 0.5, -1, -2.5 }) do dc(name .. "pow " .. e, function(a) return a ^ e end, { x }, tol) end
    dc(name .. "pow complex exponent", function(a) return a:pow(cn(0.5, 1)) end, { x }, tol)
    dc(name .. "add", function(p, q) return p + q end, { x, b }, tol)
    dc(name .. "add alpha", function(p, q) return torch.add(p, q, { alpha = 2 }) end, { x, y }, tol)
    dc(name .. "sub", function(p, q) return p - q end, { x, y }, tol)
    dc(name .. "mul", function(p, q) return p * q end, { x, b }, tol)
    dc(name .. "div", function(p, q) return p / q end, { y, x }, tol)
    dc(name .. "pow", function(p, q) return p:pow(q) end, { x, b }, tol * 10)
    dc(name .. "times a number", function(p) return p * 2.5 - 1 end, { x }, tol)
    dc(name .. "times a complex number", function(p) return p * cn(1, -1) + cn(0, 2) end, { x }, tol)
    dc(name .. "number over", function(p) return cn(1, 1) / p end, { x }, tol)
    dc(name .. "with a real tensor", function(p, q) return p * q + q end, { x, real }, tol)
    dc(name .. "with the other complex dtype", function(p, q) return p * q end, { x, y:to(dt == c64 and torch.complex128 or torch.complex64) }, tol)
    dc(name .. "in place", function(p, q) local c = p:clone() c:mul_(q) c:add_(q) c:div_(2) return c end, { x, b }, tol)
    dc(name .. "eq", function(p) return p:eq(p:clone()) end, { x }, 0)
    dc(name .. "ne", function(p, q) return p:ne(q) end, { x, y }, 0)
    dc(name .. "isnan, isinf, isfinite", function(p)
      local q = p:clone()
      q[0] = cn(0 / 0, 1)
      q[1] = cn(1, 1 / 0)
      return torch.stack({ torch.isnan(q), torch.isinf(q), torch.isfinite(q) })
    end, { x }, 0)
    dc(name .. "where", function(p, q) return torch.where(p.real:gt(0), p, q) end, { x, real }, tol)
    dc(name .. "where of numbers", function(p) return torch.where(p.imag:gt(0), cn(1, 2), p) end, { x }, tol)
    for _, to in ipairs({ torch.float32, torch.float64, torch.float16, torch.int64, torch.uint8, torch.bool, torch.complex64, torch.complex128 }) do
      dc(name .. "to " .. tostring(to), function(p) return p:to(to) end, { x }, tol)
      dc(name .. "from " .. tostring(to), function(p) return p:to(to):to(dt.dtype) end, { (x * 3):to(torch.complex128) }, tol)
    end
    dc(name .. "view_as_real", function(p) return torch.view_as_real(p:contiguous()) * 2 end, { x }, tol)
    dc(name .. "real, imag", function(p) return p.real * p.imag end, { x }, tol)
    dc(name .. "complex, polar", function(p, q) return torch.complex(p, q) * torch.polar(q:abs(), p) end, { real, real * 2 }, tol)
    dc(name .. "cat, flip, index", function(p, q)
      return torch.cat({ p:flip(0), q[torch.tensor({ 2, 0 }):to(p.device)], p:t():contiguous():view(3, 4) }, 0)
    end, { x, y }, tol)
    dc(name .. "roll, narrow, clone", function(p) return torch.roll(p, 1, 1):narrow(1, 1, 2):clone() end, { x }, tol)
    dc(name .. "sum(0)", function(p) return p:sum(0) end, { x }, tol)
    dc(name .. "sum(1, keepdim)", function(p) return p:sum(1, true) end, { x }, tol)
    dc(name .. "sum()", function(p) return p:sum() end, { x }, tol)
    dc(name .. "mean", function(p) return p:mean(0) end, { x }, tol)
    dc(name .. "prod", function(p) return p:prod(1) end, { x }, tol)
    dc(name .. "all, any", function(p) return torch.stack({ p:all(), p:any(), (p * 0):any(), p:all(1):all() }) end, { x }, 0)
    dc(name .. "norm", function(p) return p:norm() end, { x }, tol)
    dc(name .. "var", function(p) return p:var() end, { x }, tol)
    dc(name .. "large sum", function(p) return p:sum() end, { torch.randn(300000, dt) }, tol * 10)
    local A, B = torch.randn(4, 3, dt):t(), torch.randn(4, 5, dt)
    dc(name .. "mm", function(p, q) return p:mm(q) end, { A, B }, tol)
    dc(name .. "matmul broadcast", function(p, q) return torch.matmul(p, q:expand(2, 4, 5)) end, { A, B }, tol)
    dc(name .. "bmm", function(p, q) return torch.bmm(p, q) end, { torch.randn(2, 3, 4, dt), torch.randn(2, 5, 4, dt):transpose(1, 2) }, tol)
    dc(name .. "mv", function(p, q) return p:matmul(q) end, { A, b }, tol)
    dc(name .. "addmm", function(c, p, q) return torch.addmm(c, p, q, { beta = 0.5, alpha = 2 }) end, { torch.randn(3, 5, dt), A, B }, tol)
    dc(name .. "empty product", function(p, q) return p:mm(q) end, { torch.randn(3, 0, dt), torch.randn(0, 2, dt) }, tol)
  end
end)
