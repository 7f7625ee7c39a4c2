-- torch.onnx.export: runs the model once (eval mode, no_grad) under the engine's op tracer
-- (torch._tracer, engine/tracer.c), turns the recorded ops into ONNX nodes and writes the
-- ModelProto by hand (tb_protobuf's field writers). Views, which run no op, are found by
-- comparing the operands' storage, offset, shape and strides with the values written before;
-- parameters and buffers become initializers named as model:named_parameters() names them.
-- Ops: linear (Gemm; MatMul for other products), conv2d, max / avg / adaptive pools (where the
-- sizes divide), batch_norm (eval), layer_norm, softmax / log_softmax, reductions, elementwise
-- math, clamp, where, index_select, torch.cat (copies into one box: Concat); gelu runs as its erf
-- formula (one Gelu node from opset 20); more ops in torch_onnx_ops.lua, which also exports
-- sort / topk and F.interpolate as single nodes (onnx._symbolic). Another op is an error naming it;
-- so is a view that is no reshape / strided slice / permutation / broadcast of its buffer. Nodes no
-- output needs are dropped; constant subgraphs are folded (torch_onnx_fold.lua). Nested lists of
-- arguments and results are flattened into the graph's inputs and outputs.
local torch = require "torch"
local U = require "nn_util"
local P = require "tb_protobuf"
local C = torch._tracer

local onnx = {}
torch.onnx = onnx

local function enum(prefix, names)
  local e = {}
  for _, n in ipairs(names) do
    e[n] = setmetatable({ name = n }, { __tostring = function() return prefix .. "." .. n end, __name = prefix })
  end
  return e
end
onnx.TrainingMode = enum("TrainingMode", { "EVAL", "PRESERVE", "TRAINING" })
onnx.OperatorExportTypes = enum("OperatorExportTypes", { "ONNX", "ONNX_ATEN", "ONNX_ATEN_FALLBACK", "ONNX_FALLTHROUGH" })

local exporting = false
function onnx.is_in_onnx_export() return exporting end

local ELEM = { ["torch.float32"] = 1, ["torch.uint8"] = 2, ["torch.int8"] = 3, ["torch.int16"] = 5, ["torch.int32"] = 6,
  ["torch.int64"] = 7, ["torch.bool"] = 9, ["torch.float16"] = 10, ["torch.float64"] = 11, ["torch.bfloat16"] = 16 }

local function fail(fmt, ...) U.error("torch.onnx.export: " .. string.format(fmt, ...)) end

local function elem_type(dtype)
  return ELEM[tostring(dtype)] or fail("tensors of dtype %s cannot be exported", tostring(dtype))
end

-- ---- identities: where a tensor's values lie ----

local function ident(t)
  local shape, n = {}, 1
  for d = 1, t:dim() do shape[d] = t:size(d - 1); n = n * shape[d] end
  local strides = t:stride()
  local lo, hi = t:storage_offset(), t:storage_offset()
  for d = 1, #shape do hi = hi + (shape[d] - 1) * strides[d] end
  return { t = t, st = C.storage(t), shape = shape, strides = strides, offset = lo, numel = n, hi = hi }
end

local function contig_strides(shape)
  local s, acc = {}, 1
  for d = #shape, 1, -1 do s[d] = acc; acc = acc * shape[d] end
  return s
end

local function same_list(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end

local function is_contig(id)
  local cs = contig_strides(id.shape)
  for d = 1, #id.shape do
    if id.shape[d] ~= 1 and id.strides[d] ~= cs[d] then return false end
  end
  return true
end

local function same_ident(a, b)
  return a.offset == b.offset and same_list(a.shape, b.shape) and (a.numel <= 1 or same_list(a.strides, b.strides))
end

-- ---- the graph being built ----

local G = {}
G.__index = G

local function new_graph(opset)
  return setmetatable({ opset = opset, nodes = {}, inits = {}, init_names = {}, params = {}, writes = {},
    unreadable = {}, count = 0, producer = {}, graph_inputs = {}, views = {} }, G)
end

function G:fresh(op)
  self.count = self.count + 1
  return string.format("/%s_%d_output_0", op, self.count)
end

-- a node; attrs: a list of {name, kind ("i" | "f" | "ints" | "floats" | "s"), value}; returns its outputs' names
function G:node(op, inputs, attrs, nout)
  local outs = {}
  for k = 1, nout or 1 do outs[k] = self:fresh(op) end
  local n = { op = op, inputs = inputs, outputs = outs, attrs = attrs or {} }
  self.nodes[#self.nodes + 1] = n
  for k, o in ipairs(outs) do self.producer[o] = { n, k } end
  return table.unpack(outs)
end

-- an initializer holding t's values (name: a fresh one unless given)
function G:initializer(t, name)
  self.count = self.count + 1
  name = name or string.format("onnx::Constant_%d", self.count)
  t = t:detach():cpu():contiguous()
  local shape = {}
  for d = 1, t:dim() do shape[d] = t:size(d - 1) end
  self.inits[#self.inits + 1] = { name = name, shape = shape, dtype = t.dtype, bytes = C.bytes(t), t = t,
    value = t:numel() == 1 and t:is_floating_point() and t:item() or nil }
  self.init_names[name] = true
  return name
end

function G:ints(list) return self:initializer(torch.tensor(list, { dtype = torch.int64 })) end

-- a scalar constant of the given dtype
function G:scalar(v, dtype) return self:initializer(torch.tensor(v, { dtype = dtype })) end

-- the value of parameter or buffer p (an initializer, or a graph input without export_params)
function G:param_value(rec)
  if not rec.value then
    if self.export_params then
      rec.value = self:initializer(rec.p, rec.name)
    else
      rec.value = rec.name
      self.graph_inputs[#self.graph_inputs + 1] = { name = rec.name, t = rec.p }
    end
  end
  return rec.value
end

-- Reshape x to shape, copying x's leading sizes that stay (0 in ONNX), so that a dynamic batch
-- dimension survives
function G:reshape(x, from, to)
  if same_list(from, to) then return x end
  local target = {}
  for d = 1, #to do target[d] = to[d] end
  for d = 1, math.min(#from, #to) do
    if from[d] ~= to[d] then break end
    target[d] = 0
  end
  return self:node("Reshape", { x, self:ints(target) })
end

-- The value of identity r, given the value `name` of identity b (contiguous) on the same
-- storage, or nil where the strides do not divide each other: b's buffer reshaped so that each dim r steps through is one dim (the strides must
-- divide each other), sliced to r's window, permuted to r's order, reshaped to r's shape with
-- its size-1 dims and broadcast over its stride-0 dims.
function G:view_by_reshape(name, b, r)
  if not is_contig(b) then return nil end
  local dims, expanded, shape0 = {}, false, {}
  for d = 1, #r.shape do
    shape0[d] = r.shape[d]
    if r.strides[d] == 0 and r.shape[d] > 1 then expanded, shape0[d] = true, 1
    elseif r.shape[d] > 1 then dims[#dims + 1] = d end
  end
  local sorted = {} -- r's moving dims, outermost (largest stride) first
  for i, d in ipairs(dims) do sorted[i] = d end
  table.sort(sorted, function(x, y) return r.strides[x] > r.strides[y] end)
  -- q: b's buffer as dims outermost first, each {size, stride, dim of r or nil (a dim r stays in)}
  local q, outer, n = {}, b.numel, b.numel
  for _, d in ipairs(sorted) do
    local st = r.strides[d]
    if outer % st ~= 0 or outer == st then return nil end
    q[#q + 1] = { size = outer // st, stride = st, dim = d }
    outer = st
  end
  if outer > 1 or #q == 0 then q[#q + 1] = { size = outer, stride = 1 } end
  local off = r.offset - b.offset
  if off < 0 or r.hi > b.offset + n - 1 then return nil end
  local qshape, starts, ends, axes = {}, {}, {}, {}
  for i, e in ipairs(q) do
    qshape[i] = e.size
    local at = off // e.stride
    off = off - at * e.stride
    local len = e.dim and r.shape[e.dim] or 1
    if at + len > e.size then return nil end
    if at ~= 0 or len ~= e.size then
      axes[#axes + 1], starts[#starts + 1], ends[#ends + 1] = i - 1, at, at + len
    end
    e.len = len
  end
  local pos, perm, identity = {}, {}, true
  for i, d in ipairs(sorted) do pos[d] = i - 1 end
  for i, d in ipairs(dims) do perm[i] = pos[d]; if perm[i] ~= i - 1 then identity = false end end
  local v, cur = name, b.shape
  if #axes > 0 or not identity then
    v = self:reshape(name, b.shape, qshape)
    cur = {}
    for i, e in ipairs(q) do cur[i] = e.len end
  end
  if #axes > 0 then v = self:node("Slice", { v, self:ints(starts), self:ints(ends), self:ints(axes) }) end
  if not identity then
    local sorted_shape = {}
    for i, d in ipairs(sorted) do sorted_shape[i] = r.shape[d] end
    v = self:node("Transpose", { self:reshape(v, cur, sorted_shape) }, { { "perm", "ints", perm } })
    cur = {}
    for i, d in ipairs(dims) do cur[i] = r.shape[d] end
  end
  v = self:reshape(v, cur, shape0)
  if expanded then
    local target = {}
    for d = 1, #r.shape do target[d] = shape0[d] == 1 and r.shape[d] or 1 end
    v = self:node("Expand", { v, self:ints(target) })
  end
  return v
end

-- A view that steps through b's own dims (a slice with steps, one index picked in the others,
-- permuted): Slice with steps over b's dims, the picked dims dropped, transposed to r's order.
-- where an element at offset off (from b's start) sits in contiguous b: its index in each dim
-- (nil outside b), and b's strides
local function box_start(b, off)
  local bst, start = contig_strides(b.shape), {}
  if off < 0 then return nil end
  for j = 1, #b.shape do
    start[j] = b.shape[j] > 1 and off // bst[j] or 0
    off = off - start[j] * bst[j]
    if start[j] >= b.shape[j] then return nil end
  end
  return start, bst
end

function G:view_by_steps(name, b, r)
  if not is_contig(b) then return nil end
  local start, bst = box_start(b, r.offset - b.offset)
  if not start then return nil end
  local dim_of, step, order = {}, {}, {} -- b's dim and step for each moving dim of r, in r's order
  for d = 1, #r.shape do
    if r.shape[d] > 1 then
      local s, found = r.strides[d], nil
      for j = 1, #b.shape do
        if b.shape[j] > 1 and s >= bst[j] and s % bst[j] == 0 and (j == 1 or s < bst[j] * b.shape[j]) then found = j; break end
      end
      if not found or step[found] or start[found] + (r.shape[d] - 1) * (s // bst[found]) >= b.shape[found] then return nil end
      dim_of[d], step[found] = found, s // bst[found]
      order[#order + 1] = d
    end
  end
  local starts, ends, axes, steps, len = {}, {}, {}, {}, {}
  for j = 1, #b.shape do len[j] = 1 end
  for _, d in ipairs(order) do len[dim_of[d]] = r.shape[d] end
  for j = 1, #b.shape do
    local st = step[j] or 1
    if start[j] ~= 0 or len[j] ~= b.shape[j] or st ~= 1 then
      axes[#axes + 1], starts[#starts + 1], ends[#ends + 1], steps[#steps + 1] = j - 1, start[j], start[j] + (len[j] - 1) * st + 1, st
    end
  end
  local v = name
  if #axes > 0 then v = self:node("Slice", { v, self:ints(starts), self:ints(ends), self:ints(axes), self:ints(steps) }) end
  local by_b = {} -- r's moving dims in b's order
  for i, d in ipairs(order) do by_b[i] = d end
  table.sort(by_b, function(x, y) return dim_of[x] < dim_of[y] end)
  local cur, perm, identity = {}, {}, true
  for i, d in ipairs(by_b) do cur[i] = r.shape[d] end
  v = self:reshape(v, len, cur)
  local pos = {}
  for i, d in ipairs(by_b) do pos[d] = i - 1 end
  for i, d in ipairs(order) do perm[i] = pos[d]; identity = identity and perm[i] == i - 1 end
  if not identity then
    v = self:node("Transpose", { v }, { { "perm", "ints", perm } })
    for i, d in ipairs(order) do cur[i] = r.shape[d] end
  end
  return self:reshape(v, cur, r.shape)
end

-- b's value transposed into b's memory order, where b is a permutation of a dense layout (an
-- elementwise result that kept a permuted input's strides): that value and its contiguous identity
function G:to_memory_order(name, b)
  local order = {}
  for d = 1, #b.shape do order[d] = d end
  table.sort(order, function(x, y) return b.strides[x] > b.strides[y] or (b.strides[x] == b.strides[y] and x < y) end)
  local shape, perm, acc = {}, {}, 1
  for i = #order, 1, -1 do
    local d = order[i]
    if b.shape[d] > 1 and b.strides[d] ~= acc then return nil end
    acc = acc * b.shape[d]
  end
  for i, d in ipairs(order) do shape[i], perm[i] = b.shape[d], d - 1 end
  local c = { st = b.st, shape = shape, strides = contig_strides(shape), offset = b.offset, numel = b.numel, hi = b.hi }
  return self:node("Transpose", { name }, { { "perm", "ints", perm } }), c
end

-- The value of identity r, given the value `name` of identity b on the same storage (one node
-- list per distinct view of a value)
function G:view_of(name, b, r)
  if same_ident(b, r) then return name end
  local key = string.format("%s|%d|%s|%s|%s", name, r.offset - b.offset, table.concat(b.shape, ","),
    table.concat(r.shape, ","), table.concat(r.strides, ","))
  local v = self.views[key]
  if not v then
    v = self:view_by_reshape(name, b, r) or self:view_by_steps(name, b, r)
    if not v and not is_contig(b) then
      local t, c = self:to_memory_order(name, b)
      if t then v = self:view_by_reshape(t, c, r) or self:view_by_steps(t, c, r) end
    end
    if not v then
      fail("a view with shape %s and strides %s (offset %d) of a tensor of shape %s is not supported", U.pystr(r.shape),
        U.pystr(r.strides), r.offset - b.offset, U.pystr(b.shape))
    end
    self.views[key] = v
  end
  return v
end

-- the value of a write record (constants made in forward are read when first used)
function G:write_value(w)
  if not w.name then w.name = w.lazy() end
  return w.name
end

local function covers(w, r) return w.numel == w.hi - w.offset + 1 and w.offset <= r.offset and r.hi <= w.hi end

-- pieces written into slices of one box (torch.cat's copies), the last ones written, that tile
-- a dense range holding r: the box is their Concat along the dim where they follow each other;
-- its value is cached as a write
function G:concat(ws, r)
  local pieces, n, lo, hi = {}, 0, math.huge, -1
  for k = #ws, 1, -1 do
    local w = ws[k].id
    if #w.shape ~= #ws[#ws].id.shape then break end
    pieces[#pieces + 1] = ws[k]
    n, lo, hi = n + w.numel, math.min(lo, w.offset), math.max(hi, w.hi)
    if n > hi - lo + 1 then return nil end -- overlapping pieces
    if n == hi - lo + 1 and lo <= r.offset and r.hi <= hi then break end
  end
  if n ~= hi - lo + 1 or lo > r.offset or r.hi > hi then return nil end
  table.sort(pieces, function(x, y) return x.id.offset < y.id.offset end)
  local first = pieces[1].id
  for d = 1, #first.shape do
    local ok, at = true, first.offset
    for _, p in ipairs(pieces) do
      local w = p.id
      for e = 1, #w.shape do
        if (e ~= d and w.shape[e] ~= first.shape[e]) or (w.shape[e] > 1 and w.strides[e] ~= first.strides[e]) then ok = false end
      end
      if w.offset ~= at then ok = false end
      at = at + w.shape[d] * first.strides[d]
    end
    if ok then
      local shape, names = {}, {}
      for e = 1, #first.shape do shape[e] = first.shape[e] end
      shape[d] = 0
      for i, p in ipairs(pieces) do shape[d] = shape[d] + p.id.shape[d]; names[i] = self:write_value(p) end
      local box = { st = r.st, shape = shape, strides = first.strides, offset = first.offset, numel = n }
      box.hi = box.offset
      for e = 1, #shape do box.hi = box.hi + (shape[e] - 1) * box.strides[e] end
      if box.hi == hi then
        local v = self:node("Concat", names, { { "axis", "i", d - 1 } })
        ws[#ws + 1] = { id = box, name = v }
        return self:view_of(v, box, r)
      end
    end
  end
  return nil
end

-- where write w lies in contiguous box b, as a box of b's rank: the start and length in each dim
-- (nil unless w steps through b's dims in order, one by one)
local function sub_box(b, w)
  local start, bst = box_start(b, w.offset - b.offset)
  if not start then return nil end
  local len, last = {}, 0
  for j = 1, #b.shape do len[j] = 1 end
  for d = 1, #w.shape do
    if w.shape[d] > 1 then
      local at
      for j = 1, #b.shape do if b.shape[j] > 1 and bst[j] == w.strides[d] then at = j end end
      if not at or at <= last then return nil end
      len[at], last = w.shape[d], at
    end
  end
  for j = 1, #b.shape do if start[j] + len[j] > b.shape[j] then return nil end end
  return start, len
end

-- writes into parts of an earlier write that covers r (x[a:b] = v; masks built slice by slice):
-- each part, padded to the box, replaces the box's values where a constant mask is true (Where).
-- The result is cached as a write of the whole box.
function G:merged(ws, r)
  local k = #ws - 1
  while k >= 1 and not (covers(ws[k].id, r) and is_contig(ws[k].id)) do k = k - 1 end
  if k < 1 then return nil end
  local b = ws[k].id
  local v = self:write_value(ws[k])
  for j = k + 1, #ws do
    local w = ws[j].id
    local start, len = sub_box(b, w)
    if not start then return nil end
    local pads, mask = {}, torch.zeros(b.shape, { dtype = torch.bool })
    local inside = mask
    for d = 1, #b.shape do
      pads[d], pads[#b.shape + d] = start[d], b.shape[d] - start[d] - len[d]
      inside = inside:narrow(d - 1, start[d], len[d])
    end
    inside:fill_(true)
    local part = self:node("Pad", { self:reshape(self:write_value(ws[j]), w.shape, len), self:ints(pads) })
    v = self:node("Where", { self:initializer(mask), part, v })
  end
  ws[#ws + 1] = { id = b, name = v }
  return self:view_of(v, b, r)
end

-- the ONNX value holding tensor t's current values
function G:read(t, r)
  r = r or ident(t)
  local rec = self.params[r.st]
  if rec then return self:view_of(self:param_value(rec), rec.id, r) end
  local bad = self.unreadable[r.st]
  if bad then fail("the model reads %s, which the export does not support", bad) end
  local ws = self.writes[r.st]
  if ws and #ws > 0 then
    local w = ws[#ws]
    if covers(w.id, r) then return self:view_of(self:write_value(w), w.id, r) end
    local v = self:concat(ws, r) or self:merged(ws, r)
    if v then return v end
    fail("a tensor written in parts (shape %s) is read in a way the export does not support", U.pystr(r.shape))
  end
  -- made outside the traced ops (a Lua number, a tensor built before forward): a constant
  local v = self:initializer(r.t)
  self.writes[r.st] = { { id = r, name = v } }
  return v
end

function G:write(t, name)
  local r = ident(t)
  local ws = self.writes[r.st] or {}
  self.writes[r.st] = ws
  local w = { id = r }
  if type(name) == "function" then w.lazy = name else w.name = name end -- lazy: a constant
  ws[#ws + 1] = w
  return w
end

-- ---- ops ----

local UNARY = { relu = "Relu", sigmoid = "Sigmoid", tanh = "Tanh", neg = "Neg", exp = "Exp", log = "Log", sqrt = "Sqrt",
  abs = "Abs", erf = "Erf", sign = "Sign", reciprocal = "Reciprocal", floor = "Floor", ceil = "Ceil", sin = "Sin",
  cos = "Cos", tan = "Tan", asin = "Asin", acos = "Acos", atan = "Atan", sinh = "Sinh", cosh = "Cosh", asinh = "Asinh",
  acosh = "Acosh", atanh = "Atanh", round = "Round", logical_not = "Not" }
local BINARY = { add = "Add", sub = "Sub", mul = "Mul", div = "Div", pow = "Pow", maximum = "Max", minimum = "Min",
  eq = "Equal", lt = "Less", le = "LessOrEqual", gt = "Greater", ge = "GreaterOrEqual", logical_and = "And",
  logical_or = "Or", fmod = "Mod" }
local REDUCE = { sum = "ReduceSum", mean = "ReduceMean", amax = "ReduceMax", amin = "ReduceMin", prod = "ReduceProd" }

-- the value of input t, cast to dtype where it differs (constants are converted instead)
function G:operand(t, dtype)
  if t.dtype == dtype then return self:read(t) end
  local r = ident(t)
  if not self.params[r.st] and not self.writes[r.st] then return self:initializer(t:to(dtype)) end
  return self:node("Cast", { self:read(t, r) }, { { "to", "i", elem_type(dtype) } })
end

local function pool_attrs(op, x, y, k, s, p, d, with_dilation)
  local floor_ok = true
  for j = 1, 2 do
    local n = x:size(1 + j) + 2 * p[j] - d[j] * (k[j] - 1) - 1
    if y:size(1 + j) ~= n // s[j] + 1 then floor_ok = false end
  end
  local attrs = { { "kernel_shape", "ints", k }, { "strides", "ints", s }, { "pads", "ints", { p[1], p[2], p[1], p[2] } } }
  if with_dilation then attrs[#attrs + 1] = { "dilations", "ints", d } end
  if not floor_ok then attrs[#attrs + 1] = { "ceil_mode", "i", 1 } end
  if x:dim() ~= 4 then fail("%s of a %d-D input is not supported (give it a batch dimension)", op, x:dim()) end
  return attrs
end

-- adaptive pools: global where the output is 1x1, a fixed kernel where the sizes divide, else
-- (average only) products with averaging matrices (torch_onnx_ops.lua)
function G:adaptive(op, e, global, fixed)
  local x, y = e.ins[1], e.outs[1]
  if x:dim() ~= 4 then fail("%s of a %d-D input is not supported (give it a batch dimension)", op, x:dim()) end
  local h, w, oh, ow = x:size(2), x:size(3), y:size(2), y:size(3)
  if e.outs[2] then self.unreadable[C.storage(e.outs[2])] = "the indices of " .. op end
  if oh == 1 and ow == 1 then return self:node(global, { self:read(x) }) end
  if (h % oh ~= 0 or w % ow ~= 0) and op == "adaptive_avg_pool2d" then return self:adaptive_avg_matmul(x, y) end
  if h % oh ~= 0 or w % ow ~= 0 then
    fail("%s from %dx%d to %dx%d is not supported: ONNX has no adaptive pooling (the input size must be a multiple of the output size)",
      op, h, w, oh, ow)
  end
  local k = { h // oh, w // ow }
  return self:node(fixed, { self:read(x) }, { { "kernel_shape", "ints", k }, { "strides", "ints", k } })
end

-- is r (a 2-D operand of bmm, batch dim dropped) the transpose of a 2-D parameter? its record
function G:transposed_param(r)
  local rec = self.params[r.st]
  if not rec or #rec.id.shape ~= 2 or not is_contig(rec.id) then return nil end
  if r.offset == rec.id.offset and r.shape[1] == rec.id.shape[2] and r.shape[2] == rec.id.shape[1]
    and (r.shape[1] == 1 or r.strides[1] == 1) and (r.shape[2] == 1 or r.strides[2] == rec.id.shape[2]) then
    return rec
  end
end

-- is r (2-D) a 2-D parameter itself, as it is stored? its record
function G:param_itself(r)
  local rec = self.params[r.st]
  if not rec or #rec.id.shape ~= 2 or #r.shape ~= 2 or r.offset ~= rec.id.offset then return nil end
  for d = 1, 2 do
    if r.shape[d] ~= rec.id.shape[d] or (r.shape[d] > 1 and r.strides[d] ~= rec.id.strides[d]) then return nil end
  end
  return rec
end

local function drop_batch(r)
  if #r.shape == 2 then return r end
  if #r.shape ~= 3 or r.shape[1] ~= 1 then return nil end
  local s = {}
  for k, v in pairs(r) do s[k] = v end
  s.shape, s.strides = { r.shape[2], r.shape[3] }, { r.strides[2], r.strides[3] }
  return s
end

-- out's 2-D view ro (batch dim dropped) now holds value y
function G:wrote_2d(ro, out, y)
  ro.t = out
  local ws = self.writes[ro.st] or {}
  self.writes[ro.st] = ws
  ws[#ws + 1] = { id = ro, name = y }
end

-- bmm: out = beta * out + alpha * in0 @ in1 (CUDA's fused linear: out = in0 @ in1^T + in2)
function G:bmm(e)
  local a, b, out = e.ins[1], e.ins[2], e.outs[1]
  local alpha, beta = e.f[1], e.f[2]
  local ra, rb, ro = drop_batch(ident(a)), drop_batch(ident(b)), drop_batch(ident(out))
  local bias = e.ins[3] or nil
  if bias and ra and rb and ro then -- CUDA's fused linear: out = in0 @ in1^T + bias, in1 shaped as the weight
    local rec = self:param_itself(rb)
    local y = self:node("Gemm", { self:read(a, ra), rec and self:param_value(rec) or self:read(b, rb), self:read(bias) },
      { { "transB", "i", 1 } })
    self:wrote_2d(ro, out, y)
    return
  end
  if ra and rb and ro then -- a linear layer: Gemm
    local inputs, attrs = { self:read(a, ra) }, {}
    local rec = self:transposed_param(rb)
    if rec then
      inputs[2] = self:param_value(rec)
      attrs[1] = { "transB", "i", 1 }
    else
      inputs[2] = self:read(b, rb)
    end
    if bias then
      inputs[3] = self:read(bias)
    elseif beta ~= 0 then
      ro.t = out
      inputs[3] = self:copied_bias(ro) or self:read(out, ro)
      if beta ~= 1 then attrs[#attrs + 1] = { "beta", "f", beta } end
    end
    if alpha ~= 1 then attrs[#attrs + 1] = { "alpha", "f", alpha } end
    local y = self:node("Gemm", inputs, attrs)
    self:wrote_2d(ro, out, y)
    return
  end
  local y = self:node("MatMul", { self:read(a), self:read(b) })
  if alpha ~= 1 then y = self:node("Mul", { y, self:scalar(alpha, out.dtype) }) end
  if beta ~= 0 then
    local c = self:read(out)
    if beta ~= 1 then c = self:node("Mul", { c, self:scalar(beta, out.dtype) }) end
    y = self:node("Add", { y, c })
  end
  self:write(out, y)
end

local HANDLERS = {}

function HANDLERS.copy(g, e)
  local src, out = e.ins[1], e.outs[1]
  local v = g:operand(src, out.dtype)
  if not same_list(src:size():totable(), out:size():totable()) then -- a broadcasting copy (x[i] = 1)
    v = g:node("Expand", { v, g:ints(out:size():totable()) })
  end
  g:write(out, v).src = src -- a linear's bias broadcast: see copied_bias
end

-- the bias of a linear layer: the 1-D tensor the last copy into r's storage broadcast over rows
function G:copied_bias(r)
  local ws = self.writes[r.st]
  local w = ws and ws[#ws]
  if not w or not w.src or not same_ident(w.id, r) or w.src.dtype ~= r.t.dtype then return nil end
  local s = ident(w.src)
  if #s.shape ~= 2 or s.strides[1] ~= 0 then return nil end
  s.shape, s.strides, s.numel = { s.shape[2] }, { s.strides[2] }, s.shape[2]
  return self:read(w.src, s)
end

HANDLERS.bmm = G.bmm

function HANDLERS.conv2d(g, e)
  local x, w, b = e.ins[1], e.ins[2], e.ins[3]
  local i = e.i
  if x:dim() ~= 4 then fail("conv2d of a %d-D input is not supported (give it a batch dimension)", x:dim()) end
  local inputs = { g:read(x), g:read(w) }
  if b then inputs[3] = g:read(b) end
  g:write(e.outs[1], g:node("Conv", inputs, { { "dilations", "ints", { i[5], i[6] } }, { "group", "i", i[7] },
    { "kernel_shape", "ints", { w:size(2), w:size(3) } }, { "pads", "ints", { i[3], i[4], i[3], i[4] } },
    { "strides", "ints", { i[1], i[2] } } }))
end

function HANDLERS.max_pool2d(g, e)
  local i = e.i
  local attrs = pool_attrs("max_pool2d", e.ins[1], e.outs[1], { i[1], i[2] }, { i[3], i[4] }, { i[5], i[6] }, { i[7], i[8] }, true)
  g:write(e.outs[1], g:node("MaxPool", { g:read(e.ins[1]) }, attrs))
  if e.outs[2] then g.unreadable[C.storage(e.outs[2])] = "the indices of max_pool2d" end
end

function HANDLERS.avg_pool2d(g, e)
  local i = e.i
  if i[8] ~= 0 then fail("avg_pool2d with divisor_override is not supported") end
  local attrs = pool_attrs("avg_pool2d", e.ins[1], e.outs[1], { i[1], i[2] }, { i[3], i[4] }, { i[5], i[6] }, { 1, 1 }, false)
  if i[7] ~= 0 then attrs[#attrs + 1] = { "count_include_pad", "i", 1 } end
  g:write(e.outs[1], g:node("AveragePool", { g:read(e.ins[1]) }, attrs))
end

function HANDLERS.adaptive_avg_pool2d(g, e)
  g:write(e.outs[1], g:adaptive("adaptive_avg_pool2d", e, "GlobalAveragePool", "AveragePool"))
end

function HANDLERS.adaptive_max_pool2d(g, e)
  g:write(e.outs[1], g:adaptive("adaptive_max_pool2d", e, "GlobalMaxPool", "MaxPool"))
end

function HANDLERS.softmax(g, e)
  g:write(e.outs[1], g:node("Softmax", { g:operand(e.ins[1], e.outs[1].dtype) }, { { "axis", "i", e.i[1] } }))
end

function HANDLERS.log_softmax(g, e)
  g:write(e.outs[1], g:node("LogSoftmax", { g:operand(e.ins[1], e.outs[1].dtype) }, { { "axis", "i", e.i[1] } }))
end

function HANDLERS.batch_norm(g, e)
  local x, w, b, mean, var = e.ins[1], e.ins[2], e.ins[3], e.ins[4], e.ins[5]
  if e.i[1] ~= 0 or not mean or not var then
    fail("batch_norm with batch statistics (training, or track_running_stats=False) is not supported")
  end
  local c = x:size(1)
  local inputs = { g:read(x), w and g:read(w) or g:initializer(torch.ones(c, { dtype = mean.dtype })),
    b and g:read(b) or g:initializer(torch.zeros(c, { dtype = mean.dtype })), g:read(mean), g:read(var) }
  g:write(e.outs[1], g:node("BatchNormalization", inputs, { { "epsilon", "f", e.f[2] }, { "momentum", "f", 1 - e.f[1] } }))
end

function HANDLERS.layer_norm(g, e)
  local x, w, b = e.ins[1], e.ins[2], e.ins[3]
  if g.opset < 17 then fail("layer_norm needs opset_version 17 or more, got %d", g.opset) end
  local inputs = { g:read(x), w and g:read(w) or g:initializer(torch.ones(x:size(x:dim() - 1), { dtype = x.dtype })) }
  if b then inputs[3] = g:read(b) end
  g:write(e.outs[1], g:node("LayerNormalization", inputs, { { "axis", "i", -1 }, { "epsilon", "f", e.f[1] } }))
  for k = 2, 3 do if e.outs[k] then g.unreadable[C.storage(e.outs[k])] = "layer_norm's statistics" end end
end

function HANDLERS.clamp(g, e)
  local x, y = e.ins[1], e.outs[1]
  local inputs = { g:operand(x, y.dtype) }
  inputs[2] = e.i[1] & 1 ~= 0 and g:scalar(e.f[1], y.dtype) or ""
  if e.i[1] & 2 ~= 0 then inputs[3] = g:scalar(e.f[2], y.dtype) end
  g:write(y, g:node("Clip", inputs))
end

function HANDLERS.pow_scalar(g, e)
  local y = e.outs[1]
  g:write(y, g:node("Pow", { g:operand(e.ins[1], y.dtype), g:scalar(e.f[1], y.dtype) }))
end

function HANDLERS.rsqrt(g, e)
  g:write(e.outs[1], g:node("Reciprocal", { g:node("Sqrt", { g:operand(e.ins[1], e.outs[1].dtype) }) }))
end

function HANDLERS.where(g, e)
  local y = e.outs[1]
  g:write(y, g:node("Where", { g:operand(e.ins[1], torch.bool), g:operand(e.ins[2], y.dtype), g:operand(e.ins[3], y.dtype) }))
end

function HANDLERS.index_select(g, e)
  g:write(e.outs[1], g:node("Gather", { g:read(e.ins[1]), g:read(e.ins[2]) }, { { "axis", "i", e.i[1] } }))
end

-- tensors made inside forward (zeros, arange): constants (made from the op's parameters, as
-- the storage may change afterwards), unless changed afterwards
local function constant_fill(g, e)
  local out = e.outs[1]
  g:write(out, function()
    local shape = out:size():totable()
    if e.name == "arange" then -- element j = f[0] + j * f[1] in row-major order
      local n = out:numel()
      return g:initializer((torch.arange(n, { dtype = torch.float64 }) * e.f[2] + e.f[1]):to(out.dtype):reshape(shape))
    end
    local v = (out:is_floating_point() or out:is_complex()) and e.f[1] or e.i[2]
    if out.dtype == torch.bool then v = v ~= 0 end
    return g:initializer(torch.full(shape, v, { dtype = out.dtype }))
  end)
end
HANDLERS.fill, HANDLERS.arange = constant_fill, constant_fill

local function reduce(g, e)
  local x, y = e.ins[1], e.outs[1]
  local axes = {}
  for d = 0, x:dim() - 1 do if e.dims & (1 << d) ~= 0 then axes[#axes + 1] = d end end
  local op = REDUCE[e.name]
  local inputs, attrs = { g:operand(x, y.dtype) }, { { "keepdims", "i", 1 } }
  if op == "ReduceSum" or g.opset >= 18 then inputs[2] = g:ints(axes)
  else attrs[2] = { "axes", "ints", axes } end
  g:write(y, g:node(op, inputs, attrs))
end
for name in pairs(REDUCE) do HANDLERS[name] = reduce end

for name, op in pairs(UNARY) do
  HANDLERS[name] = function(g, e)
    local y = e.outs[1]
    g:write(y, g:node(op, { g:operand(e.ins[1], name == "logical_not" and torch.bool or y.dtype) }))
  end
end

local COMPARE = { eq = true, lt = true, le = true, gt = true, ge = true }
for name, op in pairs(BINARY) do
  HANDLERS[name] = function(g, e)
    local y = e.outs[1]
    local a, b = e.ins[1], e.ins[2]
    -- comparisons compute in the wider operand type, the rest in the result's
    local dt = COMPARE[name] and ((a:dim() > 0 or b:dim() == 0) and a.dtype or b.dtype) or y.dtype
    if name == "logical_and" or name == "logical_or" then dt = torch.bool end
    local va, vb = g:operand(a, dt), g:operand(b, dt)
    if (name == "add" or name == "sub") and e.f[1] ~= 1 then vb = g:node("Mul", { vb, g:scalar(e.f[1], dt) }) end
    local attrs = name == "fmod" and { { "fmod", "i", 1 } } or nil
    g:write(y, g:node(op, { va, vb }, attrs))
  end
end

-- for the files that add ops (torch_onnx_ops.lua) and constant folding (torch_onnx_fold.lua)
onnx._internal = { G = G, HANDLERS = HANDLERS, fail = fail, ident = ident, elem_type = elem_type, UNARY = UNARY }

-- ---- protobuf ----

local function attr_bytes(a)
  local name, kind, v = a[1], a[2], a[3]
  if kind == "i" then return P.str(1, name) .. P.int(3, v) .. P.int(20, 2) end
  if kind == "f" then return P.str(1, name) .. P.float(2, v) .. P.int(20, 1) end
  if kind == "ints" then return P.str(1, name) .. P.packed_ints(8, v) .. P.int(20, 7) end
  if kind == "s" then return P.str(1, name) .. P.str(4, v) .. P.int(20, 3) end
  return P.str(1, name) .. P.packed_floats(7, v) .. P.int(20, 6)
end

local function node_bytes(n, k)
  local parts = { P.repeated_str(1, n.inputs), P.repeated_str(2, n.outputs), P.str(3, string.format("/%s_%d", n.op, k)),
    P.str(4, n.op) }
  for _, a in ipairs(n.attrs) do parts[#parts + 1] = P.msg(5, attr_bytes(a)) end
  return table.concat(parts)
end

-- TensorProto { dims = 1; data_type = 2; name = 8; raw_data = 9 }
local function tensor_bytes(t)
  return P.packed_ints(1, t.shape) .. P.int(2, elem_type(t.dtype)) .. P.str(8, t.name) .. P.msg(9, t.bytes)
end

-- ValueInfoProto { name = 1; type = 2 { tensor_type = 1 { elem_type = 1; shape = 2 { dim = 1 { dim_value = 1 | dim_param = 2 } } } } }
local function value_info(name, t, dyn)
  local dims = {}
  for d = 1, t:dim() do
    local p = dyn and dyn[d - 1]
    dims[d] = P.msg(1, p and P.str(2, p) or P.int(1, t:size(d - 1)))
  end
  local tensor_type = P.int(1, elem_type(t.dtype)) .. P.msg(2, table.concat(dims))
  return P.str(1, name) .. P.msg(2, P.msg(1, tensor_type))
end

-- ---- export ----

-- the tensors of v (a tensor or nested lists of them), flattened in order, as PyTorch flattens
-- nested tuples of arguments and results
local function flat_tensors(v, what, out)
  if torch.is_tensor(v) then out[#out + 1] = v; return out end
  if type(v) ~= "table" or getmetatable(v) then fail("%s must be tensors or lists of them, got %s", what, U.typename(v)) end
  for k = 1, #v do flat_tensors(v[k], what, out) end
  return out
end

-- dynamic_axes {name = {[dim] = "param", ...} or {dim, ...}} -> name -> {[dim] = param}
local function parse_dynamic_axes(dyn, known)
  local out = {}
  for name, axes in pairs(dyn or {}) do
    if not known[name] then
      U.warn(string.format("Provided key %s for dynamic axes is not a valid input/output name", tostring(name)))
    end
    if type(axes) ~= "table" then fail("dynamic_axes[%s] must be a list of dims or a table dim -> name", tostring(name)) end
    local m = {}
    if #axes > 0 and axes[0] == nil then
      for _, d in ipairs(axes) do m[U.check_int("export", "a dynamic axis", d, 0)] = string.format("%s_dynamic_axes_%d", name, d + 1) end
    else
      for d, p in pairs(axes) do m[U.check_int("export", "a dynamic axis", d, 0)] = tostring(p) end
    end
    out[name] = m
  end
  return out
end

-- Lua functions that export as their own nodes (onnx._symbolic): while tracing, each call (not
-- one nested in another) is recorded as a region {name, at, to, args, res}: the traced ops
-- at+1 .. to it ran, which its handler replaces (or, where it returns false, exports as usual)
local SYMBOLIC, SYMBOLIC_HANDLERS = {}, {}
function onnx._symbolic(tbl, key, name, handler)
  SYMBOLIC[#SYMBOLIC + 1] = { tbl = tbl, key = key, name = name }
  SYMBOLIC_HANDLERS[name] = handler
end

local function install_symbolic(regions)
  local depth, saved = 0, {}
  local function wrap(s, orig)
    return function(...)
      if depth > 0 then return orig(...) end
      local from = C.count()
      depth = depth + 1
      local r = table.pack(pcall(orig, ...))
      depth = depth - 1
      if not r[1] then error(r[2], 0) end
      regions[#regions + 1] = { name = s.name, at = from, to = C.count(), args = table.pack(...),
        res = table.pack(table.unpack(r, 2, r.n)) }
      return table.unpack(r, 2, r.n)
    end
  end
  for k, s in ipairs(SYMBOLIC) do
    saved[k] = s.tbl[s.key]
    if saved[k] then s.tbl[s.key] = wrap(s, saved[k]) end
  end
  -- recurrent layers as their composed ops, not cuDNN's one untraced op per layer
  local cudnn = torch.backends.cudnn.enabled
  torch.backends.cudnn.enabled = false
  return function()
    torch.backends.cudnn.enabled = cudnn
    for k, s in ipairs(SYMBOLIC) do s.tbl[s.key] = saved[k] end
  end
end

local function run_traced(model, args, kwargs)
  local ok, res
  local regions = {}
  C.start()
  local uninstall = install_symbolic(regions)
  exporting = true
  do
    local _ <close> = torch.no_grad()
    ok, res = pcall(function()
      local all = { table.unpack(args) }
      if kwargs then all[#all + 1] = kwargs end
      return table.pack(model(table.unpack(all, 1, #args + (kwargs and 1 or 0))))
    end)
  end
  exporting = false
  C.stop()
  uninstall()
  if not ok then
    C.clear()
    error(res, 0)
  end
  local ops = C.ops()
  C.clear()
  ops.regions = regions
  return res, ops
end

local fuse_gelu

-- Drops the nodes no output depends on, then the initializers no node reads.
local function prune(g, outputs)
  local needed, keep = {}, {}
  for _, v in ipairs(outputs) do needed[v.name] = true end
  for k = #g.nodes, 1, -1 do
    local n = g.nodes[k]
    local live = false
    for _, o in ipairs(n.outputs) do live = live or needed[o] end
    if live then
      keep[#keep + 1] = n
      for _, x in ipairs(n.inputs) do needed[x] = true end
    end
  end
  g.nodes = {}
  for k = #keep, 1, -1 do g.nodes[#g.nodes + 1] = keep[k] end
  local inits = {}
  for _, t in ipairs(g.inits) do if needed[t.name] then inits[#inits + 1] = t end end
  -- parameters and buffers first, in named_parameters() / named_buffers() order
  local function sort(list)
    local at = {}
    for k, t in ipairs(list) do at[t] = (g.param_order[t.name] or #g.param_order + 1) * 1e9 + k end
    table.sort(list, function(a, b) return at[a] < at[b] end)
  end
  sort(inits)
  sort(g.graph_inputs)
  g.inits = inits
end

-- F.gelu runs as x * 0.5 * (1 + erf(x / sqrt(2))) (mul, erf, add, mul, mul): one Gelu node from
-- opset 20, where ONNX has it
function fuse_gelu(g)
  local value, uses, by_out = {}, {}, {}
  for _, t in ipairs(g.inits) do value[t.name] = t.value end
  for k, n in ipairs(g.nodes) do
    by_out[n.outputs[1]] = k
    for _, x in ipairs(n.inputs) do uses[x] = (uses[x] or 0) + 1 end
  end
  local function near(v, want) return v and math.abs(v - want) < 1e-6 end
  local function only_use(name) return uses[name] == 1 end
  local function consumer(name, from)
    for k = from, #g.nodes do
      for _, x in ipairs(g.nodes[k].inputs) do if x == name then return k, g.nodes[k] end end
    end
  end
  local dead = {}
  for k, erf in ipairs(g.nodes) do
    local scale = erf.op == "Erf" and g.nodes[by_out[erf.inputs[1]] or 0]
    if scale and scale.op == "Mul" and near(value[scale.inputs[2]], 1 / math.sqrt(2)) and only_use(scale.outputs[1])
      and only_use(erf.outputs[1]) then
      local x = scale.inputs[1]
      local ka, add = consumer(erf.outputs[1], k + 1)
      local km, mul = consumer(add and add.outputs[1] or "", (ka or 0) + 1)
      local kh, half = consumer(mul and mul.outputs[1] or "", (km or 0) + 1)
      if add and add.op == "Add" and near(value[add.inputs[2]], 1) and only_use(add.outputs[1])
        and mul.op == "Mul" and mul.inputs[1] == x and only_use(mul.outputs[1])
        and half and half.op == "Mul" and near(value[half.inputs[2]], 0.5) then
        dead[scale], dead[erf], dead[add], dead[mul] = true, true, true, true
        half.op, half.inputs, half.attrs = "Gelu", { x }, {}
      end
    end
  end
  local kept = {}
  for _, n in ipairs(g.nodes) do if not dead[n] then kept[#kept + 1] = n end end
  g.nodes = kept
end

local function build(model, args, o, res, ops)
  local g = new_graph(o.opset_version)
  g.export_params = o.export_params
  g.param_order = {}
  local function add(name, p)
    local s = C.storage(p)
    if g.params[s] then return end
    g.params[s] = { name = name, p = p, id = ident(p) }
    g.param_order[#g.param_order + 1] = name
    g.param_order[name] = #g.param_order
  end
  if type(model) == "table" and model.named_parameters then
    for name, p in model:named_parameters() do add(name, p) end
    for name, b in model:named_buffers() do add(name, b) end
  end
  local inputs = {}
  for k, x in ipairs(flat_tensors(args, "args", {})) do
    local name = o.input_names[k] or string.format("input_%d", k - 1)
    inputs[k] = { name = name, t = x }
    local r = ident(x)
    if g.params[r.st] then fail("input %d shares its storage with a parameter of the model", k) end
    g.writes[r.st] = { { id = r, name = name } }
  end
  local p, ri, regions = 0, 1, ops.regions
  while true do
    local reg = regions[ri]
    if reg and reg.at == p then
      ri = ri + 1
      if SYMBOLIC_HANDLERS[reg.name](g, reg) then p = reg.to end
    elseif p < #ops then
      p = p + 1
      local e = ops[p]
      local h = HANDLERS[e.name]
      if not h then
        fail("exporting the operator '%s' to ONNX opset version %d is not supported", e.name, o.opset_version)
      end
      h(g, e)
    else
      break
    end
  end
  -- several results (Python's tuple) or one: a tensor or a list of them
  local outs = flat_tensors({ table.unpack(res, 1, res.n) }, "the model's outputs", {})
  local outputs, used = {}, {}
  for k, y in ipairs(outs) do
    local name = o.output_names[k] or string.format("output_%d", k - 1)
    local v = g:read(y)
    local prod = g.producer[v]
    if prod and not used[v] and not g.init_names[v] then
      -- name the producing node's output, and its readers'
      used[v] = true
      prod[1].outputs[prod[2]] = name
      for _, n in ipairs(g.nodes) do
        for j, x in ipairs(n.inputs) do if x == v then n.inputs[j] = name end end
      end
    else
      g:node("Identity", { v })
      g.nodes[#g.nodes].outputs[1] = name
    end
    outputs[k] = { name = name, t = y }
  end
  if g.opset >= 20 then fuse_gelu(g) end
  prune(g, outputs)
  if o.do_constant_folding and onnx._fold then
    onnx._fold(g, outputs)
    prune(g, outputs)
  end
  for _, p in ipairs(g.graph_inputs) do inputs[#inputs + 1] = p end
  return g, inputs, outputs
end

local function encode(g, inputs, outputs, o)
  local known = {}
  for _, v in ipairs(inputs) do known[v.name] = true end
  for _, v in ipairs(outputs) do known[v.name] = true end
  local dyn = parse_dynamic_axes(o.dynamic_axes, known)
  local parts = {}
  for k, n in ipairs(g.nodes) do parts[#parts + 1] = P.msg(1, node_bytes(n, k - 1)) end
  parts[#parts + 1] = P.str(2, "main_graph")
  for _, t in ipairs(g.inits) do parts[#parts + 1] = P.msg(5, tensor_bytes(t)) end
  for _, v in ipairs(inputs) do parts[#parts + 1] = P.msg(11, value_info(v.name, v.t, dyn[v.name])) end
  if o.keep_initializers_as_inputs then
    for _, t in ipairs(g.inits) do
      local fake = torch.empty(t.shape, { dtype = t.dtype })
      parts[#parts + 1] = P.msg(11, value_info(t.name, fake))
    end
  end
  for _, v in ipairs(outputs) do parts[#parts + 1] = P.msg(12, value_info(v.name, v.t, dyn[v.name])) end
  local graph = table.concat(parts)
  -- ModelProto { ir_version = 1; producer_name = 2; producer_version = 3; graph = 7; opset_import = 8 { domain = 1; version = 2 } }
  return P.int(1, 8) .. P.str(2, "nnrepl") .. P.str(3, torch.__version__) .. P.msg(7, graph)
    .. P.msg(8, P.int(2, o.opset_version))
end

local function print_graph(g, inputs, outputs)
  local lines = { "graph main_graph (" }
  for _, v in ipairs(inputs) do lines[#lines + 1] = string.format("  %%%s : %s %s", v.name, tostring(v.t.dtype), U.pystr(v.t:size())) end
  lines[#lines + 1] = string.format(") initializers (%d) {", #g.inits)
  for _, n in ipairs(g.nodes) do
    lines[#lines + 1] = string.format("  %s = %s(%s)", table.concat(n.outputs, ", "), n.op, table.concat(n.inputs, ", "))
  end
  local names = {}
  for k, v in ipairs(outputs) do names[k] = v.name end
  lines[#lines + 1] = "  return (" .. table.concat(names, ", ") .. ")"
  lines[#lines + 1] = "}"
  print(table.concat(lines, "\n"))
end

local function save_modes(model)
  local saved = {}
  if type(model) == "table" and model.modules then
    for _, m in ipairs(model:modules()) do saved[#saved + 1] = { m, m.training } end
  end
  return function()
    for _, s in ipairs(saved) do s[1].training = s[2] end
  end
end

local SPEC = { { "model" }, { "args" }, { "f" }, { "kwargs" }, { "verbose", false }, { "input_names" }, { "output_names" },
  { "opset_version" }, { "dynamo", true }, { "external_data", true }, { "dynamic_shapes" }, { "report", false },
  { "optimize", true }, { "verify", false }, { "profile", false }, { "export_params", true },
  { "keep_initializers_as_inputs", false }, { "dynamic_axes" }, { "training" }, { "operator_export_type" },
  { "do_constant_folding", true }, { "custom_opsets" }, { "export_modules_as_functions", false } }

-- torch.onnx.export(model, args, f, {input_names=, output_names=, dynamic_axes=, opset_version=17,
-- export_params=true, training=TrainingMode.EVAL, ...})
function onnx.export(...)
  local o = U.parse("export", SPEC, ...)
  local model, f = o.model, o.f
  if model == nil then fail("missing required argument 'model'") end
  if not (type(model) == "function" or (type(model) == "table" and getmetatable(model) and getmetatable(model).__call)) then
    fail("model must be an nn.Module or a function, got %s", U.typename(model))
  end
  if type(f) ~= "string" and io.type(f) ~= "file" then
    fail("f must be a file path or an open file, got %s", U.typename(f))
  end
  if o.dynamic_shapes ~= nil then fail("dynamic_shapes is not supported; name the dynamic dims with dynamic_axes instead") end
  if o.custom_opsets ~= nil and next(o.custom_opsets) then fail("custom_opsets is not supported") end
  if o.export_modules_as_functions then fail("export_modules_as_functions is not supported") end
  for _, k in ipairs({ "verify", "report", "profile" }) do
    if o[k] then fail("%s=true needs onnxruntime / the dynamo exporter's tools, which nnrepl does not have", k) end
  end
  o.opset_version = U.check_int("export", "opset_version", o.opset_version or 17)
  if o.opset_version < 13 or o.opset_version > 23 then
    fail("opset_version %d is not supported (supported: 13 to 23)", o.opset_version)
  end
  o.input_names, o.output_names = o.input_names or {}, o.output_names or {}
  local training = o.training or onnx.TrainingMode.EVAL
  local is_module = type(model) == "table" and model.modules ~= nil
  if training == onnx.TrainingMode.TRAINING or (training == onnx.TrainingMode.PRESERVE and is_module and model.training) then
    fail("exporting a model in training mode is not supported (only TrainingMode.EVAL: dropout and batch norm as in inference)")
  elseif training ~= onnx.TrainingMode.EVAL and training ~= onnx.TrainingMode.PRESERVE then
    fail("training must be a torch.onnx.TrainingMode, got %s", U.typename(training))
  end
  local args = o.args
  if args == nil then args = {} end
  if torch.is_tensor(args) then args = { args } end
  flat_tensors(args, "args", {})
  if string.pack("=i4", 1) ~= "\1\0\0\0" then fail("writing ONNX needs a little-endian machine") end
  local restore = save_modes(model)
  if is_module then model:eval() end
  local ok, res, ops = pcall(run_traced, model, args, o.kwargs)
  restore()
  if not ok then error(res, 0) end
  local g, inputs, outputs = build(model, args, o, res, ops)
  local bytes = encode(g, inputs, outputs, o)
  if o.verbose then print_graph(g, inputs, outputs) end
  if type(f) == "string" then
    local fh, err = io.open(f, "wb")
    if not fh then fail("cannot open %s for writing: %s", f, tostring(err)) end
    fh:write(bytes)
    fh:close()
  else
    f:write(bytes)
  end
  return nil
end

return onnx
