-- torch.distributed.tensor.parallel: tensor parallelism over a 1-D DeviceMesh, as PyTorch's
-- parallelize_module with ColwiseParallel, RowwiseParallel, SequenceParallel,
-- PrepareModuleInput / PrepareModuleOutput. nnrepl has no DTensor: a sharded parameter is a
-- plain Parameter holding this rank's torch.chunk piece, and each style replaces the module's
-- forward with one that inserts the collectives its layouts need (custom autograd Functions).
-- Convention for gradients: the gradient reaching a replicated local tensor is the full one
-- (the same on every rank), that of a sharded one the exact gradient of this rank's piece; a
-- consumer whose local gradient is only partial (a column-sharded Linear reading a replicated
-- input, a replicated weight applied to a sequence shard) reduces it itself.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"
local Parameter = require "nn_parameter"
local dist = torch.distributed

dist.tensor = dist.tensor or {}
local DT = dist.tensor
local tp = DT.parallel or {}
DT.parallel = tp

local function values_of(m) return getmetatable(m).__index end

-- ---- placements ----

local Shard_MT = { __name = "torch.distributed.tensor.Shard" }
Shard_MT.__index = Shard_MT
Shard_MT.__tostring = function(p) return string.format("Shard(dim=%d)", p.dim) end
Shard_MT.__eq = function(a, b) return a.dim == b.dim end
function Shard_MT.is_shard(p, dim) return dim == nil or dim == p.dim end
function Shard_MT.is_replicate() return false end
function Shard_MT.is_partial() return false end

local Replicate_MT = { __name = "torch.distributed.tensor.Replicate" }
Replicate_MT.__index = Replicate_MT
Replicate_MT.__tostring = function() return "Replicate()" end
Replicate_MT.__eq = function() return true end
function Replicate_MT.is_shard() return false end
function Replicate_MT.is_replicate() return true end
function Replicate_MT.is_partial() return false end

local Partial_MT = { __name = "torch.distributed.tensor.Partial" }
Partial_MT.__index = Partial_MT
Partial_MT.__tostring = function(p) return string.format("Partial(%s)", p.reduce_op) end
Partial_MT.__eq = function(a, b) return a.reduce_op == b.reduce_op end
function Partial_MT.is_shard() return false end
function Partial_MT.is_replicate() return false end
function Partial_MT.is_partial() return true end

function DT.Shard(dim)
  if math.type(dim) ~= "integer" then U.errorf("Shard: dim must be an integer, got %s", U.typename(dim)) end
  return setmetatable({ dim = dim }, Shard_MT)
end
function DT.Replicate() return setmetatable({}, Replicate_MT) end
function DT.Partial(reduce_op)
  reduce_op = reduce_op or "sum"
  if reduce_op ~= "sum" then U.errorf("Partial: only reduce_op='sum' is supported, got '%s'", tostring(reduce_op)) end
  return setmetatable({ reduce_op = reduce_op }, Partial_MT)
end
DT.placement_types = { Shard = DT.Shard, Replicate = DT.Replicate, Partial = DT.Partial }

local function is_placement(p)
  local mt = getmetatable(p)
  return mt == Shard_MT or mt == Replicate_MT or mt == Partial_MT
end

local REPLICATE, LAST = DT.Replicate(), DT.Shard(-1)

-- ---- collectives along one dim of the mesh ----

-- this rank's torch.chunk piece of n along one dim: start, length (0 on trailing ranks)
local function chunk_range(n, world, rank)
  local c = (n + world - 1) // world
  local start = math.min(rank * c, n)
  return start, math.max(0, math.min(c, n - start))
end
tp._chunk_range = chunk_range

local function norm_dim(d, ndim, what)
  if d < -ndim or d >= ndim then U.errorf("%s: Shard(dim=%d) is out of range for a tensor of %d dims", what, d, ndim) end
  return d % ndim
end

local function padded(x, rows) -- x (dim 0 first) padded with zero rows up to rows
  local n = x:size(0)
  if n == rows then return x end
  local shape = x:size():totable()
  shape[1] = rows - n
  return torch.cat({ x, torch.zeros(shape, { dtype = x.dtype, device = x.device }) }, 0)
