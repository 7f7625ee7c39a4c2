-- torch.distributed's error classes, caught by class through pcall: a store key that never
-- comes (DistStoreError), a store with no server (DistNetworkError), Store queues and
-- QueueEmptyError, a Work waited for with a timeout and a peer that is gone (DistBackendError).
-- Run by test_dist.sh through the launcher with 2 and 3 ranks.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed

dist.init_process_group("gloo", { timeout = 20 })
local rank, world = dist.get_rank(), dist.get_world_size()
local classes = { "DistError", "DistBackendError", "DistNetworkError", "DistStoreError", "QueueEmptyError" }

-- which classes match err, as "A,B" in the order of classes
local function caught_by(err)
  local out = {}
  for _, c in ipairs(classes) do if dist[c]:matches(err) then out[#out + 1] = c end end
  return table.concat(out, ",")
end

local function expect(fn, want, what)
  local ok, err = pcall(fn)
  if not H.check(not ok, "%s: no error", what) then return end
  H.check(caught_by(err) == want, "%s: caught by %s, expected %s (%s)", what, caught_by(err), want, tostring(err))
end

H.check(tostring(dist.DistStoreError) == "<class 'torch.distributed.DistStoreError'>", "the class prints as Python's")
H.check(not dist.DistError:matches(nil) and not dist.DistError:matches("some other error"), "other errors are not DistErrors")
H.check(not dist.DistError:matches("CUDA error: out of memory") and not torch.cuda.OutOfMemoryError:matches("store x: timed out after 1 s waiting for key 'k'"),
  "the CUDA and distributed classes keep apart")

-- ---- stores ----
local hs = dist.HashStore()
hs:set_timeout(0.05)
expect(function() hs:get("missing") end, "DistError,DistStoreError", "HashStore get of a missing key")
expect(function() hs:wait({ "missing" }, 0.05) end, "DistError,DistStoreError", "HashStore wait for a missing key")
expect(function() dist.PrefixStore("p", hs):get("k") end, "DistError,DistStoreError", "PrefixStore get of a missing key")
local port = torch._dist.free_port()
expect(function() dist.TCPStore("127.0.0.1", port, nil, false, { timeout = 0.3 }) end, "DistError,DistNetworkError", "TCPStore with no server")
expect(function() dist.TCPStore("127.0.0.1", 0, 2, true, { timeout = 0.2 }) end, "DistError,DistStoreError", "TCPStore master waiting for a client that never comes")
-- init_process_group's rendezvous that a rank never joins (in a child process of rank 0)
if rank == 0 then
  local pid = math.tointeger(io.open("/proc/self/stat"):read("n"))
  local exe = io.popen("readlink /proc/" .. pid .. "/exe"):read("l")
  local code = string.format([[local ok, e = pcall(torch.distributed.init_process_group, "gloo", {init_method = "tcp://127.0.0.1:%d", rank = 0, world_size = 2, timeout = 0.3}) print(torch.distributed.DistStoreError:matches(e), torch.distributed.DistNetworkError:matches(e))]], torch._dist.free_port())
  local out = io.popen(string.format("env -u RANK -u WORLD_SIZE -u MASTER_ADDR -u MASTER_PORT %q -e %q 2>&1", exe, code)):read("a")
  H.check(out == "true\tfalse\n", "a rank that never joins init_process_group: DistStoreError (got %q)", out)
end
-- the error is raised at the caller, with its location
local ok, err = pcall(function() hs:get("missing") end)
H.check(not ok and err:find("errors%.lua:%d+: store ") ~= nil, "a store error names the caller's line: %s", tostring(err))

-- ---- queues over the default group's store: each rank pushes, rank 0 pops them all ----
local store = torch._dist.group_store()
local s = setmetatable({ _s = store, _kind = "TCPStore" }, dist.Store)
s:queue_push("q", "from " .. rank)
s:queue_push("q", "again " .. rank)
dist.barrier()
H.check(s:queue_len("q") == 2 * world, "queue_len after every rank pushed twice: %d", s:queue_len("q"))
dist.barrier()
if rank == 0 then
  local got = {}
  for i = 1, 2 * world do got[i] = s:queue_pop("q", false) end
  -- each rank's own two values come out in the order it pushed them
  local first = {}
  local in_order = true
  for _, v in ipairs(got) do
    local kind, r = v:match("^(%a+) (%d+)$")
    if kind == "from" then first[r] = true elseif not first[r] then in_order = false end
  end
  H.check(in_order and #got == 2 * world, "queue_pop returns every value, each rank's in its order")
  H.check(s:queue_len("q") == 0, "queue_len after popping everything")
end
dist.barrier()
expect(function() s:queue_pop("q", false) end, "DistError,DistStoreError,QueueEmptyError", "queue_pop without blocking on an empty queue")
local ok2, err2 = pcall(s.queue_pop, s, "q", false)
H.check(not ok2 and err2:find("queue_pop: the queue 'q' is empty", 1, true) ~= nil, "the empty queue's message: %s", tostring(err2))
-- a blocking pop waits for a later push (rank 0 pushes after the others started waiting)
dist.barrier()
if rank == 0 then
  os.execute("sleep 0.2")
  for r = 1, world - 1 do s:queue_push("later", "v" .. r) end
else
  local v = s:queue_pop("later")
  H.check(v:match("^v%d$") ~= nil, "a blocking queue_pop gets a value pushed later: %s", v)
end
dist.barrier()
local qs = dist.HashStore()
qs:set_timeout(0.1)
expect(function() qs:queue_pop("none") end, "DistError,DistStoreError", "a blocking queue_pop that times out")
qs:queue_push("fifo", "a"); qs:queue_push("fifo", "b"); qs:queue_push("fifo", "c")
H.check(qs:queue_pop("fifo") == "a" and qs:queue_pop("fifo") == "b" and qs:queue_len("fifo") == 1 and qs:queue_pop("fifo", false) == "c",
  "a queue is first in, first out")
H.raises(function() qs:queue_push(1, "x") end, "the key must be a string", "queue_push with a bad key")

-- ---- Work:wait(timeout) on an operation that does not finish in time ----
if world >= 2 and rank <= 1 then
  local t = torch.zeros(2)
  if rank == 0 then
    local w = dist.irecv(t, { src = 1, tag = 7 })
    expect(function() w:wait(0.2) end, "DistError,DistBackendError", "Work:wait(0.2) on a recv with no sender yet")
    H.check(not w:is_completed() and w:exception() == nil, "the work still runs after its wait timed out")
    dist.send(torch.ones(1), { dst = 1, tag = 8 }) -- tell rank 1 to send now
    H.check(w:wait() == true and t:sum():item() == 6, "the work completes later")
  else
    dist.recv(torch.zeros(1), { src = 0, tag = 8 })
    dist.send(torch.full({ 2 }, 3.0), { dst = 0, tag = 7 })
  end
end
local opts = dist.AllreduceOptions()
opts.timeout = 0.5
local w = dist.group.WORLD:allreduce({ torch.ones(1) }, opts)
H.check(w:wait() == true, "a Work with an options timeout that finishes in time")

-- ---- a peer that is gone: the last rank leaves, the others' next collective fails ----
dist.barrier()
if rank == world - 1 then H.report() end
local t = torch.ones(4)
local gone = dist.all_reduce(t, { async_op = true })
expect(function() gone:wait() end, "DistError,DistBackendError", "all_reduce after a rank left")
H.check(gone:is_completed() and not gone:is_success(), "the failed Work is completed, not a success")
local e = gone:exception()
H.check(e ~= nil and dist.DistBackendError:matches(e), "Work:exception() gives the failure: %s", tostring(e))
expect(function() dist.all_reduce(t) end, "DistError,DistBackendError", "a second all_reduce after a rank left")
H.report()
