-- torch.profiler around torch.distributed: each collective is one event named as PyTorch names
-- it ("gloo:all_reduce", "nccl:_all_gather_base", ...) with its input shapes, counted against
-- the calls made here; DDP's bucket all-reduces show too. Gloo's run on the group's thread (no
-- parent); NCCL's carry GPU time. Run by test_dist.sh through the launcher:
--   nnrepl --nproc-per-node 2 tests/dist/profiler.lua [gloo|nccl]
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local backend = arg[1] or "gloo"
local dist = torch.distributed
local P = torch.profiler
local nccl = backend == "nccl"
local dev = "cpu"
if nccl then
  dev = "cuda:" .. os.getenv("LOCAL_RANK")
  torch.cuda.set_device(tonumber(os.getenv("LOCAL_RANK")))
end
dist.init_process_group(backend, { timeout = 60 })
local rank, world = dist.get_rank(), dist.get_world_size()
local activities = { P.ProfilerActivity.CPU, nccl and P.ProfilerActivity.CUDA or nil }

local function collectives(events)
  local count, first = {}, {}
  for _, e in ipairs(events) do
    if e.name:find("^" .. backend .. ":") then
      count[e.name] = (count[e.name] or 0) + 1
      first[e.name] = first[e.name] or e
    end
  end
  return count, first
end

-- every collective once (all_reduce four times, one of them async)
local t = torch.ones(4, 3, { device = dev })
local gathered = { torch.zeros(4, 3, { device = dev }) }
for r = 2, world do gathered[r] = torch.zeros(4, 3, { device = dev }) end
local flat = torch.zeros(4 * world, 3, { device = dev })
local pieces = {}
for r = 1, world do pieces[r] = torch.ones(4, 3, { device = dev }) end
local out = torch.zeros(4, 3, { device = dev })
local prof = P.profile({ activities = activities, record_shapes = true })
do
  local step <close> = P.record_function("step")
  for _ = 1, 3 do dist.all_reduce(t) end
end
dist.all_reduce(t, { async_op = true }):wait()
dist.broadcast(t, 0)
dist.reduce(t, 0)
dist.all_gather(gathered, t)
dist.all_gather_into_tensor(flat, t)
dist.reduce_scatter(out, pieces)
dist.reduce_scatter_tensor(out, flat)
dist.barrier()
if rank == 0 then dist.send(t, 1) elseif rank == 1 then dist.recv(t, 0) end
prof:stop()
local ev = prof:events()
local count, first = collectives(ev)
local b = backend .. ":"
local want = { [b .. "all_reduce"] = 4, [b .. "broadcast"] = 1, [b .. "reduce"] = 1 }
if nccl then
  want[b .. "all_gather"], want[b .. "_all_gather_base"], want[b .. "reduce_scatter"], want[b .. "_reduce_scatter_base"] = 1, 1, 1, 1
  want[b .. "all_reduce_barrier"] = 1
else
  want[b .. "all_gather"], want[b .. "reduce_scatter"], want[b .. "barrier"] = 2, 2, 1
end
if rank == 0 then want[b .. "send"] = 1 elseif rank == 1 then want[b .. "recv"] = 1 end
for name, n in pairs(want) do H.check(count[name] == n, "%s: %d events, got %s", name, n, tostring(count[name])) end
for name, n in pairs(count) do H.check(want[name] ~= nil, "unexpected %s (%d)", name, n) end
H.check(first[b .. "all_reduce"].input_shapes == "[[4, 3]]", "all_reduce's input shape: %s", first[b .. "all_reduce"].input_shapes)
local rs = first[b .. (nccl and "_reduce_scatter_base" or "reduce_scatter")]
local shapes = {}
for _, e in ipairs(ev) do if e.name == b .. "reduce_scatter" or e.name == b .. "_reduce_scatter_base" then shapes[#shapes + 1] = e.input_shapes end end
H.check(shapes[1] == string.format("[[%d]]", 12 * world) and shapes[2] == string.format("[[%d, 3]]", 4 * world),
  "reduce_scatter's inputs: the list flattened, then the tensor: %s", table.concat(shapes, " "))
H.check(rs ~= nil, "reduce_scatter_tensor recorded")
local barrier = first[b .. (nccl and "all_reduce_barrier" or "barrier")]
H.check(barrier.input_shapes == "[]", "a barrier has no input")
local step
for _, e in ipairs(ev) do if e.name == "step" then step = e end end
local in_step = 0
for _, c in ipairs(step.children) do if ev[c].name == b .. "all_reduce" then in_step = in_step + 1 end end
for name in pairs(count) do
  local e = first[name]
  H.check(e.cpu_time_total >= 0 and e.start_us >= 0, "%s: a span within the profile", name)
  if nccl then
    H.check(e.async == nil, "%s: issued on this thread", name)
    if name ~= b .. "all_reduce_barrier" then
      H.check(e.device_type == "CUDA" and e.cuda_time_total > 0, "%s: GPU time from events on the group's stream (%g us)", name, e.cuda_time_total)
    end
  else
    H.check(e.async and e.parent == nil, "%s: on the group's thread, no parent", name)
  end
end
H.check(in_step == (nccl and 3 or 0), "NCCL's all_reduces nest in the range they were issued in, Gloo's do not (%d)", in_step)
local tab = prof:key_averages():table()
H.check(tab:find("\n" .. b .. "all_reduce%s") ~= nil, "the table has a row for the all_reduces")
if nccl then H.check(tab:find("CUDA total", 1, true) ~= nil, "and GPU columns") end

-- the Chrome trace: Gloo's on a thread of their own, NCCL's also on the GPU
local path = os.tmpname()
prof:export_chrome_trace(path)
local f = assert(io.open(path))
local doc = require("json").decode(f:read("a"))
f:close()
os.remove(path)
local cpu_side, gpu_side = 0, 0
for i = 1, doc.traceEvents.n do
  local e = doc.traceEvents[i]
  if e.name == b .. "all_reduce" and e.cat == "user_annotation" then
    cpu_side = cpu_side + 1
    H.check(e.pid == 0 and e.tid == (nccl and 1 or 2), "all_reduce's thread in the trace")
  end
  if e.name == b .. "all_reduce" and e.cat == "gpu_user_annotation" then gpu_side = gpu_side + 1 end
end
H.check(cpu_side == 4 and gpu_side == (nccl and 4 or 0), "trace: %d host and %d GPU all_reduce events", cpu_side, gpu_side)

-- DDP: one all-reduce per bucket in backward
local net = nn.Sequential(nn.Linear(10, 20), nn.ReLU(), nn.Linear(20, 5)):to(dev)
local model = nn.parallel.DistributedDataParallel(net, { bucket_cap_mb = 0.0005 })
local nbuckets = #model:_buckets()
H.check(nbuckets > 1, "several buckets (%d)", nbuckets)
local x = torch.randn(8, 10, { device = dev })
model(x):sum():backward() -- the first backward builds the buckets' state
local ddp = P.profile({ activities = activities })
model(x):sum():backward()
ddp:stop()
local c = collectives(ddp:events())
H.check(c[b .. "all_reduce"] == nbuckets, "one %sall_reduce per bucket: %s of %d", b, tostring(c[b .. "all_reduce"]), nbuckets)

dist.destroy_process_group()
H.report()