end

-- every rank's piece along dim d, concatenated in rank order; returns it and the pieces' sizes
local function gather_dim(m, x, d)
  if m.world == 1 then return x:clone(), { x:size(d) } end
  local xm = x:movedim(d, 0)
  local sizes = torch.empty(m.world, { dtype = torch.int64, device = x.device })
  dist.all_gather_into_tensor(sizes, torch.tensor({ xm:size(0) }, { dtype = torch.int64, device = x.device }), { group = m.group })
  sizes = sizes:tolist()
  local max = math.max(table.unpack(sizes))
  local shape = xm:size():totable()
  shape[1] = max * m.world
  local all = torch.empty(shape, { dtype = x.dtype, device = x.device })
  dist.all_gather_into_tensor(all, padded(xm, max):contiguous(), { group = m.group })
  local parts = {}
  for r, s in ipairs(sizes) do parts[r] = all:narrow(0, (r - 1) * max, s) end
  return torch.cat(parts, 0):movedim(0, d):contiguous(), sizes
end

-- the sum over ranks of x, of which this rank keeps its piece along dim d (sizes: the pieces'
-- sizes, torch.chunk's when nil)
local function reduce_scatter_dim(m, x, d, sizes)
  local n = x:size(d)
  if not sizes then
    sizes = {}
    for r = 0, m.world - 1 do sizes[r + 1] = select(2, chunk_range(n, m.world, r)) end
  end
  if m.world == 1 then return x:clone() end
  local xm = x:movedim(d, 0)
  local max = math.max(table.unpack(sizes))
  local parts, off = {}, 0
  for r, s in ipairs(sizes) do
    parts[r] = padded(xm:narrow(0, off, s), max)
    off = off + s
  end
  local shape = xm:size():totable()
  shape[1] = max
  local out = torch.empty(shape, { dtype = x.dtype, device = x.device })
  dist.reduce_scatter_tensor(out, torch.cat(parts, 0):contiguous(), { group = m.group })
  return out:narrow(0, 0, sizes[m.rank + 1]):movedim(0, d):contiguous()
end

local function all_reduce(m, x)
  local y = x:contiguous():clone()
  if m.world > 1 then dist.all_reduce(y, { group = m.group }) end
  return y
end

local function local_chunk(m, x, d)
  local start, len = chunk_range(x:size(d), m.world, m.rank)
  return x:narrow(d, start, len):contiguous()
end

local Function = torch.autograd.Function

-- forward all-reduce (a Partial made whole), backward identity
local ReduceFwd = Function:extend("TPAllReduce")
function ReduceFwd.forward(_, m, x) return all_reduce(m, x) end
function ReduceFwd.backward(_, g) return nil, g end

-- forward identity, backward all-reduce (a replicated input read by a sharded consumer)
local ReduceBwd = Function:extend("TPAllReduceGrad")
function ReduceBwd.forward(ctx, m, x) ctx.m = m; return x:clone() end
function ReduceBwd.backward(ctx, g) return nil, g and all_reduce(ctx.m, g) end

-- forward all-gather along d; backward this rank's piece of the gradient, summed over the ranks
-- first (reduce-scatter) when it is partial
local GatherFwd = Function:extend("TPAllGather")
function GatherFwd.forward(ctx, m, d, partial, x)
  local y, sizes = gather_dim(m, x, d)
  ctx.m, ctx.d, ctx.partial, ctx.sizes = m, d, partial, sizes
  return y
end
function GatherFwd.backward(ctx, g)
  if g == nil then return nil, nil, nil, nil end
  if ctx.partial then return nil, nil, nil, reduce_scatter_dim(ctx.m, g, ctx.d, ctx.sizes) end
  local off = 0
  for r = 1, ctx.m.rank do off = off + ctx.sizes[r] end
  return nil, nil, nil, g:narrow(ctx.d, off, ctx.sizes[ctx.m.rank + 1]):contiguous()
end

-- forward this rank's torch.chunk piece along d; backward all-gather
local ChunkFwd = Function:extend("TPChunk")
function ChunkFwd.forward(ctx, m, d, x) ctx.m, ctx.d = m, d; return local_chunk(m, x, d) end
function ChunkFwd.backward(ctx, g) return nil, nil, g and (gather_dim(ctx.m, g, ctx.d)) end

-- forward reduce-scatter along d (a Partial into shards); backward all-gather
local ScatterFwd = Function:extend("TPReduceScatter")
function ScatterFwd.forward(ctx, m, d, x) ctx.m, ctx.d = m, d; return reduce_scatter_dim(m, x, d) end
function ScatterFwd.backward(ctx, g) return nil, nil, g and (gather_dim(ctx.m, g, ctx.d)) end

-- x (a local tensor laid out as src) laid out as dst; partial_grad: the consumer's gradient of
-- a replicated result is partial (reduce it here)
local function redistribute(m, x, src, dst, what, partial_grad)
  if not torch.is_tensor(x) then U.errorf("%s: expected a tensor input, got %s", what, U.typename(x)) end
  local mt, dmt = getmetatable(src), getmetatable(dst)
  if dmt == Partial_MT then U.errorf("%s: redistributing to Partial() is not supported", what) end
  if mt == Partial_MT then
    if dmt == Replicate_MT then return ReduceFwd.apply(m, x) end
    return ScatterFwd.apply(m, norm_dim(dst.dim, x:dim(), what), x)
  end
  if mt == Replicate_MT then
    if dmt == Replicate_MT then return partial_grad and ReduceBwd.apply(m, x) or x end
    return ChunkFwd.apply(m, norm_dim(dst.dim, x:dim(), what), x)
  end
  local d = norm_dim(src.dim, x:dim(), what)
  if dmt == Replicate_MT then return GatherFwd.apply(m, d, partial_grad == true, x) end
  if norm_dim(dst.dim, x:dim(), what) == d then return x end
  U.errorf("%s: redistributing %s to %s (an all-to-all) is not supported", what, tostring(src), tostring(dst))
end
tp._redistribute = redistribute

-- ---- sharding parameters ----

-- p as rank src's value: broadcast over the mesh (src nil: this rank's own value), on the
-- mesh's device (a CPU module parallelized over nccl moves to this rank's GPU, as PyTorch's)
local function from_src(m, p, src)
  local t = p:detach():to(dist._device(m.group)):contiguous():clone()
  if src ~= nil and m.world > 1 then dist.broadcast(t, { group_src = src, group = m.group }) end
  return t
