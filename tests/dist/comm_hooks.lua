-- torch.futures, Work:get_future() and DDP communication hooks (gloo), against gradients
-- worked out by hand: the model's loss is sum(a * xa) + sum(b * xb) + sum(c * xc), so each
-- rank's gradients are its inputs, known on every rank. Run by test_dist.sh with 2 and 3 ranks
-- (gloo, CPU) and with `nccl` as argument on every GPU (each rank on cuda:LOCAL_RANK).
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local DDP = nn.parallel.DistributedDataParallel
local Future = torch.futures.Future

local backend, dev = H.init(arg[1])
local rank, world = dist.get_rank(), dist.get_world_size()
local hooks = dist.algorithms.ddp_comm_hooks.default_hooks

-- (torch.futures on their own: tests/lua/test_futures.lua)

-- ---- Work:get_future() ----
do
  local t = torch.full({ 3 }, rank + 1.0, { device = dev })
  local w = dist.all_reduce(t, { async_op = true })
  local fut = w:get_future()
  local doubled = fut:then_(function(f) return f:value()[1] * 2 end)
  local total = world * (world + 1) / 2
  H.close(doubled:wait(), torch.full({ 3 }, 2.0 * total), 0, "all_reduce's future: value()[1] is the reduced tensor")
  H.check(fut:done() and fut:value()[1] == t and w:result()[1] == t, "the future's value is {tensor}, as Work.result()")
  local u = torch.full({ 2 }, rank + 1.0, { device = dev })
  local fu = dist.all_reduce(u, { op = dist.ReduceOp.MAX, async_op = true }):get_future()
  H.close(torch.futures.wait_all({ fu })[1][1], torch.full({ 2 }, world * 1.0), 0, "wait_all on a work's future")
  local b = torch.full({ 2 }, rank * 1.0, { device = dev })
  local fb = dist.broadcast(b, { src = world - 1, async_op = true }):get_future()
  fb:wait()
  H.close(b, torch.full({ 2 }, world - 1.0), 0, "broadcast's future")
  H.check(dist.all_reduce(torch.ones(1, { device = dev })) == nil, "all_reduce without async_op returns nothing")
end

-- ---- the model: gradients are each rank's inputs ----
local Dots = nn.Module:extend("Dots")
function Dots:__init(unused)
  self.a = nn.Parameter(torch.zeros(5))
  self.b = nn.Parameter(torch.zeros(3, 2))
  self.c = nn.Parameter(torch.zeros(7))
  if unused then self.d = nn.Parameter(torch.zeros(13)) end -- 52 bytes: a bucket of its own, complete at forward
end
function Dots:forward(x)
  return (self.a * x.a):sum() + (self.b * x.b):sum() + (self.c * x.c):sum()
end

-- rank r's inputs (its gradients): multiples of 1/4 (sums exact in any order), or any floats
local function inputs(r, dyadic)
  torch.manual_seed(100 + r)
  local function one(...)
    if dyadic then return torch.randint(-16, 17, { ... }):float() / 4 end
    return torch.randn(...) * 3
  end
  return { a = one(5):to(dev), b = one(3, 2):to(dev), c = one(7):to(dev) }
end

-- the average of every rank's inputs, worked out here
local function mean_inputs(dyadic)
  local m = { a = torch.zeros(5, { device = dev }), b = torch.zeros(3, 2, { device = dev }), c = torch.zeros(7, { device = dev }) }
  for r = 0, world - 1 do
    local x = inputs(r, dyadic)
    for k, v in pairs(x) do m[k] = m[k] + v end
  end
  for k, v in pairs(m) do m[k] = v / world end
  return m
end

-- 50 bytes a bucket: c (28 bytes) and b (24) in bucket 0, a in bucket 1
local CAP = 50 / (1024 * 1024)

local function wrap(opts, unused)
  local net = Dots(unused):to(dev)
  local o = { bucket_cap_mb = CAP }
  for k, v in pairs(opts or {}) do o[k] = v end
  return net, DDP(net, o)
end

local function grads(net) return { a = net.a.grad:clone(), b = net.b.grad:clone(), c = net.c.grad:clone() } end

local function step(model, net, x, keep)
  if not keep then net:zero_grad() end
  model(x):backward()
  return grads(net)
end

local function same(got, want, tol, what)
  for _, k in ipairs({ "a", "b", "c" }) do H.close(got[k], want[k], tol, "%s: gradient of %s", what, k) end
end

