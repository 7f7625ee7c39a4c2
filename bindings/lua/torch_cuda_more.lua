-- More of torch.cuda, written over bindings/cuda.c: capability checks, the deprecated memory
-- names, seeds, streams by another name, device_of, init. Without a GPU they do what PyTorch's
-- CPU-only build does: report false / 0 / nothing, or raise where PyTorch initialises CUDA.
local torch = require "torch"
local U = require "nn_util"
local cuda = torch.cuda

local function available() return cuda.is_available() end

local function need_gpu(what)
  if available() then return end
  U.errorf("%s: CUDA is not available (%s)", what,
    cuda._is_built() and "no GPU or no driver found" or "this build has no CUDA backend")
end

-- bf16 on compute capability 8.0 and later; before that only emulated
function cuda.is_bf16_supported(including_emulation)
  if not available() then return false end
  if including_emulation == nil then including_emulation = true end
  return cuda.get_device_capability() >= 8 or including_emulation == true
end

function cuda.is_tf32_supported()
  return available() and cuda.get_device_capability() >= 8
end

function cuda.is_initialized() return available() end
function cuda.init() need_gpu("torch.cuda.init") end
-- no memory is shared between processes through CUDA IPC here, so nothing is left to collect
function cuda.ipc_collect() need_gpu("torch.cuda.ipc_collect") end

-- ---- memory: PyTorch's older names ----

local function deprecated(old, new, f)
  return function(...)
    U.warn(string.format("torch.cuda.%s has been renamed to torch.cuda.%s", old, new))
    return f(...)
  end
end
cuda.memory_cached = deprecated("memory_cached", "memory_reserved", cuda.memory_reserved)
cuda.max_memory_cached = deprecated("max_memory_cached", "max_memory_reserved", cuda.max_memory_reserved)
cuda.reset_max_memory_allocated = deprecated("reset_max_memory_allocated", "reset_peak_memory_stats",
  cuda.reset_peak_memory_stats)
cuda.reset_max_memory_cached = deprecated("reset_max_memory_cached", "reset_peak_memory_stats",
  cuda.reset_peak_memory_stats)

-- memory_stats' dotted keys as nested tables: s.allocated_bytes.all.current
function cuda.memory_stats_as_nested_dict(device)
  local nested = {}
  for key, v in pairs(cuda.memory_stats(device)) do
    local t, parts = nested, {}
    for p in key:gmatch("[^.]+") do parts[#parts + 1] = p end
    for i = 1, #parts - 1 do
      t[parts[i]] = t[parts[i]] or {}
      t = t[parts[i]]
    end
    t[parts[#parts]] = v
  end
  return nested
end

function cuda.set_per_process_memory_fraction(fraction, device)
  U.errorf("torch.cuda.set_per_process_memory_fraction is not supported: nnrepl's caching allocator has no " ..
    "memory cap; limit the batch size instead, or set CUDA_VISIBLE_DEVICES to share GPUs between processes")
end
function cuda.get_per_process_memory_fraction(device)
  need_gpu("get_per_process_memory_fraction")
  return 1.0 -- no cap: the whole device
end

-- ---- seeds and generator states: GPU draws come from the engine's one generator, the one
-- torch.manual_seed seeds (so torch.cuda.manual_seed leaves it as it is) ----

function cuda.initial_seed()
  need_gpu("torch.cuda.initial_seed")
  return torch.initial_seed()
end

-- seed(): a non-deterministic seed; nothing to do without a GPU, as in PyTorch (a lazy call)
function cuda.seed() if available() then torch.seed() end end
cuda.seed_all = cuda.seed

function cuda.get_rng_state_all()
  local states = {}
  for i = 0, cuda.device_count() - 1 do states[#states + 1] = cuda.get_rng_state(i) end
  return states
end
function cuda.set_rng_state_all(states)
  for i, s in ipairs(states) do cuda.set_rng_state(s, i - 1) end
end

-- ---- streams and devices as context values ----

local Noop = { __close = function() end, __name = "torch.cuda.StreamContext" }

-- StreamContext(s) = torch.cuda.stream(s); nil: nothing changes
function cuda.StreamContext(stream)
  if stream == nil then return setmetatable({}, Noop) end
  return U.call(cuda.stream, stream)
end

-- device_of(x): a context on x's GPU when x is a CUDA tensor, nothing otherwise
function cuda.device_of(obj)
  if torch.is_tensor(obj) and obj.is_cuda then return cuda.device(obj:get_device()) end
  return setmetatable({}, Noop)
end
