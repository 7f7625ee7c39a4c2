-- Shared by bench/mlp_gpu.lua, bench/cnn_gpu.lua and others: time a training step with CUDA events
-- (the median and min over reps repeats of `steps` steps, no per-step sync), eagerly and as
-- one captured CUDA graph replayed on static copies of the batch.
local M = {}

-- fn(i) runs step i; returns median and min ms per step
function M.timed(fn, steps, reps)
  local times = {}
  for r = 1, reps do
    local e0, e1 = torch.cuda.Event({ enable_timing = true }), torch.cuda.Event({ enable_timing = true })
    e0:record()
    for i = 1, steps do fn(i) end
    e1:record()
    e1:synchronize()
    times[r] = e0:elapsed_time(e1) / steps
  end
  table.sort(times)
  return times[(reps + 1) // 2], times[1]
end

-- the same on the CPU: wall-clock time (time.perf_counter)
function M.wall_timed(fn, steps, reps)
  local times = {}
  for r = 1, reps do
    local t0 = time.perf_counter()
    for i = 1, steps do fn(i) end
    times[r] = (time.perf_counter() - t0) * 1e3 / steps
  end
  table.sort(times)
  return times[(reps + 1) // 2], times[1]
end

-- body(x, y) is one training step returning its loss; xs, ys the batches. Returns a step
-- function that copies batch i into the static inputs and replays the graph, and the
-- graph's static loss.
function M.graph_step(body, xs, ys)
  local sx, sy = xs[1]:clone(), ys[1]:clone()
  local g = torch.cuda.CUDAGraph()
  local static_loss = g:capture(function() return body(sx, sy) end)
  return function(i)
    local k = i % #xs + 1
    sx:copy_(xs[k]); sy:copy_(ys[k])
    g:replay()
  end, static_loss
end

-- Prints "<what> step: median .. ms (min ..)" eagerly, then "<what> graph step: ..., last loss".
function M.report(what, body, xs, ys, steps, reps, warmup)
  local function step(i)
    local k = i % #xs + 1
    return body(xs[k], ys[k])
  end
  for i = 1, warmup do step(i) end
  torch.cuda.synchronize()
  print(string.format("%s step: median %.4f ms (min %.4f)", what, M.timed(step, steps, reps)))
  local replay, static_loss = M.graph_step(body, xs, ys)
  for i = 1, warmup do replay(i) end
  local med, min = M.timed(replay, steps, reps)
  print(string.format("%s graph step: median %.4f ms (min %.4f), last loss %.4f", what, med, min, static_loss:item()))
end

return M
