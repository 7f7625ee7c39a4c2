-- torch.backends: the switches of the CUDA matrix and convolution kernels, as PyTorch names
-- them (the flags live in engine/cuda_flags.c; bindings/backends.c reads and writes them).
--
--   torch.backends.cuda.matmul.allow_tf32 = true    -- float32 matmuls may use TF32 (default false)
--   torch.backends.cudnn.allow_tf32 = false          -- float32 convolutions may use TF32 (default true)
--   torch.backends.cudnn.benchmark = true            -- time conv algorithms once per shape (default false)
--   torch.backends.cudnn.enabled = false             -- nn.RNN/LSTM/GRU on CUDA without cuDNN (default true)
--   torch.backends.cudnn.deterministic = true        -- convolutions take deterministic engines only (default false)
--   torch.backends.mkldnn.enabled = false            -- float32 CPU convolutions without oneDNN (default true)
--   torch.set_float32_matmul_precision("high")       -- "highest" (TF32 off), "high" or "medium" (on)
--   torch.get_float32_matmul_precision()
-- A change takes effect at the next op. Other keys are kept as plain fields, as Python's
-- modules keep any attribute set on them.
local torch = require "torch"
local C = torch._backends

-- A table whose listed keys read and write engine flags (key -> flag name).
local function switches(name, map, fields)
  local t = fields or {}
  return setmetatable(t, {
    __name = name,
    __index = function(_, k)
      local f = map[k]
      if f then return C.get(f) end
    end,
    __newindex = function(tbl, k, v)
      local f = map[k]
      if not f then return rawset(tbl, k, v) end
      if type(v) ~= "boolean" then
        error(string.format("%s.%s must be a boolean, got %s", name, k, type(v)), 2)
      end
      C.set(f, v)
    end,
  })
end

local backends = torch.backends or {}
torch.backends = backends
backends.cuda = backends.cuda or {}
backends.cuda.matmul = switches("torch.backends.cuda.matmul", { allow_tf32 = "matmul.allow_tf32" })
backends.cudnn = switches("torch.backends.cudnn", { allow_tf32 = "cudnn.allow_tf32", benchmark = "cudnn.benchmark",
  deterministic = "cudnn.deterministic" }, {
  is_available = function() return torch.cuda.is_available() end,
  enabled = true, -- false: recurrent layers on CUDA run composed of ops instead of cuDNN's RNN
})

-- The libraries' versions: torch.version.cuda ("13.0", nil without CUDA), torch.backends.cudnn.version()
-- (91000 for 9.10.0), torch.cuda.nccl.version() ({2, 28, 9}).
local lib = torch.cuda._versions and torch.cuda._versions()
torch.version = torch.version or {}
torch.version.__version__ = torch.__version__
torch.version.cuda = lib and lib.runtime > 0 and string.format("%d.%d", lib.runtime // 1000, lib.runtime % 1000 // 10) or nil
torch.version.git_version, torch.version.debug, torch.version.hip = "unknown", false, nil
backends.cudnn.version = function() return lib and lib.cudnn > 0 and lib.cudnn or nil end
torch.cuda.nccl = torch.cuda.nccl or {}
torch.cuda.nccl.version = function()
  if not (lib and lib.nccl > 0) then error("torch.cuda.nccl.version: this build has no NCCL", 2) end
  local v = lib.nccl -- NCCL numbers 2.19 and later as major * 10000 + minor * 100 + patch
  return { v // 10000, v % 10000 // 100, v % 100 }
end
torch.cuda.nccl.is_available = function(tensors)
  if not (lib and lib.nccl > 0) then return false end
  for _, t in ipairs(tensors or {}) do
    if not torch.is_tensor(t) or t.device.type ~= "cuda" or not t:is_contiguous() then return false end
  end
  return true
end

-- What nnrepl does not have, answered as PyTorch answers on a machine without it.
local function absent() return false end
backends.cuda.is_built = function() return torch.cuda.is_available() end
backends.mps = { is_available = absent, is_built = absent }
backends.mkl = { is_available = absent }
-- float32 CPU convolutions run through oneDNN (engine/cpu/conv_dnnl.c); enabled = false: nnrepl's own kernels
backends.mkldnn = switches("torch.backends.mkldnn", { enabled = "mkldnn.enabled" }, { is_available = function() return true end })
backends.openmp = { is_available = absent }
backends.opt_einsum = { is_available = absent, get_opt_einsum = function() return nil end, enabled = false, strategy = nil }
backends.cpu = { get_cpu_capability = function() return "DEFAULT" end }

-- Reduced-precision reductions in float16/bfloat16 products are allowed (PyTorch's defaults);
-- nnrepl's products accumulate in float32 whatever these say.
backends.cuda.matmul.allow_fp16_reduced_precision_reduction = true
backends.cuda.matmul.allow_bf16_reduced_precision_reduction = true

-- Which scaled_dot_product_attention kernels may run (nn.attention.sdpa_kernel sets them too).
-- nnrepl has one, the math one (composed of matmul, softmax and dropout): the switches are kept
-- and read back, and the math kernel runs whatever they say.
local sdp = { flash = true, mem_efficient = true, math = true, cudnn = true }
for name in pairs(sdp) do
  backends.cuda["enable_" .. name .. "_sdp"] = function(on)
    if type(on) ~= "boolean" then error(string.format("enable_%s_sdp: expected a boolean, got %s", name, type(on)), 2) end
    sdp[name] = on
  end
  backends.cuda[name .. "_sdp_enabled"] = function() return sdp[name] end
end
backends.cuda._sdp = sdp

local PRECISIONS = { highest = true, high = true, medium = true }
local precision = "highest"

function torch.set_float32_matmul_precision(p)
  if not PRECISIONS[p] then
    error(string.format("bad argument #1 to 'set_float32_matmul_precision' (expected one of 'highest', 'high', " ..
      "'medium', got %s)", type(p) == "string" and "'" .. p .. "'" or type(p)), 2)
  end
  precision = p
  C.set("matmul.allow_tf32", p ~= "highest")
end

function torch.get_float32_matmul_precision()
  -- allow_tf32 set directly wins, as in PyTorch (both read one flag)
  if C.get("matmul.allow_tf32") then return precision == "highest" and "high" or precision end
  return "highest"
end

return backends
