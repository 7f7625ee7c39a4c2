-- torch.cuda.make_graphed_callables: a module's or function's forward and backward each
-- captured once in a CUDA graph (torch_cuda_graph.lua), then replayed on every call.
--
--   local model = torch.cuda.make_graphed_callables(model, { x })   -- model(x) now replays
--   local f1, f2 = table.unpack(torch.cuda.make_graphed_callables({ m1, f }, { { x }, { h } }))
--
-- As in PyTorch: the sample tensors become the graphs' static inputs (each call copies its
-- arguments into them), every call returns the same output tensors, overwritten by the next
-- call, and an argument must match its sample in shape, dtype, device and requires_grad. A
-- module replays only in the training mode it was graphed in; in the other mode it runs its
-- own forward. It may have no hooks when graphed, and only its parameters may require grad.
local torch = require "torch"
local U = require "nn_util"
local Module = require "nn_module"

local cuda = torch.cuda
local NAME = "make_graphed_callables"

local function fail(fmt, ...) U.errorf(NAME .. ": " .. fmt, ...) end

local function check_module(m)
  for _, field in ipairs({ "_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks" }) do
    if rawget(m, field) then
      fail("Modules must not have hooks registered at the time they are passed. However, registering hooks " ..
        "on modules after passing them through make_graphed_callables is allowed.")
    end
  end
  for _, b in ipairs(m:buffers()) do
    if b.requires_grad then
      fail("In any torch.nn.Module passed to make_graphed_callables, only parameters may be trainable. " ..
        "All buffers must have requires_grad=false.")
    end
  end
end

-- one callable's sample arguments: a list of tensors (a lone tensor stands for { t })
local function check_samples(i, args)
  if torch.is_tensor(args) then args = { args } end
  if type(args) ~= "table" or getmetatable(args) ~= nil then
    fail("sample_args[%d] must be a list of tensors, got %s", i, U.typename(args))
  end
  local n = 0
  for k in pairs(args) do
    if math.type(k) ~= "integer" or k < 1 then fail("sample_args[%d] must be a list of tensors (key %s)", i, tostring(k)) end
    n = math.max(n, k)
  end
  for j = 1, n do
    local a = args[j]
    if not torch.is_tensor(a) then
      fail("sample_args for each callable must contain only Tensors; sample_args[%d][%d] is %s", i, j, U.typename(a))
    end
  end
  return args, n
end

-- f's results as a list, and how to give them back: as several values or as one list
local function outputs_of(...)
  local r = table.pack(...)
  local as_list = r.n == 1 and type(r[1]) == "table" and getmetatable(r[1]) == nil
  local outs = as_list and r[1] or r
  local n = as_list and #outs or r.n
  for j = 1, n do
    if not torch.is_tensor(outs[j]) then
      fail("a callable must return tensors (several, or one list of them); output %d is %s", j, U.typename(outs[j]))
    end
  end
  return outs, n, as_list
end

