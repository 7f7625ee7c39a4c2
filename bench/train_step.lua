-- One training step for the benchmarks: zero_grad, the loss (under autocast when dtype is
-- given), backward and the optimizer step (through scaler when one is given). step() returns
-- the loss.
--   local steps = dofile(dir .. "/train_step.lua")
--   local step = steps(model, opt, x, y, dtype, scaler)      -- a classifier: cross entropy of model(x)
--   local step = steps.loss(loss_of, opt, dtype, scaler)     -- loss_of() gives the loss
--   local times = steps.timed(step, n, reps)                  -- ms a step: the mean of n steps
--                                                               between two synchronisations, per repeat
--   steps.median(times)
local function step_of(loss_of, opt, dtype, scaler)
  return function()
    opt:zero_grad()
    local loss
    do
      local _ <close> = torch.autocast("cuda", { dtype = dtype or torch.float16, enabled = dtype ~= nil })
      loss = loss_of()
    end
    if scaler then
      scaler:scale(loss):backward()
      scaler:step(opt)
      scaler:update()
    else
      loss:backward()
      opt:step()
    end
    return loss
  end
end

local time = require "time"

local function timed(step, n, reps)
  local times = {}
  for r = 1, reps do
    torch.cuda.synchronize()
    local t0 = time.perf_counter()
    for _ = 1, n do step() end
    torch.cuda.synchronize()
    times[r] = (time.perf_counter() - t0) / n * 1e3
  end
  return times
end

local function median(t)
  local s = {}
  for i, v in ipairs(t) do s[i] = v end
  table.sort(s)
  return s[(#s + 1) // 2]
end

return setmetatable({ loss = step_of, timed = timed, median = median }, {
  __call = function(_, model, opt, x, y, dtype, scaler)
    return step_of(function() return F.cross_entropy(model(x), y) end, opt, dtype, scaler)
  end,
})
