-- init_process_group again after destroy_process_group, in the same processes and at the same
-- address (the launcher's MASTER_PORT), as scripts that run several demos in turn do. A rank
-- that gets there first can reach rank 0's old store before rank 0 has closed it; the join
-- then retries on the new one. Run by test_dist.sh with 2 and 3 gloo ranks.
local H = dofile(arg[0]:match("^(.*)/") .. "/harness.lua")
local dist = torch.distributed
for round = 1, 6 do
  dist.init_process_group("gloo", { timeout = 60 })
  local n, rank = dist.get_world_size(), dist.get_rank()
  if rank == n - 1 then os.execute("sleep 0.05") end -- one rank late, so the others race ahead
  local t = torch.ones(2) * (rank + 1)
  dist.all_reduce(t)
  H.close(t, torch.full({ 2 }, n * (n + 1) / 2), 0, "round %d: all_reduce after init again", round)
  dist.destroy_process_group()
  H.check(not dist.is_initialized(), "round %d: destroyed", round)
end
H.report()
