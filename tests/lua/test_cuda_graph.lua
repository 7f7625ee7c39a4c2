-- CUDA graphs: a captured expression replays on new data in its static inputs; a captured
-- MLP training step (forward, cross_entropy, backward, SGD momentum) replayed gives the
-- same losses and weights as the same steps run eagerly, also under autocast (where eager
-- steps take the optimizer's parameter copies and a captured one casts); replays allocate nothing; the
-- function and <close> forms; a host read inside a capture fails with a clear error and
-- the session goes on; graphs sharing a pool. Without a GPU: CUDAGraph() raises.
local T = ...

if not torch.cuda.is_available() then
  T.test("no GPU", function()
    T.raises(function() torch.cuda.CUDAGraph() end, "~CUDA is not available")
  end)
  T.skip("no GPU for CUDA graphs", 7)
  return
end

local dev = torch.device("cuda")

local function same(a, b, msg) -- equal values, whatever the dtypes
  T.eq(a:cpu():double():tolist(), b:cpu():double():tolist(), msg)
end

T.test("capture and replay an expression", function()
  local x = torch.randn(1000, { device = dev })
  local g = torch.cuda.CUDAGraph()
  local y = g:capture(function() return x * 2 + 1 end)
  for _ = 1, 3 do
    local new = torch.randn(1000)
    x:copy_(new)
    g:replay()
    same(y, new * 2 + 1, "replay on new data")
  end
  g:reset()
  T.raises(function() g:replay() end, "~nothing captured")
end)

local function mlp()
  torch.manual_seed(1)
  return torch.nn.Sequential(torch.nn.Linear(784, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)):to(dev)
end

-- amp: the step runs under autocast, whose parameter casts eager steps take from the copies
-- the optimizer wrote (engine/optim.c) and a captured step makes itself
local function captured_vs_eager(amp)
  local eager, graphed = mlp(), mlp()
  local opt_e = torch.optim.SGD(eager:parameters(), { lr = 0.1, momentum = 0.9 })
  local opt_g = torch.optim.SGD(graphed:parameters(), { lr = 0.1, momentum = 0.9 })
  local F = torch.nn.functional
  local static_x = torch.zeros(128, 784, { device = dev })
  local static_y = torch.zeros(128, { dtype = torch.int64, device = dev })
  local function step(model, opt, x, y)
    opt:zero_grad()
    local loss
    do
      local _ <close> = torch.autocast("cuda", { enabled = amp })
      loss = F.cross_entropy(model(x), y)
    end
    loss:backward()
    opt:step()
    return loss
  end
  torch.manual_seed(2)
  local batches = {}
  for i = 1, 8 do batches[i] = { torch.randn(128, 784, { device = dev }), torch.randint(0, 10, { 128 }, { device = dev }) } end
  -- warm up both on the first two batches
  for i = 1, 2 do
    local le = step(eager, opt_e, batches[i][1], batches[i][2])
    static_x:copy_(batches[i][1]); static_y:copy_(batches[i][2])
    local lg = step(graphed, opt_g, static_x, static_y)
    T.eq(lg:item(), le:item(), "warm-up loss " .. i)
  end
  local g = torch.cuda.CUDAGraph()
  local static_loss
  do
    local _ <close> = torch.cuda.graph(g)
    static_loss = step(graphed, opt_g, static_x, static_y)
  end
  for i = 3, 8 do
    local le = step(eager, opt_e, batches[i][1], batches[i][2])
    static_x:copy_(batches[i][1]); static_y:copy_(batches[i][2])
    local before = torch.cuda.memory_allocated()
    g:replay()
    T.eq(torch.cuda.memory_allocated(), before, "a replay allocates nothing")
    T.eq(static_loss:item(), le:item(), "replayed loss " .. i)
  end
  local pe, pg = eager:parameters(), graphed:parameters()
  for i = 1, #pe do same(pg[i], pe[i], "parameter " .. i .. " after 8 steps") end
end

T.test("captured training step equals eager steps", function() captured_vs_eager(false) end)
T.test("captured autocast training step equals eager steps", function()
  local hits = torch._amp.stats().lowp_hits
  captured_vs_eager(true)
  T.check(torch._amp.stats().lowp_hits > hits, "the eager steps took the optimizer's copies")
end)

-- an image network's first layer runs on space-to-depth copies (cuda/cudnn.cu), made and planned
-- inside the capture when that is its first call
T.test("a strided few-channel convolution first called inside a capture", function()
  torch.manual_seed(2)
  local x = torch.randn({ 2, 3, 35, 35 }, { device = dev }):half()
  local w = torch.randn({ 8, 3, 7, 7 }, { device = dev }):half()
  local g = torch.cuda.CUDAGraph()
  local conv = torch.nn.functional.conv2d
  local y = g:capture(function() return conv(x, w, nil, 4, 2) end)
  x:copy_(torch.randn({ 2, 3, 35, 35 }):half())
  g:replay()
  local ref = conv(x:float():cpu(), w:float():cpu(), nil, 4, 2)
  T.near(y:float():cpu():tolist(), ref:tolist(), 2e-2, "replayed against the CPU")
end)

T.test("function forms and pools", function()
  local a = torch.ones(4, { device = dev })
  local g1, b = torch.cuda.graph(function() return a + 1 end)
  local g2 = torch.cuda.CUDAGraph()
  local c = torch.cuda.graph(g2, { pool = g1:pool() }, function() return b * 3 end)
  a:fill_(2)
  g1:replay(); g2:replay()
  same(c, torch.full({ 4 }, 9), "two graphs sharing a pool, replayed in order")
end)

T.test("a host read inside a capture", function()
  local x = torch.ones(4, { device = dev })
  local g = torch.cuda.CUDAGraph()
  T.raises(function() g:capture(function() return (x * 2):sum():item() end) end, "~while a CUDA graph is capturing")
  same(x + 1, torch.full({ 4 }, 2), "eager ops still run")
  local y = g:capture(function() return x * 5 end)
  g:replay()
  same(y, torch.full({ 4 }, 5), "the graph captures again after reset")
  T.raises(function() g:capture_begin() end, "~already holds a capture")
end)
