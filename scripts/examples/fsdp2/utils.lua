-- pytorch/examples distributed/FSDP2/utils.py in Lua: checks on a fully_shard-ed Transformer.
-- nnrepl has no DTensor: a parameter's Shard(0) placement is checked on the sharded state dict
-- (torch.distributed.checkpoint.state_dict), whose ShardedTensors give each chunk's offsets.
local model_lib = require "model"
local dist = torch.distributed
local SD = dist.checkpoint.state_dict

local M = {}

function M.inspect_model(model)
  assert(model:isinstance(model_lib.Transformer))
  assert(model.unshard ~= nil, "the model is not fully_shard-ed")

  if dist.get_rank() == 0 then print(model) end

  for name, param in pairs(SD.get_model_state_dict(model)) do
    -- Shard(0): this rank's rows of dim 0, whole along the other dims
    assert(dist.checkpoint._is_sharded(param), name .. " is not sharded")
    for d = 2, param:dim() do assert(param.offsets[d] == 0 and param:to_local():size(d - 1) == param:size(d - 1)) end
    assert(param.dtype == torch.float32)
  end
end

function M.inspect_mixed_precision(model)
  model:unshard()
  for _, param in ipairs(model:parameters({ recurse = false })) do
    assert(param.dtype == torch.bfloat16)
  end
  model:reshard()
end

return M
