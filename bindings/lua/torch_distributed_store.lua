-- torch.distributed's key-value stores: TCPStore, FileStore, HashStore, PrefixStore over
-- the engine's rendezvous stores (bindings/dist_store.c). Values are Lua strings (bytes);
-- timeouts are seconds (or a table like {seconds=30}).
--   local s = dist.TCPStore("127.0.0.1", port, 2, rank == 0, {timeout = 30})
--   s:set("k", "v"); s:get("k"); s:add("n", 1); s:wait({"k"}); s:compare_set("k", "v", "w")
-- init_process_group{store = s, rank =, world_size =} runs the default group over one.
local torch = require "torch"
local time = require "time"
local dist = torch.distributed
local I = require "torch_distributed_internal"
local C, parse, errorf = I.C, I.parse, I.errorf

-- a method of the C store, its errors raised at the caller
local function call(s, m, ...) return I.finish(pcall(s._s[m], s._s, ...)) end

local Store = { __name = "torch.distributed.Store" }
Store.__index = Store
Store.__tostring = function(s) return "<" .. s._kind .. " " .. s._s:desc() .. ">" end
dist.Store = Store

local function wrap(kind, s, extra)
  local o = extra or {}
  o._s, o._kind = s, kind
  return setmetatable(o, Store)
end

local function value(v, fn)
  if type(v) == "string" then return v end
  if type(v) == "number" then return tostring(v) end
  errorf(3, "%s: the value must be a string, got %s", fn, type(v))
end

local function key(k, fn)
  if type(k) ~= "string" then errorf(3, "%s: the key must be a string, got %s", fn, type(k)) end
  return k
end

local function keys(ks, fn)
  if type(ks) == "string" then return { ks } end
  if type(ks) ~= "table" then errorf(3, "%s: keys must be a list of strings, got %s", fn, type(ks)) end
  for _, k in ipairs(ks) do key(k, fn) end
  return ks
end

function Store:set(k, v) call(self, 'set', key(k, "set"), value(v, "set")) end
-- the value; waits up to the store's timeout for the key
function Store:get(k) return call(self, 'get', key(k, "get")) end
function Store:add(k, amount)
  if math.type(amount) ~= "integer" then errorf(2, "add: amount must be an integer, got %s", tostring(amount)) end
  return call(self, 'add', key(k, "add"), amount)
end
function Store:compare_set(k, expected, desired)
  return call(self, 'compare_set', key(k, "compare_set"), value(expected, "compare_set"), value(desired, "compare_set"))
end
-- wait(keys[, timeout]): until every key exists
function Store:wait(ks, timeout)
  call(self, 'wait', keys(ks, "wait"), I.seconds(timeout, "wait") or call(self, 'timeout'))
end
-- check(keys): whether every key exists now
function Store:check(ks)
  for _, k in ipairs(keys(ks, "check")) do
    if not call(self, 'check', k) then return false end
  end
  return true
end
function Store:delete_key(k) return call(self, 'delete_key', key(k, "delete_key")) end
function Store:num_keys() return call(self, 'num_keys') end
function Store:set_timeout(t) call(self, 'set_timeout', I.seconds(t, "set_timeout")) end
function Store:multi_set(ks, vs)
  for i, k in ipairs(keys(ks, "multi_set")) do self:set(k, vs[i]) end
end
function Store:multi_get(ks)
  local out = {}
  for i, k in ipairs(keys(ks, "multi_get")) do out[i] = self:get(k) end
  return out
end
function Store:append(k, v)
  local cur = call(self, 'check', key(k, "append")) and call(self, 'get', k) or ""
  call(self, 'set', k, cur .. value(v, "append"))
end

-- ---- queues: queue_push, queue_pop, queue_len ----
-- A queue is keys under "<key>/queue/": tail (slots pushed), head (slots popped), slot i's value
-- and its claim counter (the popper whose add() returns 1 owns slot i and then moves head on).
local function qkey(k, what) return k .. "/queue/" .. what end

function Store:queue_push(k, v)
  local i = call(self, 'add', qkey(key(k, "queue_push"), "tail"), 1)
  call(self, 'set', qkey(k, i), value(v, "queue_push"))
end

