-- steps as a keyword, as Python's torch.linspace(0, 1, steps=25): torch.linspace(0, 1, {steps = 25})
-- The positional form is unchanged.
local torch = require "torch"
local U = require "nn_util"

local function steps_as_keyword(f)
  return function(start, stop, steps, ...)
    if U.is_opts(steps) and steps.steps ~= nil and select("#", ...) == 0 then
      local opts, any = {}, false
      for k, v in pairs(steps) do
        if k ~= "steps" then opts[k], any = v, true end
      end
      if any then return f(start, stop, steps.steps, opts) end
      return f(start, stop, steps.steps)
    end
    return f(start, stop, steps, ...)
  end
end

local linspace = torch.linspace
torch.linspace = steps_as_keyword(function(...) return linspace(...) end)
