-- torch.cuda.profiler and torch.cuda.nvtx (bindings/lua/torch_cuda_marks.lua) and
-- torch.autograd.profiler.emit_nvtx: the errors of a build without the CUDA backend or without a
-- GPU, argument checks, and the block and function forms. Whether Nsight Compute sees only the
-- marked work is tests/gpu/profiler_marks.sh.
local T = ...
local cuda = torch.cuda
local built, gpu = cuda._is_built(), cuda.is_available()

T.test("argument checks", function()
  T.raises(function() cuda.nvtx.range_push(3) end, "torch.cuda.nvtx.range_push: msg must be a string, got int")
  T.raises(function() cuda.nvtx.mark() end, "torch.cuda.nvtx.mark: msg must be a string, got NoneType")
  T.raises(function() cuda.nvtx.range({}) end, "~msg must be a string, got table")
  T.raises(function() cuda.profiler.init("out.csv") end, "~CUDA12+ does not need profiler initialization")
end)

T.test("without the CUDA backend", function()
  if built then return T.skip("a CUDA build", 3) end
  T.raises(function() cuda.nvtx.range_push("a") end, "NVTX functions not installed. Are you sure you have a CUDA build?")
  T.raises(function() cuda.nvtx.range("a", function() end) end, "~NVTX functions not installed")
  T.raises(function() cuda.profiler.start() end, "torch.cuda.profiler.start: CUDA is not available (this build has no CUDA backend)")
  T.raises(function() torch.autograd.profiler.emit_nvtx() end, "emit_nvtx: NVTX functions not installed. Are you sure you have a CUDA build?")
  T.eq(torch.autograd.profiler.emit_nvtx({ enabled = false }, function() return 3 end), 3)
end)

T.test("emit_nvtx (no GPU needed)", function()
  if not built then return T.skip("no CUDA backend", 8) end
  local emit = torch.autograd.profiler.emit_nvtx
  local dev = gpu and "cuda" or "cpu"
  local x = torch.tensor({ -1.0, 2.0, -3.0 }, { device = dev, requires_grad = true })
  local y, g = emit({ record_shapes = true }, function()
    local out = (x:relu() * 2):sum()
    out:backward()
    return out:item(), x.grad
  end)
  T.eq(y, 4.0)
  T.eq(g:tolist(), { 0.0, 2.0, 0.0 })
  do
    local _ <close> = emit()
    T.raises(function() torch.profiler.profile() end, "~another profiler is running")
    torch.profiler.record_function("inside", function() T.eq((x * 0):sum():item(), 0.0) end)
  end
  local p = torch.profiler.profile() -- free again once emit_nvtx has closed
  local _ = x + 1
  p:stop()
  T.check(#p:events() >= 1, "the profiler records after emit_nvtx")
  T.raises(function() emit(function() error("in emit") end) end, "~in emit")
  T.eq(select(2, pcall(function() local q = torch.profiler.profile(); q:stop(); return true end)), true)
  T.raises(function() emit({ bogus = 1 }) end, "~bogus")
end)

T.test("NVTX ranges (no GPU needed)", function()
  if not built then return T.skip("no CUDA backend", 7) end
  -- depths are NVTX's own: negative when no tool is attached, so only their type is fixed here
  T.eq(math.type(cuda.nvtx.range_push("outer")), "integer")
  T.eq(math.type(cuda.nvtx.range_pop()), "integer")
  local id = cuda.nvtx.range_start("async")
  T.eq(math.type(id), "integer")
  cuda.nvtx.range_end(id)
  cuda.nvtx.mark("here")
  local a, b = cuda.nvtx.range("step %d of %s", 3, "ten", function() return 1, 2 end)
  T.eq({ a, b }, { 1, 2 })
  do
    local r <close> = cuda.nvtx.range("block")
    T.eq(type(getmetatable(r).__close), "function")
  end
  T.raises(function() cuda.nvtx.range("fails", function() error("inside") end) end, "~inside")
  T.raises(function() cuda.nvtx.range("%d", "x", function() end) end, "~number expected")
  if not gpu then T.raises(function() cuda.profiler.start() end, "torch.cuda.profiler.start: CUDA is not available (no GPU or no driver found)") end
end)

T.test("profiler.profile on a GPU", function()
  if not gpu then return T.skip("no GPU", 3) end
  local x = torch.randn(1000, { device = "cuda" })
  local y = cuda.profiler.profile(function() return x:relu() end)
  T.eq(y:sum():item() >= 0, true)
  do
    local _ <close> = cuda.profiler.profile()
    y = x:abs()
  end
  T.near(y:sum():item(), x:abs():sum():item(), 1e-3)
  T.raises(function() cuda.profiler.profile(function() error("in profile") end) end, "~in profile")
  cuda.profiler.stop() -- stopping twice is allowed, as cudaProfilerStop allows
end)