local function requiring_grad(list, n)
  local out = {}
  for j = 1, n do
    if list[j].requires_grad then out[#out + 1] = list[j] end
  end
  return out
end

-- the gradients of the outputs that require grad w.r.t. the surface's tensors that do
-- (nil where unused, when allowed); grad_outputs given or made empty
local function grads(outs, nout, surface, grad_outputs, allow_unused)
  local roots, inputs = requiring_grad(outs, nout), requiring_grad(surface, #surface)
  if #roots == 0 or #inputs == 0 then return {} end
  if not grad_outputs then
    grad_outputs = {}
    for j, o in ipairs(roots) do grad_outputs[j] = torch.empty_like(o) end
  end
  return torch.autograd.grad(roots, inputs, { grad_outputs = grad_outputs, allow_unused = allow_unused })
end

-- a call's arguments against the samples: the same kind of tensor, so the graph reads them right
local function check_call(statics, nuser, ...)
  local n = select("#", ...)
  if n ~= nuser then fail("the graphed callable was captured with %d argument(s), got %d", nuser, n) end
  for j = 1, n do
    local a, s = (select(j, ...)), statics[j]
    if not torch.is_tensor(a) then fail("argument %d must be a tensor, got %s", j, U.typename(a)) end
    if a.dtype ~= s.dtype or tostring(a.device) ~= tostring(s.device) or not a:is_same_size(s) then
      fail("argument %d is a %s tensor of shape %s on %s; the graph was captured for %s of shape %s on %s", j,
        tostring(a.dtype), U.shape_str(a), tostring(a.device), tostring(s.dtype), U.shape_str(s), tostring(s.device))
    end
    if a.requires_grad ~= s.requires_grad then
      fail("argument %d has requires_grad=%s but its sample had requires_grad=%s: the backward graph was captured " ..
        "for the samples' requires_grad", j, tostring(a.requires_grad), tostring(s.requires_grad))
    end
  end
end

-- one callable graphed: a function of the user's arguments that replays the graphs
local function graphed_function(c)
  local Graphed = torch.autograd.Function:extend("Graphed")
  function Graphed.forward(_, ...)
    for j = 1, c.nuser do
      local a, s = (select(j, ...)), c.surface[j]
      if a:data_ptr() ~= s:data_ptr() then s:copy_(a) end
    end
    c.fwd:replay()
    local outs = {}
    for j = 1, c.nout do outs[j] = c.outs[j]:detach() end
    return table.unpack(outs, 1, c.nout)
  end
  function Graphed.backward(_, ...)
    for j = 1, c.nout do
      local g, given = c.grad_outs[j], (select(j, ...))
      if g and given ~= nil and given:data_ptr() ~= g:data_ptr() then g:copy_(given) end
    end
    if c.bwd then c.bwd:replay() end
    local r = {}
    for j = 1, #c.surface do r[j] = c.grad_ins[j] and c.grad_ins[j]:detach() end
    return table.unpack(r, 1, #c.surface)
  end
  return function(...)
    check_call(c.surface, c.nuser, ...)
    local args = table.pack(...)
    for j = c.nuser + 1, #c.surface do args[j] = c.surface[j] end
    local r = table.pack(Graphed.apply(table.unpack(args, 1, #c.surface)))
    if c.as_list then return { table.unpack(r, 1, r.n) } end
    return table.unpack(r, 1, r.n)
  end
end

local function parse_callables(callables, sample_args)
  local one = type(callables) == "function" or Module.is_module(callables)
  if one then return { callables }, { sample_args }, true end
  if type(callables) ~= "table" or getmetatable(callables) ~= nil or #callables == 0 then
    fail("callables must be a module, a function or a list of them, got %s", U.typename(callables))
  end
  if type(sample_args) ~= "table" or #sample_args ~= #callables then
    fail("sample_args must hold one list of tensors per callable (%d callables)", #callables)
  end
  for i, c in ipairs(callables) do
    if type(c) ~= "function" and not Module.is_module(c) then
      fail("callables[%d] must be a module or a function, got %s", i, U.typename(c))
    end
  end
  return callables, sample_args, false
end

function cuda.make_graphed_callables(...)
  local o = U.parse("torch.cuda." .. NAME, { { "callables", U.REQUIRED }, { "sample_args", U.REQUIRED },
    { "num_warmup_iters", 3 }, { "allow_unused_input", false }, { "pool" } }, ...)
  U.check_int(NAME, "num_warmup_iters", o.num_warmup_iters, 0)
  if torch.is_autocast_enabled("cuda") and torch.is_autocast_cache_enabled() then
    fail("make_graphed_callables does not support the autocast caching. Please set `cache_enabled=False`.")
  end
  local callables, samples, one = parse_callables(o.callables, o.sample_args)
  local cs = {}
  for i, f in ipairs(callables) do
    local args, n = check_samples(i, samples[i])
    local surface = {}
    for j = 1, n do surface[j] = args[j] end
    if Module.is_module(f) then
      check_module(f)
      for _, p in ipairs(f:parameters()) do surface[#surface + 1] = p end
    end
    cs[i] = { f = f, args = args, nuser = n, surface = surface }
  end
  if not cuda.is_available() then
    U.errorf("torch.cuda.%s: CUDA is not available (%s)", NAME,
      cuda._is_built() and "no GPU or no driver found" or "this build has no CUDA backend")
  end
  for i, c in ipairs(cs) do
    for j, t in ipairs(c.surface) do
      if not t.is_cuda then
        fail("%s %d of callable %d is on %s; the graphs run on the GPU: move it to cuda", j > c.nuser and "parameter" or
          "sample argument", j > c.nuser and j - c.nuser or j, i, tostring(t.device))
      end
    end
  end

  -- warm up on a side stream, as PyTorch does: lazy initialisations happen outside the capture
  cuda.synchronize()
  do
    local _ <close> = cuda.stream(cuda.Stream())
    for _, c in ipairs(cs) do
      for _ = 1, o.num_warmup_iters do
        local outs, n = outputs_of(c.f(table.unpack(c.args, 1, c.nuser)))
        grads(outs, n, c.surface, nil, o.allow_unused_input)
      end
    end
  end
  cuda.synchronize()

  local pool = o.pool or cuda.graph_pool_handle()
  for _, c in ipairs(cs) do -- the forward graphs, in order
    c.fwd = cuda.CUDAGraph()
    local r = table.pack(c.fwd:capture(function() return c.f(table.unpack(c.args, 1, c.nuser)) end, { pool = pool }))
    c.outs, c.nout, c.as_list = outputs_of(table.unpack(r, 1, r.n))
  end
  for i = #cs, 1, -1 do -- the backward graphs, in reverse order as backward would run them
    local c = cs[i]
    c.grad_outs = {}
    local given = {}
    for j = 1, c.nout do
      if c.outs[j].requires_grad then
        c.grad_outs[j] = torch.empty_like(c.outs[j])
        given[#given + 1] = c.grad_outs[j]
      end
    end
    c.grad_ins = {}
    if #given > 0 and #requiring_grad(c.surface, #c.surface) > 0 then -- else nothing to differentiate: no graph
      c.bwd = cuda.CUDAGraph()
      local gi = c.bwd:capture(function() return grads(c.outs, c.nout, c.surface, given, o.allow_unused_input) end,
        { pool = pool })
      local k = 0
      for j, t in ipairs(c.surface) do
        if t.requires_grad then
          k = k + 1
          c.grad_ins[j] = gi[k]
        end
      end
    end
  end

  local ret = {}
  for i, c in ipairs(cs) do
    local graphed = graphed_function(c)
    if Module.is_module(c.f) then
      local m, mode, own = c.f, c.f.training, c.f.forward
      m.forward = function(self, ...)
        if self.training == mode then return graphed(...) end
        return own(self, ...)
      end
      ret[i] = m
    else
      ret[i] = graphed
    end
  end
  if one then return ret[1] end
  return ret
end

return torch
