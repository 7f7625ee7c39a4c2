-- torch.nn.parallel.scatter, gather, replicate, parallel_apply: the pieces of DataParallel's
-- forward as functions, in PyTorch's semantics.
--   scatter(inputs, target_gpus, dim=0): tensors split in torch.chunk's sizes, one chunk per
--     GPU (fewer when there are fewer rows), lists and dicts scattered element-wise (the
--     shortest decides how many), other values handed to every GPU as they are
--   gather(outputs, target_device, dim=0): the per-GPU outputs concatenated on target_device
--     (-1 or "cpu": the CPU), dicts and lists element-wise; 0-d tensors are stacked
--   replicate(module, devices, detach=false): copies of module on each device, whose
--     parameters are differentiable copies of the module's (detach=true: plain copies)
--   parallel_apply(modules, inputs, kwargs_tup=nil, devices=nil): modules[i](inputs[i]...)
--     on devices[i] (default: the device of its first tensor input); a list input holds
--     positional arguments, anything else is the one argument. The calls are issued one
--     after another; their GPU work runs asynchronously, so different GPUs overlap.
-- As in PyTorch, scatter, gather and replicate need CUDA devices; parallel_apply also runs
-- modules whose inputs are on the CPU.
local torch = require "torch"
local U = require "nn_util"
local parallel = require "nn_parallel"
require "torch_nn_data_parallel"

local function is_plain(v) return type(v) == "table" and getmetatable(v) == nil and not torch.is_tensor(v) end

-- a CUDA device index from an int, "cuda:i", or a torch.device; cpu_ok: -1 and "cpu" give -1
local function cuda_index(fname, d, cpu_ok)
  local kind, index
  if math.type(d) == "integer" or (type(d) == "number" and d == math.floor(d)) then
    kind, index = d < 0 and "cpu" or "cuda", math.tointeger(d)
  elseif type(d) == "string" or (type(d) == "userdata" or type(d) == "table") and d.type ~= nil then
    local dev = torch.device(d)
    kind, index = dev.type, dev.index
    if kind == "cuda" and index == nil then index = torch.cuda.current_device() end
  else
    U.errorf("%s: a device must be an int, a string or a torch.device, not %s", fname, U.typename(d))
  end
  if kind == "cpu" and cpu_ok then return -1 end
  if kind ~= "cuda" then
    U.errorf("%s: expected a CUDA device, got %s (nn.parallel moves data between GPUs; on the CPU call the module directly)", fname, tostring(d))
  end
  if not (torch.cuda and torch.cuda.is_available()) then
    U.errorf("%s: no CUDA device is available (nn.parallel moves data between GPUs; on the CPU call the module directly)", fname)
  end
  if index >= torch.cuda.device_count() then
    U.errorf("%s: invalid device %s: only %d CUDA devices", fname, tostring(d), torch.cuda.device_count())
  end
  return index
end

local function devices_of(fname, list, cpu_ok)
  if type(list) ~= "table" or torch.is_tensor(list) or #list == 0 then
    U.errorf("%s: expected a non-empty list of devices, got %s", fname, U.typename(list))
  end
  local out = {}
  for i, d in ipairs(list) do out[i] = cuda_index(fname, d, cpu_ok) end
  return out
end

