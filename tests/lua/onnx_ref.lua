-- An ONNX reader (tb_reader.lua's protobuf decoding) and a plain-Lua interpreter of the ONNX ops
-- torch.onnx.export writes, for tests/lua/test_onnx.lua: tensors are {shape = {...}, data =
-- {row-major numbers}} and every op is an explicit loop (no nnrepl tensor op).
local R = {}

-- ---- protobuf decoding ----

local function varint(s, i)
  local v, shift = 0, 0
  while true do
    local b = s:byte(i)
    i = i + 1
    v = v | ((b & 0x7F) << shift)
    if b < 0x80 then return v, i end
    shift = shift + 7
  end
end

-- a message as field number -> list of values (integers for varints, strings otherwise)
local here = debug.getinfo(1, "S").source:match("^@(.*/)")
local decode = dofile(here .. "tb_reader.lua")().pb_decode

-- repeated int64: unpacked varints or packed strings of them
local function ints(list)
  local out = {}
  for _, v in ipairs(list or {}) do
    if type(v) == "number" then out[#out + 1] = v
    else
      local i = 1
      while i <= #v do out[#out + 1], i = varint(v, i) end
    end
  end
  return out
end

local function floats(list)
  local out = {}
  for _, v in ipairs(list or {}) do
    for i = 1, #v, 4 do out[#out + 1] = string.unpack("<f", v, i) end
  end
  return out
end

local FMT = { [1] = "<f", [11] = "<d", [7] = "<i8", [6] = "<i4", [9] = "B" }

local function read_model(path)
  local fh = assert(io.open(path, "rb"))
  local s = fh:read("a")
  fh:close()
  local m = decode(s)
  local model = { ir_version = m[1][1], producer = m[2] and m[2][1], opsets = {} }
  for _, o in ipairs(m[8]) do
    local d = decode(o)
    model.opsets[d[1] and d[1][1] or ""] = d[2][1]
  end
  local g = decode(m[7][1])
  local graph = { nodes = {}, inits = {}, init_list = {}, inputs = {}, outputs = {} }
  for _, nb in ipairs(g[1] or {}) do
    local n = decode(nb)
    local node = { inputs = n[1] or {}, outputs = n[2] or {}, op = n[4][1], attrs = {} }
    for _, ab in ipairs(n[5] or {}) do
      local a = decode(ab)
      local ty, v = a[20][1], nil
      if ty == 1 then v = a[2] and string.unpack("<f", a[2][1]) or 0.0
      elseif ty == 2 then v = a[3] and a[3][1] or 0
      elseif ty == 7 then v = ints(a[8])
      elseif ty == 6 then v = floats(a[7])
      elseif ty == 3 then v = a[4] and a[4][1] or "" end
      node.attrs[a[1][1]] = v
    end
    graph.nodes[#graph.nodes + 1] = node
  end
  for _, tb in ipairs(g[5] or {}) do
    local t = decode(tb)
    local dims, ty, raw = ints(t[1]), t[2][1], t[9] and t[9][1] or ""
    local data, fmt = {}, FMT[ty]
    local size = string.packsize(fmt)
    for i = 1, #raw, size do data[#data + 1] = string.unpack(fmt, raw, i) end
    local name = t[8][1]
    graph.inits[name] = { shape = dims, data = data, dtype = ty }
    graph.init_list[#graph.init_list + 1] = name
  end
  local function infos(list)
    local out = {}
    for _, vb in ipairs(list or {}) do
      local v = decode(vb)
      local tt = decode(decode(v[2][1])[1][1])
      local dims = {}
      for _, db in ipairs(tt[2] and decode(tt[2][1])[1] or {}) do
        local d = decode(db)
        dims[#dims + 1] = d[2] and d[2][1] or d[1] and d[1][1] or 0
      end
      out[#out + 1] = { name = v[1][1], elem_type = tt[1][1], dims = dims }
    end
    return out
  end
  graph.inputs, graph.outputs = infos(g[11]), infos(g[12])
  model.graph = graph
  return model
end

-- ---- a plain-Lua interpreter: tensors are {shape = {...}, data = {row-major numbers}} ----

local function numel(shape)
  local n = 1
  for _, s in ipairs(shape) do n = n * s end
  return n
end

local function strides_of(shape)
  local st, acc = {}, 1
  for d = #shape, 1, -1 do st[d] = acc; acc = acc * shape[d] end
  return st
end

-- index (0-based flat) -> list of coordinates
local function coords(i, shape)
  local c = {}
  for d = #shape, 1, -1 do c[d] = i % shape[d]; i = i // shape[d] end
  return c
end

local function map(x, f)
  local out = {}
  for i, v in ipairs(x.data) do out[i] = f(v) end
  return { shape = x.shape, data = out }
end

local function broadcast(a, b, f)
  local nd = math.max(#a.shape, #b.shape)
  local shape, sa, sb = {}, {}, {}
  local as, bs = strides_of(a.shape), strides_of(b.shape)
  for d = 1, nd do
    local da, db = d - (nd - #a.shape), d - (nd - #b.shape)
    local na, nb = da >= 1 and a.shape[da] or 1, db >= 1 and b.shape[db] or 1
    assert(na == nb or na == 1 or nb == 1, "shapes do not broadcast")
    shape[d] = math.max(na, nb)
    sa[d] = (da >= 1 and na > 1) and as[da] or 0
    sb[d] = (db >= 1 and nb > 1) and bs[db] or 0
  end
  local out = {}
  for i = 0, numel(shape) - 1 do
    local c = coords(i, shape)
    local ia, ib = 0, 0
    for d = 1, nd do ia = ia + c[d] * sa[d]; ib = ib + c[d] * sb[d] end
    out[i + 1] = f(a.data[ia + 1], b.data[ib + 1])
  end
  return { shape = shape, data = out }
end

local function erf(x) -- Abramowitz and Stegun 7.1.26 (error below 1.5e-7)
  local s = x < 0 and -1 or 1
  x = math.abs(x)
  local t = 1 / (1 + 0.3275911 * x)
  local y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * math.exp(-x * x)
  return s * y
end

local function matmul2(a, b, m, k, n, ta, tb, ao, bo)
  local out = {}
  for i = 0, m - 1 do
    for j = 0, n - 1 do
      local s = 0
      for l = 0, k - 1 do
        local av = ta and a[ao + l * m + i + 1] or a[ao + i * k + l + 1]
        local bv = tb and b[bo + j * k + l + 1] or b[bo + l * n + j + 1]
        s = s + av * bv
      end
      out[i * n + j + 1] = s
    end
  end
  return out
end

local function pool(x, a, kind)
  local n, c, h, w = table.unpack(x.shape)
  local k, s, p = a.kernel_shape, a.strides or { 1, 1 }, a.pads or { 0, 0, 0, 0 }
  local dl = a.dilations or { 1, 1 }
  local function osize(len, j)
    local span = len + p[j] + p[j + 2] - dl[j] * (k[j] - 1) - 1
    local o = (a.ceil_mode == 1) and -((-span) // s[j]) + 1 or span // s[j] + 1
    if a.ceil_mode == 1 and (o - 1) * s[j] >= len + p[j] then o = o - 1 end
    return o
  end
  local oh, ow = osize(h, 1), osize(w, 2)
  local out = {}
  for b = 0, n - 1 do for ch = 0, c - 1 do for i = 0, oh - 1 do for j = 0, ow - 1 do
    local best, sum, cnt = -math.huge, 0, 0
    for u = 0, k[1] - 1 do for v = 0, k[2] - 1 do
      local y, xx = i * s[1] - p[1] + u * dl[1], j * s[2] - p[2] + v * dl[2]
      if y >= 0 and y < h and xx >= 0 and xx < w then
        local val = x.data[((b * c + ch) * h + y) * w + xx + 1]
        best = math.max(best, val)
        sum, cnt = sum + val, cnt + 1
      elseif y < h + p[3] and xx < w + p[4] and a.count_include_pad == 1 then
        cnt = cnt + 1
      end
    end end
    out[#out + 1] = kind == "max" and best or sum / cnt
  end end end end
  return { shape = { n, c, oh, ow }, data = out }
end

local function reduce(x, axes, keep, f, init, finish)
  local red = {}
  for _, ax in ipairs(axes) do red[ax < 0 and ax + #x.shape + 1 or ax + 1] = true end
  local oshape = {}
  for d = 1, #x.shape do oshape[d] = red[d] and 1 or x.shape[d] end
  local ost = strides_of(oshape)
  local acc, cnt = {}, {}
  for i = 0, numel(x.shape) - 1 do
    local c = coords(i, x.shape)
    local o = 0
    for d = 1, #c do if not red[d] then o = o + c[d] * ost[d] end end
    acc[o + 1] = f(acc[o + 1] or init, x.data[i + 1])
    cnt[o + 1] = (cnt[o + 1] or 0) + 1
  end
  for i = 1, #acc do acc[i] = finish and finish(acc[i], cnt[i]) or acc[i] end
  if not keep then
    local s = {}
    for d = 1, #oshape do if not red[d] then s[#s + 1] = oshape[d] end end
    oshape = s
  end
  return { shape = oshape, data = acc }
end

local function softmax(x, axis, log)
  axis = axis < 0 and axis + #x.shape or axis
  local mx = reduce(x, { axis }, true, math.max, -math.huge)
  local e = broadcast(x, mx, function(v, m) return math.exp(v - m) end)
  local s = reduce(e, { axis }, true, function(a, b) return a + b end, 0)
  if log then
    return broadcast(broadcast(x, mx, function(v, m) return v - m end), s, function(v, z) return v - math.log(z) end)
  end
  return broadcast(e, s, function(v, z) return v / z end)
end

local OPS = {}
local function unary(f) return function(i) return map(i[1], f) end end
OPS.Relu = unary(function(v) return math.max(v, 0) end)
OPS.Sigmoid = unary(function(v) return 1 / (1 + math.exp(-v)) end)
OPS.Tanh = unary(function(v) local e = math.exp(2 * v) return (e - 1) / (e + 1) end)
OPS.Erf = unary(erf)
OPS.Gelu = unary(function(v) return 0.5 * v * (1 + erf(v / math.sqrt(2))) end)
OPS.Exp = unary(math.exp)
OPS.Log = unary(math.log)
OPS.Sqrt = unary(math.sqrt)
OPS.Neg = unary(function(v) return -v end)
OPS.Reciprocal = unary(function(v) return 1 / v end)
OPS.Identity = function(i) return i[1] end
local function binary(f) return function(i) return broadcast(i[1], i[2], f) end end
OPS.Add = binary(function(a, b) return a + b end)
OPS.Sub = binary(function(a, b) return a - b end)
OPS.Mul = binary(function(a, b) return a * b end)
OPS.Div = binary(function(a, b) return a / b end)
OPS.Pow = binary(function(a, b) return a ^ b end)

function OPS.Gemm(i, a)
  local A, B = i[1], i[2]
  local ta, tb = (a.transA or 0) == 1, (a.transB or 0) == 1
  local m, k = A.shape[ta and 2 or 1], A.shape[ta and 1 or 2]
  local n = B.shape[tb and 1 or 2]
  local y = { shape = { m, n }, data = matmul2(A.data, B.data, m, k, n, ta, tb, 0, 0) }
  local alpha, beta = a.alpha or 1, a.beta or 1
  y = map(y, function(v) return alpha * v end)
  if i[3] then y = broadcast(y, i[3], function(v, c) return v + beta * c end) end
  return y
end

-- MatMul of [..., m, k] and [..., k, n] (both at least 2-D), the leading dims broadcast
function OPS.MatMul(i)
  local A, B = i[1], i[2]
  assert(#A.shape >= 2 and #B.shape >= 2, "MatMul: 2-D or more only here")
  local m, k, n = A.shape[#A.shape - 1], A.shape[#A.shape], B.shape[#B.shape]
  local ba, bb = { table.unpack(A.shape, 1, #A.shape - 2) }, { table.unpack(B.shape, 1, #B.shape - 2) }
  local nb = math.max(#ba, #bb)
  local batch = {}
  for d = 1, nb do
    local p, q = ba[d - nb + #ba] or 1, bb[d - nb + #bb] or 1
    assert(p == q or p == 1 or q == 1, "MatMul: batch dims do not broadcast")
    batch[d] = math.max(p, q)
  end
  local out = {}
  for b = 0, numel(batch) - 1 do
    local c = coords(b, batch)
    local ia, ib = 0, 0
    for d = 1, nb do
      local p, q = ba[d - nb + #ba] or 1, bb[d - nb + #bb] or 1
      ia = ia * p + (p > 1 and c[d] or 0)
      ib = ib * q + (q > 1 and c[d] or 0)
    end
    local part = matmul2(A.data, B.data, m, k, n, false, false, ia * m * k, ib * k * n)
    for _, v in ipairs(part) do out[#out + 1] = v end
  end
  local shape = { table.unpack(batch) }
  shape[nb + 1], shape[nb + 2] = m, n
  return { shape = shape, data = out }
end

-- Conv / ConvTranspose: input, weight, bias and the attributes with ONNX's defaults
local function conv_args(i, a)
  return i[1], i[2], i[3], a.strides or { 1, 1 }, a.pads or { 0, 0, 0, 0 }, a.dilations or { 1, 1 }, a.group or 1
end

function OPS.Conv(i, a)
  local x, w, bias, s, p, dl, g = conv_args(i, a)
  local n, c, h, wd = table.unpack(x.shape)
  local o, cg, kh, kw = table.unpack(w.shape)
  assert(a.kernel_shape[1] == kh and a.kernel_shape[2] == kw)
  local oh = (h + p[1] + p[3] - dl[1] * (kh - 1) - 1) // s[1] + 1
  local ow = (wd + p[2] + p[4] - dl[2] * (kw - 1) - 1) // s[2] + 1
  local og = o // g
  local out = {}
  for b = 0, n - 1 do for oc = 0, o - 1 do for y = 0, oh - 1 do for xx = 0, ow - 1 do
    local sum = bias and bias.data[oc + 1] or 0
    local grp = oc // og
    for ic = 0, cg - 1 do for u = 0, kh - 1 do for v = 0, kw - 1 do
      local iy, ix = y * s[1] - p[1] + u * dl[1], xx * s[2] - p[2] + v * dl[2]
      if iy >= 0 and iy < h and ix >= 0 and ix < wd then
        sum = sum + x.data[((b * c + grp * cg + ic) * h + iy) * wd + ix + 1] * w.data[((oc * cg + ic) * kh + u) * kw + v + 1]
      end
    end end end
    out[#out + 1] = sum
  end end end end
  return { shape = { n, o, oh, ow }, data = out }
end

function OPS.MaxPool(i, a) return pool(i[1], a, "max") end
function OPS.AveragePool(i, a) return pool(i[1], a, "avg") end
function OPS.GlobalAveragePool(i)
  local x = i[1]
  return reduce(x, { 2, 3 }, true, function(s, v) return s + v end, 0, function(s, n) return s / n end)
end
function OPS.GlobalMaxPool(i) return reduce(i[1], { 2, 3 }, true, math.max, -math.huge) end

function OPS.BatchNormalization(i, a)
  local x, sc, b, mean, var = table.unpack(i)
  local c, hw = x.shape[2], numel(x.shape) // (x.shape[1] * x.shape[2])
  local out = {}
  for k = 0, numel(x.shape) - 1 do
    local ch = (k // hw) % c + 1
    out[k + 1] = (x.data[k + 1] - mean.data[ch]) / math.sqrt(var.data[ch] + a.epsilon) * sc.data[ch] + b.data[ch]
  end
  return { shape = x.shape, data = out }
end

function OPS.Reshape(i)
  local x, target = i[1], i[2].data
  local shape, known, neg = {}, 1, nil
  for d, v in ipairs(target) do
    if v == 0 then v = x.shape[d] end
    shape[d] = v
    if v == -1 then neg = d else known = known * v end
  end
  if neg then shape[neg] = numel(x.shape) // known end
  assert(numel(shape) == numel(x.shape), "Reshape: sizes differ")
  return { shape = shape, data = x.data }
end

function OPS.Flatten(i, a)
  local x, axis = i[1], a.axis or 1
  local outer = 1
  for d = 1, axis do outer = outer * x.shape[d] end
  return { shape = { outer, numel(x.shape) // outer }, data = x.data }
end

function OPS.Transpose(i, a)
  local x, perm = i[1], a.perm
  local shape, xs = {}, strides_of(x.shape)
  for d = 1, #perm do shape[d] = x.shape[perm[d] + 1] end
  local out = {}
  for k = 0, numel(shape) - 1 do
    local c = coords(k, shape)
    local src = 0
    for d = 1, #perm do src = src + c[d] * xs[perm[d] + 1] end
    out[k + 1] = x.data[src + 1]
  end
  return { shape = shape, data = out }
end

function OPS.Expand(i)
  local zero = { shape = {}, data = {} }
  for d = 1, #i[2].data do zero.shape[d] = i[2].data[d] end
  zero.data = {}
  for k = 1, numel(zero.shape) do zero.data[k] = 0 end
  return broadcast(i[1], zero, function(v) return v end)
end

function OPS.Concat(i, a)
  local axis = a.axis < 0 and a.axis + #i[1].shape or a.axis
  local shape = { table.unpack(i[1].shape) }
  shape[axis + 1] = 0
  for _, x in ipairs(i) do shape[axis + 1] = shape[axis + 1] + x.shape[axis + 1] end
  local out = {}
  for k = 0, numel(shape) - 1 do
    local c = coords(k, shape)
    local at = c[axis + 1]
    for _, x in ipairs(i) do
      if at < x.shape[axis + 1] then
        c[axis + 1] = at
        local xs, src = strides_of(x.shape), 0
        for d = 1, #c do src = src + c[d] * xs[d] end
        out[k + 1] = x.data[src + 1]
        break
      end
      at = at - x.shape[axis + 1]
    end
  end
  return { shape = shape, data = out }
end

function OPS.Slice(i)
  local x, starts, ends, axes = i[1], i[2].data, i[3].data, i[4].data
  local steps = i[5] and i[5].data or {}
  local lo, step, shape = {}, {}, { table.unpack(x.shape) }
  for d = 1, #x.shape do lo[d], step[d] = 0, 1 end
  for k, ax in ipairs(axes) do
    local s = steps[k] or 1
    assert(s > 0, "Slice: positive steps only here")
    lo[ax + 1], step[ax + 1] = starts[k], s
    shape[ax + 1] = (math.min(ends[k], x.shape[ax + 1]) - starts[k] + s - 1) // s
  end
  local xs, out = strides_of(x.shape), {}
  for k = 0, numel(shape) - 1 do
    local c, src = coords(k, shape), 0
    for d = 1, #c do src = src + (lo[d] + c[d] * step[d]) * xs[d] end
    out[k + 1] = x.data[src + 1]
  end
  return { shape = shape, data = out }
end

function OPS.Softmax(i, a) return softmax(i[1], a.axis or -1, false) end
function OPS.LogSoftmax(i, a) return softmax(i[1], a.axis or -1, true) end

function OPS.LayerNormalization(i, a)
  local x, sc, b = i[1], i[2], i[3]
  local e = x.shape[#x.shape]
  local out = {}
  for r = 0, numel(x.shape) // e - 1 do
    local mean, var = 0, 0
    for j = 1, e do mean = mean + x.data[r * e + j] end
    mean = mean / e
    for j = 1, e do var = var + (x.data[r * e + j] - mean) ^ 2 end
    var = var / e
    for j = 1, e do
      out[r * e + j] = (x.data[r * e + j] - mean) / math.sqrt(var + a.epsilon) * sc.data[j] + (b and b.data[j] or 0)
    end
  end
  return { shape = x.shape, data = out }
end

function OPS.Clip(i)
  local lo, hi = i[2] and i[2].data[1] or -math.huge, i[3] and i[3].data[1] or math.huge
  return map(i[1], function(v) return math.min(math.max(v, lo), hi) end)
end

local function reduce_axes(i, a) return a.axes or (i[2] and i[2].data) or {} end
function OPS.ReduceMean(i, a)
  return reduce(i[1], reduce_axes(i, a), (a.keepdims or 1) == 1, function(s, v) return s + v end, 0,
    function(s, n) return s / n end)
end
function OPS.ReduceSum(i, a)
  return reduce(i[1], reduce_axes(i, a), (a.keepdims or 1) == 1, function(s, v) return s + v end, 0)
end

-- ---- ops added with tests/lua/test_onnx_models.lua ----

local function bool(v) return v and 1 or 0 end -- booleans are held as 1 / 0
OPS.Greater = binary(function(a, b) return bool(a > b) end)
OPS.Less = binary(function(a, b) return bool(a < b) end)
OPS.GreaterOrEqual = binary(function(a, b) return bool(a >= b) end)
OPS.LessOrEqual = binary(function(a, b) return bool(a <= b) end)
OPS.Equal = binary(function(a, b) return bool(a == b) end)
OPS.And = binary(function(a, b) return bool(a ~= 0 and b ~= 0) end)
OPS.Or = binary(function(a, b) return bool(a ~= 0 or b ~= 0) end)
OPS.Max = binary(math.max)
OPS.Min = binary(math.min)
OPS.Not = unary(function(v) return bool(v == 0) end)
OPS.Floor = unary(math.floor)
OPS.Mod = function(i, a) -- integers; fmod = 0: the sign of the divisor (Lua's %), 1: of the dividend
  return broadcast(i[1], i[2], function(u, v) return a.fmod == 1 and math.fmod(u, v) or u % v end)
end
OPS.Sin = unary(math.sin)
OPS.Cos = unary(math.cos)
OPS.Abs = unary(math.abs)

-- Cast: to an integer type truncates toward zero, to bool tests for nonzero; floats stay as they are
local INT_TYPES = { [2] = true, [3] = true, [5] = true, [6] = true, [7] = true }
function OPS.Cast(i, a)
  if a.to == 9 then return map(i[1], function(v) return bool(v ~= 0) end) end
  if INT_TYPES[a.to] then return map(i[1], function(v) return v < 0 and math.ceil(v) or math.floor(v) end) end
  return i[1]
end

function OPS.Where(i)
  local c, x, y = i[1], i[2], i[3]
  local pick = broadcast(broadcast(c, x, function(cv, xv) return { cv, xv } end), y, function(p, yv)
    return p[1] ~= 0 and p[2] or yv
  end)
  return pick
end

function OPS.ReduceMax(i, a) return reduce(i[1], reduce_axes(i, a), (a.keepdims or 1) == 1, math.max, -math.huge) end
function OPS.ReduceL1(i, a)
  return reduce(i[1], reduce_axes(i, a), (a.keepdims or 1) == 1, function(s, v) return s + math.abs(v) end, 0)
end
function OPS.ReduceL2(i, a)
  return reduce(i[1], reduce_axes(i, a), (a.keepdims or 1) == 1, function(s, v) return s + v * v end, 0,
    function(s) return math.sqrt(s) end)
end
function OPS.ReduceMin(i, a) return reduce(i[1], reduce_axes(i, a), (a.keepdims or 1) == 1, math.min, math.huge) end

-- the slices along axis: for each, the list of flat positions of its elements in order
local function lanes(shape, axis)
  local st = strides_of(shape)
  local out = {}
  for k = 0, numel(shape) - 1 do
    local c = coords(k, shape)
    if c[axis + 1] == 0 then
      local lane = {}
      for j = 0, shape[axis + 1] - 1 do lane[j + 1] = k + j * st[axis + 1] + 1 end
      out[#out + 1] = lane
    end
  end
  return out
end

-- ArgMax / ArgMin: the first position of the extreme value
local function arg_extreme(better)
  return function(i, a)
    local x = i[1]
    local axis = (a.axis or 0) < 0 and a.axis + #x.shape or (a.axis or 0)
    local shape = { table.unpack(x.shape) }
    shape[axis + 1] = 1
    local out = {}
    local ost = strides_of(shape)
    for _, lane in ipairs(lanes(x.shape, axis)) do
      local best = 1
      for j = 2, #lane do if better(x.data[lane[j]], x.data[lane[best]]) then best = j end end
      local c = coords(lane[1] - 1, x.shape)
      local o = 0
      for d = 1, #c do o = o + c[d] * ost[d] end
      out[o + 1] = best - 1
    end
    if a.keepdims == 0 then table.remove(shape, axis + 1) end
    return { shape = shape, data = out }
  end
end
OPS.ArgMax = arg_extreme(function(u, v) return u > v end)
OPS.ArgMin = arg_extreme(function(u, v) return u < v end)

-- TopK: values and indices of the k largest (smallest) along axis, sorted, ties by position
function OPS.TopK(i, a)
  local x, k = i[1], i[2].data[1]
  local axis = (a.axis or -1) < 0 and (a.axis or -1) + #x.shape or a.axis
  local shape = { table.unpack(x.shape) }
  shape[axis + 1] = k
  local vals, idx = { shape = shape, data = {} }, { shape = shape, data = {} }
  local ost = strides_of(shape)
  for _, lane in ipairs(lanes(x.shape, axis)) do
    local order = {}
    for j = 1, #lane do order[j] = j end
    table.sort(order, function(p, q)
      local u, v = x.data[lane[p]], x.data[lane[q]]
      if u ~= v then if a.largest == 0 then return u < v end return u > v end
      return p < q
    end)
    local c = coords(lane[1] - 1, x.shape)
    local o = 0
    for d = 1, #c do o = o + c[d] * ost[d] end
    for j = 1, k do
      vals.data[o + (j - 1) * ost[axis + 1] + 1] = x.data[lane[order[j]]]
      idx.data[o + (j - 1) * ost[axis + 1] + 1] = order[j] - 1
    end
  end
  return vals, idx
end

-- CumSum (not exclusive, not reversed): running sums along each lane of the axis
function OPS.CumSum(i)
  local x, axis = i[1], i[2].data[1]
  if axis < 0 then axis = axis + #x.shape end
  local out = {}
  for _, lane in ipairs(lanes(x.shape, axis)) do
    local acc = 0
    for _, at in ipairs(lane) do acc = acc + x.data[at]; out[at] = acc end
  end
  return { shape = x.shape, data = out }
end

-- Pad, constant mode: pads = begins of every dim, then ends; the value (default 0) around x
function OPS.Pad(i, a)
  assert((a.mode or "constant") == "constant", "Pad: constant mode only here")
  local x, pads, fillv = i[1], i[2].data, i[3] and i[3].data[1] or 0
  local nd = #x.shape
  local shape = {}
  for d = 1, nd do shape[d] = x.shape[d] + pads[d] + pads[nd + d] end
  local xs, out = strides_of(x.shape), {}
  for k = 0, numel(shape) - 1 do
    local c, src, ok = coords(k, shape), 0, true
    for d = 1, nd do
      local j = c[d] - pads[d]
      if j < 0 or j >= x.shape[d] then ok = false end
      src = src + j * xs[d]
    end
    out[k + 1] = ok and x.data[src + 1] or fillv
  end
  return { shape = shape, data = out }
end

function OPS.Gather(i, a)
  local x, ind = i[1], i[2]
  local axis = (a.axis or 0) < 0 and a.axis + #x.shape or (a.axis or 0)
  local shape = {}
  for d = 1, axis do shape[#shape + 1] = x.shape[d] end
  for _, s in ipairs(ind.shape) do shape[#shape + 1] = s end
  for d = axis + 2, #x.shape do shape[#shape + 1] = x.shape[d] end
  local xs, out = strides_of(x.shape), {}
  for k = 0, numel(shape) - 1 do
    local c = coords(k, shape)
    local ic = {}
    for d = 1, #ind.shape do ic[d] = c[axis + d] end
    local is, at = strides_of(ind.shape), 0
    for d = 1, #ic do at = at + ic[d] * is[d] end
    local j = ind.data[at + 1]
    if j < 0 then j = j + x.shape[axis + 1] end
    local src = j * xs[axis + 1]
    for d = 1, axis do src = src + c[d] * xs[d] end
    for d = axis + 2, #x.shape do src = src + c[d + #ind.shape - 1] * xs[d] end
    out[k + 1] = x.data[src + 1]
  end
  return { shape = shape, data = out }
end

-- ConvTranspose: each input value spreads over the output through the kernel
function OPS.ConvTranspose(i, a)
  local x, w, bias, s, p, dl, g = conv_args(i, a)
  local n, c, h, wd = table.unpack(x.shape)
  local _, og, kh, kw = table.unpack(w.shape)
  local op = a.output_padding or { 0, 0 }
  local oh = (h - 1) * s[1] - p[1] - p[3] + dl[1] * (kh - 1) + op[1] + 1
  local ow = (wd - 1) * s[2] - p[2] - p[4] + dl[2] * (kw - 1) + op[2] + 1
  local o, cg = og * g, c // g
  local out = {}
  for k = 1, n * o * oh * ow do out[k] = 0 end
  for b = 0, n - 1 do for ic = 0, c - 1 do for y = 0, h - 1 do for xx = 0, wd - 1 do
    local v = x.data[((b * c + ic) * h + y) * wd + xx + 1]
    local grp = ic // cg
    for oc = 0, og - 1 do for u = 0, kh - 1 do for q = 0, kw - 1 do
      local ty, tx = y * s[1] - p[1] + u * dl[1], xx * s[2] - p[2] + q * dl[2]
      if ty >= 0 and ty < oh and tx >= 0 and tx < ow then
        local at = ((b * o + grp * og + oc) * oh + ty) * ow + tx + 1
        out[at] = out[at] + v * w.data[((ic * og + oc) * kh + u) * kw + q + 1]
      end
    end end end
  end end end end
  if bias then
    for k = 0, #out - 1 do out[k + 1] = out[k + 1] + bias.data[(k // (oh * ow)) % o + 1] end
  end
  return { shape = { n, o, oh, ow }, data = out }
end

-- Resize, one dim at a time: output coordinate -> input coordinate by the transformation mode,
-- then the nearest input (by nearest_mode) or a blend of the two around it
local function resize_dim(x, d, outsz, scale, a)
  local insz = x.shape[d]
  local mode = a.coordinate_transformation_mode or "half_pixel"
  local function source(j)
    if mode == "align_corners" then return outsz == 1 and 0 or j * (insz - 1) / (outsz - 1) end
    if mode == "asymmetric" then return j / scale end
    if mode == "pytorch_half_pixel" and outsz == 1 then return 0 end
    return (j + 0.5) / scale - 0.5
  end
  local shape = { table.unpack(x.shape) }
  shape[d] = outsz
  local xs, out = strides_of(x.shape), {}
  for k = 0, numel(shape) - 1 do
    local c = coords(k, shape)
    local base = 0
    for e = 1, #c do if e ~= d then base = base + c[e] * xs[e] end end
    local src = source(c[d])
    local function at(j) return x.data[base + math.max(0, math.min(j, insz - 1)) * xs[d] + 1] end
    if (a.mode or "nearest") == "nearest" then
      local nm = a.nearest_mode or "round_prefer_floor"
      local j = nm == "floor" and math.floor(src) or nm == "ceil" and math.ceil(src)
        or nm == "round_prefer_ceil" and math.floor(src + 0.5) or math.ceil(src - 0.5)
      out[k + 1] = at(j)
    else
      src = math.max(0, math.min(src, insz - 1))
      local j0 = math.floor(src)
      local lam = src - j0
      out[k + 1] = at(j0) * (1 - lam) + at(j0 + 1) * lam
    end
  end
  return { shape = shape, data = out }
end

function OPS.Resize(i, a)
  local x, scales, sizes = i[1], i[3], i[4]
  for d = 1, #x.shape do
    local outsz, scale
    if scales and #scales.data > 0 then
      scale = scales.data[d]
      outsz = math.floor(x.shape[d] * scale)
    else
      outsz = sizes.data[d]
      scale = outsz / x.shape[d]
    end
    if outsz ~= x.shape[d] or scale ~= 1 then x = resize_dim(x, d, outsz, scale, a) end
  end
  return x
end

local function run_model(model, feeds)
  local env = {}
  for name, t in pairs(model.graph.inits) do env[name] = t end
  for name, t in pairs(feeds) do env[name] = t end
  for _, n in ipairs(model.graph.nodes) do
    local f = OPS[n.op] or error("the test's interpreter has no " .. n.op)
    local ins = {}
    for k, name in ipairs(n.inputs) do ins[k] = name ~= "" and (env[name] or error("no value " .. name)) or nil end
    local res = table.pack(f(ins, n.attrs))
    for k, name in ipairs(n.outputs) do env[name] = res[k] end
  end
  local outs = {}
  for k, o in ipairs(model.graph.outputs) do outs[k] = env[o.name] end
  return outs
end

local function from_tensor(t)
  local shape = {}
  for d = 1, t:dim() do shape[d] = t:size(d - 1) end
  return { shape = shape, data = t:detach():to(torch.float64):reshape(-1):tolist() }
end

R.read_model, R.run_model, R.from_tensor = read_model, run_model, from_tensor
return R
