-- torch.cuda's debugging and introspection, over bindings/cuda_debug.c: the sync debug mode,
-- the caching allocator's segments and blocks (memory_snapshot, memory._snapshot) and raw memory
-- (caching_allocator_alloc / _delete), host allocator statistics, NVML's readings (utilization,
-- temperature, power_draw, clock_rate, list_gpu_processes), external streams, build flags.
local torch = require "torch"
local U = require "nn_util"
local cuda = torch.cuda

local function need_gpu(what)
  if cuda.is_available() then return end
  U.errorf("%s: CUDA is not available (%s)", what,
    cuda._is_built() and "no GPU or no driver found" or "this build has no CUDA backend")
end

-- a device index from an integer, "cuda[:N]" or a torch.device; nil: the current device
local function device_index(what, device)
  if device == nil or math.type(device) == "integer" then return device end
  local ok, d = pcall(torch.device, device)
  if not ok or d.type ~= "cuda" then U.errorf("%s: expected a cuda device, got %s", what, tostring(device)) end
  return d.index
end

-- ---- sync debug mode: warn or raise where the host waits for the GPU ----

local MODES = { default = 0, warn = 1, error = 2 }

function cuda.set_sync_debug_mode(debug_mode)
  need_gpu("torch.cuda.set_sync_debug_mode")
  local mode = debug_mode
  if type(mode) == "string" then
    mode = MODES[mode]
    if not mode then U.error("invalid value of debug_mode, expected one of `default`, `warn`, `error`") end
  elseif math.type(mode) ~= "integer" or mode < 0 or mode > 2 then
    U.errorf("invalid value of debug_mode, expected one of 0,1,2 (or `default`, `warn`, `error`), got %s", tostring(debug_mode))
  end
  cuda._sync_debug(mode)
end

function cuda.get_sync_debug_mode()
  need_gpu("torch.cuda.get_sync_debug_mode")
  return cuda._sync_debug(-1)
end

-- ---- the caching allocator's state, as PyTorch's snapshot lays it out ----

local STATES = { [0] = "inactive", [1] = "active_allocated", [2] = "active_pending_free" }

