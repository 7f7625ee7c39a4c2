-- torch.backends (bindings/lua/torch_backends.lua): PyTorch's defaults, setting the switches,
-- set/get_float32_matmul_precision, bad values. Leaves every switch at its default.
local T = ...
local B = torch.backends

local function defaults()
  B.cuda.matmul.allow_tf32 = false
  B.cudnn.allow_tf32 = true
  B.cudnn.benchmark = false
  B.cudnn.deterministic = false
  torch.set_float32_matmul_precision("highest")
end

T.test("PyTorch's defaults", function()
  T.eq(B.cuda.matmul.allow_tf32, false, "matmul.allow_tf32")
  T.eq(B.cudnn.allow_tf32, true, "cudnn.allow_tf32")
  T.eq(B.cudnn.benchmark, false, "cudnn.benchmark")
  T.eq(B.cudnn.deterministic, false, "cudnn.deterministic")
  T.eq(torch.get_float32_matmul_precision(), "highest", "precision")
  T.eq(B.cudnn.is_available(), torch.cuda.is_available(), "cudnn.is_available")
end)

T.test("switches read back what was set", function()
  B.cudnn.allow_tf32 = false
  B.cudnn.benchmark = true
  B.cuda.matmul.allow_tf32 = true
  T.eq({ B.cuda.matmul.allow_tf32, B.cudnn.allow_tf32, B.cudnn.benchmark }, { true, false, true }, "after setting")
  T.eq(torch.get_float32_matmul_precision(), "high", "allow_tf32 = true reads as 'high'")
  B.cuda.matmul.allow_tf32 = false
  T.eq({ B.cuda.matmul.allow_tf32, B.cudnn.allow_tf32, B.cudnn.benchmark }, { false, false, true }, "one at a time")
  B.cudnn.deterministic = true
  T.eq(B.cudnn.deterministic, true, "cudnn.deterministic")
  T.eq(torch._backends.get("cudnn.deterministic"), true, "the engine's switch")
  T.raises(function() B.cudnn.deterministic = "yes" end, "torch.backends.cudnn.deterministic must be a boolean, got string")
  B.cudnn.my_setting = 3 -- any other attribute is kept, as on a Python module
  T.eq(B.cudnn.my_setting, 3, "plain field")
  B.cudnn.my_setting = nil
  defaults()
end)

T.test("set_float32_matmul_precision", function()
  torch.set_float32_matmul_precision("medium")
  T.eq({ B.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision() }, { true, "medium" }, "medium")
  torch.set_float32_matmul_precision("high")
  T.eq({ B.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision() }, { true, "high" }, "high")
  torch.set_float32_matmul_precision("highest")
  T.eq({ B.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision() }, { false, "highest" }, "highest")
  T.eq(B.cudnn.allow_tf32, true, "convolutions untouched")
  T.raises(function() torch.set_float32_matmul_precision("low") end,
    "bad argument #1 to 'set_float32_matmul_precision' (expected one of 'highest', 'high', 'medium', got 'low')")
  T.raises(function() B.cudnn.allow_tf32 = 1 end, "torch.backends.cudnn.allow_tf32 must be a boolean, got number")
  T.eq(B.cudnn.allow_tf32, true, "unchanged after a bad value")
  T.raises(function() torch._backends.get("cudnn.nope") end, "bad argument #1 to 'get' (no switch named 'cudnn.nope')")
  defaults()
end)

T.test("what nnrepl does not have answers as PyTorch's builds without it; mkldnn it has", function()
  T.eq(B.mps.is_available(), false, "mps")
  T.eq(B.mps.is_built(), false, "mps built")
  T.eq({ B.mkl.is_available(), B.openmp.is_available(), B.opt_einsum.is_available() }, { false, false, false },
    "mkl, openmp, opt_einsum")
  -- oneDNN (mkldnn) runs the float32 CPU convolutions; the switch turns it off (test_parallel.lua checks both ways)
  T.eq({ B.mkldnn.is_available(), B.mkldnn.enabled }, { true, true }, "mkldnn available and on")
  B.mkldnn.enabled = false
  T.eq(torch._backends.get("mkldnn.enabled"), false, "mkldnn switched off")
  B.mkldnn.enabled = true
  T.eq(B.cuda.is_built(), torch.cuda.is_available(), "cuda built")
  T.eq(B.cpu.get_cpu_capability(), "DEFAULT", "cpu capability")
  T.eq({ B.cuda.matmul.allow_fp16_reduced_precision_reduction, B.cuda.matmul.allow_bf16_reduced_precision_reduction },
    { true, true }, "reduced-precision reductions allowed by default")
end)

T.test("scaled_dot_product_attention's kernel switches", function()
  local names = { "flash", "mem_efficient", "math", "cudnn" }
  for _, n in ipairs(names) do T.eq(B.cuda[n .. "_sdp_enabled"](), true, n .. " on by default") end
  B.cuda.enable_flash_sdp(false)
  T.eq(B.cuda.flash_sdp_enabled(), false, "flash off")
  B.cuda.enable_flash_sdp(true)
  T.raises(function() B.cuda.enable_math_sdp(1) end, "enable_math_sdp: expected a boolean, got number")
end)

T.test("library versions", function()
  T.eq(torch.version.__version__, torch.__version__, "torch.version.__version__")
  if torch.cuda.is_available() then
    T.check(tostring(torch.version.cuda):match("^%d+%.%d+$") ~= nil, "torch.version.cuda: " .. tostring(torch.version.cuda))
    T.check(math.type(B.cudnn.version()) == "integer" and B.cudnn.version() >= 90000, "cudnn version " .. tostring(B.cudnn.version()))
    local v = torch.cuda.nccl.version()
    T.check(v[1] == 2 and math.type(v[2]) == "integer" and math.type(v[3]) == "integer", "nccl version")
    T.eq(torch.cuda.nccl.is_available({ torch.zeros(2, { device = "cuda" }) }), true, "nccl takes contiguous CUDA tensors")
    T.eq(torch.cuda.nccl.is_available({ torch.zeros(2) }), false, "not CPU ones")
  elseif torch.cuda._is_built() then
    T.skip("CUDA build without a GPU", 5)
  else
    T.eq({ torch.version.cuda, B.cudnn.version(), torch.cuda.nccl.is_available({}) }, { nil, nil, false }, "no CUDA backend")
    T.raises(function() torch.cuda.nccl.version() end, "~this build has no NCCL")
  end
end)
