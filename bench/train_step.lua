-- One classifier training step for the benchmarks: zero_grad, forward and cross entropy
-- (under autocast when dtype is given), backward and the optimizer step (through
-- scaler when one is given). Returns step(), which returns the loss.
--   local step = dofile(dir .. "/train_step.lua")(model, opt, x, y, dtype, scaler)
return function(model, opt, x, y, dtype, scaler)
  return function()
    opt:zero_grad()
    local loss
    do
      local _ <close> = torch.autocast("cuda", { dtype = dtype or torch.float16, enabled = dtype ~= nil })
      loss = F.cross_entropy(model(x), y)
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
