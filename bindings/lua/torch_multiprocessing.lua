-- torch.multiprocessing: nnrepl does not start processes from inside a script, so spawn and
-- start_processes raise an error saying how to run the worker under nnrepl's launcher instead
-- (see docs/distributed.md, "The launcher").
local torch = require "torch"

local mp = {}
torch.multiprocessing = mp

local function refuse(name)
  return function()
    error("torch.multiprocessing." .. name .. ": nnrepl cannot start processes from inside a script; start them "
      .. "with the launcher, nnrepl --nproc-per-node N script.lua args..., and in each process call the worker "
      .. "with its index tonumber(os.getenv(\"LOCAL_RANK\")) (N is in LOCAL_WORLD_SIZE)", 2)
  end
end

mp.spawn = refuse("spawn")
mp.start_processes = refuse("start_processes")

return mp
