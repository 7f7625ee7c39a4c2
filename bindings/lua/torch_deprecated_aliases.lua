-- Deprecated and legacy names PyTorch still has: the autocast setters of one device
-- (set_autocast_gpu_dtype, set_autocast_cpu_enabled, set_autocast_cpu_dtype),
-- torch.testing.assert_allclose, torch.utils.model_zoo.load_url; with torch.random.Generator and
-- torch.distributed.breakpoint (refused: there is no pdb).
local torch = require "torch"
local U = require "nn_util"
require "torch_amp"
require "torch_hub"
require "torch_random"
require "torch_ops_extra"
local dist = require "torch_distributed"

local function deprecated(old, new)
  U.warn(string.format("`torch.%s` is deprecated. Please use `torch.%s` instead.", old, new), "FutureWarning")
end

function torch.set_autocast_gpu_dtype(dtype)
  deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
  return torch.set_autocast_dtype("cuda", dtype)
end
function torch.set_autocast_cpu_enabled(enabled)
  deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
  return torch.set_autocast_enabled("cpu", enabled)
end
function torch.set_autocast_cpu_dtype(dtype)
  deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
  return torch.set_autocast_dtype("cpu", dtype)
end

-- assert_allclose(actual, expected, rtol=, atol=, equal_nan=true, msg=""): assert_close with the
-- old defaults: non-tensors made tensors (expected with actual's dtype), dtypes not compared,
-- NaNs equal, tolerances the larger of the two dtypes' old ones
local old_precisions = { [torch.float16] = { 1e-3, 1e-3 }, [torch.float32] = { 1e-4, 1e-5 }, [torch.float64] = { 1e-5, 1e-8 } }
function torch.testing.assert_allclose(...)
  local o = U.parse("assert_allclose", { { "actual", U.REQUIRED }, { "expected", U.REQUIRED }, { "rtol" }, { "atol" },
    { "equal_nan", true }, { "msg", "" } }, ...)
  U.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future release. Please use " ..
    "`torch.testing.assert_close()` instead. You can find detailed upgrade instructions in " ..
    "https://github.com/pytorch/pytorch/issues/61844.", "FutureWarning")
  local actual, expected = o.actual, o.expected
  if not torch.is_tensor(actual) then actual = torch.tensor(actual) end
  if not torch.is_tensor(expected) then expected = torch.tensor(expected, { dtype = actual.dtype }) end
  local rtol, atol = o.rtol, o.atol
  if rtol == nil and atol == nil then
    local a, e = old_precisions[actual.dtype] or { 0, 0 }, old_precisions[expected.dtype] or { 0, 0 }
    rtol, atol = math.max(a[1], e[1]), math.max(a[2], e[2])
  end
  return torch.testing.assert_close(actual, expected, { rtol = rtol, atol = atol, equal_nan = o.equal_nan, check_device = true,
    check_dtype = false, check_stride = false, msg = (o.msg ~= "" and o.msg) or nil })
end

torch.random.Generator = torch.Generator

torch.utils = torch.utils or {}
torch.utils.model_zoo = torch.utils.model_zoo or {}
torch.utils.model_zoo.load_url = torch.hub.load_state_dict_from_url

-- breakpoint(rank=0, skip=0, timeout_s=3600): PyTorch stops one rank in pdb
function dist.breakpoint(...)
  U.parse("breakpoint", { { "rank", 0 }, { "skip", 0 }, { "timeout_s", 3600 } }, ...)
  U.error("torch.distributed.breakpoint: nnrepl has no Python debugger (pdb) to stop a rank in; print what you need " ..
    "to see (torch.distributed.get_rank() tells the ranks apart), or run the rank under gdb")
end