function Store:queue_len(k)
  key(k, "queue_len")
  return call(self, 'add', qkey(k, "tail"), 0) - call(self, 'add', qkey(k, "head"), 0)
end

-- queue_pop(key, block=true): the oldest value; without block, an empty queue raises
-- QueueEmptyError; blocking, the store's timeout raises DistStoreError
function Store:queue_pop(k, block)
  key(k, "queue_pop")
  local deadline = time.monotonic() + call(self, 'timeout')
  while true do
    local h = call(self, 'add', qkey(k, "head"), 0)
    if h < call(self, 'add', qkey(k, "tail"), 0) then
      -- a claim is stale if slot h+1 was popped (its claim key deleted) since head was read
      if call(self, 'add', qkey(k, "claim/" .. (h + 1)), 1) == 1 and call(self, 'add', qkey(k, "head"), 0) == h then
        call(self, 'add', qkey(k, "head"), 1)
        local v = call(self, 'get', qkey(k, h + 1))
        call(self, 'delete_key', qkey(k, h + 1))
        call(self, 'delete_key', qkey(k, "claim/" .. (h + 1)))
        return v
      end
    elseif block == false then
      errorf(2, "queue_pop: the queue '%s' is empty", k)
    elseif time.monotonic() > deadline then
      errorf(2, "store %s: timed out after %g s waiting for key '%s'", self._s:desc(), call(self, 'timeout'), qkey(k, h + 1))
    end
    time.sleep(0.001)
  end
end

-- timeout: a field read as in PyTorch (store.timeout), in seconds
Store.__index = function(s, k)
  if k == "timeout" then return s._s:timeout() end
  if k == "port" and s._kind == "TCPStore" then return s._s:port() end
  return Store[k]
end

-- TCPStore(host_name, port, world_size, is_master, timeout, wait_for_workers, multi_tenant,
-- master_listen_fd, use_libuv): the master hosts the server (port 0 picks a free port, read
-- back as store.port); with world_size, the master waits for that many stores to connect
function dist.TCPStore(host, port, ...)
  local _, o = parse("TCPStore", { "world_size", "is_master", "timeout", "wait_for_workers", "multi_tenant", "master_listen_fd", "use_libuv" }, 0, ...)
  if type(host) ~= "string" then errorf(2, "TCPStore: host_name must be a string, got %s", type(host)) end
  if math.type(port) ~= "integer" then errorf(2, "TCPStore: port must be an integer, got %s", tostring(port)) end
  if o.master_listen_fd ~= nil then errorf(2, "TCPStore: master_listen_fd is not supported; pass the port") end
  local timeout = I.seconds(o.timeout, "TCPStore") or 300
  local s = wrap("TCPStore", C.tcp_store(host, port, o.is_master, timeout), { host = host })
  local world = o.world_size
  if world ~= nil and world > 0 then
    call(s, 'add', "init/", 1)
    if o.is_master and o.wait_for_workers ~= false then
      local deadline = time.monotonic() + timeout
      while true do
        local joined = call(s, 'add', "init/", 0)
        if joined >= world then break end
        if time.monotonic() > deadline then
          errorf(2, "TCPStore: timed out after %g s waiting for clients: %d/%d clients joined", timeout, joined, world)
        end
        time.sleep(0.01)
      end
    end
  end
  return s
end

-- FileStore(file_name, world_size)
function dist.FileStore(path, world_size)
  if type(path) ~= "string" then errorf(2, "FileStore: file_name must be a string, got %s", type(path)) end
  return wrap("FileStore", C.file_store(path, 300), { path = path, world_size = world_size or -1 })
end

function dist.HashStore() return wrap("HashStore", C.hash_store(300)) end

-- PrefixStore(prefix, store): store's keys under "prefix/"
function dist.PrefixStore(prefix, store)
  if type(prefix) ~= "string" then errorf(2, "PrefixStore: prefix must be a string, got %s", type(prefix)) end
  if getmetatable(store) ~= Store then errorf(2, "PrefixStore: store must be a torch.distributed store, got %s", tostring(store)) end
  return wrap("PrefixStore", C.prefix_store(prefix, store._s), { underlying_store = store })
end

return dist
