-- torch.cuda.profiler and torch.cuda.nvtx (bindings/lua/torch_cuda_marks.lua): the errors of a
-- build without the CUDA backend or without a GPU, argument checks, and the block and function
-- forms. Whether Nsight Compute sees only the marked work is tests/cuda/test_profiler_marks.sh.
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
  if not gpu then return T.skip("no GPU", 4) end
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
  T.check(true)
end)
