-- torch.accelerator: PyTorch's device-agnostic API, here over torch.cuda (the one accelerator):
--   local device = torch.accelerator.is_available() and torch.accelerator.current_accelerator().type or "cpu"
-- Without a GPU: is_available() is false, current_accelerator() nil (a CUDA build still names
-- cuda unless check_available), device_count() 0, the memory functions 0 / {} / nothing, and
-- the functions that need a device raise.
require "torch_cuda_more"
local torch = require "torch"
local U = require "nn_util"
local cuda = torch.cuda

local A = {}
torch.accelerator = A

local function need(what)
  if not cuda.is_available() then U.errorf("torch.accelerator.%s: no accelerator is available", what) end
end

-- a device index from an int, "cuda:1", torch.device (nil index: the current one)
local function index_of(fname, device)
  if math.type(device) == "integer" then return device end
  local ok, d = pcall(torch.device, device)
  if not ok then U.errorf("torch.accelerator.%s: expected a device, a device string or an int, got %s", fname, U.typename(device)) end
  if d.type ~= "cuda" then
    U.errorf("torch.accelerator.%s: %s doesn't match the current accelerator cuda", fname, tostring(d))
  end
  if d.index == nil then need(fname); return cuda.current_device() end
  return d.index
end

function A.is_available() return cuda.is_available() end
function A.device_count() return cuda.device_count() end

function A.current_accelerator(check_available)
  if U.is_opts(check_available) then check_available = U.parse("current_accelerator", { { "check_available", false } }, check_available).check_available end
  if not cuda._is_built() or (check_available and not cuda.is_available()) then return nil end
  return torch.device("cuda")
end

function A.current_device_index()
  need("current_device_index")
  return cuda.current_device()
end

-- set_device_index(device): a negative index does nothing
function A.set_device_index(device)
  local i = index_of("set_device_index", device)
  if i < 0 then return end
  need("set_device_index")
  U.call(cuda.set_device, i)
end

local function deprecated(old, new)
  return function(...)
    U.warn(string.format("torch.accelerator.%s() is deprecated in favor of torch.accelerator.%s()", old, new))
    return A[new](...)
  end
end
A.current_device_idx = deprecated("current_device_idx", "current_device_index")
A.set_device_idx = deprecated("set_device_idx", "set_device_index")

local Noop = { __close = function() end, __name = "torch.accelerator.device_index" }

-- device_index(i): i current until the value closes (nil: no change); device_index(i, fn) runs fn there
function A.device_index(device, fn)
  local ctx
  if device == nil then ctx = setmetatable({}, Noop)
  else
    local i = index_of("device_index", device)
    if i < 0 then ctx = setmetatable({}, Noop) else need("device_index"); ctx = U.call(cuda.device, i) end
  end
  return U.with(ctx, fn)
end

function A.synchronize(device)
  need("synchronize")
  return U.call(cuda.synchronize, device ~= nil and index_of("synchronize", device) or nil)
end

function A.current_stream(device)
  need("current_stream")
  return U.call(cuda.current_stream, device ~= nil and index_of("current_stream", device) or nil)
end

function A.set_stream(stream)
  need("set_stream")
  return U.call(cuda.set_stream, stream)
end

-- ---- torch.accelerator.memory (also on torch.accelerator itself, as in PyTorch) ----

local M = {}
A.memory = M

local function on(device, f)
  if not cuda.is_available() then return nil end
  return f(device ~= nil and index_of("memory", device) or nil)
end

function M.empty_cache() return cuda.empty_cache() end
function M.memory_allocated(device) return on(device, cuda.memory_allocated) or 0 end
function M.max_memory_allocated(device) return on(device, cuda.max_memory_allocated) or 0 end
function M.memory_reserved(device) return on(device, cuda.memory_reserved) or 0 end
function M.max_memory_reserved(device) return on(device, cuda.max_memory_reserved) or 0 end
function M.reset_peak_memory_stats(device) on(device, cuda.reset_peak_memory_stats) end
function M.memory_stats(device) return on(device, cuda.memory_stats) or {} end

for k, f in pairs(M) do A[k] = f end

return A
