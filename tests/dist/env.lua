-- Prints what the launcher set, then checks it against init_process_group.
local names = { "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS" }
local parts = {}
for _, n in ipairs(names) do parts[#parts + 1] = n .. "=" .. tostring(os.getenv(n)) end
print(table.concat(parts, " "))
local dist = torch.distributed
dist.init_process_group("gloo", { timeout = 30 })
local t = torch.ones(1)
dist.all_reduce(t)
print("sum=" .. math.tointeger(t:item()) .. " args=" .. table.concat(arg, ","))
