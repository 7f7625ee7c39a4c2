-- Plain-Lua complex numbers ({re, im} pairs) for the complex and FFT tests: arithmetic, the
-- elementary functions by their textbook formulas, tensors to nested lists of pairs, a matrix
-- product, and a gradient check of complex inputs against central differences of their parts.
local C = {}

function C.add(a, b) return { a[1] + b[1], a[2] + b[2] } end
function C.sub(a, b) return { a[1] - b[1], a[2] - b[2] } end
function C.mul(a, b) return { a[1] * b[1] - a[2] * b[2], a[1] * b[2] + a[2] * b[1] } end
function C.div(a, b)
  local d = b[1] * b[1] + b[2] * b[2]
  return { (a[1] * b[1] + a[2] * b[2]) / d, (a[2] * b[1] - a[1] * b[2]) / d }
end
function C.neg(a) return { -a[1], -a[2] } end
function C.conj(a) return { a[1], -a[2] } end
function C.abs(a) return math.sqrt(a[1] * a[1] + a[2] * a[2]) end
function C.angle(a) return math.atan(a[2], a[1]) end
function C.exp(a) local e = math.exp(a[1]) return { e * math.cos(a[2]), e * math.sin(a[2]) } end
function C.log(a) return { math.log(C.abs(a)), C.angle(a) } end
function C.sqrt(a)
  local r, t = math.sqrt(C.abs(a)), C.angle(a) / 2
  return { r * math.cos(t), r * math.sin(t) }
end
function C.pow(a, b) if a[1] == 0 and a[2] == 0 then return { 0, 0 } end return C.exp(C.mul(b, C.log(a))) end
local one, i1 = { 1, 0 }, { 0, 1 }
function C.reciprocal(a) return C.div(one, a) end
function C.rsqrt(a) return C.reciprocal(C.sqrt(a)) end
function C.sinh(a) return C.mul(C.sub(C.exp(a), C.exp(C.neg(a))), { 0.5, 0 }) end
function C.cosh(a) return C.mul(C.add(C.exp(a), C.exp(C.neg(a))), { 0.5, 0 }) end
function C.tanh(a) return C.div(C.sinh(a), C.cosh(a)) end
function C.sin(a) return C.mul(C.neg(i1), C.sinh(C.mul(i1, a))) end -- sin z = -i sinh(iz)
function C.cos(a) return C.cosh(C.mul(i1, a)) end
function C.tan(a) return C.div(C.sin(a), C.cos(a)) end
function C.sigmoid(a) return C.reciprocal(C.add(one, C.exp(C.neg(a)))) end
function C.sgn(a) local r = C.abs(a) if r == 0 then return { 0, 0 } end return { a[1] / r, a[2] / r } end
function C.asinh(a) return C.log(C.add(a, C.sqrt(C.add(C.mul(a, a), one)))) end
function C.acosh(a) return C.log(C.add(a, C.mul(C.sqrt(C.add(a, one)), C.sqrt(C.sub(a, one))))) end
function C.atanh(a) return C.mul({ 0.5, 0 }, C.sub(C.log(C.add(one, a)), C.log(C.sub(one, a)))) end
function C.asin(a) return C.mul(C.neg(i1), C.asinh(C.mul(i1, a))) end -- asin z = -i asinh(iz)
function C.acos(a) return C.sub({ math.pi / 2, 0 }, C.asin(a)) end
function C.atan(a) return C.mul(C.neg(i1), C.atanh(C.mul(i1, a))) end -- atan z = -i atanh(iz)
function C.log2(a) local l = C.log(a) return { l[1] / math.log(2), l[2] / math.log(2) } end
function C.log10(a) local l = C.log(a) return { l[1] / math.log(10), l[2] / math.log(10) } end
function C.log1p(a) return C.log(C.add(one, a)) end
function C.expm1(a) return C.sub(C.exp(a), one) end
function C.exp2(a) return C.exp(C.mul(a, { math.log(2), 0 })) end

-- nested lists of the tensor's values, complex numbers as {re, im}
function C.of(t)
  local function conv(v)
    if type(v) == "table" then
      local r = {}
      for i, e in ipairs(v) do r[i] = conv(e) end
      return r
    end
    if type(v) == "userdata" then return { v.real, v.imag } end
    return v
  end
  return conv(t:tolist())
end

local function is_pair(v) return type(v) == "table" and #v == 2 and type(v[1]) == "number" end

-- f over every complex leaf (a {re, im} pair) of a nested list
function C.map(v, f)
  if type(v) ~= "table" or is_pair(v) then return f(v) end
  local r = {}
  for i, e in ipairs(v) do r[i] = C.map(e, f) end
  return r
end

function C.matmul(A, B)
  local R = {}
  for i = 1, #A do
    R[i] = {}
    for j = 1, #B[1] do
      local s = { 0, 0 }
      for k = 1, #B do s = C.add(s, C.mul(A[i][k], B[k][j])) end
      R[i][j] = s
    end
  end
  return R
end