end

local function set_param(module, name, t, requires_grad)
  values_of(module)[name] = nil
  module._parameters:remove(name)
  module:register_parameter(name, Parameter(t, requires_grad))
end

-- each parameter of module (own, not its children's) cut along dims[name] (a table name ->
-- dim, or one dim for all); a dim of false keeps the parameter replicated
local function shard_params(m, module, dims, src)
  local params = {}
  for name, p in pairs(module._parameters) do params[#params + 1] = { name, p } end
  for _, e in ipairs(params) do
    local name, p = e[1], e[2]
    if p ~= nil then
      local d = dims
      if type(dims) == "table" then d = dims[name] end
      local t = from_src(m, p, src)
      if d ~= false then t = local_chunk(m, t, d):clone() end
      set_param(module, name, t, p.requires_grad)
    end
  end
end

-- install forward(self, ...) over the module's current forward (passed as its first argument)
local function wrap_forward(module, fn)
  local inner = module.forward
  values_of(module).forward = function(self, ...) return fn(inner, self, ...) end
end

-- ---- the mesh ----

local function tp_mesh(mesh, fn)
  if getmetatable(mesh) ~= getmetatable(dist.device_mesh.DeviceMesh).__index then
    U.errorf("%s: device_mesh must be a DeviceMesh (init_device_mesh), got %s", fn, U.typename(mesh))
  end
  if mesh.ndim > 1 then
    U.errorf("Tensor Parallel only accepts a 1D DeviceMesh, but found %dD!If you have a 2-D or N-D device_mesh, consider passing in device_mesh[\"tp\"]", mesh.ndim)
  end
  if not mesh:get_coordinate() then U.errorf("%s: rank %d is not in the device mesh", fn, dist.get_rank()) end
  return { group = mesh:get_group(), world = mesh:size(), rank = mesh:get_local_rank(), mesh = mesh }
end

-- ---- parallel styles ----

local ParallelStyle = { __name = "torch.distributed.tensor.parallel.ParallelStyle" }
ParallelStyle.__index = ParallelStyle
tp.ParallelStyle = ParallelStyle

local function style_class(name)
  local cls = setmetatable({ __name = "torch.distributed.tensor.parallel." .. name, _short = name }, { __index = ParallelStyle })
  cls.__index = cls
  cls.__tostring = function(s)
    local parts = {}
    for _, k in ipairs(s._show) do parts[#parts + 1] = k .. "=" .. tostring(s[k]) end
    return name .. "(" .. table.concat(parts, ", ") .. ")"
  end
  return cls
end

local function is_style(s)
  local mt = getmetatable(s)
  return type(mt) == "table" and getmetatable(mt) ~= nil and getmetatable(mt).__index == ParallelStyle
end

local function check_layout(fn, key, p, default)
  if p == nil then return default end
  if type(p) == "table" and not is_placement(p) and #p == 1 and is_placement(p[1]) then p = p[1] end
  if not is_placement(p) then U.errorf("%s: %s must be a placement (Shard(dim), Replicate()), got %s", fn, key, U.typename(p)) end
  return p
end

local function check_local_output(fn, v)
  if v ~= true then
    U.errorf("%s: use_local_output=false is not supported: nnrepl has no DTensor, the output is always the local tensor (use_local_output=true)", fn)
  end
  return v
end

local function is_linear(mod) return Module.isinstance(mod, torch.nn.Linear) end
local function is_embedding(mod) return Module.isinstance(mod, torch.nn.Embedding) end

-- ColwiseParallel: Linear weight and bias cut along dim 0 (output features), Embedding weight
-- along dim 1; the input made replicated, the output sharded on the last dim
-- a style class whose constructor takes {input_layouts =, output_layouts =, use_local_output = true}
local function linear_style(name, in_default, out_default)
  local cls = style_class(name)
  tp[name] = setmetatable({}, { __index = cls, __call = function(_, ...)
    local o = U.parse(name, { { "input_layouts" }, { "output_layouts" }, { "use_local_output", true } }, ...)
    return setmetatable({ input_layouts = check_layout(name, "input_layouts", o.input_layouts, in_default),
      output_layouts = check_layout(name, "output_layouts", o.output_layouts, out_default),
      use_local_output = check_local_output(name, o.use_local_output),
      _show = { "input_layouts", "output_layouts", "use_local_output" } }, cls)
  end })
  return cls
end

local Colwise = linear_style("ColwiseParallel", REPLICATE, LAST)

function Colwise:_apply(module, m)
  local what = "ColwiseParallel"
  local ins, outs = self.input_layouts, self.output_layouts
  if is_linear(module) then
    shard_params(m, module, 0, self.src_data_rank)
    wrap_forward(module, function(_, mod, x)
      x = redistribute(m, x, ins, REPLICATE, what, true)
      return redistribute(m, U.F("linear", x, mod.weight, mod.bias), LAST, outs, what)
    end)
  elseif is_embedding(module) then
    if module.max_norm ~= nil then U.error("ColwiseParallel: an Embedding with max_norm is not supported (the norm of a row spans the shards)") end
    shard_params(m, module, 1, self.src_data_rank)
    wrap_forward(module, function(_, mod, x)
      x = redistribute(m, x, ins, REPLICATE, what)
      local y = U.F("embedding", x, mod.weight, mod.padding_idx, nil, mod.norm_type, mod.scale_grad_by_freq, mod.sparse)
      return redistribute(m, y, LAST, outs, what)
    end)
  else
    U.error("ColwiseParallel currently only support nn.Linear and nn.Embedding!")
  end
  return module
end

-- RowwiseParallel: Linear weight cut along dim 1 (input features), bias replicated; Embedding
-- weight along dim 0 (the vocabulary: a masked lookup); the partial output all-reduced
-- (Replicate) or reduce-scattered (Shard)
local Rowwise = linear_style("RowwiseParallel", LAST, REPLICATE)

local PARTIAL = DT.Partial()

function Rowwise:_apply(module, m)
  local what = "RowwiseParallel"
  local ins, outs = self.input_layouts, self.output_layouts
  if is_linear(module) then
    shard_params(m, module, { weight = 1, bias = false }, self.src_data_rank)
    wrap_forward(module, function(_, mod, x)
      x = redistribute(m, x, ins, LAST, what)
      local y = redistribute(m, U.F("linear", x, mod.weight), PARTIAL, outs, what)
      local b = mod.bias
      if b == nil then return y end
      if getmetatable(outs) == Shard_MT then -- the bias of this rank's piece
        if norm_dim(outs.dim, y:dim(), what) == y:dim() - 1 then b = ChunkFwd.apply(m, 0, b)
        else b = ReduceBwd.apply(m, b) end
      end
      return y + b
    end)
  elseif is_embedding(module) then
    if module.max_norm ~= nil then U.error("RowwiseParallel: an Embedding with max_norm is not supported") end
    local start, len = chunk_range(module.weight:size(0), m.world, m.rank)
    local pad = module.padding_idx
    if pad ~= nil then pad = (pad >= start and pad < start + len) and pad - start or nil end
    shard_params(m, module, 0, self.src_data_rank)
    wrap_forward(module, function(_, mod, x)
      x = redistribute(m, x, ins, REPLICATE, what)
      local w = mod.weight
      local outside = torch.logical_or(torch.lt(x, start), torch.ge(x, start + len))
      local y
      if len == 0 then
        local shape = x:size():totable()
        shape[#shape + 1] = w:size(1)
        y = torch.zeros(shape, { dtype = w.dtype, device = w.device })
      else
        local idx = (x - start):masked_fill(outside, 0)
        y = U.F("embedding", idx, w, pad, nil, mod.norm_type, mod.scale_grad_by_freq, mod.sparse)
        y = y:masked_fill(outside:unsqueeze(-1), 0)
      end
      return redistribute(m, y, PARTIAL, outs, what)
    end)
  else
    U.error("RowwiseParallel currently only support nn.Linear and nn.Embedding!")
  end
  return module
end

-- SequenceParallel: the module (LayerNorm, RMSNorm, Dropout, ...) runs on this rank's piece of
-- the sequence dim with its parameters replicated (their gradients all-reduced)
local SP = style_class("SequenceParallel")
tp.SequenceParallel = setmetatable({}, { __index = SP, __call = function(_, ...)
  local o = U.parse("SequenceParallel", { { "sequence_dim", 1 }, { "use_local_output", false } }, ...)
  if math.type(o.sequence_dim) ~= "integer" then U.errorf("SequenceParallel: sequence_dim must be an integer, got %s", U.typename(o.sequence_dim)) end
  return setmetatable({ sequence_dim = o.sequence_dim, use_local_output = o.use_local_output,
    _show = { "sequence_dim", "use_local_output" } }, SP)
end })

-- run inner with each of module's own parameters replaced by fn(p); p is the value the forward
-- sees (fully_shard puts the gathered full parameter there, over the registered chunk)
local function with_params(module, fn, inner, ...)
  local v, saved = values_of(module), {}
  for name, p in pairs(module._parameters) do
    if p ~= nil then saved[name] = { rawget(v, name) }; v[name] = fn(rawget(v, name) or p) end
  end
  local r = table.pack(pcall(inner, module, ...))
  for name, old in pairs(saved) do v[name] = old[1] end
  if not r[1] then error(r[2], 0) end
  return table.unpack(r, 2, r.n)
end

function SP:_apply(module, m)
  local ParallelF = function(p) return ReduceBwd.apply(m, p) end
  wrap_forward(module, function(inner, mod, x, ...)
    if not torch.is_tensor(x) then U.errorf("SequenceParallel: expecting input of %s to be a torch.Tensor, but got %s", mod:_get_name(), U.typename(x)) end
    if torch.is_grad_enabled() then return with_params(mod, ParallelF, inner, x, ...) end
    return inner(mod, x, ...)
  end)
  return module
end

-- a list of layouts (nil or false where an input is not a tensor), its length
local function layout_list(fn, key, l)
  if l == nil then return nil end
  if is_placement(l) then return { l }, 1 end
  if type(l) ~= "table" then U.errorf("%s: %s must be a placement or a list of placements, got %s", fn, key, U.typename(l)) end
  local n = 0
  for k in pairs(l) do
    if math.type(k) ~= "integer" or k < 1 then U.errorf("%s: %s must be a list", fn, key) end
    n = math.max(n, k)
  end
  local out = {}
  for i = 1, n do
    local p = l[i]
    if p ~= nil and p ~= false and not is_placement(p) then
      U.errorf("%s: %s[%d] must be a placement or nil, got %s", fn, key, i, U.typename(p))
    end
    out[i] = p or false
  end
  return out, n
end

local function prepare(m, vals, src, dst, what)
  for i, s in ipairs(src) do
    if s and dst[i] then
      if vals[i] == nil or not torch.is_tensor(vals[i]) then
        U.errorf("%s: input %d has layout %s but is %s, not a tensor", what, i, tostring(s), U.typename(vals[i]))
      end
      vals[i] = redistribute(m, vals[i], s, dst[i], what)
    elseif s or dst[i] then
      U.errorf("%s: input %d has a layout in one of the lists but not the other", what, i)
    end
  end
end

local function pair_lists(fn, a, b, names)
  local la, na = layout_list(fn, names[1], a)
  local lb, nb = layout_list(fn, names[2], b)
  if la == nil or lb == nil then U.errorf("%s: %s and %s are required", fn, names[1], names[2]) end
  if na ~= nb then U.errorf("%s: %s and %s should have same length!", fn, names[1], names[2]) end
  return la, lb
end

-- PrepareModuleInput: the module's positional inputs redistributed from input_layouts to
-- desired_input_layouts before its forward
local PMI = style_class("PrepareModuleInput")
tp.PrepareModuleInput = setmetatable({}, { __index = PMI, __call = function(_, ...)
  local fn = "PrepareModuleInput"
  local o = U.parse(fn, { { "input_layouts" }, { "desired_input_layouts" }, { "input_kwarg_layouts" },
    { "desired_input_kwarg_layouts" }, { "use_local_output", false } }, ...)
  if o.input_kwarg_layouts ~= nil or o.desired_input_kwarg_layouts ~= nil then
    U.errorf("%s: input_kwarg_layouts are not supported (modules here take positional inputs)", fn)
  end
  local a, b = pair_lists(fn, o.input_layouts, o.desired_input_layouts, { "input_layouts", "desired_input_layouts" })
  return setmetatable({ input_layouts = a, desired_input_layouts = b, use_local_output = o.use_local_output, _show = {} }, PMI)
end })

function PMI:_apply(module, m)
  local src, dst = self.input_layouts, self.desired_input_layouts
  wrap_forward(module, function(inner, mod, ...)
    local args = table.pack(...)
    prepare(m, args, src, dst, "PrepareModuleInput")
    return inner(mod, table.unpack(args, 1, args.n))
  end)
  return module
end

-- PrepareModuleOutput: the module's outputs redistributed after its forward
local PMO = style_class("PrepareModuleOutput")
tp.PrepareModuleOutput = setmetatable({}, { __index = PMO, __call = function(_, ...)
  local fn = "PrepareModuleOutput"
  local o = U.parse(fn, { { "output_layouts" }, { "desired_output_layouts" }, { "use_local_output", true } }, ...)
  local a, b = pair_lists(fn, o.output_layouts, o.desired_output_layouts, { "output_layouts", "desired_output_layouts" })
  return setmetatable({ output_layouts = a, desired_output_layouts = b, use_local_output = o.use_local_output, _show = {} }, PMO)
end })

function PMO:_apply(module, m)
  local src, dst = self.output_layouts, self.desired_output_layouts
  wrap_forward(module, function(inner, mod, ...)
    local out = table.pack(inner(mod, ...))
    prepare(m, out, src, dst, "PrepareModuleOutput")
    return table.unpack(out, 1, out.n)
  end)
  return module
end

-- ---- parallelize_module ----

-- fnmatch's pattern (*, ?, [...]) as a Lua pattern
local function glob_pattern(s)
  local out, i = { "^" }, 1
  while i <= #s do
    local c = s:sub(i, i)
    if c == "*" then out[#out + 1] = ".*"
    elseif c == "?" then out[#out + 1] = "."
    elseif c == "[" and s:find("]", i + 1, true) then
      local j = s:find("]", i + 1, true)
      local body = s:sub(i + 1, j - 1):gsub("^!", "^"):gsub("%%", "%%%%")
      out[#out + 1] = "[" .. body .. "]"
      i = j
    else out[#out + 1] = c:gsub("%W", "%%%0") end
    i = i + 1
  end
  out[#out + 1] = "$"
  return table.concat(out)
end

local function apply_style(module, m, style, src)
  style.src_data_rank = src
  local ok, err = pcall(style._apply, style, module, m)
  style.src_data_rank = nil
  if not ok then error(err, 0) end
  return module
end

-- apply style to the submodules path names (dotted, fnmatch wildcards per atom), as PyTorch
-- does: a level where no child matches warns and skips the entry
local function apply_path(module, m, path, style, src)
  local atom, rest = path:match("^([^.]*)%.(.*)$")
  atom = atom or path
  local pat, matched = glob_pattern(atom), false
  for _, e in ipairs(module:named_children()) do
    if e[1]:match(pat) then
      matched = true
      if rest then apply_path(e[2], m, rest, style, src) else apply_style(e[2], m, style, src) end
    end
  end
  if not matched then
    U.warn(string.format("Parallelize plan key '%s' could not be resolved: no submodule matching token '%s' in module %s, skipping this plan entry.",
      path, atom, module:_get_name()))
  end
end

function tp.parallelize_module(module, device_mesh, parallelize_plan, ...)
  local o = U.parse("parallelize_module", { { "src_data_rank", 0 } }, ...)
  if not Module.is_module(module) then U.errorf("parallelize_module: module must be an nn.Module, got %s", U.typename(module)) end
  if device_mesh == nil then U.error("parallelize_module: device_mesh is required (nnrepl has no current mesh); pass init_device_mesh(...)") end
  if not (dist.is_initialized and dist.is_initialized()) then
    U.error("parallelize_module: Default process group has not been initialized, please make sure to call init_process_group.")
  end
  local m = tp_mesh(device_mesh, "parallelize_module")
  local src = o.src_data_rank -- false: Python's None, each rank keeps its own values
  if src == false then src = nil
  elseif (math.type(src) ~= "integer" or src < 0 or src >= m.world) then
    U.errorf("parallelize_module: src_data_rank must be false (None) or a rank of the mesh (0..%d), got %s", m.world - 1, tostring(src))
  end
  if parallelize_plan == nil then
    U.warn("No parallelize_plan is provided and auto-parallel is not supported at the moment, so this parallelize_module call will do nothing.")
    return module
  end
  if is_style(parallelize_plan) then return apply_style(module, m, parallelize_plan, src) end
  if type(parallelize_plan) ~= "table" or getmetatable(parallelize_plan) ~= nil then
    U.errorf("Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for parallelize_plan, %s found!", U.typename(parallelize_plan))
  end
  -- keys in sorted order: every rank applies (and broadcasts) in the same order
  local keys = {}
  for k, v in pairs(parallelize_plan) do
    if type(k) ~= "string" then U.errorf("parallelize_module: plan keys must be module paths (strings), got %s", U.typename(k)) end
    if not is_style(v) then U.errorf("parallelize_module: the plan's value for '%s' must be a ParallelStyle, got %s", k, U.typename(v)) end
    if k:match("^%s*$") then U.error("Expect module path to be non-empty, but got empty string!") end
    keys[#keys + 1] = k
  end
  table.sort(keys)
  for _, k in ipairs(keys) do
    apply_path(module, m, k, parallelize_plan[k], src)
  end
  return module
end

function tp.loss_parallel()
  U.error("loss_parallel is not supported in nnrepl: it needs DTensor logits sharded on the class dim; " ..
    "gather the logits instead (ColwiseParallel{output_layouts = Replicate()} on the output projection) and use F.cross_entropy")
end

return tp
