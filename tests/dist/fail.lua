-- Failure cases for test_dist.sh: every rank all-reduces in a loop; rank 1 then
-- exits with status 3 ("exit"), kills itself with SIGKILL ("kill"), or hangs ("hang").
local mode = arg[1]
local dist = torch.distributed
dist.init_process_group("gloo", { timeout = tonumber(arg[2] or "30") })
local rank = dist.get_rank()
local t = torch.ones(1000)
for i = 1, 1000000 do
  if rank == 1 and i == 20 then
    if mode == "exit" then os.exit(3) end
    if mode == "kill" then
      local pid = io.open("/proc/self/stat"):read("n")
      os.execute("kill -KILL " .. math.tointeger(pid))
    end
    if mode == "hang" then os.execute("sleep 600") end
  end
  dist.all_reduce(t)
  t:fill_(1)
end
