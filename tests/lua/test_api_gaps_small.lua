-- Small API gaps: torch.cond, torch.while_loop, the legacy autocast setters,
-- torch.testing.assert_allclose, torch.utils.model_zoo.load_url, torch.random.Generator,
-- torchvision's image and video backends, torch.distributed.breakpoint's refusal
local T = ...

local function run(dev)
  T.test("cond on " .. dev, function()
    local x = torch.tensor({ 1.0, -2.0 }, { device = dev })
    local t = function(a, b) return a + b end
    local f = function(a, b) return a - b end
    T.eq(torch.cond(true, t, f, { x, x }):cpu():tolist(), { 2.0, -4.0 })
    T.eq(torch.cond(x:sum():gt(0), t, f, { x, x }):cpu():tolist(), { 0.0, 0.0 }, "a one-element bool tensor")
    T.eq(torch.cond(torch.tensor({ 3 }, { device = dev }), t, f, { x, 1 }):cpu():tolist(), { 2.0, -1.0 }, "a number operand")
    T.eq(torch.cond(false, function() return 7 end, function() return 8 end), 8, "no operands")
    local w = torch.tensor({ 2.0 }, { device = dev }):requires_grad_()
    torch.cond(true, function(a) return (a * a):sum() end, f, { w }):backward()
    T.eq(w.grad:cpu():tolist(), { 4.0 }, "gradients flow through the branch taken")
    T.raises(function() torch.cond(x, t, f, { x }) end, "~Expected pred to be bool or single-element tensor")
    T.raises(function() torch.cond(true, t, 3, { x }) end, "Expect both branches to be callable.")
    T.raises(function() torch.cond(true, t, f, { x, "s" }) end, "~Expect operands to be a tuple of possibly nested dict/list/tuple")
  end)

  T.test("while_loop on " .. dev, function()
    -- the sum 1 + 2 + ... + 10 and 2^10, by hand
    local i0, s0, p0 = torch.tensor(0, { device = dev }), torch.tensor(0, { device = dev }), torch.tensor(1.0, { device = dev })
    local i, s, p = torch.while_loop(function(i) return i:lt(10) end,
      function(i, s, p) return i + 1, s + i + 1, p * 2 end, { i0, s0, p0 })
    T.eq({ i:item(), s:item(), p:item() }, { 10, 55, 1024.0 })
    T.eq(i.device.type, dev)
    local a, b = torch.while_loop(function(a) return a:sum():lt(5) end, function(a, b) return { a + 1, b } end,
      { torch.zeros(2, { device = dev }), torch.ones(1, { device = dev }) })
    T.eq({ a:cpu():tolist(), b:cpu():tolist() }, { { 3.0, 3.0 }, { 1.0 } }, "body returning one list")
    local z = torch.while_loop(function() return false end, function(v) return v end, { i0 })
    T.eq(z, i0, "no iteration: the inputs")
    T.raises(function() torch.while_loop(function() return 1 end, function(v) return v end, { i0 }) end,
      "cond_fn must return a boolean scalar tensor or a boolean but got int")
    T.raises(function() torch.while_loop(function(v) return v end, function(v) return v end, { i0 }) end,
      "cond_fn must return a boolean scalar tensor or a boolean but got torch.int64 tensor of shape []")
    T.raises(function() torch.while_loop(function(v) return v:lt(3) end, function(v) return v + 1, v end, { i0 }) end,
      "body_fn should return the same number of elements as carried_inputs (1), got 2")
    T.raises(function() torch.while_loop(function() return true end, 5, { i0 }) end, "Expect cond_fn and body_fn to be callable.")
    T.raises(function() torch.while_loop(function() return true end, function(v) return v end, { 1 }) end,
      "~Expect carried_inputs to be a tuple of possibly nested dict/list/tuple that only consists of tensor leaves")
  end)

  T.test("assert_allclose on " .. dev, function()
    local x = torch.tensor({ 1.0, 2.0 }, { device = dev })
    torch.testing.assert_allclose(x, x + 5e-6) -- float32's old tolerances: rtol 1e-4, atol 1e-5
    T.raises(function() torch.testing.assert_allclose(x, x + 1e-3) end, "~Tensor-likes are not close!")
    torch.testing.assert_allclose(x, x:double(), { rtol = 0, atol = 0 }) -- dtypes are not compared
    local n = torch.tensor({ 0 / 0 }, { device = dev })
    torch.testing.assert_allclose(n, n:clone()) -- NaNs are equal
    T.raises(function() torch.testing.assert_allclose(x, x + 1, 0, 0, true, "custom message") end, "~custom message")
  end)
