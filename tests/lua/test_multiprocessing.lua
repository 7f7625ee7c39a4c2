-- torch.multiprocessing.spawn / start_processes: refused with the launcher's recipe.
local T = ...
local want = ": nnrepl cannot start processes from inside a script; start them with the launcher, "
  .. "nnrepl --nproc-per-node N script.lua args..., and in each process call the worker with its index "
  .. "tonumber(os.getenv(\"LOCAL_RANK\")) (N is in LOCAL_WORLD_SIZE)"
T.test("spawn refused", function()
  T.raises(function() torch.multiprocessing.spawn(function() end, { nprocs = 2 }) end,
    "torch.multiprocessing.spawn" .. want, "spawn")
  T.raises(function() torch.multiprocessing.start_processes(function() end) end,
    "torch.multiprocessing.start_processes" .. want, "start_processes")
end)
