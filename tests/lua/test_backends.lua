-- torch.backends (bindings/lua/torch_backends.lua): PyTorch's defaults, setting the switches,
-- set/get_float32_matmul_precision, bad values. Leaves every switch at its default.
local T = ...
local B = torch.backends

local function defaults()
  B.cuda.matmul.allow_tf32 = false
  B.cudnn.allow_tf32 = true
  B.cudnn.benchmark = false
  torch.set_float32_matmul_precision("highest")
end

T.test("PyTorch's defaults", function()
  T.eq(B.cuda.matmul.allow_tf32, false, "matmul.allow_tf32")
  T.eq(B.cudnn.allow_tf32, true, "cudnn.allow_tf32")
  T.eq(B.cudnn.benchmark, false, "cudnn.benchmark")
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
  B.cudnn.deterministic = true -- any other attribute is kept, as on a Python module
  T.eq(B.cudnn.deterministic, true, "plain field")
  B.cudnn.deterministic = nil
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
