-- CUDA graphs on top of torch.cuda.CUDAGraph (bindings/cuda_graph.c): capture a step
-- once, then replay it with one launch.
--
--   local g = torch.cuda.CUDAGraph()
--   do local _ <close> = torch.cuda.graph(g)              -- with torch.cuda.graph(g):
--     static_loss = step(static_x, static_y)               --   recorded, not run
--   end
--   static_x:copy_(x); static_y:copy_(y); g:replay()       -- runs the step on the new data
--   g:capture(fn [, {pool=}]) / torch.cuda.graph(g, fn)    -- the same around a function (its results come back)
--   local g, loss = torch.cuda.graph(fn)                   -- a new graph capturing fn
--
-- As in PyTorch: warm the step up a few times (on the current stream) before capturing,
-- keep the tensors the graph reads and writes alive and at the same addresses (copy_ new
-- data into them), and read no value back to the host inside the capture. Values fixed
-- on the host at capture time stay fixed: the learning rate, Adam's step count, dropout's
-- random stream.
local torch = require "torch"

local methods = debug.getregistry()["torch.cuda.CUDAGraph"].__index

-- what torch.cuda.graph does before capturing: finish queued work, free tensors Lua holds dead
local function prepare()
  torch.cuda.synchronize()
  collectgarbage("collect")
end

local function finish(g, r)
  local ok, err = pcall(g.capture_end, g)
  if not r[1] then
    g:reset()
    error(r[2], 0)
  end
  if not ok then error(err, 0) end
  return table.unpack(r, 2, r.n)
end

function methods:capture(fn, opts)
  prepare()
  self:capture_begin(opts)
  return finish(self, table.pack(pcall(fn)))
end

local Capture = {}
Capture.__index = Capture
Capture.__close = function(c, err)
  if c.done then return end
  c.done = true
  local ok, e = pcall(c.graph.capture_end, c.graph)
  if err ~= nil then
    c.graph:reset()
  elseif not ok then
    error(e, 0)
  end
end
Capture.__name = "torch.cuda.graph"

function torch.cuda.graph(g, a, b)
  if type(g) == "function" then
    local graph = torch.cuda.CUDAGraph()
    return graph, graph:capture(g, a)
  end
  if type(a) == "function" then return g:capture(a, b) end
  if type(b) == "function" then return g:capture(b, a) end
  prepare()
  g:capture_begin(a)
  return setmetatable({ graph = g }, Capture)
end

return torch