-- segments (a list of tables, as PyTorch's dicts) with their blocks; requested_size is the
-- rounded size (the allocator keeps no other); a graph pool's segments have pool id {1, 0}
local function segments()
  local out, by_key = {}, {}
  for _, b in ipairs(cuda._memory_blocks()) do
    local key = b.device .. ":" .. b.segment
    local s = by_key[key]
    if not s then
      s = { device = b.device, address = b.segment, total_size = 0, allocated_size = 0, active_size = 0,
        requested_size = 0, stream = b.stream, segment_type = b.small and "small" or "large",
        segment_pool_id = { b.graph_pool and 1 or 0, 0 }, is_expandable = false, frames = {}, blocks = {} }
      by_key[key] = s
      out[#out + 1] = s
    end
    s.total_size = s.total_size + b.size
    if b.state == 1 then
      s.allocated_size = s.allocated_size + b.size
      s.requested_size = s.requested_size + b.size
    end
    if b.state ~= 0 then s.active_size = s.active_size + b.size end
    s.blocks[#s.blocks + 1] = { address = b.address, size = b.size, requested_size = b.size, state = STATES[b.state], frames = {} }
  end
  return out
end

-- every segment of every device ({} without a GPU, as PyTorch's CUDA build reports none)
function cuda.memory_snapshot(mempool_id)
  if mempool_id ~= nil then
    U.error("torch.cuda.memory_snapshot: mempool_id is not supported (there is no torch.cuda.MemPool); " ..
      "filter the segments on segment_pool_id instead")
  end
  return segments()
end

local memory = cuda.memory or {}
cuda.memory = memory

-- {segments=, device_traces=}: the traces stay empty, as no allocation history is recorded
function memory._snapshot(device)
  local traces = {}
  for i = 1, cuda.device_count() do traces[i] = {} end
  return { segments = segments(), device_traces = traces }
end

-- recording stays off: _record_memory_history(nil / false) is accepted, turning it on is not supported
function memory._record_memory_history(enabled, ...)
  if enabled == nil or enabled == false then return end
  U.error("torch.cuda.memory._record_memory_history: recording allocation history (stack traces of each " ..
    "allocation) is not supported; torch.cuda.memory._snapshot() and memory_snapshot() give the segments and blocks now")
end

function memory._dump_snapshot()
  U.error("torch.cuda.memory._dump_snapshot: writing a pickled snapshot is not supported; " ..
    "torch.cuda.memory._snapshot() returns it as a table (json.encode can save it)")
end

-- raw memory from the caching allocator: an address (integer) on device, used on stream
function cuda.caching_allocator_alloc(...)
  local o = U.parse("torch.cuda.caching_allocator_alloc", { { "size", U.REQUIRED }, { "device" }, { "stream" } }, ...)
  if math.type(o.size) ~= "integer" then U.errorf("caching_allocator_alloc: size must be an integer, got %s", U.typename(o.size)) end
  if math.type(o.stream) == "integer" then o.stream = cuda.ExternalStream(o.stream, o.device)
  elseif o.stream ~= nil and getmetatable(o.stream) ~= debug.getregistry()["torch.cuda.Stream"] then
    U.error("caching_allocator_alloc: invalid type for stream argument, must be `torch.cuda.Stream` or `int` " ..
      "representing a pointer to a existing stream")
  end
  return U.call(cuda._raw_alloc, o.size, device_index("caching_allocator_alloc", o.device), o.stream)
end

function cuda.reset_accumulated_memory_stats(device)
  cuda._reset_accumulated(device_index("reset_accumulated_memory_stats", device))
end
function cuda.reset_accumulated_host_memory_stats() cuda._host_reset(false) end
function cuda.reset_peak_host_memory_stats() cuda._host_reset(true) end

-- ---- NVML's readings (libnvidia-ml.so.1, from the driver) ----

local R = cuda._nvml_readings

local function nvml(name, what)
  return function(device)
    local fname = "torch.cuda." .. name
    need_gpu(fname)
    return U.call(cuda._nvml, what, device_index(name, device), fname)
  end
end
cuda.utilization = nvml("utilization", R.utilization)       -- percent of the time a kernel ran
cuda.memory_usage = nvml("memory_usage", R.memory_usage)     -- percent of the time memory was read or written
cuda.temperature = nvml("temperature", R.temperature)        -- degrees Celsius
cuda.power_draw = nvml("power_draw", R.power_draw)           -- milliwatts
cuda.clock_rate = nvml("clock_rate", R.clock_rate)           -- the SM clock, MHz
cuda.device_memory_used = nvml("device_memory_used", R.device_memory_used) -- bytes used on the device, all processes

function cuda.list_gpu_processes(device)
  local index = device_index("list_gpu_processes", device)
  local procs = nvml("list_gpu_processes", R.processes)(index)
  local lines = { string.format("GPU:%d", index or cuda.current_device()) }
  if #procs == 0 then lines[2] = "no processes are running" end
  for _, p in ipairs(procs) do
    lines[#lines + 1] = string.format("process %10d uses %12.3f MB GPU memory", p[1], p[2] / (1024 * 1024))
  end
  return table.concat(lines, "\n")
end

-- ---- streams made elsewhere ----

-- a cudaStream_t (an integer) made by other code; this program never destroys it
function cuda.ExternalStream(stream_ptr, device)
  if math.type(stream_ptr) ~= "integer" then
    U.errorf("torch.cuda.ExternalStream: stream_ptr must be an integer (a cudaStream_t), got %s", U.typename(stream_ptr))
  end
  return U.call(cuda._external_stream, stream_ptr, device_index("ExternalStream", device))
end

function cuda.get_stream_from_external(data_ptr, device)
  return cuda.ExternalStream(data_ptr, device)
end

-- user memory pools: the allocator keeps separate pools only for CUDA graphs
local function no_pool(name)
  return function()
    U.errorf("torch.cuda.%s is not supported: nnrepl's caching allocator keeps separate memory pools only for CUDA " ..
      "graphs (torch.cuda.graph_pool_handle(), capture_begin{pool=})", name)
  end
end
cuda.MemPool = no_pool("MemPool")
cuda.use_mem_pool = no_pool("use_mem_pool")

-- torch.cuda.memory holds the memory functions too
for _, name in ipairs({ "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
  "memory_stats", "memory_summary", "memory_snapshot", "reset_peak_memory_stats", "reset_accumulated_memory_stats",
  "empty_cache", "mem_get_info", "caching_allocator_alloc", "caching_allocator_delete", "host_memory_stats",
  "reset_accumulated_host_memory_stats", "reset_peak_host_memory_stats", "list_gpu_processes", "device_memory_used",
  "MemPool", "use_mem_pool" }) do
  memory[name] = memory[name] or cuda[name]
end

-- ---- build flags ----

cuda.has_half = true
cuda.has_magma = false -- nnrepl's linear algebra on the GPU does not use MAGMA

cuda.jiterator = {}
local function no_jit(name)
  return function()
    U.errorf("torch.cuda.jiterator.%s is not supported: nnrepl compiles no CUDA code at run time; write the " ..
      "function with tensor ops (each runs as a CUDA kernel on CUDA tensors)", name)
  end
end
cuda.jiterator._create_jit_fn = no_jit("_create_jit_fn")
cuda.jiterator._create_multi_output_jit_fn = no_jit("_create_multi_output_jit_fn")

return torch
