-- PyTorch's exception classes that scripts catch, as values to test a caught error against
-- (nnrepl's errors are message strings): Python's `except torch.cuda.OutOfMemoryError:` is
--   local ok, err = pcall(step)
--   if not ok and torch.cuda.OutOfMemoryError:matches(err) then ... else error(err, 0) end
local torch = require "torch"

local ErrorClass = {}
ErrorClass.__index = ErrorClass
ErrorClass.__tostring = function(E) return "<class '" .. E.__name .. "'>" end

-- whether err (a caught error value) is one of E's errors
function ErrorClass:matches(err)
  if type(err) ~= "string" then return false end
  for _, pattern in ipairs(self._patterns) do
    if err:find(pattern) then return true end
  end
  return false
end

-- parent: a class whose matches() also takes this class's errors (Python's subclassing)
local function class(name, patterns, parent)
  local E = setmetatable({ __name = name, _patterns = patterns, _parent = parent }, ErrorClass)
  local p = parent
  while p do
    table.move(patterns, 1, #patterns, #p._patterns + 1, p._patterns)
    p = p._parent
  end
  return E
end

-- the caching allocator's message, and a CUDA call that ran out of memory
local oom = class("torch.OutOfMemoryError", { "CUDA out of memory%.", "CUDA error on cuda:%d+: out of memory" })
torch.OutOfMemoryError = oom
torch.cuda.OutOfMemoryError = oom
-- an error the CUDA runtime reported
local accel = class("torch.AcceleratorError", { "CUDA error on cuda:%d+: ", "CUDA error: " })
torch.AcceleratorError = accel
torch.cuda.AcceleratorError = accel
-- PyTorch's torch.cuda.CudaError (an error code from the runtime): the same errors here
torch.cuda.CudaError = class("torch.cuda.CudaError", accel._patterns)

return { class = class }
