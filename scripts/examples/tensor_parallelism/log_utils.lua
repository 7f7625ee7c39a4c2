-- pytorch/examples distributed/tensor_parallelism/log_utils.py in Lua: rank 0's log lines on
-- stderr in Python logging's basicConfig format ("%(asctime)s %(message)s", the date as
-- "%m/%d/%Y %I:%M:%S %p"), and the choice of device and backend.
local M = {}

function M.get_logger()
  return { info = function(_, msg) io.stderr:write(os.date("%m/%d/%Y %I:%M:%S %p") .. " " .. msg .. "\n") end }
end

-- log only on global rank 0
function M.rank_log(rank, logger, msg)
  if rank == 0 then logger:info(" " .. msg) end
end

-- at least min_gpus accelerators (the original exits without them)
function M.verify_min_gpu_count(min_gpus)
  min_gpus = min_gpus or 2
  return torch.accelerator.is_available() and torch.accelerator.device_count() >= min_gpus
end

-- nnrepl: "cuda" (one GPU per rank, NCCL) when there are GPUs for every rank, else "cpu" (Gloo);
-- on a GPU the rank takes cuda:LOCAL_RANK
function M.device_type(world_size)
  if M.verify_min_gpu_count(world_size) then
    torch.cuda.set_device(tonumber(os.getenv("LOCAL_RANK") or "0"))
    return "cuda"
  end
  return "cpu"
end

return M
