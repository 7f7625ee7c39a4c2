-- Small names PyTorch has that the rest of nnrepl lacked: F.conv_tbc and
-- F.adaptive_max_pool3d_with_indices; torch.cuda.get_arch_list / get_gencode_flags (from the
-- architectures CMake built the kernels for) and graph_pool_handle. (torch.cuda's
-- is_current_stream_capturing and can_device_access_peer are in bindings/cuda.c.)
local torch = require "torch"
local U = require "nn_util"
local F = torch.nn.functional
local cuda = torch.cuda

F.conv_tbc = torch.conv_tbc

function F.adaptive_max_pool3d_with_indices(input, output_size)
  return F.adaptive_max_pool3d(input, output_size, true)
end

-- CMake's list ("80,90-real,90a-virtual"): "NN" builds the SASS (sm_NN) and the PTX (compute_NN),
-- "-real" the SASS only, "-virtual" the PTX only. The SASS come first, as in PyTorch's list.
-- Names such as "native" or "all" name no architecture and are left out.
local function arch_list(archs)
  local sass, ptx = {}, {}
  for entry in archs:gmatch("[^,]+") do
    local arch, kind = entry:match("^(%d+%a?)%-?(%a*)$")
    if arch then
      if kind ~= "virtual" then sass[#sass + 1] = "sm_" .. arch end
      if kind ~= "real" then ptx[#ptx + 1] = "compute_" .. arch end
    end
  end
  for _, p in ipairs(ptx) do sass[#sass + 1] = p end
  return sass
end
cuda._arch_list = arch_list

function cuda.get_arch_list()
  if not cuda.is_available() then return {} end
  return arch_list(cuda._versions().archs)
end

function cuda.get_gencode_flags()
  local flags = {}
  for _, a in ipairs(cuda.get_arch_list()) do
    local kind, arch = a:match("^(%a+)_(.*)$")
    flags[#flags + 1] = string.format("-gencode compute=compute_%s,code=%s_%s", arch, kind, arch)
  end
  return table.concat(flags, " ")
end

-- an opaque handle of a graph memory pool for capture_begin{pool=} / torch.cuda.graph(..., {pool=}):
-- a CUDAGraph that captures nothing itself; its pool starts with the first capture that shares it
function cuda.graph_pool_handle()
  if not cuda.is_available() then
    U.errorf("graph_pool_handle: CUDA is not available (%s)",
      cuda._is_built() and "no GPU or no driver found" or "this build has no CUDA backend")
  end
  return cuda.CUDAGraph()
end

return torch