end

run("cpu")
if torch.cuda.is_available() then run("cuda") else T.skip("no CUDA device", 3) end

T.test("assert_allclose with plain values", function()
  torch.testing.assert_allclose({ 1.0, 2.0 }, { 1.0, 2.0 + 1e-9 })
  torch.testing.assert_allclose(torch.tensor({ 1.0 }, { dtype = torch.float64 }), { 1.0 + 1e-9 }) -- float64: rtol 1e-5
  T.raises(function() torch.testing.assert_allclose(torch.tensor({ 1.0 }, { dtype = torch.float64 }), { 1.001 }) end,
    "~Tensor-likes are not close!")
  T.raises(function() torch.testing.assert_allclose(torch.ones(1)) end, "~missing required argument 'expected'")
end)

T.test("legacy autocast setters", function()
  local gpu, cpu, on = torch.get_autocast_gpu_dtype(), torch.get_autocast_cpu_dtype(), torch.is_autocast_cpu_enabled()
  torch.set_autocast_gpu_dtype(torch.bfloat16)
  T.eq(torch.get_autocast_dtype("cuda"), torch.bfloat16)
  torch.set_autocast_cpu_dtype(torch.float16)
  T.eq(torch.get_autocast_dtype("cpu"), torch.float16)
  torch.set_autocast_cpu_enabled(true)
  T.eq(torch.is_autocast_enabled("cpu"), true)
  torch.set_autocast_cpu_enabled(on)
  torch.set_autocast_cpu_dtype(cpu)
  torch.set_autocast_gpu_dtype(gpu)
  T.eq({ torch.get_autocast_gpu_dtype(), torch.get_autocast_cpu_dtype(), torch.is_autocast_cpu_enabled() }, { gpu, cpu, on })
end)

T.test("model_zoo.load_url, random.Generator", function()
  T.eq(torch.utils.model_zoo.load_url, torch.hub.load_state_dict_from_url)
  local dir = (os.getenv("TMPDIR") or "/tmp") .. "/nnrepl_model_zoo_" .. tostring(math.random(1 << 30))
  os.execute("mkdir -p " .. dir)
  torch.save({ w = torch.tensor({ 1.5, 2.5 }) }, dir .. "/tiny-0123.pth")
  local sd = torch.utils.model_zoo.load_url("https://example.org/models/tiny-0123.pth", { model_dir = dir })
  T.eq(sd.w:tolist(), { 1.5, 2.5 })
  os.remove(dir .. "/tiny-0123.pth")
  os.remove(dir)
  T.raises(function() torch.utils.model_zoo.load_url("https://example.org/m/absent.pth", { model_dir = dir }) end,
    "~nnrepl downloads nothing at run time")
  T.eq(torch.random.Generator, torch.Generator)
  local g = torch.random.Generator():manual_seed(3)
  local a = torch.rand(3, { generator = g })
  g:manual_seed(3)
  T.eq(torch.rand(3, { generator = g }):tolist(), a:tolist())
end)

T.test("torchvision backends", function()
  local tv = require "torchvision"
  T.eq(tv.get_image_backend(), "PIL")
  tv.set_image_backend("PIL")
  T.raises(function() tv.set_image_backend("cv2") end, "Invalid backend 'cv2'. Options are 'PIL' and 'accimage'")
  T.raises(function() tv.set_image_backend("accimage") end, "~accimage backend is not available in nnrepl")
  T.eq(tv.get_image_backend(), "PIL")
  T.eq(tv.get_video_backend(), "pyav")
  tv.set_video_backend("pyav")
  T.raises(function() tv.set_video_backend("x") end, "Invalid video backend 'x'. Options are 'pyav', 'video_reader' and 'cuda'")
  T.raises(function() tv.set_video_backend("video_reader") end, "~video_reader video backend is not available.")
  T.raises(function() tv.set_video_backend("cuda") end, "~cuda video backend is not available.")
  T.eq(tv.get_video_backend(), "pyav")
end)

T.test("distributed.breakpoint", function()
  T.raises(function() torch.distributed.breakpoint() end, "~torch.distributed.breakpoint: nnrepl has no Python debugger (pdb)")
  T.raises(function() torch.distributed.breakpoint({ bogus = 1 }) end, "~unknown keyword 'bogus'")
end)
