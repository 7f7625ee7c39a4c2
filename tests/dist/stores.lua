-- The key-value stores (TCPStore, FileStore, HashStore, PrefixStore) between ranks, and
-- init_process_group over a store. Run by test_dist.sh through the launcher with 2 ranks.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
local rank, world = tonumber(os.getenv("RANK")), tonumber(os.getenv("WORLD_SIZE"))
rank, world = math.tointeger(rank), math.tointeger(world)

-- the launcher's master port is free until a group uses it: the TCPStore takes it
local store = dist.TCPStore(os.getenv("MASTER_ADDR"), math.tointeger(tonumber(os.getenv("MASTER_PORT"))), world, rank == 0, { timeout = 20 })
H.check(store.port == math.tointeger(tonumber(os.getenv("MASTER_PORT"))) and store.timeout == 20, "TCPStore port and timeout")
dist.init_process_group("gloo", { store = dist.PrefixStore("pg", store), rank = rank, world_size = world, timeout = 20 })
H.check(dist.get_rank() == rank and dist.get_world_size() == world, "init_process_group over a store")
local t = torch.tensor({ rank + 1 })
dist.all_reduce(t)
H.check(t:item() == world * (world + 1) / 2, "all_reduce in a group made over a store")
H.raises(function() dist.init_process_group("gloo", { store = store, init_method = "env://", rank = 0, world_size = 1 }) end,
  "Cannot specify both init_method and store", "store with init_method")

-- ---- TCPStore between ranks ----
store:set("from/" .. rank, "hello " .. rank)
store:wait({ "from/0", "from/1" })
H.check(store:get("from/" .. (1 - rank % 2)) == "hello " .. (1 - rank % 2), "TCPStore set/wait/get across ranks")
local n = store:add("counter", rank + 1)
H.check(n >= rank + 1 and n <= 3, "TCPStore add returns the new value")
dist.barrier()
H.check(store:add("counter", 0) == 3, "TCPStore add from every rank")
H.check(store:check({ "from/0", "from/1" }) and not store:check({ "from/0", "nothere" }), "TCPStore check")
dist.barrier()
if rank == 0 then
  H.check(store:compare_set("cas", "", "first") == "first", "compare_set of an absent key with an empty expected sets it")
  H.check(store:compare_set("cas", "wrong", "second") == "first", "compare_set with a wrong expected returns the value")
  H.check(store:compare_set("cas", "first", "second") == "second", "compare_set with the right expected")
  H.check(store:compare_set("absent", "x", "y") == "x", "compare_set of an absent key returns expected")
  store:set("bin", "a\0b")
end
dist.barrier()
H.check(store:get("cas") == "second" and store:get("bin") == "a\0b" and not store:check({ "absent" }), "compare_set seen by the other rank, binary values")
dist.barrier()
local keys_before = store:num_keys()
dist.barrier() -- every rank has counted before rank 1 deletes
if rank == 1 then H.check(store:delete_key("cas") and not store:delete_key("cas"), "delete_key returns whether it was there") end
dist.barrier()
H.check(store:num_keys() == keys_before - 1 and not store:check({ "cas" }), "num_keys after delete_key")
store:set_timeout(0.3)
H.raises(function() store:get("never") end, "timed out after 0.3 s waiting for key 'never'", "TCPStore get timeout")
H.raises(function() store:wait({ "never" }, 0.2) end, "timed out", "TCPStore wait timeout")
store:set_timeout(20)
H.raises(function() store:add("counter", 1.5) end, "amount must be an integer", "add of a non-integer")

-- ---- PrefixStore: the keys live under prefix/ in the store below ----
local p = dist.PrefixStore("pre", store)
p:set("k" .. rank, tostring(rank))
dist.barrier()
H.check(store:get("pre/k1") == "1" and p:get("k0") == "0" and p.underlying_store == store, "PrefixStore keys under prefix/")
H.check(p:add("n", 2) > 0 and p:check({ "k0", "k1" }) and not p:check({ "pre/k0" }), "PrefixStore add and check")
local pp = dist.PrefixStore("inner", p)
pp:set("x", "y")
H.check(store:get("pre/inner/x") == "y", "nested PrefixStore")

-- ---- FileStore shared by the ranks ----
local path = {}
if rank == 0 then path[1] = os.tmpname() end
dist.broadcast_object_list(path, 0)
local f = dist.FileStore(path[1], world)
f:set("r" .. rank, "v" .. rank)
f:wait({ "r0", "r1" })
H.check(f:get("r" .. (1 - rank)) == "v" .. (1 - rank), "FileStore set/wait/get across ranks")
f:add("c", 5)
dist.barrier()
H.check(f:add("c", 0) == 10, "FileStore add from every rank")
dist.barrier()
if rank == 0 then
  H.check(f:compare_set("c", "10", "11") == "11" and f:compare_set("c", "10", "12") == "11", "FileStore compare_set")
  H.check(f:delete_key("r1") and not f:delete_key("r1") and not f:check({ "r1" }), "FileStore delete_key")
end
dist.barrier()
H.check(f:num_keys() == 2 and f:get("c") == "11", "FileStore num_keys after delete, compare_set seen by the other rank")
dist.barrier()
f:set("r1", "again")
H.check(f:get("r1") == "again", "FileStore set after delete")
f:set_timeout(0.2)
H.raises(function() f:get("never") end, "timed out after 0.2 s waiting for key 'never'", "FileStore get timeout")
dist.barrier()
if rank == 0 then os.remove(path[1]) end

-- ---- HashStore (this process only) ----
local h = dist.HashStore()
h:set("a", 1)
H.check(h:get("a") == "1" and h:add("a", 2) == 3 and h:num_keys() == 1, "HashStore set/get/add")
h:set_timeout(0.1)
H.raises(function() h:get("b") end, "timed out", "HashStore get timeout")
H.raises(function() h:set(1, "x") end, "the key must be a string", "a non-string key")

dist.destroy_process_group()
H.report()