-- gradcheck(name, f, inputs, tol): L = sum(Re(conj(w) * f(...))) (w random of f's dtype); each
-- float64 or complex128 input's .grad against dL/dre (+ i dL/dim) by central differences.
function C.gradcheck(T)
  return function(name, f, inputs, tol)
    tol = tol or 1e-6
    local eps = 1e-6
    local leaves = {}
    for i, x in ipairs(inputs) do leaves[i] = x:detach():clone():requires_grad_() end
    local out = f(table.unpack(leaves))
    torch.manual_seed(4242)
    local w = torch.randn(out.shape, { dtype = out.dtype })
    local function loss(o)
      if o:is_complex() then return (o * w:conj()).real:sum() end
      return (o * w):sum()
    end
    local ok, err = pcall(function() loss(out):backward() end)
    if not T.check(ok, name .. ": backward: " .. tostring(err)) then return end
    for i, x in ipairs(inputs) do
      local base = x:detach():clone()
      local parts = x:is_complex() and torch.view_as_real(base):view(-1) or base:view(-1)
      local args = {}
      for k, v in ipairs(inputs) do args[k] = v end
      args[i] = base
      local num = {}
      for k = 0, parts:numel() - 1 do
        local v = parts[k]:item()
        parts[k] = v + eps
        local up
        do local _ <close> = torch.no_grad() up = loss(f(table.unpack(args))):item() end
        parts[k] = v - eps
        local down
        do local _ <close> = torch.no_grad() down = loss(f(table.unpack(args))):item() end
        parts[k] = v
        num[k + 1] = (up - down) / (2 * eps)
      end
      local g = leaves[i].grad
      local ana = g and (g:is_complex() and torch.view_as_real(g):reshape(-1) or g:reshape(-1)):tolist() or {}
      local worst = 0
      for k = 1, #num do
        local e = math.abs(num[k] - (ana[k] or 0)) / math.max(1, math.abs(num[k]))
        if e > worst or e ~= e then worst = e end
      end
      T.check(worst <= tol and g ~= nil and g.dtype == x.dtype,
        string.format("%s: gradient of input %d (worst error %.3g, grad dtype %s)", name, i, worst, g and tostring(g.dtype) or "none"))
    end
  end
end

-- devcheck(name, f, inputs, tol): f on the CPU inputs and on copies of them on the GPU. The
-- values, then the gradients of L = sum(Re(conj(w) * f(...))) (w random, the same on both) with
-- respect to each float or complex input, must agree within tol relative to the CPU's largest
-- modulus (at least 1); NaNs in the same places, infinities equal. The other device is CUDA
-- (NNREPL_DEVCHECK_DEVICE=cpu checks the checks).
function C.devcheck(T)
  local device = os.getenv("NNREPL_DEVCHECK_DEVICE") or "cuda"
  local function as_real(t)
    t = t:detach():cpu()
    if t:is_complex() then t = torch.view_as_real(t:contiguous()) end
    return t:to(torch.float64)
  end
  local function close(a, b, tol, what)
    if not T.check(b ~= nil, what .. ": missing on the GPU") then return end
    if not T.eq({ tostring(b.dtype), b:size():totable() }, { tostring(a.dtype), a:size():totable() }, what .. ": dtype and shape") then return end
    local ra, rb = as_real(a), as_real(b)
    local na, nb = torch.isnan(ra), torch.isnan(rb)
    if not T.check(torch.equal(na, nb), what .. ": NaNs in other places") then return end
    local same = ra:eq(rb):logical_or(na)
    local diff = torch.where(same, torch.zeros_like(ra), ra - rb):abs()
    local fin = torch.where(torch.isfinite(ra), ra, torch.zeros_like(ra)):abs()
    local scale = math.max(1, ra:numel() > 0 and fin:max():item() or 0)
    local err = ra:numel() > 0 and diff:max():item() or 0
    T.check(err <= tol * scale, string.format("%s: GPU against CPU: error %.3g, scale %.3g, tolerance %.3g", what, err, scale, tol))
  end
  return function(name, f, inputs, tol)
    tol = tol or 1e-10
    local function run(dev)
      local leaves = {}
      for i, x in ipairs(inputs) do
        leaves[i] = x:detach():clone():to(dev)
        if x:is_floating_point() or x:is_complex() then leaves[i]:requires_grad_() end
      end
      return f(table.unpack(leaves)), leaves
    end
    local oc, lc = run("cpu")
    local ok, og, lg = pcall(run, device)
    if not T.check(ok, name .. ": on the GPU: " .. tostring(og)) then return end
    T.check(og.device.type == device, name .. ": the result is on the GPU")
    close(oc, og, tol, name)
    if not oc.requires_grad then return end
    torch.manual_seed(4242)
    local w = torch.randn(oc.shape, { dtype = oc.dtype })
    local function loss(o, wt)
      if o:is_complex() then return (o * wt:conj()).real:sum() end
      return (o * wt):sum()
    end
    local okb, err = pcall(function()
      loss(oc, w):backward()
      loss(og, w:to(device)):backward()
    end)
    if not T.check(okb, name .. ": backward: " .. tostring(err)) then return end
    for i = 1, #inputs do
      if lc[i].grad ~= nil or lg[i].grad ~= nil then
        if T.check(lc[i].grad ~= nil and lg[i].grad ~= nil, name .. ": a gradient on one device only") then
          T.check(lg[i].grad.device.type == device, name .. ": the gradient is on the GPU")
          close(lc[i].grad, lg[i].grad, tol, name .. ": gradient of input " .. i)
        end
      end
    end
  end
end

return C