-- the rows of zipped lists: zip({{a1, a2}, {b1, b2, b3}}) = {{a1, b1}, {a2, b2}}
local function zip(cols)
  local n = math.huge
  for _, c in ipairs(cols) do n = math.min(n, #c) end
  local rows = {}
  for i = 1, (#cols == 0 and 0 or n) do
    rows[i] = {}
    for j, c in ipairs(cols) do rows[i][j] = c[i] end
  end
  return rows
end

local function scatter_map(v, gpus, dim)
  if torch.is_tensor(v) then
    local parts = v:split(parallel.chunk_sizes(v:size(dim), #gpus), dim)
    local out = {}
    for i = 1, #parts do out[i] = parts[i]:to("cuda:" .. gpus[i]) end
    return out
  end
  if is_plain(v) and next(v) ~= nil then
    if #v > 0 then -- a list: a list per GPU
      local cols = {}
      for i = 1, #v do cols[i] = scatter_map(v[i], gpus, dim) end
      return zip(cols)
    end
    local keys, cols = {}, {} -- a dict: a dict per GPU
    for k, x in pairs(v) do keys[#keys + 1] = k; cols[#cols + 1] = scatter_map(x, gpus, dim) end
    local out = {}
    for i, row in ipairs(zip(cols)) do
      out[i] = {}
      for j, k in ipairs(keys) do out[i][k] = row[j] end
    end
    return out
  end
  local out = {}
  for i = 1, #gpus do out[i] = v end
  return out
end

function parallel.scatter(inputs, ...)
  local o = U.parse("scatter", { { "target_gpus", U.REQUIRED }, { "dim", 0 } }, ...)
  return scatter_map(inputs, devices_of("scatter", o.target_gpus), o.dim)
end

function parallel.gather(outputs, ...)
  local o = U.parse("gather", { { "target_device", U.REQUIRED }, { "dim", 0 } }, ...)
  if not is_plain(outputs) or #outputs == 0 then U.errorf("gather: outputs must be a non-empty list, got %s", U.typename(outputs)) end
  local target = cuda_index("gather", o.target_device, true)
  return parallel._gather(outputs, target < 0 and "cpu" or ("cuda:" .. target), o.dim)
end

function parallel.replicate(network, ...)
  local o = U.parse("replicate", { { "devices", U.REQUIRED }, { "detach", false } }, ...)
  if not (type(network) == "table" and network.parameters and network.forward) then
    U.errorf("replicate: network must be an nn.Module, got %s", U.typename(network))
  end
  local devs = devices_of("replicate", o.devices)
  local replicas = {}
  for i, d in ipairs(devs) do
    local dev = "cuda:" .. d
    replicas[i] = parallel._replicate_module(network, function(t, reg)
      if o.detach or reg ~= "_parameters" and not t.requires_grad then return t:detach():to(dev, { copy = true }) end
      return t:to(dev, { copy = true }) -- differentiable: gradients flow back to the module's
    end)
  end
  return replicas
end

local function first_tensor(v, seen)
  if torch.is_tensor(v) then return v end
  if type(v) == "table" and not seen[v] then
    seen[v] = true
    for i = 1, #v do
      local t = first_tensor(v[i], seen)
      if t then return t end
    end
    for k, x in pairs(v) do
      if not (math.type(k) == "integer" and k >= 1 and k <= #v) then
        local t = first_tensor(x, seen)
        if t then return t end
      end
    end
  end
  return nil
end

function parallel.parallel_apply(modules, inputs, ...)
  local o = U.parse("parallel_apply", { { "kwargs_tup" }, { "devices" } }, ...)
  if not is_plain(modules) or not is_plain(inputs) then U.error("parallel_apply: modules and inputs must be lists") end
  if #modules ~= #inputs then
    U.errorf("parallel_apply: The number of modules %d is not equal to the number of inputs %d", #modules, #inputs)
  end
  if o.kwargs_tup ~= nil and #o.kwargs_tup ~= #modules then
    U.errorf("parallel_apply: %d modules but %d keyword tables", #modules, #o.kwargs_tup)
  end
  if o.devices ~= nil and #o.devices ~= #modules then
    U.errorf("parallel_apply: %d modules but %d devices", #modules, #o.devices)
  end
  local results = {}
  for i, m in ipairs(modules) do
    local input = inputs[i]
    local args = is_plain(input) and #input > 0 and { table.unpack(input) } or { input }
    local kw = o.kwargs_tup and o.kwargs_tup[i]
    if kw ~= nil and next(kw) ~= nil then args[#args + 1] = kw end
    local dev
    if o.devices ~= nil then
      dev = cuda_index("parallel_apply", o.devices[i], true)
    else
      local t = first_tensor(input, {})
      if t == nil then
        U.errorf("parallel_apply: in replica %d, no device was provided and no tensor input was found; device cannot be resolved", i - 1)
      end
      dev = t.is_cuda and t:get_device() or -1
    end
    local ok, out = pcall(function()
      if dev < 0 then return m(table.unpack(args)) end
      local _ <close> = torch.cuda.device(dev)
      return m(table.unpack(args))
    end)
    if not ok then
      U.errorf("Caught an error in replica %d on device %d.\n%s", i - 1, dev, tostring(out))
    end
    results[i] = out
  end
  return results
end

torch.nn.parallel.scatter = parallel.scatter
torch.nn.parallel.gather = parallel.gather
torch.nn.parallel.replicate = parallel.replicate
torch.nn.parallel.parallel_apply = parallel.parallel_apply

return parallel
