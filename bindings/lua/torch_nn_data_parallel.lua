-- nn.parallel.data_parallel(module, inputs, device_ids, output_device, dim, module_kwargs):
-- the functional DataParallel, one forward of module with the batch split over the GPUs.
-- PyTorch replicates the module on every call; here a DataParallel wrapper is kept per
-- module and device list (weakly, with the module), so replicas are built once and only
-- refreshed when the weights change. The result and the gradients are the same.
local torch = require "torch"
local U = require "nn_util"
local parallel = require "nn_parallel"

local wrappers = setmetatable({}, { __mode = "k" }) -- module -> { key -> DataParallel }

local spec = { { "inputs" }, { "device_ids" }, { "output_device" }, { "dim", 0 }, { "module_kwargs" } }

function parallel.data_parallel(module, ...)
  local o = U.parse("data_parallel", spec, ...)
  if not (type(module) == "table" and module.parameters and module.forward) then
    U.errorf("data_parallel: module must be an nn.Module, got %s", U.typename(module))
  end
  if o.module_kwargs ~= nil then
    U.error("data_parallel: module_kwargs is not supported; pass the module's keyword table as the last element of inputs")
  end
  local inputs = o.inputs
  if inputs == nil then
    inputs = {}
  elseif type(inputs) ~= "table" or getmetatable(inputs) ~= nil then
    inputs = { inputs } -- one input (a tensor), as Python's non-tuple
  end
  if not (torch.cuda and torch.cuda.is_available()) then
    U.error("data_parallel: device type could not be determined (no CUDA device; call the module itself)")
  end
  local key = { tostring(o.output_device), tostring(o.dim) }
  for _, d in ipairs(o.device_ids or {}) do key[#key + 1] = tostring(d) end
  key = table.concat(key, ",")
  local per = wrappers[module]
  if not per then per = {}; wrappers[module] = per end
  local dp = per[key]
  if not dp then
    dp = parallel.DataParallel(module, { device_ids = o.device_ids, output_device = o.output_device, dim = o.dim })
    per[key] = dp
  end
  return dp(table.unpack(inputs))
end

torch.nn.parallel.data_parallel = parallel.data_parallel
