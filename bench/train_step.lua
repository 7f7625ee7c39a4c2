-- One training step for the benchmarks: zero_grad, the loss (under autocast when dtype is
-- given), backward and the optimizer step (through scaler when one is given). step() returns
-- the loss.
--   local steps = dofile(dir .. "/train_step.lua")
--   local step = steps(model, opt, x, y, dtype, scaler)      -- a classifier: cross entropy of model(x)
--   local step = steps.loss(loss_of, opt, dtype, scaler)     -- loss_of() gives the loss
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

return setmetatable({ loss = step_of }, {
  __call = function(_, model, opt, x, y, dtype, scaler)
    return step_of(function() return F.cross_entropy(model(x), y) end, opt, dtype, scaler)
  end,
})
