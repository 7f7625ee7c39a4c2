-- torch.utils.checkpoint.checkpoint(fn, ...): activation checkpointing. The forward runs
-- without keeping fn's activations; backward runs fn again (with the random state it had,
-- so dropout draws the same mask) and backpropagates through that. torch.compile(model)
-- gives the model back as it is (nnrepl has no graph compiler; torch.cuda.graphs capture
-- whole steps instead), so scripts that call it run unchanged. torch.cuda.get_rng_state /
-- set_rng_state are torch's: one counter-based generator serves every device.
local torch = require "torch"
local U = require "nn_util"

torch.utils = torch.utils or {}
local checkpoint = {}
torch.utils.checkpoint = checkpoint

local Checkpoint = torch.autograd.Function:extend("CheckpointFunction") -- grad_fn CheckpointFunctionBackward, as PyTorch's

-- the arguments after the first n are fn's parameters, passed only so that the output requires
-- grad (backward's recomputation gives them their gradients)
function Checkpoint.forward(ctx, fn, preserve, n, ...)
  ctx.fn, ctx.n, ctx.args = fn, n, table.pack(...)
  if preserve then ctx.rng = torch.get_rng_state() end
  return fn(table.unpack(ctx.args, 1, n))
end

function Checkpoint.backward(ctx, ...)
  local grads = table.pack(...)
  local args, inputs = {}, {}
  for i = 1, ctx.n do
    local a = ctx.args[i]
    if torch.is_tensor(a) then
      local d = a:detach()
      d:requires_grad_(a.requires_grad)
      if a.requires_grad then inputs[#inputs + 1] = d end
      args[i] = d
    else
      args[i] = a
    end
  end
  local outs
  do
    local now
    if ctx.rng then
      now = torch.get_rng_state()
      torch.set_rng_state(ctx.rng)
    end
    local _ <close> = torch.enable_grad()
    outs = table.pack(ctx.fn(table.unpack(args, 1, ctx.n)))
    if now then torch.set_rng_state(now) end
  end
  local roots, gs = {}, {}
  for j = 1, outs.n do
    if torch.is_tensor(outs[j]) and outs[j].requires_grad and grads[j] ~= nil then
      roots[#roots + 1], gs[#gs + 1] = outs[j], grads[j]
    end
  end
  if #roots > 0 then torch.autograd.backward(roots, gs) end -- parameters inside fn get their gradients here
  local result = { nil, nil, nil }
  for i = 1, ctx.n do
    local a = args[i]
    result[3 + i] = torch.is_tensor(a) and a.requires_grad and a.grad or nil
  end
  return table.unpack(result, 1, 3 + ctx.args.n) -- nil for the parameters: the recomputation gave them theirs
end

-- checkpoint(fn, args..., [{use_reentrant=, preserve_rng_state=true}])
function checkpoint.checkpoint(fn, ...)
  if type(fn) ~= "function" and not (type(fn) == "table" and getmetatable(fn) and getmetatable(fn).__call) then
    U.errorf("checkpoint: the first argument must be a function or a module, got %s", U.typename(fn))
  end
  local args = table.pack(...)
  local preserve, reentrant = true, nil
  local last = args[args.n]
  if args.n > 0 and U.is_opts(last) then
    local o = U.parse("checkpoint", { { "use_reentrant" }, { "preserve_rng_state", true }, { "determinism_check" }, { "debug" } }, last)
    preserve, reentrant = o.preserve_rng_state, o.use_reentrant
    args.n = args.n - 1
  end
  if not torch.is_grad_enabled() then return fn(table.unpack(args, 1, args.n)) end
  -- use_reentrant=false: a module's parameters count as inputs, so that with inputs that do not
  -- require grad (a first layer's) the output still does, as PyTorch's non-reentrant checkpoint
  -- (the reentrant one gives an output without grad then)
  local n, extra = args.n, {}
  if reentrant == false and type(fn) == "table" and type(fn.parameters) == "function" then
    for _, p in ipairs(fn:parameters()) do if p.requires_grad then extra[#extra + 1] = p end end
  end
  for i, p in ipairs(extra) do args[n + i] = p end
  return Checkpoint.apply(fn, preserve, n, table.unpack(args, 1, n + #extra))
end

-- checkpoint_sequential(functions, segments, input): a Sequential (or a list) run in segments,
-- each but the last one checkpointed
function checkpoint.checkpoint_sequential(functions, segments, input, opts)
  local list = {}
  if type(functions) == "table" and functions.children then
    for _, m in ipairs(functions:children()) do list[#list + 1] = m end
  else
    list = functions
  end
  segments = U.check_int("checkpoint_sequential", "segments", segments, 1)
  local size = math.max(1, #list // segments)
  local function run(from, to)
    return function(x)
      for i = from, to do x = list[i](x) end
      return x
    end
  end
  local start = 1
  while start + size - 1 < #list do
    input = checkpoint.checkpoint(run(start, start + size - 1), input, opts)
    start = start + size
  end
  return run(start, #list)(input)
end

-- torch.compile(model, {fullgraph=, dynamic=, backend=, mode=, options=, disable=}): the model itself
function torch.compile(model, ...)
  U.parse("compile", { { "fullgraph", false }, { "dynamic" }, { "backend", "inductor" }, { "mode" }, { "options" },
    { "disable", false } }, ...)
  if model == nil then return function(m) return m end end -- as a decorator: torch.compile()(fn)
  return model
end

if torch.cuda then
  torch.cuda.get_rng_state = torch.get_rng_state
  torch.cuda.set_rng_state = torch.set_rng_state
end

return checkpoint