local xd, mean_d = inputs(rank, true), mean_inputs(true)
local x, mean = inputs(rank, false), mean_inputs(false)

-- the default reduction, twice (the reducer starts afresh each pass)
local net0, model0 = wrap()
H.check(#model0:_buckets() == 2, "two buckets (%d)", #model0:_buckets())
same(step(model0, net0, xd), mean_d, 1e-6, "default DDP")
local default = step(model0, net0, xd)
same(default, mean_d, 1e-6, "default DDP, second step")
local default_f = step(model0, net0, x)

-- a hook that doubles the average: exactly twice the default
do
  local net, model = wrap()
  local calls = 0
  model:register_comm_hook({ factor = 2 }, function(state, bucket)
    calls = calls + 1
    local fut = dist.all_reduce(bucket:buffer(), { op = dist.ReduceOp.AVG, async_op = true }):get_future()
    return fut:then_(function(f) return f:value()[1] * state.factor end)
  end)
  for it = 1, 2 do
    local g = step(model, net, xd)
    same(g, { a = default.a * 2, b = default.b * 2, c = default.c * 2 }, 0, "doubling hook, step " .. it)
  end
  H.check(calls == 4, "the hook ran once per bucket and step (%d calls)", calls)
end

-- allreduce_hook, and the builtin ALLREDUCE, give the default's averages
local function in_lua(hook) return function(s, bucket) return hook(s, bucket) end end -- not recognised: run from Lua
for _, case in ipairs({ { "allreduce_hook (in the reducer)", hooks.allreduce_hook }, { "allreduce_hook (from Lua)", in_lua(hooks.allreduce_hook) },
  { "builtin ALLREDUCE", dist.BuiltinCommHookType.ALLREDUCE } }) do
  local net, model = wrap()
  if type(case[2]) == "function" then model:register_comm_hook(nil, case[2]) else model:_register_builtin_comm_hook(case[2]) end
  -- dividing first: exact for two ranks (a power of two), within rounding for three
  same(step(model, net, xd), default, world == 2 and 0 or 1e-6, case[1] .. " against the default")
  same(step(model, net, x), default_f, world == 2 and 0 or 2e-6, case[1] .. " against the default, any floats")
end

-- fp16 / bf16 compression: the average rounded through 16 bits
local function emulate(dtype, dyadic) -- sum over the ranks of (x_r in 16 bits) / world, in 16-bit arithmetic
  local s
  for r = 0, world - 1 do
    local xr = inputs(r, dyadic)
    local part = {}
    for k, v in pairs(xr) do part[k] = v:to(dtype) / world end
    if not s then s = part else for k, v in pairs(part) do s[k] = s[k] + v end end
  end
  for k, v in pairs(s) do s[k] = v:float() end
  return s
end
local fp16_result, bf16_result
for _, case in ipairs({ { "fp16_compress_hook (in the reducer)", hooks.fp16_compress_hook, torch.float16, 2 ^ -11 },
  { "fp16_compress_hook (from Lua)", in_lua(hooks.fp16_compress_hook), torch.float16, 2 ^ -11 },
  { "bf16_compress_hook (in the reducer)", hooks.bf16_compress_hook, torch.bfloat16, 2 ^ -8 },
  { "bf16_compress_hook (from Lua)", in_lua(hooks.bf16_compress_hook), torch.bfloat16, 2 ^ -8 },
  { "builtin FP16_COMPRESS", dist.BuiltinCommHookType.FP16_COMPRESS, torch.float16, 2 ^ -11 } }) do
  local name, hook, dtype, eps = case[1], case[2], case[3], case[4]
  local net, model = wrap()
  if type(hook) == "function" then model:register_comm_hook(nil, hook) else model:_register_builtin_comm_hook(hook) end
  local g = step(model, net, x)
  local big = 0
  for _, v in pairs(mean) do big = math.max(big, v:abs():max():item()) end
  -- each rank's value rounded twice (to 16 bits, divided) and world - 1 rounded additions
  same(g, mean, 4 * (world + 1) * eps * big * 2, name .. " within 16-bit rounding of the exact average")
  same(g, emulate(dtype), world == 2 and 0 or 2 * world * eps * big, name .. " against the 16-bit sum worked out here")
  local all16 = true
  for _, v in pairs(g) do all16 = all16 and H.maxdiff(v, v:to(dtype):float()) == 0 end
  H.check(all16, "%s: the gradients hold 16-bit values", name)
  if dtype == torch.float16 then
    if fp16_result then same(g, fp16_result, 0, name .. " equals fp16_compress_hook") else fp16_result = g end
  else
    if bf16_result then same(g, bf16_result, 0, name .. " equals bf16_compress_hook in the reducer") else bf16_result = g end
  end
end

-- GradBucket's methods, seen from a hook that records them
do
  local net, model = wrap()
  local seen = {}
  model:register_comm_hook(nil, function(_, bucket)
    local ps, gs = bucket:parameters(), bucket:gradients()
    local rec = { index = bucket:index(), last = bucket:is_last(), n = bucket:buffer():numel(), params = ps, grads = {} }
    for j, gr in ipairs(gs) do rec.grads[j] = gr:clone() end
    seen[#seen + 1] = rec
    return hooks.allreduce_hook(nil, bucket)
  end)
  local g = step(model, net, xd)
  same(g, default, world == 2 and 0 or 1e-6, "the recording hook's result")
  H.check(#seen == 2, "two buckets seen (%d)", #seen)
  local b0, b1 = seen[1], seen[2]
  H.check(b0.index == 0 and b1.index == 1, "index(): 0 then 1")
  H.check(not b0.last and b1.last, "is_last() on the last bucket only")
  H.check(b0.n == 13 and b1.n == 5, "buffer() sizes: 13 and 5 (got %d, %d)", b0.n, b1.n)
  H.check(#b0.params == 2 and b0.params[1] == net.c and b0.params[2] == net.b and #b1.params == 1 and b1.params[1] == net.a,
    "parameters(): c and b, then a")
  H.close(b0.grads[1], xd.c, 0, "gradients(): c's own gradient, not divided")
  H.close(b0.grads[2], xd.b, 0, "gradients(): b's, shaped like b")
  H.close(b1.grads[1], xd.a, 0, "gradients(): a's")
end

-- set_buffer, and a hook returning its buffer as is: no reduction at all
do
  local net, model = wrap()
  model:register_comm_hook(nil, function(_, bucket)
    local replaced = bucket:buffer() * 0 + rank
    bucket:set_buffer(replaced)
    H.check(bucket:buffer() == replaced, "set_buffer replaces buffer()")
    local f = Future()
    f:set_result(bucket:buffer())
    return f
  end)
  local g = step(model, net, xd)
  H.close(g.a, torch.full({ 5 }, rank * 1.0), 0, "the hook's value becomes the gradient")
end

-- no_sync: local accumulation, then one hooked reduction of the sums
do
  local net, model = wrap()
  local calls = 0
  model:register_comm_hook(nil, function(s, bucket)
    calls = calls + 1
    return hooks.allreduce_hook(s, bucket)
  end)
  net:zero_grad()
  do
    local _ <close> = model:no_sync()
    model(xd):backward()
    model(xd):backward()
  end
  H.check(calls == 0, "no hook inside no_sync (%d calls)", calls)
  H.close(net.a.grad, xd.a * 2, 0, "inside no_sync the gradients are this rank's own")
  model(xd):backward()
  H.check(calls == 2, "the synced backward runs the hook per bucket (%d)", calls)
  same(grads(net), { a = mean_d.a * 3, b = mean_d.b * 3, c = mean_d.c * 3 }, 1e-6, "no_sync then a hooked backward")
end

-- find_unused_parameters and gradient_as_bucket_view with a hook
do
  -- multiples of 1/4 up to 4: exact in 16 bits for two ranks; a third rounds within 2^-11 * 4 per step
  local tol16 = world == 2 and 0 or 3 * 2 ^ -11 * 4
  for _, hook in ipairs({ hooks.fp16_compress_hook, in_lua(hooks.fp16_compress_hook) }) do
    local net, model = wrap({ find_unused_parameters = true }, true)
    H.check(#model:_buckets() == 3 and model:_buckets()[1][1] == 3, "the unused parameter's bucket is reduced first")
    model:register_comm_hook(nil, hook)
    for it = 1, 2 do
      same(step(model, net, xd), emulate(torch.float16, true), tol16, "find_unused_parameters with fp16_compress_hook, step " .. it)
    end
    H.check(net.d.grad == nil, "the unused parameter's grad stays nil")
  end
  local net, model = wrap({ gradient_as_bucket_view = true })
  model:register_comm_hook(nil, hooks.allreduce_hook)
  for it = 1, 2 do same(step(model, net, xd), default, world == 2 and 0 or 1e-6, "gradient_as_bucket_view, step " .. it) end
  net, model = wrap({ gradient_as_bucket_view = true })
  model:_register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
  same(step(model, net, xd), emulate(torch.float16, true), tol16, "gradient_as_bucket_view with the builtin FP16_COMPRESS")
end

-- errors
do
  local _, model = wrap()
  H.raises(function() model:register_comm_hook(nil, 42) end, "Communication hook must be callable.", "a hook that is not a function")
  model:register_comm_hook(nil, hooks.allreduce_hook)
  H.raises(function() model:register_comm_hook(nil, hooks.allreduce_hook) end,
    "register_comm_hook or register_builtin_comm_hook can only be called once.", "register_comm_hook twice")
  H.raises(function() model:_register_builtin_comm_hook(dist.BuiltinCommHookType.ALLREDUCE) end,
    "register_builtin_comm_hook or register_comm_hook can only be called once.", "a builtin hook after a hook")
  H.raises(function() model:_register_builtin_comm_hook("FP16") end, "must be torch.distributed.BuiltinCommHookType", "a builtin hook by name")
  local _, m2 = wrap()
  m2:register_comm_hook(nil, in_lua(hooks.allreduce_hook))
  H.raises(function() m2:register_comm_hook(nil, hooks.fp16_compress_hook) end,
    "register_comm_hook or register_builtin_comm_hook can only be called once.", "a hook after a Lua hook")
  local _, m3 = wrap()
  m3:_register_builtin_comm_hook(dist.BuiltinCommHookType.FP16_COMPRESS)
  H.raises(function() m3:register_comm_hook(nil, in_lua(hooks.allreduce_hook)) end,
    "register_comm_hook or register_builtin_comm_hook can only be called once.", "a hook after a builtin hook")

  -- bad values fail in backward, before any collective (so every rank fails alike)
  local cases = {
    { function(_, bucket) return bucket:buffer() end, "DDP communication hook's callback must return a torch.futures.Future object, but got" },
    { function() local f = Future(); f:set_result({}); return f end, "must hold a Tensor" },
    { function() local f = Future(); f:set_result(torch.zeros(1)); return f end, "holds a tensor of 1 elements, expected the bucket's 13" },
    { function() error("the hook failed", 0) end, "the hook failed" },
    { function() local f = Future(); f:set_exception("the future failed"); return f end, "the future failed" },
  }
  for i, case in ipairs(cases) do
    local net, m = wrap()
    m:register_comm_hook(nil, case[1])
    H.raises(function() m(xd):backward() end, case[2], "bad hook %d", i)
    net:zero_grad()
  end
end

-- the same hooks on CUDA tensors (gloo stages them through the host; the GPU machine runs this)
if backend == "nccl" then
  print("comm_hooks.lua: every check above ran on the GPUs over nccl")
elseif torch.cuda.is_available() then
  local function on_cuda(t) return t:to("cuda") end
  local xc = { a = on_cuda(xd.a), b = on_cuda(xd.b), c = on_cuda(xd.c) }
  local xf = { a = on_cuda(x.a), b = on_cuda(x.b), c = on_cuda(x.c) }
  local function cuda_model(hook)
    local net = Dots():to("cuda")
    local model = DDP(net, { bucket_cap_mb = CAP })
    if getmetatable(hook) then model:_register_builtin_comm_hook(hook) else model:register_comm_hook(nil, hook) end
    return net, model
  end
  local function cpu(g) return { a = g.a:cpu(), b = g.b:cpu(), c = g.c:cpu() } end
  local net, model = cuda_model(function(_, bucket)
    local fut = dist.all_reduce(bucket:buffer(), { op = dist.ReduceOp.AVG, async_op = true }):get_future()
    return fut:then_(function(f) return f:value()[1] * 2 end)
  end)
  same(cpu(step(model, net, xc)), { a = default.a * 2, b = default.b * 2, c = default.c * 2 }, 0, "cuda: doubling hook")
  for _, hook in ipairs({ hooks.fp16_compress_hook, in_lua(hooks.fp16_compress_hook), dist.BuiltinCommHookType.FP16_COMPRESS }) do
    net, model = cuda_model(hook)
    same(cpu(step(model, net, xf)), fp16_result, 0, "cuda: fp16 compression as on the CPU")
  end
  net, model = cuda_model(hooks.allreduce_hook)
  same(cpu(step(model, net, xc)), default, world == 2 and 0 or 1e-6, "cuda: allreduce_hook")
else
  print("comm_hooks.lua: no GPU, the CUDA section (15 checks) is skipped")
end

dist.destroy_process_group()
H.report()
