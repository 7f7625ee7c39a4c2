-- torch.cuda.profiler and torch.cuda.nvtx: marks for Nsight Compute and Nsight Systems, over
-- bindings/cuda.c.
--   ncu --profile-from-start off nnrepl train.lua   -- kernels only inside profiler.profile()
--   do local _ <close> = torch.cuda.profiler.profile() ... end
--   do local _ <close> = torch.cuda.nvtx.range("step %d", i) ... end   -- ncu --nvtx, nsys
-- Each also takes a trailing function to run inside it, as U.with's other states do.
local torch = require "torch"
local U = require "nn_util"
local cuda = torch.cuda

local profiler = {}
cuda.profiler = profiler

function profiler.start() U.call(cuda._profiler_collect, true) end
function profiler.stop() U.call(cuda._profiler_collect, false) end

-- profiling on for the block (or fn(...)), off again when it ends, also by an error
function profiler.profile(fn, ...)
  profiler.start()
  return U.scoped(profiler.stop, fn, ...)
end

function profiler.init()
  U.error("torch.cuda.profiler.init: CUDA12+ does not need profiler initialization!")
end

local nvtx = {}
cuda.nvtx = nvtx

local function message(what, msg)
  if type(msg) ~= "string" then
    U.errorf("torch.cuda.nvtx.%s: msg must be a string, got %s", what, U.typename(msg))
  end
  return msg
end

-- the depth of the range just opened (0 for the outermost), as NVTX counts
function nvtx.range_push(msg) return U.call(cuda._nvtx_push, message("range_push", msg)) end
-- the depth left after closing the innermost range; -1 when none was open
function nvtx.range_pop() return U.call(cuda._nvtx_pop) end
-- a range that may end on another thread or out of order: its id for range_end
function nvtx.range_start(msg) return U.call(cuda._nvtx_range_start, message("range_start", msg)) end
function nvtx.range_end(id) U.call(cuda._nvtx_range_end, id) end
function nvtx.mark(msg) U.call(cuda._nvtx_mark, message("mark", msg)) end

-- range(msg [, args...] [, fn]): a pushed range for the block (or fn()), msg formatted with
-- string.format when args follow, as PyTorch's range formats with str.format
function nvtx.range(msg, ...)
  local fn, args, n = U.pop_fn(...)
  msg = message("range", msg)
  if n > 0 then msg = string.format(msg, table.unpack(args, 1, n)) end
  nvtx.range_push(msg)
  return U.scoped(nvtx.range_pop, fn)
end
